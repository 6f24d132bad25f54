"""The reconciler: what PostgreSQL holds and the bus lost, published again.

A question is saved before it is published; an upload is stored before it is queued. A
crash between the two, a publish that failed with the broker away, or a stream that
dropped a message it never delivered would leave the work saved and never done. Every few
seconds one gateway (whichever holds a PostgreSQL advisory lock for the round) publishes
again the questions still unanswered some seconds after they were asked and still within
their deadline plus the retry budget, and the uploads stored but not read. It uses the
same message ids, so work the stream still holds is a duplicate the server drops, and an
answer is written once per request whatever happens (answers are keyed by request).

A stream remembers a message id for its duplicate window even after it dropped the message
unread (a full stream drops its oldest), so the same ids could never bring such work back.
A question still unanswered once its own deadline has passed is therefore started afresh
(`Envelope.fresh_start`, part of every message id of that start) at 1, 2, 4, ... times its
deadline: a few fresh starts at most within the retry budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass
from datetime import timedelta

import asyncpg
import structlog

from services.gateway.conversations import load_history
from services.gateway.uploads import Uploads
from shared import bus, subjects
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.questions import QuestionAsked
from shared.db import acting_as
from shared.outages import is_transient

log = structlog.get_logger("finq.gateway.reconciler")

# Held for one round by the gateway that reconciles; the others skip that round.
RECONCILER_LOCK_KEY = 0x66696E72  # "finr"
UNANSWERED_SQL = "SELECT * FROM finq_unanswered_questions($1, $2)"


def fresh_start_for(age_seconds: float, deadline_seconds: float) -> int:
    """Which start of an unanswered question to publish: 0 (the first: what the streams still
    hold of it is dropped as a duplicate) until its deadline has passed, then a fresh start at
    1, 2, 4, ... times its deadline."""
    if deadline_seconds <= 0 or age_seconds < deadline_seconds:
        return 0
    return int(math.log2(age_seconds / deadline_seconds)) + 1


@dataclass
class Reconciler:
    pool: asyncpg.Pool
    publisher: bus.Publisher
    uploads: Uploads
    history_turns: int = 0
    # Work younger than this is still on its way through the stages.
    grace_seconds: float = 20.0
    every_seconds: float = 10.0
    # Past its deadline plus this, a question is no longer worked on (shared/bus.py).
    retry_budget_seconds: float = 300.0

    async def republish_unanswered(self, grace_seconds: float | None = None) -> int:
        """Publish again every question unanswered `grace_seconds` after it was asked and
        still within its deadline plus the retry budget."""
        now = utc_now()
        grace = timedelta(seconds=self.grace_seconds if grace_seconds is None else grace_seconds)
        rows = await self.pool.fetch(
            UNANSWERED_SQL, now - grace, now - timedelta(seconds=self.retry_budget_seconds)
        )
        for row in rows:
            history = await load_history(
                acting_as(self.pool, row["user_id"]),
                row["conversation_id"],
                row["request_id"],
                self.history_turns,
            )
            envelope = Envelope[QuestionAsked](
                request_id=row["request_id"],
                conversation_id=row["conversation_id"],
                user_id=row["user_id"],
                deadline=row["deadline"],
                created_at=row["created_at"],
                fresh_start=fresh_start_for(
                    (now - row["created_at"]).total_seconds(),
                    (row["deadline"] - row["created_at"]).total_seconds(),
                ),
                payload=QuestionAsked(question=row["question"], history=history),
            )
            await self.publisher.publish(subjects.QUESTION_ASKED, envelope)
        return len(rows)

    async def round(self, grace_seconds: float | None = None) -> tuple[int, int] | None:
        """One round, if this gateway holds the lock for it: (questions, uploads) published
        again; None when another gateway is reconciling."""
        async with self.pool.acquire() as conn, conn.transaction():
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", RECONCILER_LOCK_KEY):
                return None
            questions = await self.republish_unanswered(grace_seconds)
            grace = self.grace_seconds if grace_seconds is None else grace_seconds
            uploads = await self.uploads.republish_unfinished(timedelta(seconds=grace))
        if questions or uploads:
            log.info("published again", questions=questions, uploads=uploads)
        return questions, uploads

    async def run(self, stopping: asyncio.Event) -> None:
        """Rounds every `every_seconds` until `stopping` is set. An outage skips a round."""
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self.every_seconds)
            if stopping.is_set():
                return
            try:
                await self.round()
            except Exception as error:
                if not is_transient(error):
                    log.exception("reconciling failed", error=repr(error))
                else:
                    log.warning("reconciling skipped: a dependency is away", error=repr(error))
