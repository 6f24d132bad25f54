"""Stage events: what each stage decided about a request, as it happens."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from shared.contracts.answers import GenerationMode, Severity
from shared.contracts.base import Contract
from shared.contracts.tool_results import CallOfTool, ToolCall, ToolError
from shared.contracts.understanding import Intent, RouteLayer
from shared.subjects import Stage

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
