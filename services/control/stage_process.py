"""One stage process, forked from the fork server (shared/fork_server.py) that imported every
stage's code once, rather than started as a new interpreter.

A stage started as `python -m services.router` spends 1 to 1.6 CPU-seconds importing its
code before it reads a message (timed with /usr/bin/time on two cores). A pipeline is six
of them, and every restart after a crash or a kill -9 pays it again. Forked, a stage starts
with its code in memory (shared copy-on-write) and its restart costs milliseconds.

The child is set up as `subprocess.Popen(..., start_new_session=True)` would set it up:
a session of its own, its own environment, stdout and stderr appended to its log, and
`services.<stage>.main.main()` run. `StageProcess` answers for it with the part of Popen's
interface the supervisor and the tests use.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from multiprocessing import process as multiprocessing_process
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from services.control.scheduling import lower_priority
from shared.fork_server import CONTEXT, preload
from shared.subjects import Stage


def main_module(stage: Stage) -> str:
    return f"services.{stage.value}.main"


preload(main_module(stage) for stage in Stage)

# multiprocessing reports a child's exit through its fork server; when the server itself is
# gone, every child it had reads as having exited with this code (the server's pipe closed).
_SERVER_GONE_CODE = 255
_PR_SET_NAME = 15
# How long start_stage waits for the child to set itself up: a fork and a few system calls,
# unless the fork server is starting (it imports every stage first).
SETUP_SECONDS = 60.0


def _name_process(name: str) -> None:
    """What `ps`, `top` and /proc/PID/comm show for the process (its command line is the fork
    server's). Best effort: the name is for people, nothing depends on it."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def _run_stage(
    stage: Stage, env: Mapping[str, str], log_path: str, cwd: str, nice: int, ready: Connection
) -> None:
    """In the child: become what `python -m services.<stage>` would have been, then run it."""
    os.setsid()
    # After setsid, so the session's autogroup is the stage's own, not the parent's.
    lower_priority(os.getpid(), nice)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    # A stage's log is lines; each reaches the file when written, as a crash may follow.
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    _name_process(f"finq-{stage.value}")
    ready.send(True)
    ready.close()
    importlib.import_module(main_module(stage)).main()


class StageProcess:
    """A forked stage process, seen through Popen's interface: pid, poll(), wait(),
    send_signal(), kill(), terminate() and returncode (negative: the signal that ended it)."""

    def __init__(self, process: BaseProcess, stage: Stage) -> None:
        self._process = process
        self.stage = stage
        self.pid: int = process.pid  # type: ignore[assignment]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self._process.exitcode
            if code is not None:
                self.returncode = self._checked_exit(code)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(main_module(self.stage), timeout or 0.0)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _checked_exit(self, code: int) -> int:
        """A fork server killed under its children reports them all as exited; one still
        running would then live on unsupervised beside its replacement, so it is ended."""
        if code == _SERVER_GONE_CODE and Path(f"/proc/{self.pid}").exists():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            return -signal.SIGKILL
        return code


def start_stage(
    stage: Stage, env: Mapping[str, str], log_path: Path, nice: int = 0
) -> StageProcess:
    """Fork one process of `stage` from the fork server; it runs until it exits or is
    signalled, whatever becomes of this process."""
    receive, send = CONTEXT.Pipe(duplex=False)
    process = CONTEXT.Process(
        target=_run_stage,
        args=(stage, dict(env), str(log_path), os.getcwd(), nice, send),
        name=f"finq-{stage.value}",
    )
    process.start()
    send.close()
    # As Popen returns only once the child is in its own session, this returns once the
    # child has its session, priority and log: a signal to its group, a look at its
    # priority or a line it logs at once all find it set up. A child that died on the way
    # closed the pipe; its exit code tells the rest.
    with receive, contextlib.suppress(EOFError, OSError):
        if receive.poll(SETUP_SECONDS):
            receive.recv()
    # multiprocessing joins every child it started when this process exits; a stage is
    # stopped by the supervisor (SIGTERM, then SIGKILL at a deadline), never waited for
    # without one, so a parent that dies early must not hang at exit on a stage still up.
    multiprocessing_process._children.discard(process)  # type: ignore[attr-defined]
    return StageProcess(process, stage)
