"""Checks a drafted answer against its fetched facts and records the final answer."""

from __future__ import annotations

from typing import Any, Protocol

from services.validator.checking import check_answer
from shared.contracts import AnswerDrafted, AnswerValidated, RouteSummary

# One row per request: a redelivered validator finds the row and answers with it.
INSERT_ANSWER_SQL = """
INSERT INTO answers (request_id, answer, body, validation_passed, validation_severity, attempt)
VALUES ($1, $2, $3::jsonb, $4, $5, $6)
ON CONFLICT (request_id) DO NOTHING
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
    db: Executor, request_id: str, attempt: int, validated: AnswerValidated
) -> None:
    await db.execute(
        INSERT_ANSWER_SQL,
        request_id,
        validated.answer,
        validated.model_dump_json(),
        validated.validation.passed,
        validated.validation.severity,
        attempt,
    )
