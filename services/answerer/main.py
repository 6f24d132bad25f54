"""Answerer wiring: each tools.completed becomes answer.drafted (templates, or a model's
prose when OPENAI_API_KEY is set, its text told as it is written)."""

from __future__ import annotations

from services.answerer.drafting import draft_answer
from services.answerer.llm_writing import LlmAnswerWriter
from services.answerer.settings import AnswererSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts.answers import ToolsCompleted
from shared.contracts.envelope import Envelope, ModelCallBudget
from shared.runtime import StageClients, run, serve_stage
from shared.stage_events import DraftTextTeller, StageEventPublisher


def build_writer(clients: StageClients) -> LlmAnswerWriter | None:
    settings = clients.settings
    assert isinstance(settings, AnswererSettings)
    if not settings.llm_configured:
        return None
    # openai takes about a second to import: a stage loads it only when a model is configured.
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key=settings.openai_key,
        base_url=settings.openai_base_url,
        timeout=settings.answerer_llm_timeout_seconds,
        max_retries=0,
    )
    clients.cleanup.push_async_callback(client.close)
    return LlmAnswerWriter(
        client,
        settings.openai_model,
        settings.answerer_llm_prices,
        timeout_seconds=settings.answerer_llm_timeout_seconds,
    )


async def build_handler(clients: StageClients) -> Handler:
    writer = build_writer(clients)
    assert isinstance(clients.settings, AnswererSettings)
    limit = clients.settings.max_model_calls_per_request
    # The model's text as it is written goes where the stage's events go (told only when
    # a model writes: a template answer has no draft worth previewing).
    events = StageEventPublisher(clients.nc, subjects.Stage.ANSWERER)

    async def handle(envelope: Envelope[ToolsCompleted]) -> Forward:
        drafted = draft_answer(envelope.payload)
        budget = ModelCallBudget.of(envelope, limit)
        if writer is not None:
            draft_text = (
                DraftTextTeller(events, envelope.request_id, envelope.attempt)
                if envelope.watched
                else None
            )
            drafted = await writer.write(envelope.payload, drafted, budget, draft_text)
        carried = envelope.carry(drafted)
        carried.model_calls += budget.used
        return Forward(subjects.ANSWER_DRAFTED, carried)

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
