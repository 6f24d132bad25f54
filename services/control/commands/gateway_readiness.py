"""Waiting for a started pipeline's gateway to say it is ready (/readyz), restarting what dies
meanwhile: `finq up`, the evaluations' own pipelines, the tests and the benchmarks."""

from __future__ import annotations

import time

import httpx

from services.control.progress import Progress
from services.control.servers import ServerError
from services.control.supervisor import ServerWatch, Supervisor


def wait_until_ready(
    url: str,
    supervisor: Supervisor,
    timeout: float,
    watch: ServerWatch | None = None,
    progress: Progress | None = None,
) -> None:
    """Poll the gateway's /readyz until it answers 200, restarting what died meanwhile;
    `progress` is told what is not ready yet, as /readyz names it."""
    progress = progress or Progress.silent()
    deadline = time.monotonic() + timeout
    with progress.waiting(f"waiting for the gateway at {url}") as wait:
        while time.monotonic() < deadline:
            if watch is not None:
                watch.restart_dead()
            supervisor.restart_crashed()
            try:
                ready = httpx.get(f"{url}/readyz", timeout=1.0)
                if ready.status_code == 200:
                    return
                wait.update(waiting_for(ready))
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise ServerError(f"the gateway was not ready within {timeout:g} s; see the logs")


def waiting_for(ready: httpx.Response) -> str:
    """What a not-ready /readyz says is missing, as a progress line: "waiting for router,
    tools to be ready (loading models)"."""
    try:
        message = str(ready.json().get("message", ""))
    except ValueError:
        message = ""
    idle = message.partition("stages not consuming yet: ")[2]
    if idle:
        return f"waiting for {idle} to be ready (loading models)"
    return f"waiting for the gateway: {message or f'HTTP {ready.status_code}'}"
