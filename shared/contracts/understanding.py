"""What the router understood of a question: the typed route (companies, metrics, periods,
scopes, operations)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from shared.contracts.base import Contract
from shared.intents import INTENT_NAMES
from shared.tools import (
    ActivityKindName,
    AssetClassName,
    RankByName,
)

# Every intent finq knows: the names of the definitions registered in `shared.intents`, so
# a new intent's module and registry line are all the wire needs.
Intent = Literal[INTENT_NAMES]  # type: ignore[valid-type]
# Which layer decided a route: rules, the trained classifier, the LLM, or the conversation
# (a follow-up or a reply to a clarifying question completed from earlier turns).
RouteLayer = Literal["rules", "classifier", "llm", "conversation"]


class TextSpan(Contract):
    """A piece of the question, as written, and where it stands in it."""

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class CompanyRef(Contract):
    """A company the question names, as resolved, with the text it was read from."""

    symbol: str
    name: str  # the display name finq uses ("Alphabet")
    text: str  # as written: "GOOG", "google's", "nvidea"
    # The misspelt word read as this company ("nvidea"), so the answer can say so.
    corrected_from: str | None = None


class FilerRef(Contract):
    """A company in SEC's directory of filers (`finq ingest directory`) that finq holds no
    data for: what a question named, and what loads it."""

    cik: int
    name: str  # as SEC lists it: "COSTCO WHOLESALE CORP"
    tickers: list[str] = Field(default_factory=list)
    text: str  # as written: "Costco", "$COST"


ScopeKind = Literal["segment", "product", "geography", "per_share", "as_reported", "other"]


class MetricScope(Contract):
    """A qualifier narrowing a figure: a segment, a product line, a region, "per share",
    "as reported". finq's stored figures are company totals; a scoped figure comes from a
    filing's own tables."""

    kind: ScopeKind
    text: str


MetricMethod = Literal[
    "exact", "learned", "composed", "fuzzy", "embedding", "spoken", "conversation", "llm"
]


class MetricRef(Contract):
    id: str  # catalog id
    text: str | None = None  # the phrase it was read from, when one was
    method: MetricMethod = "exact"
    confidence: float = Field(default=1.0, ge=0, le=1)
    scope: list[MetricScope] = Field(default_factory=list)

    @property
    def by_fallback(self) -> bool:
        return self.method in {"composed", "fuzzy", "embedding"}


PeriodKind = Literal[
    "fiscal_year",  # "fiscal 2023", "FY23", "2023"
    "fiscal_quarter",  # "Q3 FY2024", "the March quarter of 2024"
    "ttm",  # trailing twelve months
    "instant",  # "as of June 30, 2031": a balance on a day
    "ended",  # "the fiscal year ended …", "the quarter ended …", "nine months ended …"
    "range",  # "2019 through 2023", "since 2020"
    "relative",  # "last year", "two years ago", "the last three quarters"
    "calendar",  # a day, a month or a window of days (prices)
]


class PeriodRef(Contract):
    """One period expression of the question and what it resolved to on the company's
    fiscal calendar."""

    kind: PeriodKind
    text: str
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    # An instant's day, or the last day of a duration "ended" on a date.
    day: date | None = None
    months: int | None = None  # a duration's length: 3, 6, 9 or 12


PeriodType = Literal["annual", "quarterly", "ttm"]


class PriceWindow(Contract):
    start: date | None = None
    end: date | None = None


class PeriodSelection(Contract):
    """The periods a question asks for, as the tools select them, and each expression as
    written."""

    period_type: PeriodType | None = None
    fiscal_years: list[int] = Field(default_factory=list)
    fiscal_quarters: list[int] = Field(default_factory=list)
    last: int | None = None  # the latest N periods held
    shift: int = 0  # a follow-up's move relative to the turn before
    spans_several: bool = False  # a range, a list, "last N", "by quarter": a series
    # Year-to-date durations ("nine months ended …"): how many months, summed from quarters.
    months_to_date: int | None = None
    # Growth of a quarter against the matching quarter of the prior year.
    same_quarter_last_year: bool = False
    asked: list[PeriodRef] = Field(default_factory=list)
    window: PriceWindow | None = None  # a price question's days

    @property
    def named(self) -> bool:
        """Whether the question said anything about its period at all."""
        return bool(
            self.fiscal_years
            or self.fiscal_quarters
            or self.period_type
            or self.last
            or self.shift
            or self.asked
        )


class DocumentScope(Contract):
    """Which documents a question is about: a company's filings of a form and period, or a
    document named by its title."""

    symbols: list[str] = Field(default_factory=list)
    forms: list[str] = Field(default_factory=list)
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    named_document: str | None = None
    # What is looked for, as the user wrote it ("DOJ antitrust lawsuit"), when the rules
    # could tell it from the words around it.
    topic: str | None = None


class LlmUsage(Contract):
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


class RatioAsked(Contract):
    """One figure as a share of another, asked in words, that the catalog does not hold as a
    metric of its own: the answerer divides the two fetched figures."""

    numerator: str  # catalog ids
    denominator: str
    text: str  # the ratio words as written: "what percentage of"


OperationKind = Literal["change", "sum", "difference", "multiple"]


class AskedOperation(Contract):
    """Arithmetic the question asks of the figures it names, which the answerer computes and
    states first: a figure's change between two periods (in its own unit, in percent, or
    both), or, across companies, their sum, the first one's excess over the second, or the
    first one as a multiple of the second."""

    kind: OperationKind
    text: str  # the words that ask it, as written
    as_percent: bool = False
    in_units: bool = False
    # "Has Microsoft increased its debt?": a change asked as yes or no, in the direction the
    # question names; the answer says which, then the change behind it.
    yes_no_direction: Literal["up", "down"] | None = None


RouteSlot = Literal["companies", "metrics", "periods", "forms", "window"]


class PortfolioReading(Contract):
    """What a question about the user's own portfolio named, as the portfolio tools take
    it: relative days ("this year", "last month") are resolved against the last day finq
    holds prices for, never the calendar. A field left None was not named, so a follow-up
    ("and in my IRA?") replaces only what it names."""

    account: str | None = None  # as the tools match it: "Roth IRA", "401(k)", "Fidelity"
    asset_class: AssetClassName | None = None
    start: date | None = None  # None with `since_purchase` or no timeframe named
    end: date | None = None
    as_of: date | None = None  # the day holdings are valued on ("at the end of 2022")
    since_purchase: bool = False
    timeframe_text: str | None = None  # the timeframe as written
    kinds: list[ActivityKindName] = Field(default_factory=list)
    order: Literal["best", "worst"] | None = None
    by: RankByName | None = None  # a gain in dollars or percent, or size ("value") or weight
    limit: int | None = None  # "top 3", "my two best"
    condition: Literal["above", "below", "falling", "rising"] | None = None
    threshold: float | None = None  # in the figure's unit: 20 for "above 20%"
    metric: str | None = None  # the catalog id a screen's condition is on
    fiscal_year: int | None = None  # a screen's or a filing search's, when written
    largest: int | None = None  # "my two largest positions"
    query: str | None = None  # what the filings of the largest holdings are searched for
    include_closed: bool = False  # realized gains: sold-out positions count
    holdings_asked: bool = False  # "holdings", "positions", "allocation": list them
    realized: bool = False  # realized gains asked, alone: the figure, not the positions
    # A market index the question compares with ("the S&P 500"), as the answer names it:
    # finq holds no index's prices, so the answer says it is not compared.
    benchmark: str | None = None
    # What a follow-up took from the portfolio question before it ("timeframe", "account").
    inherited: list[str] = Field(default_factory=list)


class Understood(Contract):
    """Everything the router read in a question, typed; and what it did not read."""

    companies: list[CompanyRef] = Field(default_factory=list)
    metrics: list[MetricRef] = Field(default_factory=list)
    periods: PeriodSelection = Field(default_factory=PeriodSelection)
    documents: DocumentScope = Field(default_factory=DocumentScope)
    # Misspelt words read as the word meant (as written → as read: "earnigns" → "earnings"),
    # said in the answer so the user can see what was assumed.
    slips: dict[str, str] = Field(default_factory=dict)
    # Spans of the question (company names corrected) no recognizer read: a figure answer is
    # never drafted over them.
    not_understood: list[TextSpan] = Field(default_factory=list)
    # A figure question the stored figures cannot answer as asked (a scope, unread words, a
    # figure the catalog does not name), sent to the filings instead.
    uncovered_figure: bool = False
    # Metric phrases nothing resolved, for a clarifying question and the alias log.
    unknown_metric_phrases: list[str] = Field(default_factory=list)
    # Metrics named exactly, before any fallback: what confirms a learned alias.
    named_metrics: list[str] = Field(default_factory=list)
    inherited: list[RouteSlot] = Field(default_factory=list)
    comparison: bool = False
    growth: bool = False
    ratio: RatioAsked | None = None
    operation: AskedOperation | None = None
    category: str | None = None  # a "which metrics…" question's catalog category
    term: str | None = None  # the term a definition question asks about
    pending_intent: Intent | None = None  # what a clarifying question is about
    refused_tools: list[str] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)  # rules' score per intent
    # The router's layers that were asked and were not sure, in order: [] when the rules
    # decided alone; ["rules"] when the classifier (or, without one, the rules' best
    # reading) took it; ["rules", "classifier"] when the model was asked, or nobody was
    # sure. None on routes made before it was recorded.
    unsure_layers: list[RouteLayer] | None = None
    llm: LlmUsage | None = None
    portfolio: PortfolioReading | None = None  # a portfolio question's reading
    # Companies named that SEC lists and finq holds no data for; several for one name when
    # the name fits them alike (the reply asks which).
    filers_not_held: list[FilerRef] = Field(default_factory=list)

    @property
    def symbols(self) -> list[str]:
        return [company.symbol for company in self.companies]

    @property
    def metric_ids(self) -> list[str]:
        return [metric.id for metric in self.metrics]

    @property
    def covered(self) -> bool:
        """Whether every meaningful span of the question was read, with no scope on a
        figure that finq's stored totals cannot answer."""
        return not self.not_understood and not any(m.scope for m in self.metrics)
