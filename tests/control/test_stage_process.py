"""A stage process forked from the fork server is what `python -m services.<stage>` started
in a session of its own was: its own session, priority, environment and log, an exit code
or the signal that ended it; and neither a dead fork server nor a parent that exits leaves
one running unsupervised or hangs on it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from services.control.servers import free_port
from services.control.stage_process import StageProcess, start_stage
from shared.subjects import Stage
from tests.helpers import REPO_ROOT, wait_until


def broker_nobody_runs() -> str:
    return f"nats://127.0.0.1:{free_port()}"


def validator_without_a_broker(log: Path, nice: int = 0) -> StageProcess:
    """A validator whose broker never answers: it stays up, logging each failed connect."""
    env = {"PATH": os.environ["PATH"], "FINQ_NATS_URL": broker_nobody_runs()}
    return start_stage(Stage.VALIDATOR, env, log, nice)


def state_of(pid: int) -> str | None:
    """The process's state letter (Z for a zombie), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(")") + 2]


def name_of(pid: int) -> str:
    """What `ps` and `top` show for the process."""
    return Path(f"/proc/{pid}/comm").read_text().strip()


async def test_a_forked_stage_runs_in_its_own_session_at_its_priority_writing_its_log(
    tmp_path: Path,
) -> None:
    log = tmp_path / "validator-0.log"
    log.write_text("an earlier run's line\n")
    stage = validator_without_a_broker(log, nice=4)
    try:
        assert os.getsid(stage.pid) == stage.pid
        assert os.getpriority(os.PRIO_PROCESS, stage.pid) == 4
        assert name_of(stage.pid) == "finq-validator"
        assert stage.poll() is None

        await wait_until(lambda: "nats error" in log.read_text(), within=30)

        assert log.read_text().startswith("an earlier run's line\n"), "appended, as restarts do"
    finally:
        stage.kill()
    assert stage.wait(10) == -signal.SIGKILL
    assert stage.returncode == -signal.SIGKILL
    assert state_of(stage.pid) in (None, "Z")


def test_a_stage_with_a_wrong_setting_exits_non_zero_and_its_log_says_why(tmp_path: Path) -> None:
    log = tmp_path / "validator-0.log"

    stage = start_stage(Stage.VALIDATOR, {"PATH": os.environ["PATH"], "FINQ_MAX_DELIVER": "0"}, log)

    assert stage.wait(60) == 1
    assert "max_deliver" in log.read_text()
    assert "greater than or equal to 1" in log.read_text()


# Each runs in a process of its own: killing the fork server of a test worker would end
# every stage of the session's pipeline with it.
KILL_THE_FORK_SERVER = """
import os, signal, sys, time
from pathlib import Path
from services.control.stage_process import start_stage
from shared.subjects import Stage

env = {"PATH": os.environ["PATH"], "FINQ_NATS_URL": sys.argv[2]}
stage = start_stage(Stage.VALIDATOR, env, Path(sys.argv[1]))
stat = Path(f"/proc/{stage.pid}/stat").read_text()
fork_server = int(stat[stat.rfind(")") + 2:].split()[1])
os.kill(fork_server, signal.SIGKILL)
deadline = time.monotonic() + 30
while stage.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
again = start_stage(Stage.VALIDATOR, env, Path(sys.argv[1]))
print(stage.pid, stage.poll(), again.pid, again.poll(), flush=True)
again.kill()
again.wait(10)
"""

LEAVE_A_STAGE_RUNNING = """
import os, sys
from pathlib import Path
from services.control.stage_process import start_stage
from shared.subjects import Stage

env = {"PATH": os.environ["PATH"], "FINQ_NATS_URL": sys.argv[2]}
print(start_stage(Stage.VALIDATOR, env, Path(sys.argv[1])).pid, flush=True)
"""


def run_python(code: str, output: Path, *args: str) -> tuple[int, str, str]:
    """Run `code` to its exit: its code, stdout and stderr. The output goes through files,
    not pipes: a stage left running keeps the fork server, and so the parent's stdout and
    stderr, open after the parent exited."""
    with output.with_suffix(".out").open("w+") as out, output.with_suffix(".err").open("w+") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", code, *args], cwd=REPO_ROOT, stdout=out, stderr=err
        )
        code = process.wait(timeout=120)
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def test_a_stage_whose_fork_server_was_killed_is_ended_and_the_next_start_gets_a_new_server(
    tmp_path: Path,
) -> None:
    code, out, err = run_python(
        KILL_THE_FORK_SERVER, tmp_path / "run", str(tmp_path / "v.log"), broker_nobody_runs()
    )

    assert code == 0, err
    old_pid, old_code, new_pid, new_code = out.split()
    assert old_code == str(-signal.SIGKILL), "reported ended, not left running unsupervised"
    assert state_of(int(old_pid)) in (None, "Z")
    assert new_code == "None", "a stage started after the server died runs"
    assert new_pid != old_pid


async def test_a_parent_that_exits_with_a_stage_running_exits_at_once_and_the_stage_lives_on(
    tmp_path: Path,
) -> None:
    """As with a stage started in a session of its own: the parent's exit is not the
    stage's, and multiprocessing must not make the parent wait for it."""
    code, out, err = run_python(
        LEAVE_A_STAGE_RUNNING, tmp_path / "run", str(tmp_path / "v.log"), broker_nobody_runs()
    )

    assert code == 0, err
    pid = int(out)
    try:
        assert state_of(pid) not in (None, "Z")
        await wait_until(lambda: "nats error" in (tmp_path / "v.log").read_text(), within=30)
    finally:
        os.killpg(pid, signal.SIGKILL)
