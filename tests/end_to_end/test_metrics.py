"""Prometheus metrics on every process (shared/metrics.py): the gateway's GET /metrics counts
and times each request by route template and status; each stage serves its own on
FINQ_<STAGE>_METRICS_PORT, where its handled messages, the validator's verdicts and repairs
and the model's calls, tokens and cost move with the work; `finq up` gives every stage
process a port of its own; a stage's metrics server stops with the stage."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.control.servers import free_ports, port_is_open
from services.control.supervisor import ServiceProcess, Supervisor
from shared.subjects import TOOLS_COMPLETED, Stage
from tests.conftest import Servers, own_finq
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply
from tests.otlp_capture import OtlpCapture

QUESTION = "What was Apple's revenue in fiscal 2023?"
RIGHT = "Apple's revenue in fiscal 2023 was $383.3 billion."
WRONG = "Apple's revenue in fiscal 2023 was $401.2 billion."
STAGES = ("router", "tools", "answerer", "validator", "ingest")

# (sample name, its labels) → value
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a labelled series that has not been touched yet."""
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(client: httpx.AsyncClient, url: str = "/metrics") -> Samples:
    response = await client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


@pytest.mark.e2e
async def test_the_gateway_counts_and_times_every_request_by_route_template_and_status(
    client: httpx.AsyncClient,
) -> None:
    before = await scrape(client)
    asked = []
    for question in (QUESTION, "NVIDIA net income FY2024", "Alphabet total assets 2023"):
        response = await client.post("/v1/ask", json={"question": question})
        assert response.status_code == 200, response.text
        asked.append(response.json())
    assert (await client.post("/v1/ask", json={"question": ""})).status_code == 422
    assert (await client.get(f"/v1/requests/{asked[0]['request_id']}")).status_code == 200
    assert (await client.get("/no/such/route")).status_code == 404
    after = await scrape(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ask = {"route": "/v1/ask", "method": "POST"}
    assert moved("finq_http_requests_total", **ask, status="200") == 3
    assert moved("finq_http_requests_total", **ask, status="422") == 1
    assert moved("finq_http_request_duration_seconds_count", **ask) == 4
    assert moved("finq_http_request_duration_seconds_bucket", **ask, le="+Inf") == 4
    assert moved("finq_http_request_duration_seconds_sum", **ask) > 0
    # By the route's template, never the id in the path; a path no route takes is one series.
    log_route = {"route": "/v1/requests/{request_id}", "method": "GET", "status": "200"}
    assert moved("finq_http_requests_total", **log_route) == 1
    assert moved("finq_http_requests_total", route="unmatched", method="GET", status="404") == 1
    # The first scrape is counted by the second.
    assert moved("finq_http_requests_total", route="/metrics", method="GET", status="200") == 1
    # For the scraper, not the API's clients: not in the schema.
    assert "/metrics" not in (await client.get("/openapi.json")).json()["paths"]


def answer_reply(text: str) -> ScriptedReply:
    return ScriptedReply(content=json.dumps({"answer": text, "citations": []}))


@pytest.mark.e2e
async def test_each_stage_serves_its_own_metrics_and_they_move_with_its_work(
    servers: Servers, tmp_path: Path, span_capture: OtlpCapture
) -> None:
    # Chosen together, so no two stages are handed the same port.
    ports = dict(zip(STAGES, free_ports(len(STAGES)), strict=True))
    # The model's first answer has a wrong figure: the validator sends it back once.
    async with (
        OpenAIStandIn([answer_reply(WRONG), answer_reply(RIGHT)]) as model,
        own_finq(
            servers,
            tmp_path,
            "t_metrics_stages",
            {
                **{
                    f"FINQ_{stage.upper()}_METRICS_PORT": str(port) for stage, port in ports.items()
                },
                "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_MODEL": "gpt-4o-mini",
                "OTEL_EXPORTER_OTLP_ENDPOINT": span_capture.endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            },
        ) as finq,
    ):
        response = await finq.client.post("/v1/ask", json={"question": QUESTION})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"] == RIGHT and body["validation"]["attempts"] == 2
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = {
                stage: await scrape(http, f"http://127.0.0.1:{port}/metrics")
                for stage, port in ports.items()
            }
        trace = (await finq.client.get(f"/v1/traces/{body['trace_id']}")).json()
        processes = list(finq.supervisor.services)

    def handled(stage: str, outcome: str = "ok") -> float:
        return value(metrics[stage], "finq_stage_messages_total", stage=stage, outcome=outcome)

    # Each process reports its own work only: one registry per process.
    assert (handled("router"), handled("tools"), handled("answerer"), handled("validator")) == (
        1,
        1,
        2,
        2,
    )
    assert handled("ingest") == 0 and value(metrics["tools"], "finq_stage_messages_total") == 0
    assert value(metrics["tools"], "finq_stage_handling_seconds_count", stage="tools") == 1
    assert value(metrics["answerer"], "finq_stage_handling_seconds_count", stage="answerer") == 2
    for stage in ("router", "tools", "answerer", "validator"):
        for outcome in ("failed", "dead_lettered", "redelivered"):
            assert handled(stage, outcome) == 0, (stage, outcome)

    validator = metrics["validator"]
    assert value(validator, "finq_repair_attempts_total", kind="rewrite") == 1
    assert value(validator, "finq_validation_results_total", severity="none", passed="true") == 1

    answerer = metrics["answerer"]
    model_labels = {"stage": "answerer", "model": "gpt-4o-mini"}
    assert value(answerer, "finq_model_calls_total", **model_labels, outcome="ok") == 2
    assert value(answerer, "finq_model_tokens_total", **model_labels, direction="prompt") == 100
    assert value(answerer, "finq_model_tokens_total", **model_labels, direction="completion") == 20
    # gpt-4o-mini at $0.15 / $0.60 per million tokens.
    assert value(answerer, "finq_model_cost_usd_total", **model_labels) == pytest.approx(2.7e-5)
    assert value(metrics["router"], "finq_model_calls_total", stage="router") == 0

    # The trace shows both attempts, what became of the first, and what the second cost.
    [question] = trace["questions"]
    stages = question["stages"]
    assert [(s["stage"], s["attempt"]) for s in stages] == [
        ("router", 0),
        ("tools", 0),
        ("answerer", 0),
        ("validator", 0),
        ("answerer", 1),
        ("validator", 1),
    ]
    assert stages[2]["decision"] == "wrote an answer the validator sent back"
    assert stages[3]["decision"] == "sent the answer back to be written again with its findings"
    assert stages[4]["decision"].startswith("written by gpt-4o-mini (50+10 tokens, $0.000013")
    assert question["explanation"].endswith("and passed the answer after 2 attempts.")

    # Each model call is a CLIENT span under the answerer's span for its attempt.
    def model_calls(spans: list) -> list:
        return [s for s in spans if s.trace_id == body["trace_id"] and s.name.startswith("chat ")]

    span_capture.wait_for(lambda spans: len(model_calls(spans)) == 2)
    spans = span_capture.trace(body["trace_id"])
    answering = {
        s.span_id
        for s in spans
        if s.service == "finq-answerer" and s.name == f"process {TOOLS_COMPLETED}"
    }
    calls = model_calls(spans)
    assert len(answering) == 2 and {call.parent_span_id for call in calls} == answering
    for call in calls:
        assert call.service == "finq-answerer"
        assert call.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert (
            call.attributes["gen_ai.usage.input_tokens"],
            call.attributes["gen_ai.usage.output_tokens"],
        ) == (50, 10)

    # Stopped with its stage: every stage drained and exited by itself, its port closed.
    for process in processes:
        if process.stage != Stage.GATEWAY:  # uvicorn ends by re-raising SIGTERM
            assert process.process is not None and process.process.returncode == 0, process.name
    for stage, port in ports.items():
        assert not port_is_open(port), stage


def test_finq_up_gives_each_stage_process_a_metrics_port_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[ServiceProcess] = []
    monkeypatch.setattr(ServiceProcess, "start", lambda self: started.append(self))
    supervisor = Supervisor(
        tmp_path, {"PATH": "/bin"}, {Stage.TOOLS: 2, Stage.ANSWERER: 2}, metrics_base_port=42300
    )
    supervisor.start()
    added = supervisor.add_replica(Stage.VALIDATOR)

    ports = {service.name: service.metrics_port for service in supervisor.services}
    assert ports.pop("gateway-0") is None  # it serves /metrics on its HTTP port
    assert sorted(ports.values()) == list(range(42300, 42300 + len(ports)))
    assert ports[added.name] == 42300 + len(ports) - 1
    for service in supervisor.services:
        if service.metrics_port is not None:
            variable = f"FINQ_{service.stage.value.upper()}_METRICS_PORT"
            assert service.env[variable] == str(service.metrics_port), service.name
    assert len(started) == len(supervisor.services)
    # Off unless asked for: the tests' pipelines and a bare Supervisor set no port.
    monkeypatch.setattr(ServiceProcess, "start", lambda self: None)
    plain = Supervisor(tmp_path / "plain", {})
    plain.start()
    assert all(s.metrics_port is None for s in plain.services)
    assert not any(key.endswith("_METRICS_PORT") for s in plain.services for key in s.env)
