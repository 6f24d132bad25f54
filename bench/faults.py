"""Fault suite: a steady load of distinct questions through a real pipeline while a nemesis
runs faults, with Jepsen-style counts of what became of every question.

    .venv/bin/python bench/faults.py --short      # >= 30 stage kills, a couple of minutes
    .venv/bin/python bench/faults.py --long       # >= 200 stage kills
    .venv/bin/python bench/faults.py --short --seed 7 --keep

It starts its own PostgreSQL and nats-server on free ports under a temporary folder, loads
the bundled dataset, runs the six services under a Supervisor (restarted when they crash,
as `finq up` does; router and answerer with two replicas each) with short timings, and an
OpenAI-protocol stand-in on loopback as the model. Clients ask distinct questions
(company x metric x year x phrasing, never the same text twice) while each nemesis in turn
injects its faults; every question is counted under the nemesis that was running when it
was asked. At the end it waits until every question is settled (or until the deadline plus
the retry budget and the reconciler's rounds have passed for the last one), reads the
database and the dead-letter stream, prints a table and writes bench/out/faults-*.json and
its section of bench/RESULTS.md.

What each question counts as (one of the first five; "answered twice" is counted besides):

- attempted: the request was sent to the gateway (a refused TCP connection sends nothing:
  it is retried, and counted as `refused`, not as an attempt).
- answered: HTTP 200 with an answer; or, after a 504 or a dropped connection, an answer row
  for its request id is in the database by the end of the run (`late`, counted in
  answered too).
- failed with a clear error (`failed_clear`): an HTTP 4xx/5xx JSON body with a `code`
  (503 unavailable, 502 stage_failed, 429, ...); a 504 deadline_exceeded only if its
  request is later answered (then it is `answered`) or dead-lettered with a reason; or a
  dead letter naming its request id (the DEAD stream, shared/bus.py read_dead_letters).
- lost: attempted, no answer row at the end (after the settle period), no dead letter, and
  the client got no clear error: a 504 that never became an answer, or a dropped
  connection / client timeout whose question was saved and never answered.
- unclear: a dropped connection (or client timeout) whose question was never saved
  (not in the `questions` table by its text): the client cannot know, but nothing of it
  exists, so it is not lost; it is counted on its own.
- answered twice (`twice`): more than one answer row or assistant turn for one request id
  (answers and turns are keyed by request id, so both are checked), more than one question
  row for one question text, or two different answers delivered (the 200's answer is not
  the answer row the database kept).

Besides: `error_then_answered` counts clear errors (502/503) whose request was answered
anyway (the client was told to try again, and a retry would ask it twice), and the poison
nemesis counts its own messages: injected, dead-lettered with a reason, and lost.

Nemeses (each a function below, each with its own row):
- stage_kill: kill -9 of a random consuming stage process (router, tools, answerer,
  validator; ingest has no work in this load), restarted by the supervisor loop.
- nats_kill: kill -9 of nats-server, restarted on the same port and data a moment later.
- postgres_pause: PostgreSQL stopped (fast shutdown) for several seconds, then started.
- stage_pause: SIGSTOP of a random consuming stage process (a network partition of one
  process), SIGCONT seconds later (longer than the ack wait).
- poison: undecodable messages published on every stage subject as the operator: each
  must be dead-lettered with its reason, and the questions around it unaffected.
- slow_model: the model answers only after a delay longer than FINQ_ACK_WAIT_SECONDS.
- full_stream: the stage streams are small (FINQ_STREAM_MAX_BYTES, 1 MiB); the answerers
  are paused while a burst of questions is asked, so their input stream holds more than
  it may keep and drops its oldest messages before they were worked on.
- gateway_kill (only with --gateway-kills): kill -9 of the gateway with requests in flight;
  a request killed between its arrival and its save can only end `unclear`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import asyncpg  # noqa: E402
import httpx  # noqa: E402
from starlette.requests import ClientDisconnect, Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.commands.gateway_readiness import wait_until_ready  # noqa: E402
from services.control.servers import NatsServer, PostgresServer, free_port  # noqa: E402
from services.control.supervisor import Supervisor  # noqa: E402
from shared import bus, subjects  # noqa: E402
from shared.nats_permissions import OPERATOR  # noqa: E402
from shared.subjects import Stage  # noqa: E402
from tests.openai_stand_in import OpenAIStandIn  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "out"
RESULTS_FILE = Path(__file__).resolve().parent / "RESULTS.md"

# The pipeline's timings: short, so a fault costs seconds, not minutes.
ACK_WAIT_SECONDS = 3.0
DEADLINE_SECONDS = 10.0
# While a server is down, a question is asked this often besides the steady load.
PROBE_EVERY_SECONDS = 0.25
# Longer than the database outage: a question saved just before it is answered after it.
RETRY_BUDGET_SECONDS = 90.0
RECONCILE_EVERY_SECONDS = 1.0
RECONCILE_GRACE_SECONDS = 3.0
STREAM_MAX_BYTES = 1024 * 1024  # the smallest FINQ_STREAM_MAX_BYTES takes
PIPELINE_ENV = {
    "FINQ_ACK_WAIT_SECONDS": str(ACK_WAIT_SECONDS),
    "FINQ_NAK_DELAY_SECONDS": "0.2",
    "FINQ_BACKOFF_CAP_SECONDS": "2",
    "FINQ_RETRY_BUDGET_SECONDS": str(RETRY_BUDGET_SECONDS),
    "FINQ_GATEWAY_RECONCILE_EVERY_SECONDS": str(RECONCILE_EVERY_SECONDS),
    "FINQ_GATEWAY_RECONCILE_GRACE_SECONDS": str(RECONCILE_GRACE_SECONDS),
    "FINQ_GATEWAY_DEADLINE_SECONDS": str(DEADLINE_SECONDS),
    "FINQ_ROUTER_METRIC_EMBEDDINGS": "false",
    "FINQ_ROUTER_CLASSIFIER_ENABLED": "false",
    # Every question is a figure's (distinct_questions): nothing searches documents, so the
    # ingest stage loads its model only if something asks it to embed.
    "FINQ_TOOLS_DOCUMENT_SEARCH": "false",
    "FINQ_EMBEDDING_PRELOAD": "false",
    "FINQ_STREAM_MAX_BYTES": str(STREAM_MAX_BYTES),
    "FINQ_LOG_LEVEL": "INFO",
}
REPLICAS = {Stage.ROUTER: 2, Stage.ANSWERER: 2}
# The processes stage_kill and stage_pause choose from: the consuming stages of a question.
QUESTION_STAGES = (Stage.ROUTER, Stage.TOOLS, Stage.ANSWERER, Stage.VALIDATOR)
# A client waits longer than the gateway's deadline: the gateway answers first (504).
CLIENT_TIMEOUT_SECONDS = DEADLINE_SECONDS + 20.0
# After the last question: its deadline, the retry budget, a reconciler round, a margin.
SETTLE_LIMIT_SECONDS = DEADLINE_SECONDS + RETRY_BUDGET_SECONDS + RECONCILE_EVERY_SECONDS + 10.0
SLOW_MODEL_DELAY_SECONDS = ACK_WAIT_SECONDS + 2.0
# Questions in flight while the answerers are paused: enough to overfill their stream soon.
BURST_CONCURRENCY = 160
# Dropped unread past what the paused answerers had already been handed (two pull batches).
FULL_STREAM_DROPS = 150

OUTCOMES = ("answered", "failed_clear", "lost", "unclear")
NEMESES = (
    "none",
    "stage_kill",
    "nats_kill",
    "postgres_pause",
    "postgres_outage",
    "stage_pause",
    "poison",
    "slow_model",
    "full_stream",
    "gateway_kill",
)


# --- questions ---------------------------------------------------------------------------

COMPANY_NAMES = (
    "Apple",
    "AAPL",
    "Apple Inc.",
    "NVIDIA",
    "NVDA",
    "Alphabet",
    "Google",
    "GOOGL",
    "Tesla",
    "TSLA",
)
METRICS = (
    "revenue",
    "net income",
    "total assets",
    "operating income",
    "total liabilities",
    "gross profit",
    "research and development",
    "cash and cash equivalents",
    "diluted EPS",
    "operating cash flow",
    "gross margin",
    "operating margin",
    "free cash flow",
    "stockholders equity",
)
YEARS = tuple(range(2015, 2026))
PHRASINGS = (
    "What was {name}'s {metric} in fiscal {year}?",
    "{name} {metric} FY{year}",
    "{name} {metric} {year}",
    "How much {metric} did {name} report for fiscal {year}?",
    "Show me {name}'s {metric} for {year}",
    "{name} {metric} in fiscal year {year}",
    "Tell me {name}'s {metric} for fiscal {year}",
    "{metric} of {name} in FY{year}",
    "What were {name}'s {metric} figures for {year}?",
    "{name} {metric} for the fiscal year {year}",
    "{name} {metric} Q1 FY{year}",
    "{name} {metric} Q2 FY{year}",
    "{name} {metric} Q3 FY{year}",
    "{name} {metric} Q4 FY{year}",
)


def distinct_questions(seed: int) -> list[str]:
    """Every question text once (43,120 of them: as written and in lower case, the way
    people type), in an order the seed decides."""
    texts = [
        phrasing.format(name=name, metric=metric, year=year)
        for phrasing in PHRASINGS
        for name in COMPANY_NAMES
        for metric in METRICS
        for year in YEARS
    ]
    texts += [text.lower() for text in texts]
    assert len(set(texts)) == len(texts)
    random.Random(seed).shuffle(texts)
    return texts


# --- what one question did ---------------------------------------------------------------


@dataclass
class Attempt:
    index: int
    question: str
    nemesis: str
    started: float  # seconds since the run began
    elapsed: float = 0.0
    status: int | None = None  # HTTP status, None for a transport error
    code: str | None = None  # the error body's code
    request_id: str | None = None
    answer: str | None = None
    transport_error: str | None = None
    # Filled in at the end.
    outcome: str = ""
    late: bool = False
    twice: bool = False
    error_then_answered: bool = False
    detail: str = ""


@dataclass
class Tally:
    nemesis: str
    faults: int = 0
    attempted: int = 0
    answered: int = 0
    late: int = 0
    failed_clear: int = 0
    lost: int = 0
    unclear: int = 0
    twice: int = 0
    error_then_answered: int = 0
    dead_lettered: int = 0  # failed clear by a dead letter (a reason, no HTTP error)
    slowest_error_seconds: float = 0.0  # the longest a 4xx/5xx (not 504) took to come
    refused: int = 0
    poison_injected: int = 0
    poison_dead_lettered: int = 0
    poison_lost: int = 0
    dropped_unread: int = 0  # full_stream: messages the stream dropped before they were read
    error_codes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


# --- the model stand-in ------------------------------------------------------------------

DRAFT_WORDS = ("alpha", "beta", "gamma", "delta", "kappa", "lambda", "sigma", "omega")


class ModelStandIn(OpenAIStandIn):
    """The answerer's model: it writes the reference answer it is given with a random word
    added (so two drafts of one request differ, and an answer written twice shows), after
    `delay` seconds. The router's tool choice gets a 503, which leaves the rules' reading."""

    def __init__(self) -> None:
        super().__init__([])
        self.delay = 0.0
        # Per question, the delay each call to the model met (0: the model was quick).
        self.calls: dict[str, list[float]] = collections.defaultdict(list)
        self._words = random.Random()

    async def _complete(self, request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ClientDisconnect:  # the answerer was killed while it asked
            return JSONResponse({}, status_code=499)
        if body.get("tools"):
            return JSONResponse(
                {"error": {"message": "tool choice is not scripted", "type": "server_error"}},
                status_code=503,
            )
        try:
            context = json.loads(body["messages"][1]["content"])
        except (KeyError, IndexError, ValueError, TypeError):
            context = {}
        delay = self.delay
        self.calls[str(context.get("question"))].append(delay)
        if delay:
            await asyncio.sleep(delay)
        reference = str(context.get("reference_answer") or "")
        word = self._words.choice(DRAFT_WORDS)
        content = {
            "answer": f"{reference} (Drafted by the stand-in model, draft {word}.)",
            "citations": [fact["source_id"] for fact in context.get("facts", [])],
        }
        return JSONResponse(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "stand-in"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(content)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
            }
        )


# --- the run -----------------------------------------------------------------------------


@dataclass
class Plan:
    """How many faults of each kind one round holds, and how many rounds."""

    rounds: int = 1
    baseline_seconds: float = 4.0
    stage_kills: int = 32
    kill_interval_seconds: float = 1.2
    nats_kills: int = 2
    nats_down_seconds: float = 1.5
    postgres_pauses: int = 1
    postgres_down_seconds: float = 4.0
    # A long database outage: the stages wait it out (no question dead-lettered).
    postgres_outages: int = 0
    postgres_outage_seconds: float = 60.0
    stage_pauses: int = 2
    stage_pause_seconds: float = 5.0
    poison_rounds: int = 1
    slow_model_rounds: int = 1
    slow_model_seconds: float = 12.0
    full_stream_rounds: int = 1
    gateway_kills: int = 0
    concurrency: int = 4
    # Each steady client's wait between its questions; 0: back to back, as fast as the
    # pipeline answers (the bench's saturating load). A paced load still keeps questions in
    # flight through every fault, at a fraction of the CPU (the suite's run shares the cores).
    pace_seconds: float = 0.0
    recover_seconds: float = 4.0


PLANS = {
    "short": Plan(),
    "long": Plan(
        rounds=5,
        stage_kills=44,
        kill_interval_seconds=1.5,
        nats_kills=2,
        postgres_pauses=2,
        stage_pauses=3,
        poison_rounds=1,
        slow_model_seconds=15.0,
        full_stream_rounds=1,
        postgres_outages=1,
    ),
    # Only the database outage of a minute, in the middle of a steady load.
    "outage": Plan(
        baseline_seconds=10.0,
        stage_kills=0,
        nats_kills=0,
        postgres_pauses=0,
        stage_pauses=0,
        poison_rounds=0,
        slow_model_rounds=0,
        full_stream_rounds=0,
        postgres_outages=1,
        recover_seconds=10.0,
    ),
}


def service_environment(
    nats: NatsServer, postgres: PostgresServer, port: int, model_url: str
) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "FINQ_", "OPENAI_"))
    }
    env.update(
        {
            "FINQ_NATS_URL": nats.url,
            "FINQ_DATABASE_URL": postgres.service_dsn,
            "FINQ_GATEWAY_HOST": "127.0.0.1",
            "FINQ_GATEWAY_PORT": str(port),
            "FINQ_DOCUMENT_UPLOAD_DIR": str(postgres.data_dir.parent / "uploads"),
            "OPENAI_API_KEY": "stand-in",
            "OPENAI_BASE_URL": model_url,
            "OPENAI_MODEL": "stand-in",
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
            **PIPELINE_ENV,
        }
    )
    return env


class FaultRun:
    """The servers, the services, the model, the load and the nemeses of one run."""

    def __init__(self, home: Path, plan: Plan, seed: int, log: Callable[[str], None]) -> None:
        self.home = home
        self.plan = plan
        self.seed = seed
        self.rng = random.Random(seed)
        self.say = log
        self.postgres = PostgresServer(home / "postgres", free_port())
        self.nats = NatsServer(home / "nats", free_port())
        self.model = ModelStandIn()
        self.supervisor: Supervisor | None = None
        self.url = ""
        self.questions = distinct_questions(seed)
        self.next_question = 0
        self.attempts: list[Attempt] = []
        self.tallies = {name: Tally(name) for name in NEMESES}
        self.nemesis = "none"
        self.began = time.monotonic()
        self.poison_ids: dict[str, str] = {}  # msg id -> the nemesis that sent it
        # (nemesis, from, to) in seconds since the load began.
        self.windows: list[tuple[str, float, float]] = []
        self.stage_kills = 0
        self._loading = asyncio.Event()
        self._supervising = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._load: list[asyncio.Task[None]] = []
        self._backoff_until = 0.0
        self._in_flight = 0
        self._idle = asyncio.Event()  # set while no question is in flight
        self._idle.set()
        self._quiet = asyncio.Event()
        self._client: httpx.AsyncClient | None = None

    # --- servers and services ---------------------------------------------------------

    async def start(self) -> None:
        self.say(f"starting PostgreSQL on {self.postgres.port}, NATS on {self.nats.port}")
        await asyncio.to_thread(self.postgres.start)
        await asyncio.to_thread(self.nats.start)
        # No glossary: no question of the load searches documents (PIPELINE_ENV).
        await prepare_database(
            self.postgres.dsn, service_dsn=self.postgres.service_dsn, load_glossary=False
        )
        await self.model.__aenter__()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.supervisor = Supervisor(
            self.home / "logs",
            service_environment(self.nats, self.postgres, port, self.model.base_url),
            REPLICAS,
            stage_env=self.nats.credentials_env,
        )
        self.supervisor.start()
        await asyncio.to_thread(wait_until_ready, self.url, self.supervisor, 120)
        self.say(f"the pipeline is ready at {self.url}")
        self._supervising.set()
        self._tasks.append(asyncio.create_task(self._supervise()))
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        self._client = httpx.AsyncClient(
            base_url=self.url, timeout=CLIENT_TIMEOUT_SECONDS, limits=limits
        )

    async def _supervise(self) -> None:
        """What `finq up` does: restart what crashed (with the supervisor's backoff)."""
        assert self.supervisor is not None
        while self._supervising.is_set():
            self.supervisor.restart_crashed()
            await asyncio.sleep(0.2)

    async def stop(self) -> None:
        self._supervising.clear()
        self._loading.clear()
        for task in [*self._tasks, *self._load]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._load, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()
        if self.supervisor is not None:
            for service in self.supervisor.services:  # nothing may stay stopped
                if service.running():
                    assert service.process is not None
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(service.process.pid, signal.SIGCONT)
            await asyncio.to_thread(self.supervisor.stop)
        with contextlib.suppress(Exception):
            await self.model.__aexit__(None, None, None)
        await asyncio.to_thread(self.nats.stop)
        await asyncio.to_thread(self.postgres.stop)

    def processes(self, stages: tuple[Stage, ...] = QUESTION_STAGES) -> list[Any]:
        assert self.supervisor is not None
        return [s for s in self.supervisor.services if s.stage in stages and s.running()]

    async def operator(self) -> Any:
        user, password = self.nats.credentials(OPERATOR)
        return await asyncio.wait_for(
            bus.connect(self.nats.url, "finq-faults", user, password), timeout=30
        )

    async def wait_pulling(self, within: float = 60.0) -> float:
        """Seconds until every consuming stage of a question has a pull request waiting
        again (after a broker or database restart), or `within` when they do not."""
        started = time.monotonic()
        while time.monotonic() - started < within:
            try:
                nc = await self.operator()
                try:
                    js = nc.jetstream()
                    waiting = [
                        (
                            await js.consumer_info(
                                subjects.input_stream(stage), subjects.durable_name(stage)
                            )
                        ).num_waiting
                        for stage in QUESTION_STAGES
                    ]
                finally:
                    await nc.close()
                if all(waiting):
                    return time.monotonic() - started
            except Exception:  # the broker may still be starting
                pass
            await asyncio.sleep(0.25)
        return within

    # --- the load -----------------------------------------------------------------------

    def take_question(self) -> str:
        if self.next_question >= len(self.questions):
            raise RuntimeError("out of distinct questions: make the run shorter")
        question = self.questions[self.next_question]
        self.next_question += 1
        return question

    async def ask(self, nemesis: str | None = None) -> Attempt:
        """Ask one new question and record what the client saw."""
        assert self._client is not None
        question = self.take_question()
        attempt = Attempt(
            index=len(self.attempts),
            question=question,
            nemesis=nemesis or self.nemesis,
            started=time.monotonic() - self.began,
        )
        self.attempts.append(attempt)
        started = time.monotonic()
        self._in_flight += 1
        self._idle.clear()
        try:
            await self._send(attempt)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()
        attempt.elapsed = time.monotonic() - started
        return attempt

    async def _send(self, attempt: Attempt) -> None:
        assert self._client is not None
        question = attempt.question
        while True:
            try:
                response = await self._client.post("/v1/ask", json={"question": question})
            except httpx.ConnectError:
                # Refused: nothing was sent. A client tries again; it is not an attempt yet.
                self.tallies[attempt.nemesis].refused += 1
                await asyncio.sleep(0.2)
                continue
            except httpx.HTTPError as error:  # dropped connection, client timeout
                attempt.transport_error = f"{type(error).__name__}: {error}"[:300]
                break
            attempt.status = response.status_code
            try:
                body = response.json()
            except ValueError:
                body = None
            if response.status_code == 200 and isinstance(body, dict):
                attempt.request_id = body.get("request_id")
                attempt.answer = body.get("answer")
            elif isinstance(body, dict):
                attempt.code = body.get("code")
                if response.status_code in (429, 503):
                    # A client that honours Retry-After does not hammer a finq that is away.
                    retry_after = response.headers.get("retry-after", "1")
                    wait = float(retry_after) if retry_after.isdigit() else 1.0
                    self._backoff_until = time.monotonic() + wait
                found = re.search(r"request ([0-9a-f]{32})", str(body.get("message", "")))
                if found:
                    attempt.request_id = found.group(1)
            break

    async def _client_loop(self) -> None:
        while self._loading.is_set():
            pause = self._backoff_until - time.monotonic()
            if pause > 0 or self._quiet.is_set():
                await asyncio.sleep(max(pause, 0.05))
                continue
            await self.ask()
            if self.plan.pace_seconds:
                await asyncio.sleep(self.plan.pace_seconds)

    def start_load(self) -> None:
        self._loading.set()
        for _ in range(self.plan.concurrency):
            self._load.append(asyncio.create_task(self._client_loop()))

    async def stop_load(self) -> None:
        self._loading.clear()
        await asyncio.gather(*self._load, return_exceptions=True)
        self._load = []

    # --- the nemeses ---------------------------------------------------------------------

    async def under(self, nemesis: str, fault: Callable[[], Awaitable[None]]) -> None:
        """Run one nemesis; the questions asked meanwhile, and while the pipeline recovers
        afterwards, are counted under it."""
        self.nemesis = nemesis
        started = time.monotonic() - self.began
        before = self.tallies[nemesis].faults
        try:
            await fault()
        finally:
            await asyncio.sleep(self.plan.recover_seconds)
            # The next nemesis starts once the questions asked under this one have their
            # reply, so no question is hit by two nemeses.
            self._quiet.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), CLIENT_TIMEOUT_SECONDS)
            self._quiet.clear()
            ended = time.monotonic() - self.began
            self.windows.append((nemesis, round(started, 1), round(ended, 1)))
            self.say(
                f"  {nemesis}: {self.tallies[nemesis].faults - before} faults "
                f"from {started:.0f} s to {ended:.0f} s"
            )
            self.nemesis = "none"

    async def probe(self, nemesis: str, seconds: float) -> list[asyncio.Task[Attempt]]:
        """Questions asked while a server is down (the steady clients may all be waiting on
        answers then): one every PROBE_EVERY_SECONDS for `seconds`."""
        probes = []
        for _ in range(max(1, int(seconds / PROBE_EVERY_SECONDS))):
            probes.append(asyncio.create_task(self.ask(nemesis)))
            await asyncio.sleep(PROBE_EVERY_SECONDS)
        return probes

    async def stage_kill(self) -> None:
        """kill -9 of a random running consuming stage process, every interval."""
        tally = self.tallies["stage_kill"]
        wanted = tally.faults + self.plan.stage_kills
        for _ in range(self.plan.stage_kills * 10):
            if tally.faults >= wanted:
                break
            await asyncio.sleep(self.plan.kill_interval_seconds)
            alive = self.processes()
            if not alive:  # every one of them is dead: the supervisor is restarting them
                continue
            victim = self.rng.choice(alive)
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim.process.pid, signal.SIGKILL)
                tally.faults += 1
                self.stage_kills += 1

    async def gateway_kill(self) -> None:
        tally = self.tallies["gateway_kill"]
        for _ in range(self.plan.gateway_kills):
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            alive = self.processes((Stage.GATEWAY,))
            if not alive:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(alive[0].process.pid, signal.SIGKILL)
                tally.faults += 1
            await asyncio.to_thread(wait_until_ready, self.url, self.supervisor, 60)

    async def nats_kill(self) -> None:
        """kill -9 of nats-server, started again on the same port and data."""
        tally = self.tallies["nats_kill"]
        for _ in range(self.plan.nats_kills):
            await asyncio.sleep(self.rng.uniform(1.0, 2.0))
            assert self.nats.process is not None
            self.nats.process.kill()
            await asyncio.to_thread(self.nats.process.wait, 10)
            tally.faults += 1
            probes = await self.probe("nats_kill", self.plan.nats_down_seconds)
            await asyncio.to_thread(self.nats.start)
            pulling = await self.wait_pulling()
            tally.notes.append(f"stages pulling again {pulling:.1f} s after the restart")
            await asyncio.gather(*probes)

    async def postgres_pause(self) -> None:
        """PostgreSQL stopped (fast shutdown: connections cut) for seconds, then started."""
        await self.postgres_down(
            "postgres_pause", self.plan.postgres_pauses, self.plan.postgres_down_seconds
        )

    async def postgres_outage(self) -> None:
        """PostgreSQL away for a minute in the middle of the load: questions saved before it
        are answered after it, questions asked during it get a 503 at once (the gateway
        cannot save them), none is dead-lettered. So that some questions are surely saved
        and not yet answered when it goes (a question spends milliseconds between the two),
        the validator is held for half a second before the stop and let go right after."""
        await self.postgres_down(
            "postgres_outage",
            self.plan.postgres_outages,
            self.plan.postgres_outage_seconds,
            hold_validator=True,
        )

    async def postgres_down(
        self, nemesis: str, times: int, seconds: float, hold_validator: bool = False
    ) -> None:
        tally = self.tallies[nemesis]
        for _ in range(times):
            await asyncio.sleep(self.rng.uniform(1.0, 2.0))
            held = (
                [s.process.pid for s in self.processes((Stage.VALIDATOR,))]
                if hold_validator
                else []
            )
            for pid in held:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            try:
                if held:
                    await asyncio.sleep(0.5)  # questions saved meanwhile wait at the validator
                await asyncio.to_thread(self.postgres.stop)
            finally:
                for pid in held:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
            tally.faults += 1
            probes = await self.probe(nemesis, seconds)
            await asyncio.to_thread(self.postgres.start)
            pulling = await self.wait_pulling()
            tally.notes.append(
                f"down {seconds:g} s; stages pulling again {pulling:.1f} s after the restart"
            )
            await asyncio.gather(*probes)

    async def stage_pause(self) -> None:
        """SIGSTOP of a random consuming stage process, SIGCONT after the ack wait passed."""
        tally = self.tallies["stage_pause"]
        for _ in range(self.plan.stage_pauses):
            await asyncio.sleep(self.rng.uniform(1.0, 2.0))
            alive = self.processes()
            if not alive:
                continue
            victim = self.rng.choice(alive)
            pid = victim.process.pid
            try:
                os.kill(pid, signal.SIGSTOP)
                tally.faults += 1
                await asyncio.sleep(self.plan.stage_pause_seconds)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    async def poison(self) -> None:
        """Undecodable messages on every stage subject, as the operator."""
        tally = self.tallies["poison"]
        bodies = (b"\xff\xfe not json at all", b"{}", b'{"request_id": 7, "payload": []}')
        nc = await self.operator()
        try:
            js = nc.jetstream()
            for _ in range(self.plan.poison_rounds):
                for subject in subjects.STAGE_SUBJECTS:
                    await asyncio.sleep(0.3)
                    body = self.rng.choice(bodies)
                    msg_id = f"poison-{len(self.poison_ids)}-{self.seed}"
                    await js.publish(subject, body, headers={bus.MSG_ID_HEADER: msg_id})
                    self.poison_ids[msg_id] = "poison"
                    tally.faults += 1
                    tally.poison_injected += 1
        finally:
            await nc.close()
        await asyncio.sleep(2.0)

    async def slow_model(self) -> None:
        """The model answers after more than the ack wait: a redelivery would show as a
        second model call (and a second draft) for one question."""
        for _ in range(self.plan.slow_model_rounds):
            self.tallies["slow_model"].faults += 1
            self.model.delay = SLOW_MODEL_DELAY_SECONDS
            try:
                # More questions than the steady clients ask, so many meet the slow model.
                probes = await self.probe("slow_model", self.plan.slow_model_seconds)
            finally:
                self.model.delay = 0.0
            await asyncio.gather(*probes)
            # The calls made just before the model sped up finish before the next nemesis.
            await asyncio.sleep(SLOW_MODEL_DELAY_SECONDS)

    async def full_stream(self) -> None:
        """Pause the answerers and ask a burst: their input stream (1 MiB) fills with work
        not yet done and drops its oldest messages; then let them go on."""
        tally = self.tallies["full_stream"]
        stream = subjects.input_stream(Stage.ANSWERER)
        for _ in range(self.plan.full_stream_rounds):
            answerers = self.processes((Stage.ANSWERER,))
            pids = [service.process.pid for service in answerers]
            nc = await self.operator()
            burst: list[asyncio.Task[Attempt]] = []
            try:
                js = nc.jetstream()
                first = (await js.stream_info(stream)).state.last_seq
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                # A burst until the stream has taken more than it may hold since the pause.
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    burst = [t for t in burst if not t.done()]
                    while len(burst) < BURST_CONCURRENCY:
                        burst.append(asyncio.create_task(self.ask("full_stream")))
                    await asyncio.sleep(0.25)
                    info = (await js.stream_info(stream)).state
                    if info.first_seq > first + FULL_STREAM_DROPS:
                        break
                info = (await js.stream_info(stream)).state
                dropped = max(0, info.first_seq - first - 1)
                tally.faults += 1
                tally.dropped_unread += dropped
                tally.notes.append(
                    f"{stream}: {info.last_seq - first} messages since the pause, "
                    f"the oldest {dropped} of them dropped unread ({info.bytes:,} bytes held)"
                )
            finally:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
                await nc.close()
            await asyncio.gather(*burst, return_exceptions=True)

    async def run(self) -> None:
        plan = self.plan
        nemeses: list[tuple[str, int, Callable[[], Awaitable[None]]]] = [
            ("stage_kill", plan.stage_kills, self.stage_kill),
            ("nats_kill", plan.nats_kills, self.nats_kill),
            ("postgres_pause", plan.postgres_pauses, self.postgres_pause),
            ("postgres_outage", plan.postgres_outages, self.postgres_outage),
            ("stage_pause", plan.stage_pauses, self.stage_pause),
            ("poison", plan.poison_rounds, self.poison),
            ("slow_model", plan.slow_model_rounds, self.slow_model),
            ("full_stream", plan.full_stream_rounds, self.full_stream),
            ("gateway_kill", plan.gateway_kills, self.gateway_kill),
        ]
        self.start_load()
        try:
            for number in range(1, plan.rounds + 1):
                self.say(f"round {number} of {plan.rounds}")
                await asyncio.sleep(plan.baseline_seconds)
                for nemesis, times, fault in nemeses:
                    if times:
                        await self.under(nemesis, fault)
            # The load goes on a while after the last fault: the pipeline is whole again.
            await asyncio.sleep(plan.baseline_seconds)
        finally:
            await self.stop_load()

    # --- the verdict ---------------------------------------------------------------------

    async def read_state(self) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
        """What the database holds per question text, and the dead letters by request id."""
        conn = await asyncpg.connect(self.postgres.dsn)
        try:
            rows = await conn.fetch(
                """
                SELECT q.question, q.request_id,
                       (SELECT count(*) FROM answers a WHERE a.request_id = q.request_id)
                           AS answers,
                       (SELECT a.answer FROM answers a WHERE a.request_id = q.request_id)
                           AS answer,
                       (SELECT a.attempt FROM answers a WHERE a.request_id = q.request_id)
                           AS answer_attempt,
                       (SELECT count(*) FROM messages m
                        WHERE m.request_id = q.request_id AND m.role = 'assistant') AS turns,
                       (SELECT count(*) FROM messages m
                        WHERE m.request_id = q.request_id AND m.role = 'user') AS user_turns
                FROM questions q
                """
            )
        finally:
            await conn.close()
        saved: dict[str, Any] = collections.defaultdict(list)
        for row in rows:
            saved[row["question"]].append(dict(row))
        letters: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        nc = await self.operator()
        try:
            js = nc.jetstream()
            for stage in Stage:
                for letter in await bus.read_dead_letters(js, stage):
                    headers = letter["headers"]
                    entry = {
                        "stage": stage.value,
                        "reason": headers.get("Finq-Dead-Reason", ""),
                        "msg_id": headers.get("Finq-Original-Msg-Id", ""),
                    }
                    try:
                        request_id = json.loads(letter["data"]).get("request_id")
                    except (ValueError, AttributeError):
                        request_id = None
                    if isinstance(request_id, str):
                        letters[request_id].append(entry)
                    if entry["msg_id"]:
                        letters[entry["msg_id"]].append(entry)
        finally:
            await nc.close()
        return saved, letters

    def unsettled(
        self, saved: dict[str, Any], letters: dict[str, list[dict[str, Any]]]
    ) -> list[Attempt]:
        """Questions that may still be answered: no answer row and no dead letter yet, and
        the client got no clear error."""
        waiting = []
        for attempt in self.attempts:
            if attempt.status == 200 or (
                attempt.status is not None and attempt.status != 504 and attempt.code
            ):
                continue
            rows = saved.get(attempt.question, [])
            if not rows:
                if attempt.status == 504:
                    waiting.append(attempt)  # a 504 names a saved request: it must show
                continue
            if any(r["answers"] for r in rows) or any(r["request_id"] in letters for r in rows):
                continue
            waiting.append(attempt)
        return waiting

    async def settle(self) -> float:
        """Wait until every question is answered or failed, or until the reconciler and the
        retries can do no more for the last one asked."""
        started = time.monotonic()
        last = max((a.started for a in self.attempts), default=0.0) + self.began
        limit = last + SETTLE_LIMIT_SECONDS
        while True:
            saved, letters = await self.read_state()
            waiting = self.unsettled(saved, letters)
            if not waiting or time.monotonic() > limit:
                break
            self.say(f"  settling: {len(waiting)} questions not answered or failed yet")
            await asyncio.sleep(3.0)
        return time.monotonic() - started

    def judge(self, saved: dict[str, Any], letters: dict[str, list[dict[str, Any]]]) -> None:
        for attempt in self.attempts:
            tally = self.tallies[attempt.nemesis]
            tally.attempted += 1
            rows = saved.get(attempt.question, [])
            if attempt.request_id is None and len(rows) == 1:
                attempt.request_id = rows[0]["request_id"]
            row = next((r for r in rows if r["request_id"] == attempt.request_id), None)
            if row is None and rows:
                row = rows[0]
            answered_row = row is not None and row["answers"] > 0
            dead = letters.get(attempt.request_id or "", []) if attempt.request_id else []
            if attempt.status is not None and attempt.code:
                key = f"{attempt.status} {attempt.code}"
                tally.error_codes[key] = tally.error_codes.get(key, 0) + 1
            # One of answered / failed_clear / lost / unclear.
            if attempt.status == 200 and attempt.answer is not None:
                attempt.outcome = "answered"
            elif attempt.status is not None and attempt.status != 504 and attempt.code:
                attempt.outcome = "failed_clear"
                attempt.error_then_answered = answered_row
                tally.slowest_error_seconds = max(tally.slowest_error_seconds, attempt.elapsed)
            elif answered_row:
                attempt.outcome = "answered"
                attempt.late = True
            elif dead:
                attempt.outcome = "failed_clear"
                tally.dead_lettered += 1
                attempt.detail = f"dead-lettered at {dead[0]['stage']}: {dead[0]['reason']}"
            elif attempt.status is None and not rows:
                attempt.outcome = "unclear"
                attempt.detail = attempt.transport_error or ""
            else:
                attempt.outcome = "lost"
                attempt.detail = (
                    f"status {attempt.status} {attempt.code or attempt.transport_error}; "
                    f"saved {len(rows)}, no answer row, no dead letter"
                )
            # Answered twice: by rows, by turns, by saved copies, by what was delivered.
            problems = []
            if len(rows) > 1:
                problems.append(f"{len(rows)} question rows")
            if row is not None and (row["answers"] > 1 or row["turns"] > 1):
                problems.append(f"{row['answers']} answer rows, {row['turns']} assistant turns")
            if (
                attempt.outcome == "answered"
                and not attempt.late
                and row is not None
                and row["answer"] is not None
                and row["answer"] != attempt.answer
            ):
                problems.append("the answer delivered is not the answer kept")
            if attempt.outcome == "answered" and not attempt.late and not answered_row:
                problems.append("answered over HTTP but no answer row was kept")
            if problems:
                attempt.twice = True
                attempt.detail = "; ".join(problems)
            setattr(tally, attempt.outcome, getattr(tally, attempt.outcome) + 1)
            tally.late += attempt.late
            tally.twice += attempt.twice
            tally.error_then_answered += attempt.error_then_answered
            if attempt.error_then_answered:
                attempt.detail = f"{attempt.status} {attempt.code}, answered all the same"
            if (
                attempt.outcome in ("lost", "unclear")
                or attempt.twice
                or attempt.error_then_answered
            ) and len(tally.examples) < 10:
                tally.examples.append(
                    f"{attempt.outcome}{' twice' if attempt.twice else ''} "
                    f"#{attempt.index} at {attempt.started:.1f} s {attempt.question!r} "
                    f"rid={attempt.request_id}: {attempt.detail}"
                )
        # The poison messages: each must be in the dead-letter stream with its reason.
        for msg_id, nemesis in self.poison_ids.items():
            tally = self.tallies[nemesis]
            found = letters.get(msg_id, [])
            if found and found[0]["reason"]:
                tally.poison_dead_lettered += 1
            else:
                tally.poison_lost += 1
                tally.examples.append(f"poison message {msg_id} was not dead-lettered")
        # Model calls per question in the slow-model window: a redelivery of the answerer's
        # message would call it again for the same attempt (a validator's redo is the next
        # attempt, and calls again by design).
        slow = [a for a in self.attempts if a.nemesis == "slow_model"]
        if slow:
            calls = {a.question: self.model.calls.get(a.question, []) for a in slow}
            kept = {a.question: saved.get(a.question, [{}])[0] for a in slow}
            redos = [q for q, c in calls.items() if len(c) > 1 and kept[q].get("answer_attempt")]
            # Two slow calls for one attempt: the answerer's message was redelivered while
            # the model was still writing (the keep-alive did not hold it).
            again = [
                q
                for q, c in calls.items()
                if sum(1 for delay in c if delay) > (kept[q].get("answer_attempt") or 0) + 1
            ]
            self.tallies["slow_model"].notes.append(
                f"model calls: {sum(len(c) for c in calls.values())} for {len(slow)} "
                f"questions ({sum(1 for c in calls.values() for d in c if d)} of them slow); "
                f"{len(redos)} questions written again at the validator's request; "
                f"{len(again)} questions the slow model wrote twice for one attempt "
                "(a redelivery)"
            )
            self.tallies["slow_model"].examples.extend(
                f"the slow model was called {len(calls[q])} times for "
                f"{kept[q].get('answer_attempt')} redos: {q!r}"
                for q in again[:5]
            )


# --- reporting ---------------------------------------------------------------------------

COLUMNS = (
    ("nemesis", "nemesis"),
    ("faults", "faults"),
    ("attempted", "attempted"),
    ("answered", "answered"),
    ("late", "(late)"),
    ("failed_clear", "failed clear"),
    ("lost", "lost"),
    ("unclear", "unclear"),
    ("twice", "twice"),
    ("error_then_answered", "error, then answered"),
    ("dead_lettered", "dead-lettered"),
)


def rows_of(tallies: dict[str, Tally]) -> list[Tally]:
    rows = [t for t in tallies.values() if t.attempted or t.faults]
    total = Tally("total")
    for tally in rows:
        for name, _ in COLUMNS[1:]:
            setattr(total, name, getattr(total, name) + getattr(tally, name))
        total.poison_injected += tally.poison_injected
        total.poison_dead_lettered += tally.poison_dead_lettered
        total.poison_lost += tally.poison_lost
    return [*rows, total]


def table_text(tallies: dict[str, Tally]) -> str:
    lines = ["| " + " | ".join(label for _, label in COLUMNS) + " |"]
    lines.append("|" + "---|" * len(COLUMNS))
    for tally in rows_of(tallies):
        cells = [str(getattr(tally, name)) for name, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_report(result: dict[str, Any]) -> None:
    print("\n" + table_text(result["tallies_objects"]))
    for tally in result["tallies_objects"].values():
        extra = []
        if tally.poison_injected:
            extra.append(
                f"poison messages: {tally.poison_injected} injected, "
                f"{tally.poison_dead_lettered} dead-lettered, {tally.poison_lost} lost"
            )
        if tally.error_codes:
            extra.append(f"errors: {dict(sorted(tally.error_codes.items()))}")
        if tally.refused:
            extra.append(f"connections refused (retried): {tally.refused}")
        extra.extend(tally.notes)
        extra.extend(tally.examples)
        if extra:
            print(f"\n{tally.nemesis}:")
            for line in extra:
                print(f"  {line}")


def verdict_of(tallies: dict[str, Tally]) -> dict[str, int]:
    total = rows_of(tallies)[-1]
    return {
        "attempted": total.attempted,
        "lost": total.lost,
        "twice": total.twice,
        "unclear": total.unclear,
        "poison_lost": total.poison_lost,
        # A database outage is waited out: nothing asked under it may be dead-lettered.
        "outage_dead_lettered": tallies["postgres_outage"].dead_lettered,
        "unaccounted": total.attempted
        - total.answered
        - total.failed_clear
        - total.lost
        - total.unclear,
    }


def log_summary(log_dir: Path) -> dict[str, dict[str, int]]:
    """Per service log, how often each warning and error event was logged."""
    summary: dict[str, dict[str, int]] = {}
    for path in sorted(log_dir.glob("*.log")):
        counts: collections.Counter[str] = collections.Counter()
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                if "Traceback" in line or "Error" in line:
                    counts[f"(text) {line.strip()[:80]}"] += 1
                continue
            if isinstance(entry, dict) and entry.get("level") in ("warning", "error", "critical"):
                counts[f"{entry['level']}: {str(entry.get('event'))[:80]}"] += 1
        summary[path.stem] = dict(counts.most_common(12))
    return summary


async def run_faults(
    plan: Plan, seed: int, home: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """One whole run: start, load with nemeses, settle, judge, stop. Returns the result."""
    run = FaultRun(home, plan, seed, log)
    started = time.monotonic()
    try:
        await run.start()
        run.began = time.monotonic()
        await run.run()
        loaded = time.monotonic() - run.began
        log(f"load done after {loaded:.0f} s ({len(run.attempts)} questions); settling")
        settled = await run.settle()
        saved, letters = await run.read_state()
        run.judge(saved, letters)
        logs = log_summary(home / "logs")
        restarts = {s.name: s.restarts for s in run.supervisor.services} if run.supervisor else {}
    finally:
        await run.stop()
    return {
        "seed": seed,
        "plan": asdict(plan),
        "seconds": round(time.monotonic() - started, 1),
        "load_seconds": round(loaded, 1),
        "settle_seconds": round(settled, 1),
        "stage_kills": run.stage_kills,
        "questions": len(run.attempts),
        "windows": run.windows,
        "restarts": restarts,
        "tallies": {name: asdict(t) for name, t in run.tallies.items()},
        "tallies_objects": run.tallies,
        "verdict": verdict_of(run.tallies),
        "log_summary": logs,
        "attempts": [asdict(a) for a in run.attempts],
    }


# --- the machine and bench/RESULTS.md ----------------------------------------------------


def describe_machine() -> dict[str, Any]:
    cpu_model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = done.stdout.strip() or "unknown"
    return f"{commit} (with uncommitted changes)" if dirty.stdout.strip() else commit


SECTION_HEADING = "## Fault suite (issue 14): `bench/faults.py`"
SECTION_INTRO = """\
A steady load of distinct questions (4 clients) through a pipeline of its own (its own
PostgreSQL and nats-server, the six services under a Supervisor, router and answerer with
two replicas, `FINQ_ACK_WAIT_SECONDS=3`, deadline 10 s, retry budget 60 s, reconciler
every 1 s with a 3 s grace, stage streams of 1 MiB, a stand-in model on loopback) while
each nemesis in turn injects its faults. Every question is counted under the nemesis that
was running when it was asked (the next nemesis starts once they have their reply); the
definitions (answered, failed with a clear error, lost, unclear, answered twice) are at the
top of `bench/faults.py`. `make test` runs a slightly shorter short run
(`tests/end_to_end/test_faults.py`: 32 stage kills, each other nemesis once) and requires 0 lost,
0 twice, 0 unclear."""


def results_block(mode: str, result: dict[str, Any], machine: dict[str, Any]) -> str:
    lines = [
        f"### `--{mode}` ({datetime.now().astimezone():%Y-%m-%d %H:%M %Z})",
        "",
        f"Command: `{result['command']}`; commit {result['commit']}; machine: "
        f"{machine['cpu_model']}, {machine['cores']} cores, kernel {machine['kernel']}, "
        f"Python {machine['python']}. Seed {result['seed']}; {result['questions']} questions, "
        f"{result['stage_kills']} stage kills; {result['seconds']:.0f} s in all "
        f"({result['load_seconds']:.0f} s of load, {result['settle_seconds']:.0f} s to settle).",
        "",
        table_text(result["tallies_objects"]),
        "",
    ]
    for tally in result["tallies_objects"].values():
        # The same note from each fault of a kind is said once, with how often.
        counted = collections.Counter(tally.notes)
        notes = [f"{note} (x{n})" if n > 1 else note for note, n in counted.items()]
        if tally.poison_injected:
            notes.append(
                f"{tally.poison_injected} poison messages injected, "
                f"{tally.poison_dead_lettered} dead-lettered with their reason, "
                f"{tally.poison_lost} not"
            )
        if tally.error_codes:
            codes = ", ".join(f"{k}: {v}" for k, v in sorted(tally.error_codes.items()))
            slowest = (
                f" (the slowest error other than a 504 took {tally.slowest_error_seconds:.2f} s)"
                if any(not code.startswith("504") for code in tally.error_codes)
                else ""
            )
            notes.append(f"error statuses the clients saw: {codes}{slowest}")
        if notes:
            lines.append(f"- {tally.nemesis}: " + "; ".join(notes))
    return "\n".join(lines).rstrip() + "\n"


def write_results(mode: str, block: str) -> None:
    begin, end = f"<!-- faults:{mode}:begin -->", f"<!-- faults:{mode}:end -->"
    text = RESULTS_FILE.read_text() if RESULTS_FILE.exists() else "# Benchmark results\n"
    if SECTION_HEADING not in text:
        section = (
            f"{SECTION_HEADING}\n\n{SECTION_INTRO}\n\n"
            "<!-- faults:short:begin -->\n<!-- faults:short:end -->\n\n"
            "<!-- faults:long:begin -->\n<!-- faults:long:end -->\n\n"
        )
        anchor = "## Metric resolver"
        text = (
            text.replace(anchor, section + anchor, 1)
            if anchor in text
            else text.rstrip() + "\n\n" + section
        )
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    RESULTS_FILE.write_text(f"{head}{begin}\n{block}{end}{tail}")


# --- the command -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--short", action="store_true", help=">= 30 stage kills (the default)")
    mode.add_argument("--long", action="store_true", help=">= 200 stage kills")
    mode.add_argument(
        "--outage", action="store_true", help="only a database outage of a minute, under load"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--gateway-kills", type=int, default=0, help="also kill -9 the gateway this often"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs)")
    parser.add_argument("--no-results", action="store_true", help="leave RESULTS.md alone")
    args = parser.parse_args(argv)
    mode_name = "long" if args.long else "outage" if args.outage else "short"
    plan = PLANS[mode_name]
    plan.gateway_kills = args.gateway_kills

    machine = describe_machine()
    command = " ".join([".venv/bin/python", "bench/faults.py", *sys.argv[1:]])
    print(f"machine: {machine}\ncommand: {command}\n", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    home = Path(tempfile.mkdtemp(prefix="finq-faults-"))
    try:
        result = run_async(run_faults(plan, args.seed, home, lambda s: print(s, flush=True)))
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    finally:
        if args.keep:
            print(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    result["command"] = command
    result["commit"] = git_commit()
    result["machine"] = machine
    print_report(result)
    print(f"\nverdict: {result['verdict']}")
    print(f"service restarts: {result['restarts']}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = OUT_DIR / f"faults-{mode_name}-{stamp}.json"
    saved = {k: v for k, v in result.items() if k != "tallies_objects"}
    out.write_text(json.dumps(saved, indent=2, default=str))
    print(f"wrote {out}")
    if not args.no_results:
        write_results(mode_name, results_block(mode_name, result, machine))
        print(f"wrote its section of {RESULTS_FILE}")
    verdict = result["verdict"]
    bad = (
        verdict["lost"]
        or verdict["twice"]
        or verdict["unclear"]
        or verdict["poison_lost"]
        or verdict["outage_dead_lettered"]
    )
    return 1 if bad or verdict["unaccounted"] else 0


def run_async(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
