"""POST /v1/ask/stream with a model writing the answer: its text streams as `draft_text`
events while it is written, before `drafted`, and the stream still ends with the validated
answer, the body /v1/ask answers, when checking replaces what the model wrote. Real HTTP,
NATS, PostgreSQL and five processes; only the model is the scripted stand-in."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Servers, own_pipeline
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply
from tests.test_ask_stream import FIGURE_QUESTION, PER_REQUEST, stream_question

pytestmark = pytest.mark.e2e

RIGHT = "Apple's revenue in fiscal 2023 was $383.3 billion."
WRONG = "Apple's revenue in fiscal 2023 was $401.2 billion."
TEMPLATE_FIGURE = "$383.3 billion"


def written(text: str) -> ScriptedReply:
    """The model's reply, streamed a few characters at a time, as a model writes."""
    return ScriptedReply(
        content=json.dumps({"answer": text, "citations": []}),
        chunk_chars=6,
        chunk_delay_seconds=0.03,
    )


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[OpenAIStandIn]:
    async with OpenAIStandIn([]) as server:
        yield server


@pytest.fixture(scope="module")
async def llm_client(
    servers: Servers, tmp_path_factory: pytest.TempPathFactory, model: OpenAIStandIn
) -> AsyncIterator[httpx.AsyncClient]:
    """Five services with the model, on a NATS and a database of their own."""
    env = {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_MODEL": "gpt-4o-mini",
    }
    tmp_path: Path = tmp_path_factory.mktemp("stream-llm")
    async with own_pipeline(servers, tmp_path, "t_ask_stream_llm", env) as client:
        yield client


def drafts_by_attempt(events: list[tuple[str, Any]]) -> dict[int, str]:
    """Each attempt's draft text, its pieces joined in seq order (which must be the order
    they came in, from 0, with none missing)."""
    pieces: dict[int, list[tuple[int, str]]] = {}
    for name, data in events:
        if name == "draft_text":
            assert data["stage"] == "answerer" and data["kind"] == data["summary"]["kind"]
            pieces.setdefault(data["attempt"], []).append(
                (data["summary"]["seq"], data["summary"]["text"])
            )
    for told in pieces.values():
        assert [seq for seq, _ in told] == list(range(len(told)))
    return {attempt: "".join(text for _, text in told) for attempt, told in pieces.items()}


def without_draft_text(events: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in events if name != "draft_text"]


async def test_the_models_text_streams_as_it_is_written_before_drafted_and_the_answer(
    llm_client: httpx.AsyncClient, model: OpenAIStandIn
) -> None:
    model.replies = [written(RIGHT), written(RIGHT)]
    events = await stream_question(llm_client, FIGURE_QUESTION)
    names = [name for name, _ in events]
    assert without_draft_text(events) == [
        "accepted",
        "routed",
        "tools_done",
        "drafted",
        "validated",
        "answer",
    ]
    # Every piece of the draft comes after the tools and before the answerer's `drafted`.
    drafted_at = names.index("drafted")
    told_at = [n for n, name in enumerate(names) if name == "draft_text"]
    assert len(told_at) >= 2 and names.index("tools_done") < told_at[0]
    assert told_at[-1] < drafted_at
    assert drafts_by_attempt(events) == {0: RIGHT}

    by_kind = dict(events)
    assert by_kind["drafted"]["summary"]["mode"] == "llm"
    streamed = by_kind["answer"]
    assert streamed["answer"] == RIGHT
    assert streamed["generation"]["mode"] == "llm"
    assert streamed["generation"]["prompt_tokens"] == 50  # from the stream's usage chunk

    asked = (await llm_client.post("/v1/ask", json={"question": FIGURE_QUESTION})).json()
    assert set(streamed) == set(asked)
    assert {k: v for k, v in streamed.items() if k not in PER_REQUEST} == {
        k: v for k, v in asked.items() if k not in PER_REQUEST
    }
    assert [request["stream"] for request in model.requests[-2:]] == [True, True]


async def test_a_draft_the_check_rejects_each_time_ends_with_the_validated_template_answer(
    llm_client: httpx.AsyncClient, model: OpenAIStandIn
) -> None:
    model.replies = [written(WRONG), written(WRONG), written(WRONG)]
    events = await stream_question(llm_client, FIGURE_QUESTION)
    # Each attempt the validator sends back is written again, with its own draft text.
    assert without_draft_text(events) == [
        "accepted",
        "routed",
        "tools_done",
        "drafted",
        "drafted",
        "drafted",
        "validated",
        "answer",
    ]
    assert drafts_by_attempt(events) == {0: WRONG, 1: WRONG, 2: WRONG}
    name, answer = events[-1]
    assert name == "answer"
    assert TEMPLATE_FIGURE in answer["answer"] and "$401.2" not in answer["answer"]
    assert answer["validation"]["passed"] and answer["validation"]["attempts"] == 3
    assert answer["generation"]["mode"] == "deterministic"
    assert "validation" in answer["generation"]["fallback_reason"]
