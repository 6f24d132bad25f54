"""`finq up`, `finq down` and `finq status`: the whole pipeline (PostgreSQL, NATS and the five
services) started in the foreground, stopped, and looked at."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time

import httpx

from services.control.commands import Subparsers
from services.control.commands.database_setup import prepare_database
from services.control.commands.demo_user import demo_at_start
from services.control.commands.gateway_readiness import wait_until_ready
from services.control.commands.state_file import (
    STATE_FILE,
    metrics_ports,
    pid_alive,
    process_state,
    read_state,
    write_state,
)
from services.control.progress import Progress
from services.control.servers import NatsServer, PostgresServer, ServerError, port_is_open
from services.control.settings import ControlSettings
from services.control.supervisor import ServerWatch, Supervisor
from shared.subjects import Stage


def register(subparsers: Subparsers) -> None:
    up = subparsers.add_parser("up", help="start PostgreSQL, NATS and the five services")
    up.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="STAGE=N",
        help="run N replicas of a stage (repeatable), e.g. --replicas tools=2",
    )
    up.set_defaults(handler=command_up)
    subparsers.add_parser("down", help="stop what `finq up` started").set_defaults(
        handler=command_down
    )
    subparsers.add_parser("status", help="each process and its health").set_defaults(
        handler=command_status
    )


def _parse_replicas(values: list[str]) -> dict[Stage, int]:
    replicas: dict[Stage, int] = {}
    for value in values:
        name, _, count = value.partition("=")
        replicas[Stage(name)] = int(count)
    return replicas


def command_up(args: argparse.Namespace, settings: ControlSettings) -> int:
    home = settings.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    url = f"http://{settings.gateway_host}:{settings.gateway_port}"
    if port_is_open(settings.gateway_port, settings.gateway_host):
        print(f"port {settings.gateway_port} is taken: is finq already up? (finq status)")
        return 1
    postgres = PostgresServer(
        home / "postgres", settings.postgres_port, nice=settings.pipeline_nice
    )
    nats = NatsServer(home / "nats", settings.nats_port, nice=settings.pipeline_nice)
    supervisor: Supervisor | None = None
    progress = Progress()
    # SIGTERM (finq down) unwinds through the same clean-up as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(f"starting PostgreSQL on {settings.postgres_port} and NATS on {settings.nats_port}")
        with progress.waiting(f"waiting for PostgreSQL on port {settings.postgres_port}"):
            postgres.start()
        with progress.waiting(f"waiting for NATS on port {settings.nats_port}"):
            nats.start()
        loaded = asyncio.run(
            prepare_database(postgres.dsn, service_dsn=postgres.service_dsn, progress=progress)
        )
        if loaded:
            print(f"loaded the bundled dataset: {loaded}")
        print(demo_at_start(postgres.dsn, home))
        if settings.filings_dir is not None:
            from services.control.filings_folder import ingest_filings_dir

            asyncio.run(
                ingest_filings_dir(postgres.dsn, settings.filings_dir.resolve(), progress=progress)
            )
        env = {
            **os.environ,
            "FINQ_NATS_URL": nats.url,
            "FINQ_DATABASE_URL": postgres.service_dsn,
            "FINQ_GATEWAY_HOST": settings.gateway_host,
            "FINQ_GATEWAY_PORT": str(settings.gateway_port),
        }
        # Each stage connects to NATS as its own user (shared/nats_permissions.py); the
        # passwords stay in the 0600 file beside NATS's data, never in the state file.
        supervisor = Supervisor(
            home / "logs",
            env,
            _parse_replicas(args.replicas),
            stage_env=nats.credentials_env,
            metrics_base_port=settings.metrics_base_port,
            pipeline_nice=settings.pipeline_nice,
        )
        supervisor.start()
        # The servers are watched like the stages: a dead one is reaped and started again
        # on its port and data; the stages and the gateway reconnect by themselves.
        watch = ServerWatch([postgres, nats], report=progress.above)
        write_state(home, url, postgres, nats, supervisor)
        wait_until_ready(url, supervisor, timeout=120, watch=watch, progress=progress)
        # What was restarted while it got ready has new pids.
        write_state(home, url, postgres, nats, supervisor)
        print(f"finq is up at {url} (docs at {url}/docs); Ctrl-C stops it")
        if metrics := metrics_ports(supervisor):
            listed = ", ".join(f"{name} :{port}" for name, port in metrics.items())
            print(f"metrics at {url}/metrics and http://127.0.0.1:<port>/metrics: {listed}")
        while True:
            time.sleep(0.5)
            restarted = watch.restart_dead() + supervisor.restart_crashed()
            if restarted:
                print(f"restarted {', '.join(restarted)}", flush=True)
                write_state(home, url, postgres, nats, supervisor)
    except KeyboardInterrupt:
        print("\nstopping finq")
    except ServerError as error:
        print(f"finq could not start: {error}", file=sys.stderr)
        return 1
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
        (home / STATE_FILE).unlink(missing_ok=True)
    return 0


def command_down(_: argparse.Namespace, settings: ControlSettings) -> int:
    state = read_state(settings)
    if state is None:
        print("finq is not running here")
        return 0
    pid = state["pids"]["supervisor"]
    if pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    for name, child in state["pids"].items():
        if name != "supervisor" and pid_alive(child):
            os.kill(child, signal.SIGTERM)
    (settings.home.resolve() / STATE_FILE).unlink(missing_ok=True)
    print("finq is down")
    return 0


def command_status(_: argparse.Namespace, settings: ControlSettings) -> int:
    """Each process of the state file, `running`, `zombie` or `dead`, and the gateway's
    readiness; exit 1 unless every process runs and the gateway is ready."""
    state = read_state(settings)
    if state is None:
        print(f"finq is not running here (no state in {settings.home.resolve()})")
        return 1
    # Every pid in it was alive when the file was written (it is written again on restarts).
    written = (settings.home.resolve() / STATE_FILE).stat().st_mtime
    healthy = True
    metrics = state.get("metrics_ports", {})
    for name, pid in state["pids"].items():
        condition = process_state(pid, started_by=written)
        healthy &= condition == "running"
        port = f" metrics :{metrics[name]}" if name in metrics else ""
        print(f"{name:<14} pid {pid!s:<8} {condition}{port}")
    try:
        ready = httpx.get(f"{state['url']}/readyz", timeout=3.0)
        print(f"{'gateway':<14} {state['url']} {ready.status_code} {ready.text}")
        healthy &= ready.status_code == 200
    except httpx.HTTPError as error:
        print(f"{'gateway':<14} {state['url']} unreachable: {error}")
        healthy = False
    return 0 if healthy else 1
