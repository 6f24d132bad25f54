"""Validator wiring: check each answer.drafted, persist it, reply to the gateway."""

from __future__ import annotations

import time

from services.validator.finalizing import (
    Redo,
    decide,
    record_answer,
    refetch_for,
    request_record,
)
from services.validator.settings import ValidatorSettings
from shared import subjects
from shared.bus import Forward, Handler, Reply
from shared.contracts import AnswerDrafted, Envelope
from shared.runtime import StageClients, run, serve_stage


async def build_handler(clients: StageClients) -> Handler:
    pool = clients.pool
    assert pool is not None

    async def handle(envelope: Envelope[AnswerDrafted]) -> Reply | Forward:
        started = time.perf_counter()
        validated = decide(envelope.payload, envelope.attempt)
        if isinstance(validated, Redo):
            # Years the model named that are held but were not fetched: fetch them again.
            refetch = await refetch_for(pool, validated)
            subject, payload = (
                (subjects.ROUTE_DECIDED, refetch)
                if refetch is not None
                else (subjects.TOOLS_COMPLETED, validated.completed)
            )
            redo = envelope.carry(payload)
            redo.attempt = envelope.attempt + 1
            return Forward(subject, redo)
        record = request_record(envelope, (time.perf_counter() - started) * 1000)
        await record_answer(
            pool, envelope.request_id, envelope.conversation_id, envelope.attempt, validated, record
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
