"""The typed messages that travel between finq's stages (version 1).

One envelope carries the request's identity, attempt and deadline around a
typed payload; each hop has its own payload model. Fields are only ever added
with defaults; a breaking change gets new models under a new subject version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.intents import INTENT_NAMES
from shared.metric_catalog import Metric
from shared.subjects import Stage
from shared.tools import (
    TOOL_SPECS_BY_NAME,
    ActivityKindName,
    AnyToolArguments,
    AssetClassName,
    RankByName,
    ToolArguments,
    ToolName,
)

MAX_QUESTION_CHARS = 2000

# What text a client may send, as patterns that JSON Schema (ECMA 262), Python's re and
# pydantic's Rust regex read alike, so the OpenAPI schema states what the gateway enforces.
# Text never holds a C0 control character but tab, newline and carriage return, nor DEL
# (PostgreSQL stores no NUL, and a terminal escape or a backspace has no place in a question).
CONTROL_CHARACTERS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"  # the inside of a [...] class
# One line (an id, a name, a title): no control character at all.
LINE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
# A question: text with at least one character that is not white space as str.strip() sees
# it (the space-like characters below are the ones str.isspace() holds besides the controls).
_VISIBLE = r"[^\x00-\x20\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
QUESTION_PATTERN = rf"^[^{CONTROL_CHARACTERS}]*{_VISIBLE}[^{CONTROL_CHARACTERS}]*$"


def utc_now() -> datetime:
    return datetime.now(UTC)


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# --- tool calls and their results -------------------------------------------------


class CallOfTool(Contract):
    """A tool's name and its arguments, typed by the tool's spec: the arguments decode into
    the argument model that `tool` names, so a call that crosses a process is validated on
    both sides and read by field, never by key."""

    tool: ToolName
    arguments: AnyToolArguments

    @model_validator(mode="before")
    @classmethod
    def _arguments_of_the_named_tool(cls, data: Any) -> Any:
        # The union alone cannot tell two tools whose arguments look alike (the value of an
        # account and its cash take the same fields): the tool's name decides.
        if isinstance(data, dict):
            spec = TOOL_SPECS_BY_NAME.get(data.get("tool"))  # type: ignore[arg-type]
            raw = data.get("arguments")
            if spec is not None and not isinstance(raw, spec.arguments):
                data = {**data, "arguments": spec.arguments.model_validate(raw or {})}
        return data

    @model_validator(mode="after")
    def _arguments_are_the_tools_own(self) -> CallOfTool:
        expected = TOOL_SPECS_BY_NAME[self.tool].arguments
        if type(self.arguments) is not expected:
            raise ValueError(f"{self.tool} takes {expected.__name__}")
        return self


class ToolCall(CallOfTool):
    """One call of a route's plan."""

    @classmethod
    def of(cls, arguments: ToolArguments) -> ToolCall:
        """The call of the tool whose argument model `arguments` is."""
        for spec in TOOL_SPECS_BY_NAME.values():
            if type(arguments) is spec.arguments:
                return cls(tool=spec.name, arguments=arguments)
        raise ValueError(f"no tool takes {type(arguments).__name__}")


class Source(Contract):
    """Where a fact came from; `source_id` is what answers cite."""

    source_id: str
    label: str
    form: str | None = None
    accession: str | None = None
    xbrl_tag: str | None = None
    page: int | None = None  # a document passage's page
    filed: date | None = None
    url: str | None = None
    # The period a filing covers, so answers that name it can be checked.
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period_end: date | None = None


class FormulaInput(Contract):
    """One term of a derived figure's formula and the stored figure it stood for."""

    term: str  # as the formula writes it: "revenue", "stockholders_equity[-1]"
    # Whose figure it is, when not the derived fact's own company (a sum across companies).
    symbol: str | None = None
    metric: str
    metric_label: str
    value: float  # as stored; a stock-split factor stays in the formula
    unit: str
    # The period the figure belongs to: `x[-1]` is the previous fiscal year, and a TTM
    # figure reads a balance at the end of its last quarter.
    period: str  # "FY2022"
    period_type: Literal["annual", "quarterly", "ttm"] = "annual"
    fiscal_year: int
    fiscal_quarter: int | None = None
    # The page of the filing statement the figure was read from: shown as the statement
    # writes it ("$88,265 million"), where it can be checked.
    page: int | None = None


class FigureElsewhere(Contract):
    """The same figure as another source gives it, where the two disagree beyond rounding
    (a filing's own statement and the XBRL data, or a later filing's restatement): the
    answer says both, each with its source."""

    value: float
    source_id: str


class Fact(Contract):
    symbol: str
    company: str
    metric: str
    metric_label: str
    period: str  # "FY2023"
    # Prices: "daily" for one day's figure, "range" for a figure over a window of days.
    period_type: Literal["annual", "quarterly", "ttm", "daily", "range"] = "annual"
    fiscal_year: int
    fiscal_quarter: int | None = None
    period_start: date | None = None
    period_end: date
    value: float
    unit: str
    source_id: str
    # A derived figure's arithmetic: the formula as evaluated, over the terms of `inputs`
    # ("gross_profit / revenue * 100"); None, with no inputs, for a figure read from a filing.
    formula: str | None = None
    inputs: list[FormulaInput] = Field(default_factory=list)
    differs: FigureElsewhere | None = None


class ToolError(Contract):
    code: str
    message: str


class MetricInfo(Contract):
    """A catalog entry as `list_metrics` returns it."""

    id: str
    label: str
    category: str
    unit: str
    description: str
    formula: str | None = None  # None for a figure read from filings
    aliases: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, metric: Metric) -> MetricInfo:
        return cls(
            id=metric.id,
            label=metric.label,
            category=metric.category,
            unit=metric.unit,
            description=metric.description,
            formula=metric.formula,
            aliases=list(metric.aliases),
        )


class Passage(Contract):
    """A chunk of a filing or document that search_documents found, with where it sits."""

    source_id: str  # "doc:<document id>:<chunk index>", also a Source's id
    document_id: str
    title: str
    collection: str
    symbol: str | None = None
    company: str | None = None
    form: str | None = None
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period: str | None = None  # "FY2022", "Q3 FY2023"
    page: int | None = None
    page_end: int | None = None  # where a passage that crosses a page break ends
    source_name: str | None = None  # the file it came from: "APPLE_2022_10K.pdf"
    chunk_index: int
    heading: str | None = None
    text: str
    is_table: bool = False
    # A table's introducing sentence, which the chunk before it ends with ("The following
    # table presents iPhone net sales and unit sales…:"): what the table is about.
    caption: str | None = None
    score: float  # reciprocal-rank fusion of the vector and keyword rankings
    link: str | None = None
    # False for a user's own upload: cited as their file, never as a company's filing.
    public: bool = True


class ToolResult(CallOfTool):
    """What one call fetched, with the call it answers."""

    facts: list[Fact] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    # What the tool looked for and did not find, said plainly, e.g. "TSLA revenue FY2031".
    missing: list[str] = Field(default_factory=list)
    error: ToolError | None = None
    metrics: list[MetricInfo] = Field(default_factory=list)  # list_metrics only
    passages: list[Passage] = Field(default_factory=list)  # search_documents only


# --- payloads, one per hop --------------------------------------------------------


# Every intent finq knows: the names of the definitions registered in `shared.intents`, so
# a new intent's module and registry line are all the wire needs.
Intent = Literal[INTENT_NAMES]  # type: ignore[valid-type]
# Which layer decided a route: rules, the trained classifier, the LLM, or the conversation
# (a follow-up or a reply to a clarifying question completed from earlier turns).
RouteLayer = Literal["rules", "classifier", "llm", "conversation"]


# --- what the router understood: the typed route ------------------------------------


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


class ConversationTurn(Contract):
    """One earlier question of the conversation and what finq made of it."""

    question: str
    answer: str = ""
    intent: Intent | None = None
    understood: Understood | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    needs_clarification: bool = False


class QuestionAsked(Contract):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    # The conversation's last turns, oldest first, so a follow-up can inherit what it leaves
    # out ("And the year before?") and a short reply can complete a clarification.
    history: list[ConversationTurn] = Field(default_factory=list)
    # The conversation's first question: nothing of it is held from before (no metric
    # reading awaiting confirmation), so the router skips looking. False when unknown.
    first_in_conversation: bool = False


class RouteDecided(Contract):
    question: str
    intent: Intent
    tool_calls: list[ToolCall] = Field(default_factory=list)
    clarifying_question: str | None = None
    # What the router understood, typed, for every later stage and the query log.
    understood: Understood = Field(default_factory=Understood)
    # What finq answers, in words, for a refusal or a reply that cannot cover the question.
    capabilities: str | None = None
    decided_by: RouteLayer = "rules"
    confidence: float = Field(default=1.0, ge=0, le=1)


class RouteSummary(Contract):
    """What the router decided, as the answer reports it."""

    intent: Intent
    decided_by: RouteLayer = "rules"
    confidence: float = 1.0
    tool_calls: list[ToolCall] = Field(default_factory=list)
    understood: Understood = Field(default_factory=Understood)

    @classmethod
    def of(cls, route: RouteDecided) -> RouteSummary:
        return cls(
            intent=route.intent,
            decided_by=route.decided_by,
            confidence=route.confidence,
            tool_calls=route.tool_calls,
            understood=route.understood,
        )


class ToolsCompleted(Contract):
    route: RouteDecided
    results: list[ToolResult] = Field(default_factory=list)
    # Set when the validator sends a model's answer back to be written again.
    repair: RepairRequest | None = None


class Citation(Contract):
    source_id: str
    label: str
    form: str | None = None
    accession: str | None = None
    url: str | None = None
    page: int | None = None  # a document passage's page: answers cite the page


class AnswerTableRow(Contract):
    """One row of an answer's table: a period (or a company, or a figure) and its cells."""

    label: str  # "FY2021", "Apple"
    # Each cell as the answer writes it ("$16.7 billion", "52.7%"), None where no figure is
    # held; one per column after the first.
    cells: list[str | None]


class AnswerTable(Contract):
    """Several years or several figures at a glance, beneath a short lead. Every number in
    it is checked by the validator like a number in the text."""

    caption: str  # "NVIDIA, fiscal 2021–2025"
    columns: list[str]  # the header: the row label's first ("Fiscal year"), then one per figure
    rows: list[AnswerTableRow]


class Working(Contract):
    """How one computed figure was reached: shown behind a "how it was computed" disclosure,
    not in the prose."""

    figure: str  # "NVIDIA's revenue growth, fiscal 2022"
    # The formula with its inputs and result, as written for a reader:
    # "(revenue $26.9 billion / fiscal 2021 revenue $16.7 billion − 1) × 100 = 61.4%"
    text: str
    source_id: str  # the computed fact's source, whose inputs are in `Fact.inputs`


GenerationMode = Literal["deterministic", "llm"]


class Generation(Contract):
    """How an answer's text was written: by template, or by a model (with its cost)."""

    mode: GenerationMode = "deterministic"
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    # Why a model's answer is not the one shown (timeout, error, invalid output, failed
    # validation), and what the validator found in each rejected attempt.
    fallback_reason: str | None = None
    rejected: list[str] = Field(default_factory=list)


class AnswerDrafted(Contract):
    route: RouteDecided
    results: list[ToolResult] = Field(default_factory=list)
    answer: str
    citations: list[Citation] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    needs_clarification: bool = False
    clarifying_question: str | None = None
    chart: dict[str, Any] | None = None  # Vega-Lite, for a series or a comparison
    # Several years or figures: the lead in `answer`, the figures here, the working apart.
    table: AnswerTable | None = None
    workings: list[Working] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)  # questions to ask next
    generation: Generation = Field(default_factory=Generation)
    # The template answer, kept beside a model's so the validator can fall back to it.
    template_answer: str | None = None
    template_citations: list[Citation] = Field(default_factory=list)


Severity = Literal["none", "low", "medium", "high", "critical"]


class ValidationIssue(Contract):
    kind: str  # "number", "year", "date", "citation", "absence"
    text: str
    message: str
    severity: Severity


class Validation(Contract):
    passed: bool
    severity: Severity
    issues: list[ValidationIssue] = Field(default_factory=list)
    attempts: int = 1  # answers written for this request, the shown one included
    # Figures the validator read in the shown answer and checked against the facts.
    numbers_checked: int = Field(default=0, ge=0)
    # What the validator changed before showing a template answer: figures patched with the
    # fetched value, statements withheld. Empty for an answer shown as written.
    repairs: list[str] = Field(default_factory=list)


class RepairRequest(Contract):
    """What the validator found in a model's answer, for the next attempt to fix."""

    attempt: int
    previous_answer: str
    issues: list[ValidationIssue]


class AnswerValidated(Contract):
    answer: str
    citations: list[Citation] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    needs_clarification: bool = False
    clarifying_question: str | None = None
    validation: Validation
    route: RouteSummary | None = None
    chart: dict[str, Any] | None = None
    table: AnswerTable | None = None
    workings: list[Working] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    generation: Generation = Field(default_factory=Generation)


class DocumentUploaded(Contract):
    """An upload the gateway stored: its `documents` row (status pending) and its bytes in
    `document_files` are committed; the ingest stage reads, parses, embeds and stores it."""

    document_id: str = Field(max_length=64)
    file_name: str = Field(max_length=300)  # as the user named it, for messages about it
    content_type: str | None = Field(default=None, max_length=200)
    symbol: str | None = Field(default=None, max_length=10)
    form: str | None = Field(default=None, max_length=20)
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    title: str | None = Field(default=None, max_length=300)

    def overrides(self) -> dict[str, Any]:
        """What the uploader said of the document, over what finq reads from it."""
        fields = ("symbol", "form", "fiscal_year", "fiscal_quarter", "title")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}


class StageFailed(Contract):
    stage: Stage
    code: str
    message: str


# --- stage events: what each stage decided about a request, as it happens ---------------
# Published on core NATS by the stages (shared/stage_events.py) and relayed by the gateway
# to a client of POST /v1/ask/stream. A summary says what the stage decided, never the
# whole payload: the answer itself comes once, validated, at the end (a model's draft text,
# told as it is written, is only a preview of it).

StageEventKind = Literal["routed", "tools_done", "draft_text", "drafted", "validated", "failed"]


class RoutedSummary(Contract):
    """The router's decision: the intent, which layer made it, and the plan."""

    kind: Literal["routed"] = "routed"
    intent: Intent
    decided_by: RouteLayer
    confidence: float = Field(ge=0, le=1)
    tool_calls: list[ToolCall] = Field(default_factory=list)


class LoggedToolCall(CallOfTool):
    """One tool call of an answered question as the query log keeps it."""

    facts: int = Field(ge=0)
    passages: int = Field(ge=0)
    missing: list[str] = Field(default_factory=list)
    error: ToolError | None = None


class ToolRun(CallOfTool):
    """One tool the tools stage ran, with what came back."""

    facts: int = Field(ge=0)
    passages: int = Field(ge=0)
    error_code: str | None = None


class ToolsDoneSummary(Contract):
    kind: Literal["tools_done"] = "tools_done"
    tools: list[ToolRun] = Field(default_factory=list)


class DraftTextSummary(Contract):
    """A piece of the answer a model is writing, as it writes it: the pieces of one attempt
    in `seq` order (from 0) make its text so far. Only a draft: the validated answer comes
    at the end and may differ (repaired, rewritten, or the template's)."""

    kind: Literal["draft_text"] = "draft_text"
    seq: int = Field(ge=0)
    text: str


class DraftedSummary(Contract):
    kind: Literal["drafted"] = "drafted"
    mode: GenerationMode
    needs_clarification: bool


class ValidatedSummary(Contract):
    kind: Literal["validated"] = "validated"
    passed: bool
    severity: Severity
    attempts: int = Field(ge=1)
    repairs: int = Field(ge=0)  # how many changes the validator made before showing it


class FailedSummary(Contract):
    """The stage gave up on the request (the gateway is told the same as a StageFailed)."""

    kind: Literal["failed"] = "failed"
    code: str
    message: str


StageEventSummary = Annotated[
    RoutedSummary
    | ToolsDoneSummary
    | DraftTextSummary
    | DraftedSummary
    | ValidatedSummary
    | FailedSummary,
    Field(discriminator="kind"),
]


class StageEvent(Contract):
    """What one stage decided about one request, when, and how long its work took."""

    request_id: str
    stage: Stage
    kind: StageEventKind
    attempt: int = Field(default=0, ge=0)  # the envelope's: a repaired answer goes round again
    at: datetime
    # The stage's handler, from taking the message to its result; None when the stage gave
    # up without running it (the deadline and retry budget had passed), and for a draft's
    # text, which is no finished step.
    elapsed_ms: float | None = Field(default=None, ge=0)
    summary: StageEventSummary

    @model_validator(mode="after")
    def _summary_of_its_kind(self) -> StageEvent:
        if self.summary.kind != self.kind:
            raise ValueError(f"a {self.kind} event with a {self.summary.kind} summary")
        return self


class StageRun(Contract):
    """One stage's handling of a request that produced its output: for the query log's
    per-stage start and duration (GET /v1/traces/{trace_id}). A stage runs once per
    attempt, so a repaired answer shows the answerer and validator more than once."""

    stage: Stage
    attempt: int = Field(default=0, ge=0)
    started_at: datetime
    duration_ms: float = Field(ge=0)


PayloadT = TypeVar("PayloadT", bound=BaseModel)


class Envelope(BaseModel, Generic[PayloadT]):
    """What every message on the bus is: who asked, which try, until when, and the payload."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    conversation_id: str
    user_id: str
    attempt: int = 0
    deadline: datetime
    created_at: datetime = Field(default_factory=utc_now)
    # The core-NATS subject of the gateway instance waiting for this request.
    reply_to: str | None = None
    # Milliseconds each stage spent on this request so far, for the query log.
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # ...and each stage's run with its start, in order (every attempt's).
    stage_runs: list[StageRun] = Field(default_factory=list)
    # Model calls made for this request so far, by every stage and every attempt: each
    # stage spends from what FINQ_MAX_MODEL_CALLS_PER_REQUEST leaves (see ModelCallBudget).
    model_calls: int = Field(default=0, ge=0)
    # How many times the reconciler has started this request afresh (a stream may have
    # dropped its messages unread): part of every message id (shared/subjects.py), so a
    # fresh start is not taken for a duplicate of what the stream dropped.
    fresh_start: int = Field(default=0, ge=0)
    # A client watches this request being answered (POST /v1/ask/stream): each stage tells
    # its event on core NATS. Nobody listens for the others', so they are not sent.
    watched: bool = False
    payload: PayloadT

    def expired(self, now: datetime | None = None) -> bool:
        return (now or utc_now()) >= self.deadline

    def carry(self, payload: BaseModel) -> Envelope[Any]:
        """The same request moving on to the next hop with a new payload."""
        return Envelope[type(payload)](  # type: ignore[misc]
            request_id=self.request_id,
            conversation_id=self.conversation_id,
            user_id=self.user_id,
            attempt=self.attempt,
            deadline=self.deadline,
            created_at=self.created_at,
            reply_to=self.reply_to,
            timings_ms=dict(self.timings_ms),
            stage_runs=list(self.stage_runs),
            model_calls=self.model_calls,
            fresh_start=self.fresh_start,
            watched=self.watched,
            payload=payload,
        )


@dataclass
class ModelCallBudget:
    """The model calls one request may still make. Every call site takes one before it
    calls; when none is left it answers without the model (the rules' route, the template
    answer), so a loop of redos or a chatty stage cannot run up a bill on one question."""

    left: int
    used: int = 0

    @classmethod
    def of(cls, envelope: Envelope[Any], limit: int) -> ModelCallBudget:
        return cls(max(0, limit - envelope.model_calls))

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def new_deadline(seconds: float) -> datetime:
    return utc_now() + timedelta(seconds=seconds)


ToolsCompleted.model_rebuild()
