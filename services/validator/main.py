"""Validator wiring: check each answer.drafted, persist it, reply to the gateway."""

from __future__ import annotations

import time

from services.validator.finalizing import Redo, record_answer, request_record, settle
from services.validator.settings import ValidatorSettings
from shared import subjects
from shared.bus import Forward, Handler, Reply
from shared.contracts.answers import AnswerDrafted, AnswerValidated, Validation
from shared.contracts.envelope import Envelope
from shared.db import acting_as
from shared.metrics import (
    REPAIR_ATTEMPTS,
    VALIDATION_ISSUES,
    VALIDATION_RESULTS,
    record_repairs,
)
from shared.runtime import StageClients, run, serve_stage


def count_validation(validation: Validation) -> None:
    """The metrics of an answer let out: its verdict, its issues and its repairs."""
    VALIDATION_RESULTS.labels(validation.severity, str(validation.passed).lower()).inc()
    for issue in validation.issues:
        VALIDATION_ISSUES.labels(issue.kind, issue.severity).inc()
    record_repairs(validation.repairs)


async def build_handler(clients: StageClients) -> Handler:
    pool = clients.pool
    assert pool is not None

    async def handle(envelope: Envelope[AnswerDrafted]) -> Reply | Forward:
        started = time.perf_counter()
        validated = await settle(pool, envelope.payload, envelope.attempt)
        if not isinstance(validated, AnswerValidated):
            # Written again with the findings, or the plan refetched with the held periods
            # the answer wanted: either way the next attempt.
            subject, payload = (
                (subjects.TOOLS_COMPLETED, validated.completed)
                if isinstance(validated, Redo)
                else (subjects.ROUTE_DECIDED, validated)
            )
            redo = envelope.carry(payload)
            redo.attempt = envelope.attempt + 1
            REPAIR_ATTEMPTS.labels("rewrite" if isinstance(validated, Redo) else "refetch").inc()
            return Forward(subject, redo)
        count_validation(validated.validation)
        record = request_record(envelope, (time.perf_counter() - started) * 1000)
        # Written acting for the asker (from the envelope the gateway stamped): row-level
        # security refuses an answer into another user's conversation.
        await record_answer(
            acting_as(pool, envelope.user_id),
            envelope.request_id,
            envelope.conversation_id,
            envelope.attempt,
            validated,
            record,
        )
        return Reply(envelope.carry(validated))

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.VALIDATOR,
            ValidatorSettings(),
            AnswerDrafted,
            build_handler,
            needs_database=True,
        )
    )
