"""Overload: offer finq several times the questions it can answer and watch it shed them.

    .venv/bin/python bench/overload.py [--factor 4] [--seconds 20] [--max-in-flight 256]

It starts its own PostgreSQL, nats-server and the six services (as bench/pipeline.py does),
then:

1. capacity: a closed loop of 64 clients asks --capacity-count questions; the answers a
   second it keeps up is what this machine can serve (C).
2. overload: an open loop offers factor x C questions a second for --seconds, each on its
   own request whether or not the ones before it were answered (arrivals do not wait, as
   real users do not). The gateway admits at most FINQ_GATEWAY_MAX_IN_FLIGHT questions at
   once and answers the rest 503 `overloaded` with Retry-After at once.

It reports what became of the offered questions (200, 503 by code, anything else), the
latency of the admitted ones and of the refusals, the questions in flight at the client,
and the gateway's resident memory before, at its peak and after: a gateway that queued
without limit would show admitted latency and memory growing with the offered load.
Figures go to stdout and bench/out/overload-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import psutil  # noqa: E402

from bench.pipeline import (  # noqa: E402
    QUESTIONS,
    describe_machine,
    percentile,
    service_environment,
)
from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.commands.gateway_readiness import wait_until_ready  # noqa: E402
from services.control.servers import NatsServer, PostgresServer, free_port  # noqa: E402
from services.control.supervisor import Supervisor  # noqa: E402
from services.gateway.limits import LoopLag  # noqa: E402
from shared.subjects import Stage  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "out"
CAPACITY_CLIENTS = 64
CLIENT_TIMEOUT_SECONDS = 60.0
MEMORY_SAMPLE_SECONDS = 0.25
# How long each connection took to open: time spent in the kernel's queues (a full accept
# queue drops the SYN, and the client sends it again after 1, 2, 4 ... s).
CONNECT_MS: list[float] = []


@dataclass
class Outcomes:
    """What the offered questions of one phase became."""

    offered: int = 0
    statuses: dict[str, int] = field(default_factory=dict)  # "200", "503 overloaded", ...
    admitted_ms: list[float] = field(default_factory=list)  # latency of each 200
    refused_ms: list[float] = field(default_factory=list)  # latency of each 429/503
    transport_errors: list[str] = field(default_factory=list)
    most_in_flight: int = 0
    generator_lag_ms: dict[str, float | None] = field(default_factory=dict)

    def count(self, key: str) -> None:
        self.statuses[key] = self.statuses.get(key, 0) + 1

    def summary(self) -> dict[str, Any]:
        admitted = sorted(self.admitted_ms)
        refused = sorted(self.refused_ms)
        return {
            "offered": self.offered,
            "statuses": dict(sorted(self.statuses.items())),
            "transport_errors": len(self.transport_errors),
            "transport_error_samples": self.transport_errors[:5],
            "most_in_flight_at_client": self.most_in_flight,
            "generator_loop_lag_ms": self.generator_lag_ms,
            "admitted_ms": {
                "p50": percentile(admitted, 50),
                "p95": percentile(admitted, 95),
                "p99": percentile(admitted, 99),
                "max": admitted[-1] if admitted else None,
            },
            "refused_ms": {
                "p50": percentile(refused, 50),
                "p99": percentile(refused, 99),
                "max": refused[-1] if refused else None,
            },
        }


async def post_json(host: str, port: int, path: str, body: bytes) -> tuple[int, bytes]:
    """One POST on a connection of its own, read to the end: a client that costs almost
    nothing per request (httpx's pool spends CPU per pooled connection on every request,
    which on two cores made the load generator, not finq, the queue)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    CONNECT_MS.append((time.perf_counter() - started) * 1000.0)
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
    head, _, payload = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, payload


class Asker:
    """Sends questions and records their outcomes."""

    def __init__(self, url: str, outcomes: Outcomes) -> None:
        address = url.removeprefix("http://")
        host, _, port = address.partition(":")
        self.host, self.port = host, int(port)
        self.outcomes = outcomes
        self.in_flight = 0

    async def ask(self, question: str) -> None:
        outcomes = self.outcomes
        outcomes.offered += 1
        self.in_flight += 1
        outcomes.most_in_flight = max(outcomes.most_in_flight, self.in_flight)
        started = time.perf_counter()
        body = json.dumps({"question": question}).encode()
        try:
            status, payload = await asyncio.wait_for(
                post_json(self.host, self.port, "/v1/ask", body), CLIENT_TIMEOUT_SECONDS
            )
        except (OSError, TimeoutError, ValueError, IndexError) as error:
            outcomes.transport_errors.append(f"{type(error).__name__}: {error}"[:200])
            outcomes.count("transport error")
            return
        finally:
            self.in_flight -= 1
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if status == 200:
            outcomes.count("200")
            outcomes.admitted_ms.append(elapsed_ms)
            return
        try:
            code = json.loads(payload).get("code", "?")
        except ValueError:
            code = "not JSON"
        outcomes.count(f"{status} {code}")
        if status in (429, 503):
            outcomes.refused_ms.append(elapsed_ms)


def accept_queue(port: int) -> int | None:
    """Connections the kernel has completed but the gateway has not yet accepted: for a
    listening socket, /proc/net/tcp's rx_queue is the accept queue's length."""
    wanted = f":{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(wanted) and fields[3] == "0A":  # 0A: LISTEN
            return int(fields[4].split(":")[1], 16)
    return None


class QueueWatch:
    """Where the questions wait while a phase runs: the listening socket's accept queue
    (before the gateway) and each process's share of the CPU."""

    def __init__(self, port: int, processes: dict[str, list[psutil.Process]]) -> None:
        self.port = port
        self.processes = processes  # a name and its processes (PostgreSQL has many)
        self.queue: list[int] = []
        self.cpu: dict[str, list[float]] = {name: [] for name in processes}
        self._running = False

    def _cpu(self, processes: list[psutil.Process]) -> float:
        total = 0.0
        for process in processes:
            with contextlib.suppress(psutil.Error):  # a backend that has exited
                total += process.cpu_percent()
        return total

    async def run(self) -> None:
        self._running = True
        for processes in self.processes.values():
            self._cpu(processes)
        while self._running:
            await asyncio.sleep(0.5)
            depth = accept_queue(self.port)
            if depth is not None:
                self.queue.append(depth)
            for name, processes in self.processes.items():
                self.cpu[name].append(self._cpu(processes))

    def stop(self) -> None:
        self._running = False

    def summary(self) -> dict[str, Any]:
        depths = sorted(self.queue)
        return {
            "accept_queue": {
                "p50": percentile(depths, 50) if depths else None,
                "max": depths[-1] if depths else None,
            },
            # percent of one core, averaged over the phase
            "cpu_percent": {name: round(sum(v) / len(v), 1) for name, v in self.cpu.items() if v},
        }


class MemoryWatch:
    """The gateway's resident memory, sampled while a phase runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.samples: list[int] = []
        self._running = False

    def rss(self) -> int:
        return int(self.process.memory_info().rss)

    async def run(self) -> None:
        self._running = True
        while self._running:
            self.samples.append(self.rss())
            await asyncio.sleep(MEMORY_SAMPLE_SECONDS)

    def stop(self) -> None:
        self._running = False


async def measure_capacity(url: str, count: int) -> tuple[float, Outcomes]:
    """Answers a second with CAPACITY_CLIENTS clients each asking as soon as answered."""
    outcomes = Outcomes()
    asker = Asker(url, outcomes)
    questions = iter(range(count))

    async def client_loop() -> None:
        for index in questions:
            await asker.ask(QUESTIONS[index % len(QUESTIONS)])

    started = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(CAPACITY_CLIENTS)))
    seconds = time.perf_counter() - started
    return outcomes.statuses.get("200", 0) / seconds, outcomes


async def offer(
    url: str, rate: float, seconds: float, memory: MemoryWatch, queues: QueueWatch
) -> Outcomes:
    """An open loop: `rate` questions a second for `seconds`, none waiting for another."""
    outcomes = Outcomes()
    asker = Asker(url, outcomes)
    watching = asyncio.create_task(memory.run())
    queue_watching = asyncio.create_task(queues.run())
    # The load generator's own loop: its lag is latency finq did not cause.
    stopping = asyncio.Event()
    own_lag = LoopLag()
    lags: list[float] = []

    async def sample_lag() -> None:
        while not stopping.is_set():
            await asyncio.sleep(0.25)
            lags.append(own_lag.lag)

    timing = [
        asyncio.create_task(own_lag.watch(stopping)),
        asyncio.create_task(sample_lag()),
    ]
    tasks: set[asyncio.Task[None]] = set()
    started = time.perf_counter()
    sent = 0
    try:
        while (now := time.perf_counter() - started) < seconds:
            # Catch up to the schedule: arrivals are due at sent / rate seconds.
            while sent < now * rate:
                task = asyncio.create_task(asker.ask(QUESTIONS[sent % len(QUESTIONS)]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                sent += 1
            await asyncio.sleep(0.002)
        queues.stop()  # its figures cover the time questions were offered, not the drain
        await asyncio.gather(*tasks)
    finally:
        memory.stop()
        queues.stop()
        stopping.set()
        await watching
        await queue_watching
        await asyncio.gather(*timing)
    lags.sort()
    outcomes.generator_lag_ms = {
        "p50": round(percentile(lags, 50) * 1000, 1),
        "max": round(lags[-1] * 1000, 1) if lags else None,
    }
    return outcomes


async def overload(
    url: str, gateway_pid: int, processes: dict[str, list[psutil.Process]], args: argparse.Namespace
) -> dict[str, Any]:
    memory = MemoryWatch(gateway_pid)
    queues = QueueWatch(int(url.rsplit(":", 1)[1]), processes)
    print(f"capacity: {CAPACITY_CLIENTS} clients, {args.capacity_count} questions", flush=True)
    await measure_capacity(url, 100)  # warm-up, unmeasured
    capacity, capacity_outcomes = await measure_capacity(url, args.capacity_count)
    print(f"  {capacity:.0f} answers a second; {capacity_outcomes.summary()}", flush=True)
    rss_before = memory.rss()
    CONNECT_MS.clear()
    rate = args.factor * capacity
    print(f"overload: {rate:.0f} questions a second ({args.factor:g}x) for {args.seconds:g} s")
    started = time.perf_counter()
    outcomes = await offer(url, rate, args.seconds, memory, queues)
    wall = time.perf_counter() - started
    rss_after = memory.rss()
    summary = outcomes.summary()
    answered = outcomes.statuses.get("200", 0)
    connects = sorted(CONNECT_MS)
    return {
        "connect_ms": {
            "p50": round(percentile(connects, 50), 1),
            "p95": round(percentile(connects, 95), 1),
            "max": round(connects[-1], 1) if connects else None,
        },
        "while_offered": queues.summary(),
        "capacity_qps": round(capacity, 1),
        "capacity": capacity_outcomes.summary(),
        "factor": args.factor,
        "offered_qps": round(rate, 1),
        "offered_qps_achieved": round(outcomes.offered / args.seconds, 1),
        "seconds": args.seconds,
        "wall_seconds": round(wall, 1),
        "answered_qps": round(answered / wall, 1),
        "overload": summary,
        "gateway_rss_mib": {
            "before": round(rss_before / 2**20, 1),
            "peak": round(max(memory.samples, default=rss_before) / 2**20, 1),
            "after": round(rss_after / 2**20, 1),
        },
    }


def print_result(result: dict[str, Any]) -> None:
    over = result["overload"]
    print(
        f"\noffered {over['offered']} questions at {result['offered_qps_achieved']:.0f}/s "
        f"({result['factor']:g}x the {result['capacity_qps']:.0f}/s measured)"
    )
    for status, count in over["statuses"].items():
        print(f"  {status:<28} {count:>7}")
    admitted, refused = over["admitted_ms"], over["refused_ms"]
    print(
        f"admitted: {result['answered_qps']:.0f} answers/s; latency p50 {admitted['p50']:.0f} ms, "
        f"p95 {admitted['p95']:.0f} ms, p99 {admitted['p99']:.0f} ms, max {admitted['max']} ms"
    )
    if refused["max"] is not None:
        print(f"refused: latency p50 {refused['p50']:.1f} ms, p99 {refused['p99']:.1f} ms")
    print(f"most questions in flight at the client: {over['most_in_flight_at_client']}")
    print(f"opening a connection took (ms): {result['connect_ms']}")
    print(f"while offered: {result['while_offered']}")
    print(f"the load generator's own loop lag: {over['generator_loop_lag_ms']} ms")
    rss = result["gateway_rss_mib"]
    print(f"gateway memory: {rss['before']} MiB before, {rss['peak']} peak, {rss['after']} after")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=float, default=4.0, help="times the capacity offered")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long it is offered")
    parser.add_argument("--capacity-count", type=int, default=1500)
    parser.add_argument("--max-in-flight", type=int, default=256)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs)")
    args = parser.parse_args(argv)

    machine = describe_machine()
    print(f"machine: {machine}\ncommand: {' '.join(sys.argv)}\n", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    home = Path(tempfile.mkdtemp(prefix="finq-overload-"))
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    supervisor: Supervisor | None = None
    try:
        postgres.start()
        nats.start()
        asyncio.run(prepare_database(postgres.dsn, service_dsn=postgres.service_dsn))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = service_environment(nats, postgres, port)
        env["FINQ_GATEWAY_MAX_IN_FLIGHT"] = str(args.max_in_flight)
        supervisor = Supervisor(home / "logs", env, stage_env=nats.credentials_env)
        supervisor.start()
        wait_until_ready(url, supervisor, timeout=120)
        gateway = supervisor.find(Stage.GATEWAY).process
        assert gateway is not None
        processes = {
            f"{s.stage.value}-{s.replica}": [psutil.Process(s.process.pid)]
            for s in supervisor.services
            if s.process is not None
        }
        postmaster = psutil.Process(postgres.process.pid)  # type: ignore[union-attr]
        processes["postgres"] = [postmaster, *postmaster.children()]
        processes["nats-server"] = [psutil.Process(nats.process.pid)]  # type: ignore[union-attr]
        processes["load generator"] = [psutil.Process()]
        result = run_async(overload(url, gateway.pid, processes, args))
        dead = [s.name for s in supervisor.services if not s.running()]
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
    result["machine"] = machine
    result["max_in_flight"] = args.max_in_flight
    result["services_not_running_after"] = dead
    print_result(result)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"overload-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {out}")
    unexpected = {
        status: count
        for status, count in result["overload"]["statuses"].items()
        if status not in ("200", "503 overloaded", "429 rate_limited")
    }
    if unexpected or dead:
        print(f"unexpected: {unexpected}; services down after: {dead}")
        return 1
    return 0


def run_async(coro: Any) -> Any:
    """On uvloop, as the services run: the load generator must cost less than what it loads."""
    import uvloop

    return uvloop.run(coro)


if __name__ == "__main__":
    sys.exit(main())
