"""What the tools stage completed, the answer drafted from it and the validated answer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.contracts.base import Contract
from shared.contracts.questions import RouteDecided, RouteSummary
from shared.contracts.tool_results import Fact, ToolResult


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


# ToolsCompleted names RepairRequest, declared after it.
ToolsCompleted.model_rebuild()
