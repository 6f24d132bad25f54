"""Supervision of what `finq up` starts: a kill -9 of nats-server or PostgreSQL is reaped and
the server started again on its port with its data; `finq status` tells a running process
from a zombie and a dead one; and the stages and the gateway outlive both servers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from services.control.commands.state_file import process_state
from services.control.scheduling import PIPELINE_NICE, autogroup_nice, lower_priority
from services.control.servers import NatsServer, PostgresServer, ServerError, free_port
from services.control.supervisor import (
    MAX_RESTART_DELAY_SECONDS,
    RestartBackoff,
    ServerWatch,
    Supervisor,
)
from shared import bus, subjects
from shared.nats_permissions import OPERATOR
from shared.subjects import Stage
from tests.conftest import RunningFinq
from tests.helpers import run_finq, wait_until
from tests.watched_finq import watched_finq


async def restarted_by(watch: ServerWatch, name: str, within: float = 60.0) -> None:
    """Drive the watch as `finq up`'s loop does until it has started `name` again."""

    async def round_done() -> bool:
        return name in await asyncio.to_thread(watch.restart_dead)

    await wait_until(round_done, within=within, every=0.1)


def spawn(code: str) -> subprocess.Popen[bytes]:
    """A child Python process; subprocess's, not asyncio's, whose watcher would reap it."""
    return subprocess.Popen([sys.executable, "-c", code])


def kill_hard(process: subprocess.Popen[bytes] | None) -> int:
    assert process is not None
    os.kill(process.pid, signal.SIGKILL)
    return process.pid


async def test_a_killed_nats_server_is_reaped_and_started_again_on_its_port_with_its_streams(
    tmp_path: Path,
) -> None:
    server = NatsServer(tmp_path / "nats", free_port())
    server.start()
    watch = ServerWatch([server])
    try:
        nc = await bus.connect(server.url, "before-the-kill", *server.credentials(OPERATOR))
        js = nc.jetstream()
        await bus.ensure_streams(js)
        ack = await js.publish(subjects.QUESTION_ASKED, b"written before the kill")
        await nc.close()

        killed = kill_hard(server.process)
        # Nobody has waited for it yet: the broker is a zombie, as `finq up` used to leave it.
        await wait_until(lambda: process_state(killed) == "zombie")
        await restarted_by(watch, "nats")

        assert process_state(killed) == "dead", "the watch reaped the killed broker"
        assert server.running() and server.process is not None
        assert server.process.pid != killed
        assert watch.restarts("nats") == 1
        nc = await bus.connect(server.url, "after-the-kill", *server.credentials(OPERATOR))
        try:
            kept = await nc.jetstream().get_msg(
                subjects.STAGE_STREAMS[subjects.QUESTION_ASKED], ack.seq
            )
        finally:
            await nc.close()
        assert kept.data == b"written before the kill"
    finally:
        server.stop()


async def test_a_killed_postgres_is_started_again_on_its_data_with_a_query_still_running(
    tmp_path: Path,
) -> None:
    server = PostgresServer(tmp_path / "postgres", free_port())
    server.start()
    watch = ServerWatch([server])
    port = server.port
    try:
        conn = await asyncpg.connect(server.dsn_for("postgres"))
        await conn.execute("CREATE TABLE kept (note text)")
        await conn.execute("INSERT INTO kept VALUES ('written before the kill')")
        await conn.close()
        # A backend busy in a loop does not notice its postmaster's death: an orphan that
        # holds the shared memory, which makes a plain restart refuse to start.
        busy = await asyncpg.connect(server.dsn_for("postgres"))
        orphan = busy.get_server_pid()
        looping = asyncio.create_task(busy.execute("DO $$BEGIN LOOP END LOOP; END$$"))
        # Killed only once the backend is in its loop: one still waiting for the query (on a
        # busy machine it can be) would see its postmaster die, and exit.
        observer = await asyncpg.connect(server.dsn_for("postgres"))

        async def in_its_loop() -> bool:
            state = await observer.fetchval(
                "SELECT state FROM pg_stat_activity WHERE pid = $1", orphan
            )
            return state == "active"

        try:
            await wait_until(in_its_loop)
        finally:
            await observer.close()
        killed = kill_hard(server.process)
        await wait_until(lambda: process_state(killed) == "zombie")
        assert process_state(orphan) == "running"
        await restarted_by(watch, "postgres")

        assert process_state(killed) == "dead", "the watch reaped the killed postmaster"
        assert process_state(orphan) != "running", "the orphaned backend was ended"
        assert server.port == port and server.running()
        conn = await asyncpg.connect(server.dsn_for("postgres"))
        try:
            assert await conn.fetchval("SELECT note FROM kept") == "written before the kill"
        finally:
            await conn.close()
        with pytest.raises(asyncpg.PostgresConnectionError):
            await looping
    finally:
        server.stop()


async def test_a_postgres_still_running_on_its_data_folder_is_never_taken_for_leftovers(
    tmp_path: Path,
) -> None:
    server = PostgresServer(tmp_path / "postgres", free_port())
    server.start()
    try:
        other = PostgresServer(server.data_dir, free_port())
        with pytest.raises(ServerError, match="already running"):
            other.start()
        assert server.running()
        conn = await asyncpg.connect(server.dsn_for("postgres"))
        assert await conn.fetchval("SELECT 1") == 1
        await conn.close()
    finally:
        server.stop()


async def test_a_server_that_cannot_start_again_is_tried_again_later(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats", free_port())
    server.start()
    told: list[str] = []
    watch = ServerWatch([server], report=told.append)
    with socket.socket() as squatter:
        try:
            kill_hard(server.process)
            await wait_until(lambda: not server.running())
            # Someone else took its port meanwhile: the start fails, and is tried again.
            squatter.bind(("127.0.0.1", server.port))
            squatter.listen()

            def refused() -> bool:
                watch.restart_dead()
                return any("could not start again" in line for line in told)

            await wait_until(refused, within=10)
            squatter.close()
            await restarted_by(watch, "nats", within=30)
        finally:
            server.stop()
    assert watch.restarts("nats") == 1
    assert told[0] == "nats exited with -9; starting it again in 0.5 s"
    assert "port" in told[1] and "taken" in told[1]


async def test_finq_status_tells_a_running_a_zombie_and_a_dead_process_apart(
    tmp_path: Path,
) -> None:
    running = spawn("import signal; signal.pause()")  # runs until killed
    zombie = spawn("pass")  # exits, and is never waited for
    dead = spawn("pass")
    dead.wait()  # exited and reaped: its pid names nothing now
    try:
        await wait_until(lambda: process_state(zombie.pid) == "zombie")
        home = tmp_path / "home"
        home.mkdir()
        state = {
            "url": f"http://127.0.0.1:{free_port()}",
            "postgres_dsn": "",
            "nats_url": "",
            "pids": {"supervisor": running.pid, "nats": zombie.pid, "router-0": dead.pid},
        }
        (home / "state.json").write_text(json.dumps(state))

        code, out, err = await run_finq("status", database="unused", FINQ_HOME=str(home))
        shown = {line.split()[0]: line.split()[-1] for line in out.splitlines()}
        assert shown["supervisor"] == "running", out
        assert shown["nats"] == "zombie", out
        assert shown["router-0"] == "dead", out
        assert code == 1, out + err
        # A pid taken by a process started after the state was written is not the one
        # recorded: that one is dead.
        started = psutil.Process(running.pid).create_time()
        assert process_state(running.pid, started_by=started - 5) == "dead"
        assert process_state(running.pid, started_by=started) == "running"
    finally:
        running.kill()
        running.wait()
        zombie.wait()


# --- the stages and the gateway outlive their servers ------------------------------------


async def ask(url: str, question: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=90) as http:
        return await http.post("/v1/ask", json={"question": question})


async def test_the_stages_and_the_gateway_outlive_a_kill_of_nats_and_of_postgres(
    tmp_path: Path,
) -> None:
    async with watched_finq(tmp_path / "home") as finq:
        first = await ask(finq.url, "What was Apple revenue in fiscal 2023?")
        assert first.status_code == 200, first.text
        pids = {s.name: s.process.pid for s in finq.supervisor.services if s.process}

        for name, server, question in (
            ("nats", finq.nats, "NVIDIA net income FY2024"),
            ("postgres", finq.postgres, "Alphabet total assets 2023"),
        ):
            kill_hard(server.process)
            await restarted_by(finq.watch, name)
            # Asked at once: no finq process was restarted, none was told of the restart.
            answer = await ask(finq.url, question)
            assert answer.status_code == 200, f"after the kill of {name}: {answer.text}"
            assert answer.json()["validation"]["passed"], answer.text

        assert all(s.running() and s.restarts == 0 for s in finq.supervisor.services)
        assert {s.name: s.process.pid for s in finq.supervisor.services if s.process} == pids

        # The state file names the servers' new pids, and `finq status` finds all running.
        finq.write_state()
        state = json.loads((finq.home / "state.json").read_text())
        assert finq.nats.process is not None and finq.postgres.process is not None
        assert state["pids"]["nats"] == finq.nats.process.pid
        assert state["pids"]["postgres"] == finq.postgres.process.pid
        code, out, err = await run_finq("status", database="unused", FINQ_HOME=str(finq.home))
        assert code == 0, out + err


def delays_for(backoff: RestartBackoff, lifetimes: list[float]) -> list[float]:
    """The restart delays of a process that lives each of `lifetimes` seconds in turn."""
    now = backoff.started_at
    delays = []
    for lifetime in lifetimes:
        now += lifetime
        delay = backoff.schedule(now)
        assert delay is not None and not backoff.due(now)
        now += delay
        assert backoff.due(now)
        backoff.started(now)
        delays.append(delay)
    return delays


def test_a_process_that_keeps_dying_at_once_waits_longer_each_time_up_to_the_cap() -> None:
    delays = delays_for(RestartBackoff(stable_seconds=10.0), [0.1] * 7)
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, MAX_RESTART_DELAY_SECONDS, 10.0]


def test_a_process_killed_now_and_then_over_a_long_life_restarts_after_the_first_delay() -> None:
    # Killed after runs of 12 s each: never a crash loop, never a long wait.
    assert delays_for(RestartBackoff(stable_seconds=10.0), [12.0] * 20) == [0.5] * 20
    # Two quick deaths double the delay; a stable run after them resets it.
    assert delays_for(RestartBackoff(stable_seconds=10.0), [1.0, 1.0, 30.0, 1.0]) == [
        0.5,
        1.0,
        0.5,
        1.0,
    ]


def test_a_delay_is_set_once_per_death() -> None:
    backoff = RestartBackoff(stable_seconds=10.0)
    first = backoff.schedule(backoff.started_at + 1.0)
    assert first == 0.5
    assert backoff.schedule(backoff.started_at + 1.2) is None


def test_every_process_finq_starts_but_the_gateway_runs_below_the_gateways_priority(
    finq: RunningFinq,
) -> None:
    """Under overload the gateway must have the CPU to take each connection and refuse what
    it cannot serve; with every process equal it sat two thirds of its time in the run
    queue while connections waited in the kernel (bench/overload.py)."""
    gateway = finq.supervisor.find(Stage.GATEWAY).process
    assert gateway is not None
    assert os.getpriority(os.PRIO_PROCESS, gateway.pid) == os.getpriority(os.PRIO_PROCESS, 0)
    behind = {
        service.name: service.process.pid
        for service in finq.supervisor.services
        if service.stage != Stage.GATEWAY and service.process is not None
    }
    for server in (finq.servers.postgres, finq.servers.nats):
        assert server.process is not None
        behind[server.name] = server.process.pid
    assert {"router-0", "validator-0", "postgres", "nats"} <= behind.keys()
    autogroups = autogroup_nice(gateway.pid) is not None
    for name, pid in behind.items():
        assert os.getpriority(os.PRIO_PROCESS, pid) == PIPELINE_NICE, name
        if autogroups:  # where the kernel groups sessions, the group's nice is what counts
            assert autogroup_nice(pid) == PIPELINE_NICE, name
            assert autogroup_nice(gateway.pid) == 0


def test_a_pipeline_nice_of_zero_runs_every_stage_alike(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path, {}, pipeline_nice=0)
    assert supervisor._service(Stage.ROUTER, 0).nice == 0
    assert Supervisor(tmp_path, {})._service(Stage.ROUTER, 0).nice == PIPELINE_NICE
    assert Supervisor(tmp_path, {})._service(Stage.GATEWAY, 0).nice == 0


def test_lowering_a_priority_reaches_the_process_and_its_session_group() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal; signal.pause()"], start_new_session=True
    )
    try:
        lower_priority(child.pid, 7)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == 7
        if autogroup_nice(child.pid) is not None:
            assert autogroup_nice(child.pid) == 7
    finally:
        child.kill()
        child.wait()
