"""GET /v1/traces/{trace_id}: what finq did with the question(s) of one trace, stage by
stage, from what the stages recorded: the question row the gateway wrote, and the query
log row the validator wrote with the answer (each stage's run with its start, duration and
attempt; what the router decided, what the tools returned, how the answer was written and
checked). With FINQ_JAEGER_URL set, a link to the trace's spans in Jaeger.

Read acting for the caller: row-level security shows no other user's questions, so
another user's trace id reads as an unknown one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field, ValidationError

from services.gateway.route_explanation import explain_route
from shared.contracts.answers import Generation, Validation
from shared.contracts.events import StageRun
from shared.contracts.questions import RouteSummary

# A trace is normally one question; a client that sends its own traceparent may put several
# in one trace (a conversation), shown oldest first, up to this many.
MAX_QUESTIONS_PER_TRACE = 20

TRACE_SQL = f"""
SELECT q.request_id, q.conversation_id, q.question, q.created_at AS asked_at,
       l.request_id IS NOT NULL AS answered, l.route, l.tools, l.validation, l.attempts,
       l.timings_ms, l.total_ms, l.tokens, l.stages
FROM questions q
LEFT JOIN query_log l ON l.request_id = q.request_id
WHERE q.trace_id = $1 AND q.user_id = $2
ORDER BY q.created_at, q.request_id
LIMIT {MAX_QUESTIONS_PER_TRACE}
"""
ModelT = TypeVar("ModelT", bound=BaseModel)
_JSON_COLUMNS = ("route", "tools", "validation", "timings_ms", "tokens", "stages")
# The order the stages run in, for rows logged before each run's start was recorded.
PIPELINE_ORDER = ("router", "tools", "answerer", "validator")


class TracedStage(BaseModel):
    """One stage's run for the question (a repaired answer has more than one run of the
    answerer and validator: one per attempt)."""

    stage: str
    attempt: int
    # None for a question logged before stages recorded when they started.
    started_at: datetime | None
    duration_ms: float
    decision: str = Field(description="What the stage decided or produced, in words")
    errors: list[str] = Field(default_factory=list)


class TracedQuestion(BaseModel):
    request_id: str
    conversation_id: str
    question: str
    asked_at: datetime
    # False while the question is on its way, or when a stage gave up on it.
    answered: bool
    total_ms: float | None = None
    intent: str | None = None
    decided_by: str | None = None
    explanation: str | None = Field(
        default=None, description="How the question was routed and checked, in plain words"
    )
    stages: list[TracedStage] = Field(default_factory=list)


class Trace(BaseModel):
    """GET /v1/traces/{trace_id}: the caller's questions of one trace, stage by stage."""

    trace_id: str
    jaeger_url: str | None = Field(default=None, description="The trace's spans in Jaeger")
    questions: list[TracedQuestion]


class Fetcher(Protocol):
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


def jaeger_link(jaeger_url: str | None, trace_id: str) -> str | None:
    return f"{jaeger_url.rstrip('/')}/trace/{trace_id}" if jaeger_url else None


async def read_trace(
    db: Fetcher, trace_id: str, user_id: str, jaeger_url: str | None = None
) -> Trace | None:
    """The caller's questions of `trace_id`; None when the caller has none in it."""
    rows = await db.fetch(TRACE_SQL, trace_id, user_id)
    if not rows:
        return None
    return Trace(
        trace_id=trace_id,
        jaeger_url=jaeger_link(jaeger_url, trace_id),
        questions=[traced_question(dict(row)) for row in rows],
    )


def traced_question(row: dict[str, Any]) -> TracedQuestion:
    """One question row joined with its query log row (absent while unanswered)."""
    for column in _JSON_COLUMNS:
        if isinstance(row.get(column), str):
            row[column] = json.loads(row[column])
    question = TracedQuestion(
        request_id=row["request_id"],
        conversation_id=row["conversation_id"],
        question=row["question"],
        asked_at=row["asked_at"],
        answered=bool(row["answered"]),
    )
    if not question.answered:
        return question
    route = _parsed(RouteSummary, row["route"])
    validation = _parsed(Validation, row["validation"])
    question.total_ms = row["total_ms"]
    if route is not None:
        question.intent = route.intent
        question.decided_by = route.decided_by
        question.explanation = explain_route(route, validation)
    question.stages = traced_stages(
        stage_runs(row["stages"] or [], row["timings_ms"] or {}),
        route,
        row["tools"] or [],
        validation,
        row["tokens"] or {},
    )
    return question


def _parsed(model: type[ModelT], value: Any) -> ModelT | None:
    """A logged JSON column as its contract; None when absent or of a shape this gateway
    does not read (a row logged by a different version)."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


@dataclass(frozen=True)
class LoggedRun:
    """A stage's run as the query log holds it (`started_at` None on rows logged before
    the starts were recorded)."""

    stage: str
    attempt: int
    started_at: datetime | None
    duration_ms: float


def stage_runs(logged: list[dict[str, Any]], timings_ms: dict[str, float]) -> list[LoggedRun]:
    """Each stage's runs as logged; for a row logged before runs were recorded, one run per
    stage from its milliseconds, without a start."""
    runs = [
        LoggedRun(str(run.stage), run.attempt, run.started_at, run.duration_ms)
        for run in (_parsed(StageRun, item) for item in logged)
        if run is not None
    ]
    if runs:
        return runs
    return [
        LoggedRun(stage, 0, None, ms)
        for stage in PIPELINE_ORDER
        if (ms := timings_ms.get(stage)) is not None
    ]


def traced_stages(
    runs: list[LoggedRun],
    route: RouteSummary | None,
    tools: list[dict[str, Any]],
    validation: Validation | None,
    tokens: dict[str, Any],
) -> list[TracedStage]:
    """The runs in order, each with what it decided. The logged facts are the final
    attempt's; a run of an earlier attempt says what became of it."""
    last_attempt = {run.stage: run.attempt for run in runs}
    for run in runs:
        last_attempt[run.stage] = max(last_attempt[run.stage], run.attempt)
    refetched = {run.attempt for run in runs if run.stage == "tools"}
    traced: list[TracedStage] = []
    for run in runs:
        stage = run.stage
        if run.attempt < last_attempt[stage]:
            decision, errors = _earlier_run(stage, run.attempt, refetched), []
        else:
            decision, errors = _final_run(stage, route, tools, validation, tokens)
        traced.append(
            TracedStage(
                stage=stage,
                attempt=run.attempt,
                started_at=run.started_at,
                duration_ms=run.duration_ms,
                decision=decision,
                errors=errors,
            )
        )
    return traced


def _earlier_run(stage: str, attempt: int, refetched: set[int]) -> str:
    if stage == "validator":
        if attempt + 1 in refetched:
            return "sent the plan back to the tools with the periods the answer wanted"
        return "sent the answer back to be written again with its findings"
    if stage == "answerer":
        return "wrote an answer the validator sent back"
    return f"ran for attempt {attempt + 1}"


def _final_run(
    stage: str,
    route: RouteSummary | None,
    tools: list[dict[str, Any]],
    validation: Validation | None,
    tokens: dict[str, Any],
) -> tuple[str, list[str]]:
    if stage == "router":
        return _routing(route)
    if stage == "tools":
        return _fetching(tools)
    if stage == "answerer":
        return _writing(tokens)
    if stage == "validator":
        return _validating(validation)
    return "", []


def _routing(route: RouteSummary | None) -> tuple[str, list[str]]:
    if route is None:
        return "route not recorded", []
    calls = ", ".join(call.tool for call in route.tool_calls) or "no tool call"
    decision = f"{route.intent} by {route.decided_by} (confidence {route.confidence:.2f}): {calls}"
    errors = [
        f"refused {tool}: not a tool of {route.intent}" for tool in route.understood.refused_tools
    ]
    return decision, errors


def _fetching(tools: list[dict[str, Any]]) -> tuple[str, list[str]]:
    if not tools:
        return "no tool was called", []
    decisions: list[str] = []
    errors: list[str] = []
    for call in tools:
        name = str(call.get("tool", "?"))
        returned = f"{call.get('facts', 0)} facts"
        if call.get("passages"):
            returned += f", {call['passages']} passages"
        if call.get("missing"):
            returned += f", missing {', '.join(str(m) for m in call['missing'])}"
        decisions.append(f"{name}: {returned}")
        error = call.get("error")
        if isinstance(error, dict):
            errors.append(f"{name}: {error.get('code')}: {error.get('message')}")
    return "; ".join(decisions), errors


def _writing(tokens: dict[str, Any]) -> tuple[str, list[str]]:
    generation = _parsed(Generation, tokens.get("answerer"))
    if generation is None:
        return "template answer", []
    if generation.mode == "llm":
        spent = f"{generation.prompt_tokens}+{generation.completion_tokens} tokens"
        if generation.cost_usd is not None:
            spent += f", ${generation.cost_usd:.6f}"
        return f"written by {generation.model} ({spent})", []
    reason = generation.fallback_reason or "the model was not used"
    return f"template answer ({reason})", list(generation.rejected)


def _validating(validation: Validation | None) -> tuple[str, list[str]]:
    if validation is None:
        return "validation not recorded", []
    verdict = "passed" if validation.passed else "did not pass"
    numbers, attempts = validation.numbers_checked, validation.attempts
    decision = (
        f"{verdict} (severity {validation.severity}; {numbers} number{'s' if numbers != 1 else ''}"
        f" checked; {attempts} attempt{'s' if attempts != 1 else ''})"
    )
    if validation.repairs:
        decision += f"; {len(validation.repairs)} repairs"
    errors = [f"{issue.severity} {issue.kind}: {issue.message}" for issue in validation.issues]
    return decision, errors
