"""POST /v1/ask/stream over real HTTP, NATS and PostgreSQL with the five services: the
stages' events in order as the answer is made, the same final answer as /v1/ask, and a
client that leaves mid-stream leaving no subscription behind while its question is still
answered and stored."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from shared import subjects
from shared.subjects import Stage
from tests.conftest import RunningFinq, read_logs
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

STREAM = "/v1/ask/stream"
FIGURE_QUESTION = "What was Apple's revenue in fiscal 2023?"
CLARIFY_QUESTION = "What was revenue in 2023?"
STAGE_KINDS = ["routed", "tools_done", "drafted", "validated"]
# What tells one asking apart from another of the same question.
PER_REQUEST = ("request_id", "conversation_id", "trace_id")


async def server_sent_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """(event, data) as each event arrives, comments skipped, as an EventSource reads them."""
    name, data = "message", []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)


async def stream_question(client: httpx.AsyncClient, question: str) -> list[tuple[str, Any]]:
    async with client.stream("POST", STREAM, json={"question": question}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        return [event async for event in server_sent_events(response)]


def check_stage_events(events: list[tuple[str, Any]]) -> None:
    """Every stage event is about the accepted request, told by the stage of its kind, in
    the order the stages ran."""
    accepted = events[0][1]
    stages = {
        "routed": "router",
        "tools_done": "tools",
        "drafted": "answerer",
        "validated": "validator",
    }
    stage_events = [data for name, data in events if name in stages]
    for name, data in events:
        if name in stages:
            assert data["kind"] == name == data["summary"]["kind"]
            assert data["stage"] == stages[name]
            assert data["request_id"] == accepted["request_id"]
            assert data["elapsed_ms"] >= 0
    times = [data["at"] for data in stage_events]
    assert times == sorted(times)


async def test_a_figure_question_streams_each_stage_then_the_answer(
    client: httpx.AsyncClient,
) -> None:
    events = await stream_question(client, FIGURE_QUESTION)
    assert [name for name, _ in events] == ["accepted", *STAGE_KINDS, "answer"]
    check_stage_events(events)
    by_kind = dict(events)

    accepted = by_kind["accepted"]
    assert set(accepted) == {"request_id", "conversation_id", "trace_id"}
    assert len(accepted["trace_id"]) == 32

    routed = by_kind["routed"]["summary"]
    assert routed["intent"] == "metric_lookup"
    assert routed["decided_by"] in {"rules", "classifier", "llm"}
    assert [call["tool"] for call in routed["tool_calls"]] == ["get_financial_metrics"]
    assert routed["tool_calls"][0]["arguments"]["symbols"] == ["AAPL"]

    [tool] = by_kind["tools_done"]["summary"]["tools"]
    assert tool["tool"] == "get_financial_metrics"
    assert tool["arguments"] == routed["tool_calls"][0]["arguments"]
    assert tool["facts"] >= 1 and tool["error_code"] is None

    assert by_kind["drafted"]["summary"] == {
        "kind": "drafted",
        "mode": "deterministic",
        "needs_clarification": False,
    }
    assert by_kind["validated"]["summary"] == {
        "kind": "validated",
        "passed": True,
        "severity": "none",
        "attempts": 1,
        "repairs": 0,
    }

    answer = by_kind["answer"]
    assert {key: answer[key] for key in PER_REQUEST} == accepted
    assert "$383.3 billion" in answer["answer"]
    assert answer["validation"]["passed"] is True
    assert answer["route"]["intent"] == "metric_lookup"


async def test_a_question_without_a_company_streams_a_clarifying_answer(
    client: httpx.AsyncClient,
) -> None:
    events = await stream_question(client, CLARIFY_QUESTION)
    assert [name for name, _ in events] == ["accepted", *STAGE_KINDS, "answer"]
    check_stage_events(events)
    by_kind = dict(events)
    routed = by_kind["routed"]["summary"]
    assert (routed["intent"], routed["tool_calls"]) == ("clarify", [])
    assert by_kind["tools_done"]["summary"]["tools"] == []
    assert by_kind["drafted"]["summary"]["needs_clarification"] is True
    answer = by_kind["answer"]
    assert answer["needs_clarification"] is True
    assert "Which company" in answer["clarifying_question"]


@pytest.mark.parametrize("question", [FIGURE_QUESTION, CLARIFY_QUESTION])
async def test_the_streams_answer_is_what_ask_answers(
    client: httpx.AsyncClient, question: str
) -> None:
    events = await stream_question(client, question)
    name, streamed = events[-1]
    assert name == "answer"
    asked = await client.post("/v1/ask", json={"question": question})
    assert asked.status_code == 200, asked.text
    answered = asked.json()

    def apart_from_the_request(body: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in body.items() if key not in PER_REQUEST}

    assert set(streamed) == set(answered)
    assert apart_from_the_request(streamed) == apart_from_the_request(answered)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"question": "   "}, 422, "empty_question"),
        ({"question": "Apple revenue 2023", "conversation_id": "nope"}, 404, None),
    ],
)
async def test_a_refusal_before_the_question_is_accepted_is_a_json_error(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, code: str | None
) -> None:
    response = await client.post(STREAM, json=body)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == (code or "conversation_not_found")


async def gateway_subscriptions(finq: RunningFinq) -> list[str]:
    """Every subject the gateways are subscribed to, as nats-server's /connz lists them."""
    port = finq.servers.nats.monitor_port
    assert port is not None
    async with httpx.AsyncClient() as monitor:
        connz = (await monitor.get(f"http://127.0.0.1:{port}/connz?subs=1&limit=4096")).json()
    return [
        subject
        for connection in connz["connections"]
        if connection.get("name") == "finq-gateway"
        for subject in connection.get("subscriptions_list", [])
    ]


def gateway_log_lines(finq: RunningFinq) -> list[dict[str, Any]]:
    """The gateway's JSON log lines written in full so far (uvicorn's own are not JSON)."""
    lines: list[dict[str, Any]] = []
    for name, text in read_logs(finq.supervisor.log_dir).items():
        if name.startswith("gateway"):
            lines.extend(
                json.loads(line)
                for line in text.splitlines()
                if line.startswith("{") and line.endswith("}")
            )
    return lines


async def test_a_client_that_leaves_after_accepted_leaves_no_subscription_and_is_answered(
    client: httpx.AsyncClient, finq: RunningFinq
) -> None:
    # The routers are held until the gateway has seen its client leave: warm, the answer's
    # four hops can reach the gateway before the close does, and then no client left early.
    routers = [
        service.process.pid
        for service in finq.supervisor.services
        if service.stage == Stage.ROUTER and service.process and service.process.poll() is None
    ]
    for pid in routers:
        os.kill(pid, signal.SIGSTOP)
    try:
        async with client.stream("POST", STREAM, json={"question": FIGURE_QUESTION}) as response:
            assert response.status_code == 200
            first_name, accepted = await anext(server_sent_events(response))
            assert first_name == "accepted"
            request_id = accepted["request_id"]
        # Leaving the block closed the connection mid-stream.

        def left_early() -> bool:
            return any(
                line.get("event") == "stream closed before its answer"
                and line.get("request_id") == request_id
                for line in gateway_log_lines(finq)
            )

        await wait_until(left_early, within=20)
    finally:
        for pid in routers:
            os.kill(pid, signal.SIGCONT)

    async def unsubscribed() -> bool:
        subscribed = await gateway_subscriptions(finq)
        return subjects.request_events_subject(request_id) not in subscribed

    await wait_until(unsubscribed, within=20)
    # Nor is any other stream's subscription left: every stream of this module has ended.
    assert not [
        subject
        for subject in await gateway_subscriptions(finq)
        if subject.startswith(f"{subjects.STAGE_EVENTS_PREFIX}.")
    ]

    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:

        async def stored() -> bool:
            count = await conn.fetchval(
                "SELECT count(*) FROM answers WHERE request_id = $1", request_id
            )
            return bool(count)

        await wait_until(stored, within=30)
    finally:
        await conn.close()
    # The question it asked is answered all the same: GET /v1/requests/{id} has its log.
    logged = await client.get(f"/v1/requests/{request_id}")
    assert logged.status_code == 200, logged.text
    assert logged.json()["intent"] == "metric_lookup"


@pytest.mark.parametrize("question", [FIGURE_QUESTION, CLARIFY_QUESTION])
async def test_without_a_model_no_draft_text_is_told(
    client: httpx.AsyncClient, question: str
) -> None:
    events = await stream_question(client, question)
    assert "draft_text" not in [name for name, _ in events]
    assert dict(events)["drafted"]["summary"]["mode"] == "deterministic"
