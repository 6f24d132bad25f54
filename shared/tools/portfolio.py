"""The user's own portfolio. Every portfolio tool reads only the rows of the user the
gateway stamped on the envelope (row-level security); no argument names a user."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from shared.tools.figures import catalog_ids
from shared.tools.spec import (
    FiscalYear,
    Symbol,
    ToolArguments,
    ToolSpec,
    forms_as_sec_spells_them,
)

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
# What holdings are ranked by: their gain over a span in percent or in dollars, their market
# value (size) on its last day, or their weight (share of the holdings' value) on that day.
RankByName = Literal["percent", "usd", "value", "weight"]
# An account as the user named it ("Roth IRA", "brokerage", "my 401k"): the tool matches it
# against the user's own accounts, and asks which one when it fits several.
AccountPhrase = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class PortfolioArgs(ToolArguments):
    """What every portfolio tool takes: an account (all accounts when absent) and the day
    figures are valued on (the last close held when absent)."""

    account: AccountPhrase | None = None
    as_of: date | None = None


class GetPositionsArgs(PortfolioArgs):
    """Holdings derived from the trades: shares, average and FIFO cost basis, the latest
    close held (with its day), market value, unrealized and realized gain, return since
    purchase; optionally only some symbols or one asset class. With `start`, realized gains
    and dividends are those of the sales and payments from `start` to `as_of` (the last close
    held when absent), with their totals over the holdings; without it, since the first
    activity."""

    symbols: list[Symbol] | None = Field(default=None, min_length=1, max_length=20)
    asset_class: AssetClassName | None = None
    include_closed: bool = False
    start: date | None = None

    @model_validator(mode="after")
    def start_is_not_after_as_of(self) -> GetPositionsArgs:
        if self.start is not None and self.as_of is not None and self.start > self.as_of:
            raise ValueError(f"start {self.start} is after as_of {self.as_of}")
        return self


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
    """Holdings ranked by what `by` names: their gain over a span (`start` absent: since
    purchase) in percent ("percent") or in dollars ("usd"); or their size, the market value
    on the span's last day ("value"), or their weight, that value's share of all the
    holdings' value ("weight"). "best" puts the highest first (the largest gain, value or
    weight), "worst" the lowest (the largest loss, the smallest holding)."""

    by: RankByName = "percent"
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
        return catalog_ids([metric])[0]

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
        return forms_as_sec_spells_them(forms)


GET_POSITIONS_SPEC = ToolSpec(
    name=GET_POSITIONS,
    arguments=GetPositionsArgs,
    runner="services.tools.portfolio:run_get_positions",
    intents=("portfolio_overview", "portfolio_position"),
    # One holding (or a few named ones) is a position; the holdings as a whole, the overview.
    answers=lambda arguments: "portfolio_position" if arguments.symbols else "portfolio_overview",
)
GET_PORTFOLIO_ACTIVITY_SPEC = ToolSpec(
    name=GET_PORTFOLIO_ACTIVITY,
    arguments=GetPortfolioActivityArgs,
    runner="services.tools.portfolio:run_get_portfolio_activity",
    intents=("portfolio_activity",),
)
GET_PORTFOLIO_PERFORMANCE_SPEC = ToolSpec(
    name=GET_PORTFOLIO_PERFORMANCE,
    arguments=GetPortfolioPerformanceArgs,
    runner="services.tools.portfolio:run_get_portfolio_performance",
    intents=("portfolio_performance",),
)
RANK_HOLDINGS_SPEC = ToolSpec(
    name=RANK_HOLDINGS,
    arguments=RankHoldingsArgs,
    runner="services.tools.portfolio:run_rank_holdings",
    intents=("portfolio_ranking",),
)
GET_ACCOUNT_VALUE_SPEC = ToolSpec(
    name=GET_ACCOUNT_VALUE,
    arguments=GetAccountValueArgs,
    runner="services.tools.portfolio:run_get_account_value",
    intents=("portfolio_overview",),
)
GET_CASH_BALANCE_SPEC = ToolSpec(
    name=GET_CASH_BALANCE,
    arguments=GetCashBalanceArgs,
    runner="services.tools.portfolio:run_get_cash_balance",
    intents=("portfolio_cash", "portfolio_overview"),
)
SCREEN_HOLDINGS_SPEC = ToolSpec(
    name=SCREEN_HOLDINGS,
    arguments=ScreenHoldingsArgs,
    runner="services.tools.portfolio:run_screen_holdings",
    intents=("portfolio_screen",),
)
SEARCH_HOLDINGS_DOCUMENTS_SPEC = ToolSpec(
    name=SEARCH_HOLDINGS_DOCUMENTS,
    arguments=SearchHoldingsDocumentsArgs,
    runner="services.tools.holdings_search:run",
    intents=("portfolio_screen",),
    needs=frozenset({"documents"}),
)
