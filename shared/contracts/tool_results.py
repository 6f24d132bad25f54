"""A tool's call and its result: the facts, passages and errors the tools stage returns."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import Field, model_validator

from shared.contracts.base import Contract
from shared.metric_catalog import Metric
from shared.tools import (
    TOOL_SPECS_BY_NAME,
    AnyToolArguments,
    ToolArguments,
    ToolName,
)


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
