"""The LLM paths through the five real processes: an answerer whose model writes a wrong
figure is sent back and shows the right one, and a slow model is not a redelivery. The
model is a scripted OpenAI-protocol server on loopback; everything else is real."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest

from tests.conftest import ModelPipeline, Servers, model_env, own_pipeline
from tests.helpers import wait_until
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

pytestmark = pytest.mark.e2e
QUESTION = "What was Apple's revenue in fiscal 2023?"
RIGHT = "Apple's revenue in fiscal 2023 was $383.3 billion."


def answer_reply(text: str, delay_seconds: float = 0.0) -> ScriptedReply:
    return ScriptedReply(
        content=json.dumps({"answer": text, "citations": []}), delay_seconds=delay_seconds
    )


def pipeline_with_model(
    servers: Servers,
    tmp_path: Path,
    model: OpenAIStandIn,
    name: str,
    env: dict[str, str],
) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    """Five services on a NATS and a database of their own, with the model and `env`."""
    return own_pipeline(servers, tmp_path, name, {**model_env(model), **env})


async def test_a_wrong_figure_from_the_model_is_regenerated_to_the_right_one(
    model_pipeline: ModelPipeline,
) -> None:
    model = model_pipeline.script(
        answer_reply("Apple's revenue in fiscal 2023 was $401.2 billion."),
        answer_reply(RIGHT),
    )
    client = model_pipeline.client
    body = (await client.post("/v1/ask", json={"question": QUESTION})).json()
    log = (await client.get(f"/v1/requests/{body['request_id']}")).json()
    assert body["answer"] == RIGHT
    assert body["validation"]["passed"] and body["validation"]["attempts"] == 2
    assert body["generation"]["mode"] == "llm"
    assert log["attempts"] == 2 and log["tokens"]["answerer"]["model"] == "gpt-4o-mini"
    assert len(model.requests) == 2
    assert "$401.2 billion" in model.requests[1]["messages"][-1]["content"]


async def test_a_request_makes_no_more_model_calls_than_its_cap_and_falls_back_to_the_template(
    servers: Servers, tmp_path: Path
) -> None:
    wrong = "Apple's revenue in fiscal 2023 was $401.2 billion."
    async with (
        OpenAIStandIn([answer_reply(wrong), answer_reply(wrong), answer_reply(wrong)]) as model,
        pipeline_with_model(
            servers, tmp_path, model, "t_llm_cap", {"FINQ_MAX_MODEL_CALLS_PER_REQUEST": "1"}
        ) as client,
    ):
        body = (await client.post("/v1/ask", json={"question": QUESTION})).json()
    # Without the cap the model would have written three times; with it, once, and the
    # redo is the template answer, which validates.
    assert len(model.requests) == 1
    assert "$383.3 billion" in body["answer"] and "$401.2" not in body["answer"]
    assert body["validation"]["passed"] and body["validation"]["attempts"] == 2
    assert body["generation"]["mode"] == "deterministic"
    assert body["generation"]["fallback_reason"] == "model call limit reached for this request"


async def test_a_slow_model_is_waited_for_not_redelivered(model_pipeline: ModelPipeline) -> None:
    # Three ack waits (1 s each) pass while the model thinks.
    model = model_pipeline.script(answer_reply(RIGHT, delay_seconds=3.0))
    body = (await model_pipeline.client.post("/v1/ask", json={"question": QUESTION})).json()
    assert body["answer"] == RIGHT
    assert body["validation"]["attempts"] == 1
    assert len(model.requests) == 1


async def test_a_held_year_the_model_named_but_was_not_fetched_is_fetched_and_answered(
    model_pipeline: ModelPipeline,
) -> None:
    both = (
        "Apple's revenue in fiscal 2023 was $383.3 billion, "
        "down from $394.3 billion in fiscal 2022."
    )
    model = model_pipeline.script(answer_reply(both), answer_reply(both))
    body = (await model_pipeline.client.post("/v1/ask", json={"question": QUESTION})).json()
    assert body["answer"] == both, (body["generation"], body["validation"], len(model.requests))
    assert body["validation"]["passed"] and body["validation"]["attempts"] == 2
    assert body["route"]["tool_calls"][0]["arguments"]["fiscal_years"] == [2022, 2023]
    refetched = json.loads(model.requests[1]["messages"][1]["content"])
    assert {fact["period"] for fact in refetched["facts"]} == {"FY2022", "FY2023"}


async def test_a_models_false_no_data_claim_is_checked_against_the_database_and_corrected(
    model_pipeline: ModelPipeline,
) -> None:
    false_claim = (
        "Apple's revenue in fiscal 2023 was $383.3 billion. "
        "No data is available for Apple's revenue in fiscal 2022."
    )
    both = (
        "Apple's revenue in fiscal 2023 was $383.3 billion, "
        "down from $394.3 billion in fiscal 2022."
    )
    model_pipeline.script(answer_reply(false_claim), answer_reply(both))
    body = (await model_pipeline.client.post("/v1/ask", json={"question": QUESTION})).json()
    log = (await model_pipeline.client.get(f"/v1/requests/{body['request_id']}")).json()
    assert body["answer"] == both
    assert body["validation"]["passed"] and body["validation"]["attempts"] == 2
    assert body["route"]["tool_calls"][0]["arguments"]["fiscal_years"] == [2022, 2023]
    assert log["attempts"] == 2


async def test_past_its_limit_a_gateway_refuses_at_once_and_the_admitted_question_is_answered(
    servers: Servers, tmp_path: Path
) -> None:
    async with (
        OpenAIStandIn([answer_reply(RIGHT, delay_seconds=2.0)]) as model,
        pipeline_with_model(
            servers, tmp_path, model, "t_llm_admission", {"FINQ_GATEWAY_MAX_IN_FLIGHT": "1"}
        ) as client,
    ):
        first = asyncio.create_task(client.post("/v1/ask", json={"question": QUESTION}))
        await wait_until(lambda: len(model.requests) == 1, within=30)  # being answered
        started = time.monotonic()
        refused = await client.post(
            "/v1/ask", json={"question": "What was NVIDIA's revenue in fiscal 2024?"}
        )
        refused_after = time.monotonic() - started
        admitted = await first
    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "overloaded" and refused.headers["retry-after"] == "1"
    assert refused_after < 1.0  # refused at once, not queued behind the first
    assert admitted.status_code == 200 and admitted.json()["answer"] == RIGHT
