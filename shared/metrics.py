"""Every Prometheus metric finq exports, declared once, and how a process serves them.

Each process (the gateway and every stage replica) is its own registry: the metrics live
in the process's default registry, so no multiprocess mode and no shared files are
needed. The gateway serves them at GET /metrics on its own port; a stage, which has no
HTTP server, serves them on FINQ_<STAGE>_METRICS_PORT (or FINQ_METRICS_PORT), when set.

Label values are always from small fixed sets (routes as templates, stage names, outcome
and severity words, configured model names), never ids or user text, so no series count
grows with traffic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.exposition import start_http_server

# Seconds: from a cached route (a few ms) to a question's deadline (30 s) and an upload's
# parse (120 s and more).
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)

# --- the gateway's HTTP requests ---------------------------------------------------------

HTTP_REQUESTS = Counter(
    "finq_http_requests",
    "HTTP requests the gateway answered, by route template (`unmatched` for no route), "
    "method and status",
    ["route", "method", "status"],
)
HTTP_REQUEST_SECONDS = Histogram(
    "finq_http_request_duration_seconds",
    "Time from a request's arrival at the gateway to the end of its response",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)

# --- the stages' messages ----------------------------------------------------------------

STAGE_HANDLING_SECONDS = Histogram(
    "finq_stage_handling_seconds",
    "Time a stage's handler spent on one message (handled or failed), publishing included",
    ["stage"],
    buckets=LATENCY_BUCKETS,
)
STAGE_MESSAGES = Counter(
    "finq_stage_messages",
    "Messages a stage settled, by outcome: ok (acked), failed (nak'ed to be tried again), "
    "dead_lettered; and redelivered, counted when a message arrives for another try "
    "(besides the outcome it then settles with)",
    ["stage", "outcome"],
)
DEAD_LETTERS = Counter(
    "finq_dead_letters",
    "Messages a stage gave up on and copied to the dead-letter stream, by why: "
    "undecodable, deadline_passed, retries_exhausted, poison (the work said no retry helps)",
    ["stage", "reason"],
)

# --- the validator -----------------------------------------------------------------------

VALIDATION_RESULTS = Counter(
    "finq_validation_results",
    "Answers the validator let out, by the worst severity found and whether they passed",
    ["severity", "passed"],
)
VALIDATION_ISSUES = Counter(
    "finq_validation_issues",
    "Issues found in the answers let out, by kind (number, year, date, citation, absence, "
    "company, metric, period, scope) and severity",
    ["kind", "severity"],
)
REPAIR_ATTEMPTS = Counter(
    "finq_repair_attempts",
    "What the validator did to an answer that failed: rewrite (a model's answer sent back "
    "with the findings), refetch (its plan sent back to the tools with the years it "
    "wanted), patch (a template's figure replaced) or withhold (a statement left out)",
    ["kind"],
)

# --- models ------------------------------------------------------------------------------

MODEL_CALLS = Counter(
    "finq_model_calls",
    "Calls to the configured model, by stage, model and outcome (ok, timeout, error)",
    ["stage", "model", "outcome"],
)
MODEL_TOKENS = Counter(
    "finq_model_tokens",
    "Tokens the model calls used, by stage, model and direction (prompt, completion)",
    ["stage", "model", "direction"],
)
MODEL_COST_USD = Counter(
    "finq_model_cost_usd",
    "What the model calls cost in US dollars, where the model's price is configured "
    "(FINQ_ANSWERER_LLM_PRICES)",
    ["stage", "model"],
)

# --- ingest ------------------------------------------------------------------------------

INGEST_JOBS = Counter(
    "finq_ingest_jobs",
    "Uploads the ingest stage finished reading, by outcome: ready, failed, or skipped "
    "(read already, or a newer upload of the same bytes owns the row)",
    ["outcome"],
)


def record_model_call(
    stage: str,
    model: str,
    outcome: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cost_usd: float | None = None,
) -> None:
    """One model call's count, tokens and (when its price is known) cost."""
    MODEL_CALLS.labels(stage, model, outcome).inc()
    if prompt_tokens:
        MODEL_TOKENS.labels(stage, model, "prompt").inc(prompt_tokens)
    if completion_tokens:
        MODEL_TOKENS.labels(stage, model, "completion").inc(completion_tokens)
    if cost_usd:
        MODEL_COST_USD.labels(stage, model).inc(cost_usd)


def record_repairs(repairs: Iterable[str]) -> None:
    """A template answer's repairs (`validation.repairs`: "patched …", "withheld …")."""
    for repair in repairs:
        REPAIR_ATTEMPTS.labels("patch" if repair.startswith("patched") else "withhold").inc()


def exposition() -> tuple[bytes, str]:
    """This process's metrics in the Prometheus text format, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


@dataclass
class MetricsServer:
    """A stage's /metrics endpoint: prometheus_client's WSGI server on a thread of its own,
    so a scrape is answered while the stage's event loop is busy. Started once per
    process and closed at shutdown (`close`), which joins its thread."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()  # returns once serve_forever has stopped
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(host: str, port: int) -> MetricsServer | None:
    """Serve this process's metrics on `host:port`; None when `port` is 0 (off). Raises
    OSError when the port cannot be bound."""
    if not port:
        return None
    server, thread = start_http_server(port, addr=host)
    return MetricsServer(server, thread)
