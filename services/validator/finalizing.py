"""Checks a drafted answer against its fetched facts and records the final answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from services.validator.checking import check_answer, check_parts, grade
from services.validator.numbers import extract_years
from services.validator.repairing import (
    TABLE_WITHHELD_NOTE,
    Fetcher,
    absence_claims,
    contradiction_issues,
    held_after_all,
    patch_numbers,
    patch_table,
    patch_workings,
    withhold,
    withhold_cells,
    withhold_workings,
)
from services.validator.route_checking import route_issues
from shared.contracts.answers import (
    AnswerDrafted,
    AnswerValidated,
    RepairRequest,
    ToolsCompleted,
    ValidationIssue,
)
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.events import LoggedToolCall, StageRun
from shared.contracts.questions import RouteDecided, RouteSummary
from shared.contracts.tool_results import ToolCall
from shared.subjects import Stage
from shared.tools import GetFinancialMetricsArgs

# One row per request: a redelivered validator finds the row and answers with it. The
# answer's turn in its conversation is written by the same statement, so the two cannot
# disagree, and only by the write that created the answer row.
INSERT_ANSWER_SQL = """
WITH answer AS (
    INSERT INTO answers (request_id, answer, body, validation_passed, validation_severity,
                         attempt, user_id)
    VALUES ($1, $2, $3::jsonb, $4, $5, $6,
            coalesce($11::text, (SELECT q.user_id FROM questions q WHERE q.request_id = $1)))
    ON CONFLICT (request_id) DO NOTHING
    RETURNING request_id
), turn AS (
    INSERT INTO messages (conversation_id, request_id, role, content, intent, route,
                          needs_clarification, user_id)
    SELECT c.id, answer.request_id, 'assistant', $2, $8, $9::jsonb, $10, c.user_id
    FROM answer JOIN conversations c ON c.id = $7
    ON CONFLICT (request_id, role) DO NOTHING
), logged AS (
    INSERT INTO query_log (request_id, conversation_id, user_id, question, intent, decided_by,
                           route, tools, validation, attempts, timings_ms, total_ms, tokens,
                           cost_usd, stages)
    SELECT answer.request_id, $7, $11, $12, $8, $13, $9::jsonb, $14::jsonb,
           $3::jsonb -> 'validation', $6 + 1, $15::jsonb, $16, $17::jsonb, $18, $19::jsonb
    FROM answer
    WHERE $12::text IS NOT NULL
    ON CONFLICT (request_id) DO NOTHING
)
UPDATE conversations SET updated_at = now()
WHERE id = $7 AND EXISTS (SELECT 1 FROM answer)
"""


@dataclass(frozen=True)
class RequestRecord:
    """What the query log keeps of a request beyond its answer."""

    user_id: str
    question: str
    tools: list[LoggedToolCall]
    timings_ms: dict[str, float]
    total_ms: float | None
    tokens: dict[str, Any]
    cost_usd: float | None = None
    # Each stage's run with its start and duration, this validator's last (StageRun).
    stages: list[StageRun] = field(default_factory=list)


def request_record(
    envelope: Envelope[AnswerDrafted], validator_ms: float, now: datetime | None = None
) -> RequestRecord:
    """The query log row's facts: the route's tool calls with what each returned, each
    stage's time (this one's so far), and the tokens any model used."""
    draft = envelope.payload
    now = now or utc_now()
    tools = [
        LoggedToolCall(
            tool=result.tool,
            arguments=result.arguments,
            facts=len(result.facts),
            passages=len(result.passages),
            missing=result.missing,
            error=result.error,
        )
        for result in draft.results
    ]
    llm = draft.route.understood.llm
    tokens: dict[str, Any] = {"router": llm.model_dump()} if llm is not None else {}
    if draft.generation.model is not None:
        tokens["answerer"] = draft.generation.model_dump()
    elapsed = (now - envelope.created_at).total_seconds() * 1000
    # This run is not over (the answer is being written), so it is stamped here rather than
    # by the consumer, as it is for every other stage.
    validating = StageRun(
        stage=Stage.VALIDATOR,
        attempt=envelope.attempt,
        started_at=now - timedelta(milliseconds=validator_ms),
        duration_ms=round(validator_ms, 3),
    )
    return RequestRecord(
        user_id=envelope.user_id,
        question=draft.route.question,
        tools=tools,
        timings_ms={**envelope.timings_ms, "validator": round(validator_ms, 3)},
        total_ms=round(elapsed, 3),
        tokens=tokens,
        cost_usd=draft.generation.cost_usd,
        stages=[*envelope.stage_runs, validating],
    )


class Executor(Protocol):
    async def execute(self, query: str, *args: Any) -> str: ...


# A request's answers at most: the first and two more written with the validator's findings.
MAX_ANSWER_ATTEMPTS = 3


@dataclass(frozen=True)
class Redo:
    """Send the answer back to be written again: the next attempt's input."""

    completed: ToolsCompleted


def decide(
    draft: AnswerDrafted,
    attempt: int,
    contradicted: Sequence[ValidationIssue] = (),
    template_contradicted: Sequence[ValidationIssue] = (),
) -> AnswerValidated | Redo:
    """The answer to show, or a redo. A model's answer that fails validation is written
    again with the findings, at most twice; then the template answer is shown and the
    model's failures recorded. A template answer that fails is repaired in place: wrong
    figures patched, what cannot be patched withheld. Never a figure that failed validation.

    `contradicted` are the answer's "not held" claims the database contradicts, and
    `template_contradicted` the template answer's (checked by the caller, which has the
    database)."""
    validated = validate_draft(draft, attempt + 1, contradicted)
    if validated.validation.passed:
        return validated
    if draft.generation.mode != "llm":
        return repair_template(draft, attempt, contradicted)
    if attempt + 1 < MAX_ANSWER_ATTEMPTS:
        repair = RepairRequest(
            attempt=attempt + 1,
            previous_answer=draft.answer,
            issues=validated.validation.issues,
        )
        return Redo(ToolsCompleted(route=draft.route, results=draft.results, repair=repair))
    findings = [issue.message for issue in validated.validation.issues]
    template = draft.model_copy(
        update={
            "answer": draft.template_answer or draft.answer,
            "citations": draft.template_citations,
            "generation": draft.generation.model_copy(
                update={
                    "mode": "deterministic",
                    "fallback_reason": f"the model's answer failed validation {attempt + 1} times",
                    "rejected": [*draft.generation.rejected, *findings],
                }
            ),
        }
    )
    shown = validate_draft(template, attempt + 1, template_contradicted)
    if shown.validation.passed:
        return shown
    return repair_template(template, attempt, template_contradicted)


def repair_template(
    draft: AnswerDrafted, attempt: int, contradicted: Sequence[ValidationIssue] = ()
) -> AnswerValidated:
    """A failing template answer made safe to show: each wrong figure patched with the fact
    its sentence (or table cell, or working) is about, then any sentence still failing (and
    any unknown citation) withheld, any cell still failing emptied and any working still
    failing dropped. The repairs are listed in `validation.repairs`."""
    text, repairs = patch_numbers(draft.answer, draft.facts)
    table, patched_cells = patch_table(draft.table, draft.facts)
    workings, patched_workings = patch_workings(draft.workings, draft.facts)
    repairs.extend([*patched_cells, *patched_workings])
    patched = draft.model_copy(update={"answer": text, "table": table, "workings": workings})
    still = [issue for issue in contradicted if issue.text in text]
    validated = validate_draft(patched, attempt + 1, still)
    if not validated.validation.passed:
        sources = [source for result in draft.results for source in result.sources]
        passages = [passage.text for result in draft.results for passage in result.passages]
        parts = check_parts(
            text, draft.facts, draft.citations, sources, passages, table, workings
        ).issues
        table_issues, working_issues = parts.get("table", []), parts.get("workings", [])
        table, withheld_cells = withhold_cells(table, table_issues)
        workings, withheld_workings = withhold_workings(workings, working_issues)
        elsewhere = [*table_issues, *working_issues]
        in_prose = [i for i in validated.validation.issues if i not in elsewhere]
        text, citations, withheld = withhold(text, draft.citations, in_prose)
        if withheld_cells:
            text = f"{text} {TABLE_WITHHELD_NOTE}"
        repairs.extend([*withheld, *withheld_cells, *withheld_workings])
        patched = patched.model_copy(
            update={"answer": text, "citations": citations, "table": table, "workings": workings}
        )
        still = [issue for issue in still if issue.text in text]
        validated = validate_draft(patched, attempt + 1, still)
        left = check_parts(text, draft.facts, citations, sources, passages, table, workings)
        if left.issues.get("table") or left.issues.get("workings"):
            # What is left failing is not in a cell or a working (a caption, a row's label):
            # the table goes whole, rather than shown unchecked.
            repairs.append("withheld the table and how its figures were computed")
            patched = patched.model_copy(update={"table": None, "workings": []})
            validated = validate_draft(patched, attempt + 1, still)
    validated.validation.repairs = repairs
    return validated


# Which of the years a model's answer named are held for the companies and figures asked.
HELD_YEARS_SQL = """
SELECT DISTINCT fiscal_year FROM metric_values
WHERE symbol = ANY($1::text[]) AND metric = ANY($2::text[]) AND fiscal_year = ANY($3::int[])
  AND period_type = 'annual'
ORDER BY fiscal_year
"""


def unfetched_years(redo: Redo) -> list[int]:
    """The fiscal years a rejected answer named that no fetched figure is of: what the
    model wanted to talk about and the plan did not fetch."""
    repair = redo.completed.repair
    if repair is None:
        return []
    fetched = {fact.fiscal_year for result in redo.completed.results for fact in result.facts}
    named = {year.year for year in extract_years(repair.previous_answer)}
    return sorted(named - fetched)


def refetch_route(route: RouteDecided, held: list[int]) -> RouteDecided | None:
    """The same plan with the held years it missed added, so the next answer has the figures
    it wanted to talk about; None when there is nothing to add."""
    calls = route.tool_calls
    if not held or len(calls) != 1:
        return None
    arguments = calls[0].arguments
    if not isinstance(arguments, GetFinancialMetricsArgs) or arguments.period != "annual":
        return None
    years = set(arguments.fiscal_years or [])
    if set(held) <= years:
        return None
    wider = arguments.model_copy(update={"last": None, "fiscal_years": sorted(years | set(held))})
    return route.model_copy(update={"tool_calls": [ToolCall.of(wider)]})


async def refetch_for(db: Fetcher, redo: Redo) -> RouteDecided | None:
    """A plan that fetches the held years a model's answer named but the tools did not fetch."""
    route = redo.completed.route
    years = unfetched_years(redo)
    if not years or not route.tool_calls:
        return None
    arguments = route.tool_calls[0].arguments
    if not isinstance(arguments, GetFinancialMetricsArgs):
        return None
    rows = await db.fetch(HELD_YEARS_SQL, arguments.symbols, arguments.metrics, years)
    return refetch_route(route, [row["fiscal_year"] for row in rows])


async def contradictions(db: Fetcher, answer: str, route: RouteDecided) -> list[ValidationIssue]:
    """Issues for the "not held" claims in `answer` that the database contradicts."""
    claims = absence_claims(answer, route)
    return contradiction_issues(await held_after_all(db, claims)) if claims else []


async def settle(
    db: Fetcher, draft: AnswerDrafted, attempt: int
) -> AnswerValidated | Redo | RouteDecided:
    """What the validator does with a draft: show it (repaired if it is a template), send
    it back to be written again, or send its plan back to the tools when the answer wanted
    held periods the plan did not fetch. "Not held" claims are checked against the
    database before anything is shown."""
    contradicted = await contradictions(db, draft.answer, draft.route)
    template_contradicted: list[ValidationIssue] = []
    falls_back = draft.generation.mode == "llm" and attempt + 1 >= MAX_ANSWER_ATTEMPTS
    if falls_back and draft.template_answer:
        # Only the last attempt can fall back to the template: only then is it checked.
        template_contradicted = await contradictions(db, draft.template_answer, draft.route)
    outcome = decide(draft, attempt, contradicted, template_contradicted)
    if isinstance(outcome, Redo):
        return await refetch_for(db, outcome) or outcome
    return outcome


def validate_draft(
    draft: AnswerDrafted, attempts: int = 1, contradicted: Sequence[ValidationIssue] = ()
) -> AnswerValidated:
    sources = [source for result in draft.results for source in result.sources]
    passages = [passage.text for result in draft.results for passage in result.passages]
    validation = check_answer(
        draft.answer,
        draft.facts,
        draft.citations,
        sources,
        passages,
        table=draft.table,
        workings=draft.workings,
    )
    # The facts must be of the question asked, not only right in themselves.
    mismatched = route_issues(draft)
    if contradicted or mismatched:
        checked = validation.numbers_checked
        validation = grade([*validation.issues, *contradicted, *mismatched])
        validation.numbers_checked = checked
    validation.attempts = attempts
    return AnswerValidated(
        answer=draft.answer,
        citations=draft.citations,
        facts=draft.facts,
        needs_clarification=draft.needs_clarification,
        clarifying_question=draft.clarifying_question,
        validation=validation,
        route=RouteSummary.of(draft.route),
        chart=draft.chart,
        table=draft.table,
        workings=draft.workings,
        suggestions=draft.suggestions,
        generation=draft.generation,
    )


async def record_answer(
    db: Executor,
    request_id: str,
    conversation_id: str,
    attempt: int,
    validated: AnswerValidated,
    record: RequestRecord | None = None,
) -> None:
    route = validated.route
    await db.execute(
        INSERT_ANSWER_SQL,
        request_id,
        validated.answer,
        validated.model_dump_json(),
        validated.validation.passed,
        validated.validation.severity,
        attempt,
        conversation_id,
        route.intent if route is not None else None,
        route.model_dump_json() if route is not None else None,
        validated.needs_clarification,
        record.user_id if record else None,
        record.question if record else None,
        route.decided_by if route is not None else None,
        json.dumps([call.model_dump(mode="json") for call in record.tools]) if record else "[]",
        json.dumps(record.timings_ms) if record else "{}",
        record.total_ms if record else None,
        json.dumps(record.tokens) if record else "{}",
        record.cost_usd if record else None,
        json.dumps([run.model_dump(mode="json") for run in record.stages]) if record else "[]",
    )
