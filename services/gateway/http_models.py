"""The gateway's HTTP bodies: what POST /v1/ask takes and answers, the conversations, the
request log, the documents and the error body, as the OpenAPI schema states them. They
cross no process boundary but HTTP, so they live with the gateway; what the stages send
each other stays in shared/contracts/ (an answer's table and workings among it, which
AskResponse carries on)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.contracts.answers import (
    AnswerTable,
    AnswerValidated,
    Citation,
    Generation,
    Validation,
    Working,
)
from shared.contracts.base import LINE_PATTERN, MAX_QUESTION_CHARS, QUESTION_PATTERN, Contract
from shared.contracts.events import LoggedToolCall
from shared.contracts.questions import RouteSummary
from shared.contracts.tool_results import Fact


# The answer contract of POST /v1/ask; later issues add fields, never remove them.
class AskRequest(Contract):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"question": "What was Apple's revenue in fiscal 2023?"}]},
    )

    # The question's limits are stated here for the OpenAPI schema and checked by the
    # gateway itself (services/gateway/inputs.py), which answers each with its own code.
    question: str = Field(
        json_schema_extra={
            "minLength": 1,
            "maxLength": MAX_QUESTION_CHARS,
            "pattern": QUESTION_PATTERN,
        }
    )
    conversation_id: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=LINE_PATTERN
    )


class AskResponse(BaseModel):
    request_id: str
    conversation_id: str
    answer: str
    citations: list[Citation]
    facts: list[Fact]
    needs_clarification: bool
    clarifying_question: str | None
    validation: Validation
    trace_id: str | None
    # What the router made of the question: intent, the layer that decided, tool calls.
    route: RouteSummary | None = None
    # A Vega-Lite chart of a series or comparison, and questions to ask next.
    chart: dict[str, Any] | None = None
    # Several years or figures: a short lead in `answer`, the figures in `table`, and how
    # each computed figure was reached in `workings`.
    table: AnswerTable | None = None
    workings: list[Working] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    # Template or model, and what a model cost.
    generation: Generation = Field(default_factory=Generation)

    @classmethod
    def of(
        cls, request_id: str, conversation_id: str, trace_id: str | None, shown: AnswerValidated
    ) -> AskResponse:
        """The answer as POST /v1/ask returns it, from the validator's (already validated
        field by field: built without validating again)."""
        return cls.model_construct(
            request_id=request_id,
            conversation_id=conversation_id,
            answer=shown.answer,
            citations=shown.citations,
            facts=shown.facts,
            needs_clarification=shown.needs_clarification,
            clarifying_question=shown.clarifying_question,
            validation=shown.validation,
            trace_id=trace_id,
            route=shown.route,
            chart=shown.chart,
            table=shown.table,
            workings=shown.workings,
            suggestions=shown.suggestions,
            generation=shown.generation,
        )


class ConversationSummary(BaseModel):
    """One conversation as GET /v1/conversations lists it."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int


class ConversationList(BaseModel):
    conversations: list[ConversationSummary]
    limit: int
    offset: int


class ConversationMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str
    intent: str | None = None  # assistant turns: what the router made of the question
    needs_clarification: bool = False
    created_at: datetime
    request_id: str
    # An assistant turn's answer as POST /v1/ask returned it (citations, chart, validation,
    # suggestions, route), so a conversation reopened later shows what was shown then; null
    # for a question's turn and for a turn whose answer row is gone.
    answer: AskResponse | None = None


class ConversationDetail(BaseModel):
    """GET /v1/conversations/{id}: the conversation and its turns in order."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    messages: list[ConversationMessage]


class RequestLog(BaseModel):
    """GET /v1/requests/{request_id}: what finq did with one question."""

    request_id: str
    conversation_id: str
    question: str
    intent: str | None
    decided_by: str | None
    route: RouteSummary | None
    tools: list[LoggedToolCall]
    validation: dict[str, Any]
    attempts: int
    timings_ms: dict[str, float]
    total_ms: float | None
    tokens: dict[str, Any]
    cost_usd: float | None
    created_at: datetime


class ErrorBody(BaseModel):
    code: str
    message: str


class DocumentJob(BaseModel):
    """POST /v1/documents and GET /v1/documents/{id}: a document and its ingest job."""

    id: str
    collection: str
    title: str
    doc_type: str
    symbol: str | None
    company: str | None
    form: str | None
    fiscal_year: int | None
    fiscal_quarter: int | None
    period_end: date | None
    filed: date | None
    source_name: str | None
    source_url: str | None
    page_count: int | None
    nonempty_page_count: int | None
    table_count: int
    chunk_count: int
    metadata: dict[str, Any]
    status: Literal["pending", "parsing", "embedding", "ready", "failed"]
    progress: float = Field(ge=0, le=1)
    # {code, message} when the job failed.
    error: ErrorBody | None
    public: bool  # held by finq for everyone (a filing, the glossary), not an upload
    created_at: datetime
    updated_at: datetime


class DocumentList(BaseModel):
    """GET /v1/documents: a page of the caller's uploads and the public filings."""

    documents: list[DocumentJob]
    total: int = Field(description="How many documents the filters let through, in all pages")
    limit: int
    offset: int
