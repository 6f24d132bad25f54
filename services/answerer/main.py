"""Answerer wiring: each tools.completed becomes answer.drafted."""

from __future__ import annotations

from services.answerer.drafting import draft_answer
from services.answerer.settings import AnswererSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts import Envelope, ToolsCompleted
from shared.runtime import StageClients, run, serve_stage


async def build_handler(clients: StageClients) -> Handler:
    async def handle(envelope: Envelope[ToolsCompleted]) -> Forward:
        drafted = draft_answer(envelope.payload)
        return Forward(subjects.ANSWER_DRAFTED, envelope.carry(drafted))

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.ANSWERER,
            AnswererSettings(),
            ToolsCompleted,
            build_handler,
            needs_database=False,
        )
    )
