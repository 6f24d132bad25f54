"""The state file `finq up` writes in its home folder (FINQ_HOME/state.json): the gateway's
URL, the brokers', and every process's pid and metrics port. `finq down` and `finq status`
read it, and `finq ask` and `finq dead` find the running pipeline by it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from services.control.servers import NatsServer, PostgresServer
from services.control.settings import ControlSettings
from services.control.supervisor import Supervisor

STATE_FILE = "state.json"


def write_state(
    home: Path, url: str, postgres: PostgresServer, nats: NatsServer, supervisor: Supervisor
) -> None:
    """Write the state file; `finq up` writes it again whenever a process was restarted."""
    processes: dict[str, int | None] = {
        "supervisor": os.getpid(),
        "postgres": postgres.process.pid if postgres.process else None,
        "nats": nats.process.pid if nats.process else None,
    }
    for service in supervisor.services:
        processes[service.name] = service.process.pid if service.process else None
    state = {
        "url": url,
        "postgres_dsn": postgres.dsn,
        "nats_url": nats.url,
        "pids": processes,
        "metrics_ports": metrics_ports(supervisor),
    }
    (home / STATE_FILE).write_text(json.dumps(state, indent=2))


def metrics_ports(supervisor: Supervisor) -> dict[str, int]:
    """Each stage process's /metrics port, by process name."""
    return {
        service.name: service.metrics_port
        for service in supervisor.services
        if service.metrics_port is not None
    }


def read_state(settings: ControlSettings) -> dict[str, Any] | None:
    """The state file of FINQ_HOME's running finq; None when nothing runs there."""
    path = settings.home.resolve() / STATE_FILE
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def process_state(pid: int | None, started_by: float | None = None) -> str:
    """`running`, `zombie` (exited, not reaped by its parent) or `dead` (gone). A process
    created after `started_by` (a time.time()) cannot be the one recorded then: its pid
    was reused, so the recorded one is dead."""
    import psutil

    if not pid:
        return "dead"
    try:
        process = psutil.Process(pid)
        status = process.status()
        created = process.create_time()
    except psutil.NoSuchProcess:
        return "dead"
    except psutil.AccessDenied:
        return "running"  # someone else's process: it exists, and that is all we can see
    if status == psutil.STATUS_ZOMBIE:
        return "zombie"
    if status == psutil.STATUS_DEAD:
        return "dead"
    # create_time is rounded to the clock tick: a second of slack.
    if started_by is not None and created > started_by + 1.0:
        return "dead"
    return "running"


def pid_alive(pid: int | None) -> bool:
    return process_state(pid) == "running"
