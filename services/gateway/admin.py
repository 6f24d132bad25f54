"""The operators' view of finq (GET /v1/admin/..., the web app's /admin page): the
questions whose validation failed, the questions finq could not answer, the slowest ones,
the metric phrases the catalog did not know, and the dead letters, each replayable.

Only an operator (`finq users add NAME --operator`; the local user of `finq up`) gets
anything: the gateway asks the database whether the caller is one, and the database
functions that read every user's questions ask again (migration 018), so row-level
security still keeps a non-operator to their own rows whatever this module does.

A replay publishes the dead letter's question again, as the gateway publishes every
question: from the start of the pipeline, as its own user, with a fresh deadline. The
gateway never writes into another stage's input, so a dead letter of a later stage is
replayed as its whole question (the answer is still written once: answers are unique per
request). Its message id is the dead letter's own (`Envelope.fresh_start`
REPLAY_FRESH_START + sequence), so replaying one dead letter twice publishes it once.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Literal

import asyncpg
from nats.js import JetStreamContext
from pydantic import BaseModel, Field

from services.gateway.conversations import load_history
from shared import bus, subjects
from shared.contracts.answers import ValidationIssue
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.questions import QuestionAsked
from shared.db import UserScope, acting_as
from shared.dead_letters import (
    DeadLetter,
    DeadLetterError,
    delete_dead_letter,
    list_dead_letters,
    read_dead_letter,
)

QuestionKind = Literal["failed", "unanswerable", "slowest"]
# A replay's start number: above any the reconciler gives (1, 2, 3, ... as deadlines
# double), so a replay's message ids are never an earlier start's.
REPLAY_FRESH_START = 1 << 20


class NotAnOperator(Exception):
    """The caller may not read how finq does for everyone."""


class NotReplayable(Exception):
    """A dead letter the admin page cannot send again, with the reason in words."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OperatorQuestion(BaseModel):
    request_id: str
    user: str | None = Field(description="The asking user's name")
    question: str
    intent: str | None
    passed: bool | None = Field(description="Whether the shown answer passed validation")
    issues: list[ValidationIssue] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="What the tools found no data for")
    total_ms: float | None
    asked_at: datetime


class OperatorQuestions(BaseModel):
    kind: QuestionKind
    days: int
    questions: list[OperatorQuestion]


class MetricMiss(BaseModel):
    phrase: str
    example: str = Field(description="The latest wording as a user typed it")
    count: int
    last_seen: datetime
    resolved_to: str | None = Field(description="The metric a fallback chose; null: none")
    method: str | None
    confidence: float | None


class MetricMisses(BaseModel):
    misses: list[MetricMiss]


class DeadLetterView(BaseModel):
    seq: int
    stage: str | None
    request_id: str | None
    reason: str
    deliveries: int | None
    dead_at: datetime | None


class DeadLetters(BaseModel):
    dead_letters: list[DeadLetterView]


class ReplayedQuestion(BaseModel):
    seq: int
    request_id: str
    conversation_id: str
    deadline: datetime


async def require_operator(db: UserScope) -> None:
    if not await db.fetchval("SELECT finq_acting_user_is_operator()"):
        raise NotAnOperator


def _json(value: Any) -> Any:
    """A jsonb column as asyncpg returns it (text, unless a codec is set)."""
    return json.loads(value) if isinstance(value, str) else value


async def operator_questions(
    db: UserScope, kind: QuestionKind, days: int, most: int
) -> OperatorQuestions:
    await require_operator(db)
    rows = await db.fetch(
        "SELECT * FROM finq_operator_questions($1, $2, $3)",
        kind,
        utc_now() - timedelta(days=days),
        most,
    )
    questions: list[OperatorQuestion] = []
    for row in rows:
        validation = _json(row["validation"]) or {}
        questions.append(
            OperatorQuestion(
                request_id=row["request_id"],
                user=row["user_name"],
                question=row["question"],
                intent=row["intent"],
                passed=validation.get("passed"),
                issues=[ValidationIssue.model_validate(i) for i in validation.get("issues", [])],
                missing=[str(gap) for gap in _json(row["missing"]) or []],
                total_ms=row["total_ms"],
                asked_at=row["created_at"],
            )
        )
    return OperatorQuestions(kind=kind, days=days, questions=questions)


async def metric_misses(db: UserScope, most: int) -> MetricMisses:
    """The phrases users named a metric with that the catalog did not know, most asked
    first: what to add to the catalog's aliases next."""
    await require_operator(db)
    rows = await db.fetch(
        "SELECT phrase, example, count, last_seen, resolved_to, method, confidence "
        "FROM alias_misses ORDER BY count DESC, last_seen DESC LIMIT $1",
        most,
    )
    return MetricMisses(misses=[MetricMiss(**dict(row)) for row in rows])


def _view(letter: DeadLetter) -> DeadLetterView:
    return DeadLetterView(
        seq=letter.seq,
        stage=letter.stage,
        request_id=letter.request_id,
        reason=letter.reason,
        deliveries=letter.deliveries,
        dead_at=letter.dead_at,
    )


async def dead_letters(db: UserScope, js: JetStreamContext, most: int) -> DeadLetters:
    await require_operator(db)
    letters = await list_dead_letters(js, limit=most)
    return DeadLetters(dead_letters=[_view(letter) for letter in reversed(letters)])


async def replay_question(
    db: UserScope,
    pool: asyncpg.Pool,
    js: JetStreamContext,
    publisher: bus.Publisher,
    seq: int,
    deadline_seconds: float,
    history_turns: int,
) -> ReplayedQuestion:
    """Publish dead letter `seq`'s question again, then delete the dead letter."""
    await require_operator(db)
    try:
        letter = await read_dead_letter(js, seq)
    except DeadLetterError as error:
        raise LookupError(str(error)) from None
    if letter.request_id is None:
        raise NotReplayable(
            "not_replayable",
            f"dead letter {seq} names no question (unreadable message); "
            f"`finq dead replay {seq}` sends its bytes as they are",
        )
    row = await db.fetchrow("SELECT * FROM finq_operator_question($1)", letter.request_id)
    if row is None:
        raise NotReplayable(
            "not_replayable",
            f"dead letter {seq} is not a saved question (an upload or a message of a stage "
            f"without one); `finq dead replay {seq}` sends it as it was",
        )
    if row["answered"]:
        await delete_dead_letter(js, seq)
        raise NotReplayable(
            "already_answered",
            f"question {letter.request_id} has been answered since; dead letter {seq} removed",
        )
    now = utc_now()
    history = await load_history(
        acting_as(pool, row["user_id"]), row["conversation_id"], row["request_id"], history_turns
    )
    envelope = Envelope[QuestionAsked](
        request_id=row["request_id"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        deadline=now + timedelta(seconds=deadline_seconds),
        created_at=row["created_at"],
        fresh_start=REPLAY_FRESH_START + seq,
        payload=QuestionAsked(question=row["question"], history=history),
    )
    await publisher.publish(subjects.QUESTION_ASKED, envelope)
    # Only once the stream holds the question again: a failed publish keeps the letter.
    await delete_dead_letter(js, seq)
    return ReplayedQuestion(
        seq=seq,
        request_id=envelope.request_id,
        conversation_id=envelope.conversation_id,
        deadline=envelope.deadline,
    )
