"""GET /v1/traces/{trace_id}: one question's stages (router, tools, answerer, validator)
with their starts, durations, decisions and errors and the route in plain words, read from
what the stages recorded; the asker's own only (another user's trace is a 404). And the
OpenTelemetry trace of one question: every stage's span parented on the span that sent it
its message, and the database statements and model calls as children of the stage spans."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import asyncpg
import httpx
import pytest

from shared.identity import add_user
from shared.subjects import ANSWER_DRAFTED, QUESTION_ASKED, ROUTE_DECIDED, TOOLS_COMPLETED
from tests.conftest import RunningFinq, another_gateway
from tests.otlp_capture import CapturedSpan, OtlpCapture

pytestmark = pytest.mark.e2e
QUESTION = "What was Apple's revenue in fiscal 2023?"
JAEGER = "http://jaeger.test:16686"


@dataclass
class Keys:
    alice: str
    bob: str


@pytest.fixture(scope="module")
def keys(finq: RunningFinq) -> Keys:
    async def make() -> Keys:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            suffix = os.urandom(3).hex()
            _, alice = await add_user(conn, f"trace-alice-{suffix}")
            _, bob = await add_user(conn, f"trace-bob-{suffix}")
            return Keys(alice, bob)
        finally:
            await conn.close()

    return asyncio.run(make())


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def ask(client: httpx.AsyncClient, question: str, key: str | None = None) -> dict:
    response = await client.post(
        "/v1/ask", json={"question": question}, headers=bearer(key) if key else {}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_questions_trace_lists_its_stages_in_order_with_what_each_decided(
    client: httpx.AsyncClient,
) -> None:
    asked = await ask(client, QUESTION)
    response = await client.get(f"/v1/traces/{asked['trace_id']}")
    assert response.status_code == 200, response.text
    trace = response.json()
    assert trace["trace_id"] == asked["trace_id"]
    assert trace["jaeger_url"] is None  # FINQ_JAEGER_URL is not set on this gateway
    [question] = trace["questions"]
    assert (question["request_id"], question["question"]) == (asked["request_id"], QUESTION)
    assert question["answered"] is True
    assert (question["intent"], question["decided_by"]) == ("metric_lookup", "rules")

    stages = question["stages"]
    assert [(s["stage"], s["attempt"]) for s in stages] == [
        ("router", 0),
        ("tools", 0),
        ("answerer", 0),
        ("validator", 0),
    ]
    starts = [datetime.fromisoformat(s["started_at"]) for s in stages]
    assert starts == sorted(starts)
    assert datetime.fromisoformat(question["asked_at"]) <= starts[0]
    assert all(s["duration_ms"] >= 0 for s in stages)
    assert question["total_ms"] >= sum(s["duration_ms"] for s in stages[:-1])
    decisions = {s["stage"]: s["decision"] for s in stages}
    assert decisions["router"].startswith("metric_lookup by rules (confidence ")
    assert decisions["router"].endswith(": get_financial_metrics")
    assert decisions["tools"] == "get_financial_metrics: 1 facts"
    assert decisions["answerer"] == "template answer"
    assert re.fullmatch(
        r"passed \(severity none; [1-9]\d* numbers? checked; 1 attempt\)", decisions["validator"]
    )
    assert all(s["errors"] == [] for s in stages)

    explanation = question["explanation"]
    assert explanation.startswith(
        "the rules read 'Apple's' as Apple (AAPL), revenue and 'fiscal 2023' as FY2023; "
        "the rules decided metric_lookup alone (score "
    )
    assert "so the classifier was not needed; the plan called get_financial_metrics; " in (
        explanation
    )
    assert re.search(
        r"the validator checked [1-9]\d* numbers? and passed the answer\.$", explanation
    )


async def test_only_the_asker_reads_a_trace_and_anyone_else_gets_a_404(
    client: httpx.AsyncClient, keys: Keys
) -> None:
    asked = await ask(client, "NVIDIA revenue in fiscal 2024", keys.alice)
    path = f"/v1/traces/{asked['trace_id']}"
    mine = await client.get(path, headers=bearer(keys.alice))
    assert mine.status_code == 200, mine.text
    assert [q["request_id"] for q in mine.json()["questions"]] == [asked["request_id"]]
    for headers in (bearer(keys.bob), {}):  # another user, and the local user
        theirs = await client.get(path, headers=headers)
        assert theirs.status_code == 404, theirs.text
        assert theirs.json()["code"] == "trace_not_found"
    unknown = await client.get(f"/v1/traces/{'0' * 32}", headers=bearer(keys.alice))
    assert unknown.status_code == 404 and unknown.json()["code"] == "trace_not_found"
    malformed = await client.get("/v1/traces/not-a-trace-id")
    assert malformed.status_code == 422 and malformed.json()["code"] == "invalid_request"


@pytest.fixture(scope="module")
def gateway_linking_jaeger(
    finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with another_gateway(finq, tmp_path_factory, {"FINQ_JAEGER_URL": JAEGER}) as url:
        yield url


async def test_with_jaeger_configured_the_trace_links_to_it(
    client: httpx.AsyncClient, gateway_linking_jaeger: str
) -> None:
    asked = await ask(client, QUESTION)
    async with httpx.AsyncClient(base_url=gateway_linking_jaeger, timeout=30) as other:
        trace = (await other.get(f"/v1/traces/{asked['trace_id']}")).json()
    assert trace["jaeger_url"] == f"{JAEGER}/trace/{asked['trace_id']}"
    assert trace["questions"][0]["request_id"] == asked["request_id"]


def process_span(spans: list[CapturedSpan], service: str, subject: str) -> CapturedSpan | None:
    return next((s for s in spans if s.service == service and s.name == f"process {subject}"), None)


def send_span(spans: list[CapturedSpan], service: str, subject: str) -> CapturedSpan | None:
    return next((s for s in spans if s.service == service and s.name == f"send {subject}"), None)


def database_spans(spans: list[CapturedSpan], service: str) -> list[CapturedSpan]:
    return [
        s
        for s in spans
        if s.service == service and s.attributes.get("db.system.name") == "postgresql"
    ]


async def test_one_questions_spans_link_each_stage_to_its_sender_and_queries_to_their_stage(
    client: httpx.AsyncClient, span_capture: OtlpCapture
) -> None:
    asked = await ask(client, QUESTION)
    hops = [
        ("finq-gateway", "finq-router", QUESTION_ASKED),
        ("finq-router", "finq-tools", ROUTE_DECIDED),
        ("finq-tools", "finq-answerer", TOOLS_COMPLETED),
        ("finq-answerer", "finq-validator", ANSWER_DRAFTED),
    ]

    def complete(spans: list[CapturedSpan]) -> bool:
        mine = [s for s in spans if s.trace_id == asked["trace_id"]]
        return (
            # The request's own span ends after its response: it may come last.
            any(s.service == "finq-gateway" and s.name == "POST /v1/ask" for s in mine)
            and all(process_span(mine, receiver, subject) for _, receiver, subject in hops)
            and all(send_span(mine, sender, subject) for sender, _, subject in hops)
            and any(s.service == "finq-validator" and s.name.startswith("send ") for s in mine)
            # The gateway writes the question and the validator the answer; the tools may
            # answer from memory (services/tools/metric_values.py) and query nothing.
            and all(database_spans(mine, service) for service in ("finq-gateway", "finq-validator"))
        )

    span_capture.wait_for(complete)
    trace = span_capture.trace(asked["trace_id"])
    by_id = {span.span_id: span for span in trace}
    [request] = [s for s in trace if s.service == "finq-gateway" and s.name == "POST /v1/ask"]
    stage_spans = {"finq-gateway": request}
    for sender, receiver, subject in hops:
        sent = send_span(trace, sender, subject)
        received = process_span(trace, receiver, subject)
        assert sent is not None and received is not None
        # The sender's PRODUCER span is a child of its own stage's span, and the receiving
        # stage's CONSUMER span a child of it: the trace crosses NATS unbroken.
        assert sent.parent_span_id == stage_spans[sender].span_id, (sender, subject)
        assert received.parent_span_id == sent.span_id, (receiver, subject)
        stage_spans[receiver] = received
    [reply] = [s for s in trace if s.service == "finq-validator" and s.name.startswith("send ")]
    assert reply.parent_span_id == stage_spans["finq-validator"].span_id
    # Every statement a stage runs for the question is a CLIENT span under that stage's
    # span (the transaction's BEGIN and COMMIT are not spans of their own).
    for service in ("finq-gateway", "finq-router", "finq-tools", "finq-validator"):
        for query in database_spans(trace, service):
            assert query.parent_span_id == stage_spans[service].span_id, (service, query.name)
            assert query.attributes["db.operation.name"] not in ("BEGIN", "COMMIT")
            assert by_id[query.parent_span_id].service == service
    statements = [q.attributes["db.query.text"] for q in database_spans(trace, "finq-validator")]
    assert any("INSERT INTO query_log" in text for text in statements)
