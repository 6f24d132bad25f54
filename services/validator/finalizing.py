"""Checks a drafted answer against its fetched facts and records the final answer."""

from __future__ import annotations

from typing import Any, Protocol

from services.validator.checking import check_answer
from shared.contracts import AnswerDrafted, AnswerValidated, RouteSummary

# One row per request: a redelivered validator finds the row and answers with it. The
# answer's turn in its conversation is written by the same statement, so the two cannot
# disagree, and only by the write that created the answer row.
INSERT_ANSWER_SQL = """
WITH answer AS (
    INSERT INTO answers (request_id, answer, body, validation_passed, validation_severity,
                         attempt)
    VALUES ($1, $2, $3::jsonb, $4, $5, $6)
    ON CONFLICT (request_id) DO NOTHING
    RETURNING request_id
), turn AS (
    INSERT INTO messages (conversation_id, request_id, role, content, intent, route,
                          needs_clarification)
    SELECT c.id, answer.request_id, 'assistant', $2, $8, $9::jsonb, $10
    FROM answer JOIN conversations c ON c.id = $7
    ON CONFLICT (request_id, role) DO NOTHING
)
UPDATE conversations SET updated_at = now()
WHERE id = $7 AND EXISTS (SELECT 1 FROM answer)
"""


class Executor(Protocol):
    async def execute(self, query: str, *args: Any) -> str: ...


def validate_draft(draft: AnswerDrafted) -> AnswerValidated:
    sources = [source for result in draft.results for source in result.sources]
    validation = check_answer(draft.answer, draft.facts, draft.citations, sources)
    return AnswerValidated(
        answer=draft.answer,
        citations=draft.citations,
        facts=draft.facts,
        needs_clarification=draft.needs_clarification,
        clarifying_question=draft.clarifying_question,
        validation=validation,
        route=RouteSummary.of(draft.route),
    )


async def record_answer(
    db: Executor,
    request_id: str,
    conversation_id: str,
    attempt: int,
    validated: AnswerValidated,
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
    )
