"""Runs the stage processes, restarts any that crash, and stops them cleanly; and keeps the
servers `finq up` started (PostgreSQL, nats-server) running the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from services.control.scheduling import PIPELINE_NICE
from services.control.servers import ServerError
from services.control.stage_process import StageProcess, start_stage
from shared.subjects import Stage

STAGES: tuple[Stage, ...] = (
    Stage.ROUTER,
    Stage.TOOLS,
    Stage.ANSWERER,
    Stage.VALIDATOR,
    Stage.INGEST,
    Stage.GATEWAY,
)
# A crash loop backs off to this, so a broken service does not eat the machine.
MAX_RESTART_DELAY_SECONDS = 10.0
FIRST_RESTART_DELAY_SECONDS = 0.5
# A process that ran this long before it died is not in a crash loop: its next restart
# waits the first delay again. A stage is up within seconds (it crash-loops on a bad
# setting or import at once), a server may take a minute to recover its data.
STAGE_STABLE_SECONDS = 10.0
SERVER_STABLE_SECONDS = 60.0

# What one stage's processes get beyond the common environment: their own NATS
# credentials (`NatsServer.credentials_env`), so each stage holds only its own password.
StageEnvironment = Callable[[Stage], Mapping[str, str]]


@dataclass
class RestartBackoff:
    """When a process that died may start again: after the first delay if its last run
    lasted `stable_seconds`, else after a delay that doubles with each short run in a row
    (up to MAX_RESTART_DELAY_SECONDS). Without the reset a process killed now and then
    over a long life would wait the longest delay every time, as if it were crash-looping."""

    stable_seconds: float
    # Short runs in a row: the delay's exponent.
    streak: int = 0
    started_at: float = field(default_factory=time.monotonic)
    next_start: float | None = None

    def schedule(self, now: float) -> float | None:
        """Called while the process is down; returns the delay when it is set now."""
        if self.next_start is not None:
            return None
        if now - self.started_at >= self.stable_seconds:
            self.streak = 0
        delay = min(MAX_RESTART_DELAY_SECONDS, FIRST_RESTART_DELAY_SECONDS * 2**self.streak)
        self.next_start = now + delay
        return delay

    def due(self, now: float) -> bool:
        return self.next_start is not None and now >= self.next_start

    def started(self, now: float) -> None:
        self.next_start = None
        self.streak += 1
        self.started_at = now


@dataclass
class ServiceProcess:
    stage: Stage
    replica: int
    log_path: Path
    # It holds secrets (passwords, API keys): kept out of every repr.
    env: Mapping[str, str] = field(repr=False)
    process: StageProcess | None = None
    restarts: int = 0
    backoff: RestartBackoff = field(
        default_factory=lambda: RestartBackoff(STAGE_STABLE_SECONDS), repr=False
    )
    # Where it serves /metrics (kept across restarts); None: it serves none of its own (the
    # gateway serves /metrics on its HTTP port).
    metrics_port: int | None = None
    # Its priority against the gateway's (services/control/scheduling.py); 0 for the gateway.
    nice: int = 0

    @property
    def name(self) -> str:
        return f"{self.stage.value}-{self.replica}"

    def start(self) -> None:
        self.backoff.started(time.monotonic())
        self.process = start_stage(self.stage, self.env, self.log_path, self.nice)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class Supervisor:
    log_dir: Path
    env: Mapping[str, str] = field(repr=False)
    replicas: Mapping[Stage, int] = field(default_factory=dict)
    services: list[ServiceProcess] = field(default_factory=list)
    stage_env: StageEnvironment | None = field(default=None, repr=False)
    # Each stage process serves /metrics on a port of its own, counted up from this one in
    # start order (FINQ_<STAGE>_METRICS_PORT), so replicas on one machine never share one;
    # 0: none (the stages' default).
    metrics_base_port: int = 0
    # Every stage but the gateway runs at this nice value, so that under overload the
    # gateway has the CPU to refuse what it cannot serve (services/control/scheduling.py).
    pipeline_nice: int = PIPELINE_NICE

    def environment(self, stage: Stage) -> dict[str, str]:
        """The common environment with the stage's own on top."""
        own = self.stage_env(stage) if self.stage_env is not None else {}
        return {**self.env, **own}

    def _service(
        self, stage: Stage, replica: int, env: Mapping[str, str] | None = None
    ) -> ServiceProcess:
        metrics_port: int | None = None
        metrics_env: dict[str, str] = {}
        if self.metrics_base_port and stage != Stage.GATEWAY:
            taken = sum(1 for s in self.services if s.metrics_port is not None)
            metrics_port = self.metrics_base_port + taken
            metrics_env = {f"FINQ_{stage.value.upper()}_METRICS_PORT": str(metrics_port)}
        return ServiceProcess(
            stage,
            replica,
            self.log_dir / f"{stage.value}-{replica}.log",
            {**self.environment(stage), **metrics_env, **(env or {})},
            metrics_port=metrics_port,
            nice=0 if stage == Stage.GATEWAY else self.pipeline_nice,
        )

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for stage in STAGES:
            for replica in range(self.replicas.get(stage, 1)):
                service = self._service(stage, replica)
                service.start()
                self.services.append(service)

    def restart_crashed(self) -> list[str]:
        """Start again every service that exited; returns the names restarted now."""
        restarted: list[str] = []
        now = time.monotonic()
        for service in self.services:
            if service.running() or service.process is None:
                continue
            service.backoff.schedule(now)
            if service.backoff.due(now):
                service.restarts += 1
                service.start()
                restarted.append(service.name)
        return restarted

    def find(self, stage: Stage, replica: int = 0) -> ServiceProcess:
        for service in self.services:
            if service.stage == stage and service.replica == replica:
                return service
        raise KeyError(f"{stage.value}-{replica}")

    def add_replica(self, stage: Stage, env: Mapping[str, str] | None = None) -> ServiceProcess:
        """One more process of a stage, optionally with settings of its own."""
        replica = sum(1 for s in self.services if s.stage == stage)
        service = self._service(stage, replica, env)
        service.start()
        self.services.append(service)
        return service

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM everything (each stage drains), then SIGKILL what is left at the deadline."""
        for service in self.services:
            if service.running():
                assert service.process is not None
                service.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for service in self.services:
            if service.process is None:
                continue
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(service.process.pid, signal.SIGKILL)
                service.process.wait(5)


class WatchedServer(Protocol):
    """What ServerWatch needs of a server (services/control/servers.py)."""

    @property
    def name(self) -> str: ...

    @property
    def process(self) -> subprocess.Popen[bytes] | None: ...

    def running(self) -> bool: ...

    def start(self) -> None: ...


@dataclass
class _ServerRecord:
    server: WatchedServer
    restarts: int = 0
    # A failed start counts as a short run.
    backoff: RestartBackoff = field(
        default_factory=lambda: RestartBackoff(SERVER_STABLE_SECONDS), repr=False
    )


@dataclass
class ServerWatch:
    """Keeps the servers `finq up` started running. One that died (a kill -9, a crash) is
    reaped, so it never lingers as a zombie, and started again on its own port and data
    folder, after a delay that doubles while it keeps dying (0.5 s up to 10 s). Clients
    reconnect by themselves: a stage or the gateway outlives its broker and its database.

    `restart_dead()` does one round and returns at once when nothing is due; `finq up`
    calls it from its loop, tests call it directly."""

    servers: Sequence[WatchedServer]
    # Where what happened is told (`finq up` prints it).
    report: Callable[[str], None] = field(default=lambda line: None, repr=False)
    _records: list[_ServerRecord] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._records = [_ServerRecord(server) for server in self.servers]

    def restarts(self, name: str) -> int:
        """How often the server called `name` was started again."""
        return next(r.restarts for r in self._records if r.server.name == name)

    def restart_dead(self) -> list[str]:
        """Start again each server that died and whose delay passed; returns their names."""
        restarted: list[str] = []
        for record in self._records:
            server = record.server
            if server.running():
                continue
            now = time.monotonic()
            delay = record.backoff.schedule(now)
            if delay is not None:
                code = server.process.returncode if server.process is not None else None
                how = f"exited with {code}" if code is not None else "is not running"
                self.report(f"{server.name} {how}; starting it again in {delay:g} s")
            if not record.backoff.due(now):
                continue
            record.backoff.started(time.monotonic())
            try:
                server.start()
            except (ServerError, OSError, subprocess.SubprocessError) as error:
                self.report(f"{server.name} could not start again: {error}")
                continue
            record.restarts += 1
            restarted.append(server.name)
        return restarted
