"""Validator wiring: check each answer.drafted, persist it, reply to the gateway."""

from __future__ import annotations

from services.validator.finalizing import record_answer, validate_draft
from services.validator.settings import ValidatorSettings
from shared import subjects
from shared.bus import Handler, Reply
from shared.contracts import AnswerDrafted, Envelope
from shared.runtime import StageClients, run, serve_stage


async def build_handler(clients: StageClients) -> Handler:
    pool = clients.pool
    assert pool is not None

    async def handle(envelope: Envelope[AnswerDrafted]) -> Reply:
        validated = validate_draft(envelope.payload)
        await record_answer(
            pool, envelope.request_id, envelope.conversation_id, envelope.attempt, validated
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
