"""The argument models of finq's tools.

The router validates a plan against these before sending it and the tools
service validates again before running it: a tool call never reaches SQL
with arguments that did not pass here.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from shared.metric_catalog import CATEGORIES, METRICS_BY_ID
from shared.metric_resolver import MetricResolver, UnknownMetricPhrase

GET_FINANCIAL_METRICS = "get_financial_metrics"
GET_PRICES = "get_prices"
GET_RECENT_FILINGS = "get_recent_filings"
LIST_METRICS = "list_metrics"
# Filing and document passages: the schema is fixed here so the router and the LLM layer can
# plan it; the tools service runs it once the documents index exists.
SEARCH_DOCUMENTS = "search_documents"

# Document collections search_documents knows by name: SEC filings, the team-written
# glossary of metrics and investing basics, course material, and users' uploads.
FILINGS_COLLECTION = "filings"
GLOSSARY_COLLECTION = "glossary"
COURSES_COLLECTION = "courses"
UPLOADS_COLLECTION = "uploads"

Symbol = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z.\-]{0,9}$")]
FiscalYear = Annotated[int, Field(ge=1900, le=2100)]
_FORM = re.compile(r"^[A-Z0-9][A-Z0-9 \-/]{0,19}$")
_UNDASHED_FORM = re.compile(r"^(\d+)([A-Z]+(?:/A)?)$")


@functools.cache
def _argument_resolver() -> MetricResolver:
    # Exact and fuzzy only: validation runs inside pydantic, where loading a model has no
    # place; the router's embedding fallback has already run by the time a plan gets here.
    return MetricResolver.from_catalog()


class GetFinancialMetricsArgs(BaseModel):
    """Figures of companies for fiscal periods.

    Periods are chosen by `fiscal_years` (and, for quarters, `fiscal_quarters`), or by
    `last` (the latest N periods held of each figure); with neither, each figure's
    latest period held.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    symbols: list[Symbol] = Field(min_length=1, max_length=10)
    metrics: list[str] = Field(min_length=1, max_length=20)
    period: Literal["annual", "quarterly", "ttm"] = "annual"
    fiscal_years: list[FiscalYear] | None = Field(default=None, min_length=1, max_length=30)
    # A span of fiscal years, both ends included ("from": 2019, "to": 2023); becomes
    # `fiscal_years`, so the tool has one way to select years.
    from_year: FiscalYear | None = Field(default=None, alias="from")
    to_year: FiscalYear | None = Field(default=None, alias="to")
    fiscal_quarters: list[Annotated[int, Field(ge=1, le=4)]] | None = Field(
        default=None, min_length=1, max_length=4
    )
    last: int | None = Field(default=None, ge=1, le=40)
    # At most this many periods of each figure of each company, the latest kept.
    limit: int | None = Field(default=None, ge=1, le=200)

    @model_validator(mode="after")
    def periods_are_chosen_one_way(self) -> GetFinancialMetricsArgs:
        if self.from_year is not None or self.to_year is not None:
            if self.fiscal_years is not None:
                raise ValueError("give fiscal_years or from/to, not both")
            if self.from_year is None or self.to_year is None:
                raise ValueError("from and to go together")
            if self.from_year > self.to_year:
                raise ValueError(f"from {self.from_year} is after to {self.to_year}")
            if self.to_year - self.from_year >= 30:
                raise ValueError("from/to spans more than 30 fiscal years")
            self.fiscal_years = list(range(self.from_year, self.to_year + 1))
            self.from_year = self.to_year = None
        if self.last is not None and self.fiscal_years is not None:
            raise ValueError("give fiscal_years (or from/to) or last, not both")
        if self.fiscal_quarters is not None and self.period == "annual":
            raise ValueError("fiscal_quarters needs period quarterly or ttm")
        return self

    @field_validator("metrics")
    @classmethod
    def metrics_are_in_the_catalog(cls, metrics: list[str]) -> list[str]:
        """Catalog ids pass; other names (an LLM's "P/E", a slip like "gross margn") are
        resolved to ids, and a name nothing resolves fails naming the closest metrics."""
        resolved: list[str] = []
        for metric in metrics:
            if metric not in METRICS_BY_ID:
                try:
                    metric = _argument_resolver().resolve(metric).metric_id
                except UnknownMetricPhrase as unknown:
                    raise ValueError(str(unknown)) from None
            if metric not in resolved:
                resolved.append(metric)
        return resolved


class GetPricesArgs(BaseModel):
    """Daily closes of one company between two days, both included.

    With neither day, the last 30 trading days held; with only `end`, the 30 trading
    days up to it; with only `start`, everything from it to the last day held.
    """

    model_config = ConfigDict(extra="forbid")

    symbol: Symbol
    start: date | None = None
    end: date | None = None

    @model_validator(mode="after")
    def start_is_not_after_end(self) -> GetPricesArgs:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


class GetRecentFilingsArgs(BaseModel):
    """A company's SEC filings, newest first.

    `forms` names SEC form types ("10-K", "10-Q", "8-K", "DEF 14A", "10-K/A"); an
    amendment is its own form, so "10-K" does not bring 10-K/As. `fiscal_year` selects
    periodic reports (10-K, 10-Q, 20-F, 40-F) by the fiscal year they cover: other forms
    have no fiscal year and never match it.
    """

    model_config = ConfigDict(extra="forbid")

    symbol: Symbol
    forms: list[str] | None = Field(default=None, min_length=1, max_length=20)
    fiscal_year: FiscalYear | None = None
    limit: int = Field(default=10, ge=1, le=100)

    @field_validator("forms")
    @classmethod
    def forms_are_spelled_as_sec_does(cls, forms: list[str] | None) -> list[str] | None:
        if forms is None:
            return None
        spelled: list[str] = []
        for raw in forms:
            form = " ".join(raw.upper().split())
            # "10K" and "8k" are how people write them; EDGAR writes "10-K" and "8-K".
            form = _UNDASHED_FORM.sub(r"\1-\2", form)
            if not _FORM.match(form):
                raise ValueError(f"not an SEC form type: {raw!r}")
            spelled.append(form)
        return list(dict.fromkeys(spelled))


class ListMetricsArgs(BaseModel):
    """The metrics finq knows, optionally of one category or only the ones named, with
    unit, description and formula (what a "what is EBITDA?" question is answered from)."""

    model_config = ConfigDict(extra="forbid")

    category: Literal[CATEGORIES] | None = None  # type: ignore[valid-type]
    metrics: list[str] | None = Field(default=None, min_length=1, max_length=20)

    @field_validator("metrics")
    @classmethod
    def named_metrics_are_in_the_catalog(cls, metrics: list[str] | None) -> list[str] | None:
        return (
            None if metrics is None else GetFinancialMetricsArgs.metrics_are_in_the_catalog(metrics)
        )


class SearchDocumentsArgs(BaseModel):
    """Passages of filings and documents that answer a query, optionally filtered by
    company, form, fiscal period, date span or collection."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str = Field(min_length=1, max_length=500)
    symbols: list[Symbol] | None = Field(default=None, min_length=1, max_length=10)
    forms: list[str] | None = Field(default=None, min_length=1, max_length=20)
    fiscal_year: FiscalYear | None = None
    fiscal_quarter: int | None = Field(default=None, ge=1, le=4)
    from_date: date | None = Field(default=None, alias="from")
    to_date: date | None = Field(default=None, alias="to")
    collection: str | None = Field(default=None, max_length=100)
    limit: int = Field(default=5, ge=1, le=50)

    @field_validator("forms")
    @classmethod
    def forms_are_spelled_as_sec_does(cls, forms: list[str] | None) -> list[str] | None:
        return GetRecentFilingsArgs.forms_are_spelled_as_sec_does(forms)


# --- the user's own portfolio ----------------------------------------------------------
# Every portfolio tool reads only the rows of the user the gateway stamped on the envelope
# (row-level security); no argument names a user.

GET_POSITIONS = "get_positions"
GET_PORTFOLIO_ACTIVITY = "get_portfolio_activity"
GET_PORTFOLIO_PERFORMANCE = "get_portfolio_performance"
RANK_HOLDINGS = "rank_holdings"
GET_ACCOUNT_VALUE = "get_account_value"
GET_CASH_BALANCE = "get_cash_balance"
SCREEN_HOLDINGS = "screen_holdings"
SEARCH_HOLDINGS_DOCUMENTS = "search_holdings_documents"

AssetClassName = Literal["equity", "etf", "bond", "cash", "crypto", "other"]
ActivityKindName = Literal[
    "buy", "sell", "dividend", "interest", "deposit", "withdrawal", "transfer", "fee"
]
# An account as the user named it ("Roth IRA", "brokerage", "my 401k"): the tool matches it
# against the user's own accounts, and asks which one when it fits several.
AccountPhrase = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class PortfolioArgs(BaseModel):
    """What every portfolio tool takes: an account (all accounts when absent) and the day
    figures are valued on (the last close held when absent)."""

    model_config = ConfigDict(extra="forbid")

    account: AccountPhrase | None = None
    as_of: date | None = None


class GetPositionsArgs(PortfolioArgs):
    """Holdings derived from the trades: shares, average and FIFO cost basis, the latest
    close held (with its day), market value, unrealized and realized gain, return since
    purchase; optionally only some symbols or one asset class."""

    symbols: list[Symbol] | None = Field(default=None, min_length=1, max_length=20)
    asset_class: AssetClassName | None = None
    include_closed: bool = False


class TimeframeArgs(PortfolioArgs):
    """A span of days, both ends included; `end` absent: the last close held."""

    start: date | None = None
    end: date | None = None

    @model_validator(mode="after")
    def start_is_not_after_end(self) -> TimeframeArgs:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


class GetPortfolioActivityArgs(TimeframeArgs):
    """Trades, income and transfers in a span of days, newest first."""

    kinds: list[ActivityKindName] | None = Field(default=None, min_length=1, max_length=8)
    symbol: Symbol | None = None
    limit: int = Field(default=50, ge=1, le=500)


class GetPortfolioPerformanceArgs(TimeframeArgs):
    """Time-weighted return and gain over a span (deposits and withdrawals are not gains);
    `start` absent: since the first activity."""


class RankHoldingsArgs(TimeframeArgs):
    """Holdings ranked by their gain over a span (`start` absent: since purchase), in
    dollars or percent, best or worst first."""

    by: Literal["usd", "percent"] = "percent"
    order: Literal["best", "worst"] = "best"
    limit: int = Field(default=3, ge=1, le=20)


class GetAccountValueArgs(PortfolioArgs):
    """What each account (or the one named) is worth: holdings at the latest close held,
    plus cash."""


class GetCashBalanceArgs(PortfolioArgs):
    """Cash of each account (or the one named): settled, unsettled, total."""


class ScreenHoldingsArgs(PortfolioArgs):
    """The holdings whose company figure meets a condition, with the share of the
    portfolio's holdings value they make up: a figure above or below a threshold (in the
    figure's unit: percent for a margin), or falling or rising from the fiscal year before."""

    metric: str = Field(min_length=1, max_length=100)
    condition: Literal["above", "below", "falling", "rising"]
    threshold: float | None = None
    fiscal_year: FiscalYear | None = None  # absent: each company's latest fiscal year held

    @field_validator("metric")
    @classmethod
    def metric_is_in_the_catalog(cls, metric: str) -> str:
        return GetFinancialMetricsArgs.metrics_are_in_the_catalog([metric])[0]

    @model_validator(mode="after")
    def a_threshold_goes_with_above_and_below(self) -> ScreenHoldingsArgs:
        if self.condition in ("above", "below") and self.threshold is None:
            raise ValueError(f"{self.condition} needs a threshold")
        return self


class SearchHoldingsDocumentsArgs(PortfolioArgs):
    """Passages of the filings of the user's largest holdings (by value) about a query."""

    query: str = Field(min_length=1, max_length=500)
    largest: int = Field(default=2, ge=1, le=10)
    forms: list[str] | None = Field(default=None, min_length=1, max_length=20)
    fiscal_year: FiscalYear | None = None
    limit: int = Field(default=3, ge=1, le=10)  # passages per holding

    @field_validator("forms")
    @classmethod
    def forms_are_spelled_as_sec_does(cls, forms: list[str] | None) -> list[str] | None:
        return GetRecentFilingsArgs.forms_are_spelled_as_sec_does(forms)


PORTFOLIO_TOOLS: frozenset[str] = frozenset(
    {
        GET_POSITIONS,
        GET_PORTFOLIO_ACTIVITY,
        GET_PORTFOLIO_PERFORMANCE,
        RANK_HOLDINGS,
        GET_ACCOUNT_VALUE,
        GET_CASH_BALANCE,
        SCREEN_HOLDINGS,
        SEARCH_HOLDINGS_DOCUMENTS,
    }
)

TOOL_ARGUMENTS: dict[str, type[BaseModel]] = {
    GET_FINANCIAL_METRICS: GetFinancialMetricsArgs,
    GET_PRICES: GetPricesArgs,
    GET_RECENT_FILINGS: GetRecentFilingsArgs,
    LIST_METRICS: ListMetricsArgs,
    SEARCH_DOCUMENTS: SearchDocumentsArgs,
    GET_POSITIONS: GetPositionsArgs,
    GET_PORTFOLIO_ACTIVITY: GetPortfolioActivityArgs,
    GET_PORTFOLIO_PERFORMANCE: GetPortfolioPerformanceArgs,
    RANK_HOLDINGS: RankHoldingsArgs,
    GET_ACCOUNT_VALUE: GetAccountValueArgs,
    GET_CASH_BALANCE: GetCashBalanceArgs,
    SCREEN_HOLDINGS: ScreenHoldingsArgs,
    SEARCH_HOLDINGS_DOCUMENTS: SearchHoldingsDocumentsArgs,
}
