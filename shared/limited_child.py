"""Untrusted input is read in a child process with limits on time, memory and CPU.

A file uploaded by anyone is input to parsers (MuPDF, libxml2, zip, csv): a file made to
loop, to balloon or to crash one must cost a failed job with a reason, never the process
that serves everyone else, its other work or the machine. Each file gets a fresh child
forked from a server that has the parsers imported already (a fork costs milliseconds, an
import of the parsers hundreds), with an address-space and a CPU-time limit set before it
reads a byte, and a wall-clock limit enforced by the parent, which kills it.

Used by the ingest stage for documents (services/ingest/parser_process.py) and by the
gateway for portfolio activity files (shared/portfolio/import_process.py).
"""

from __future__ import annotations

import asyncio
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from shared.fork_server import CONTEXT

T = TypeVar("T")


# How long a child may take to start (before it reads a byte of the file, so the file has
# no part in it): the fork server forks it, and imports what the work needs if it had not.
START_SECONDS = 60


@dataclass(frozen=True)
class ChildLimits:
    """What reading one file may take; past a limit the child is stopped."""

    seconds: float
    memory_bytes: int
    cpu_seconds: int


class ChildFailed(Exception):
    """The file could not be read within its limits: `code` and `message` say so of the
    file, never of the server."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Wording:
    """How a kind of work names its failures: the code of a file it could not read, the
    code of a crash, and what the reader is called ("the parser")."""

    unreadable: str
    crashed: str
    reader: str
    # Errors whose message is the whole reason ("not a PDF"); any other is named with its
    # type, being the reader's own bug on this file.
    plain_errors: tuple[type[Exception], ...] = ()


def _limit_child(limits: ChildLimits) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _work_in_child(
    send: Connection,
    work: Callable[..., Any],
    args: tuple[Any, ...],
    limits: ChildLimits,
    wording: Wording,
) -> None:
    _limit_child(limits)
    # The parent's wall clock starts here: the fork server may first have had to import
    # `work`'s module, which on a busy machine takes longer than the file may.
    send.send(("started", None))
    try:
        value = work(*args)
    except MemoryError:
        send.send(("memory_limit", ""))
    except wording.plain_errors as error:
        send.send((wording.unreadable, str(error)))
    except Exception as error:  # the reader's own bug on this file: the job's reason
        send.send((wording.unreadable, f"{type(error).__name__}: {error}"))
    else:
        send.send(("ok", value))
    finally:
        send.close()


def _crash_reason(exit_code: int | None, limits: ChildLimits, wording: Wording) -> ChildFailed:
    if exit_code is not None and exit_code < 0:
        signum = -exit_code
        if signum in (signal.SIGXCPU, signal.SIGKILL):
            return ChildFailed(
                "parse_limit",
                f"reading the file used more than {limits.cpu_seconds} s of CPU "
                "(or was stopped for its memory)",
            )
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return ChildFailed(wording.crashed, f"{wording.reader} crashed on this file ({name})")
    return ChildFailed(wording.crashed, f"{wording.reader} stopped on this file (exit {exit_code})")


async def run_in_child(
    work: Callable[..., T],
    args: tuple[Any, ...],
    limits: ChildLimits,
    wording: Wording,
    name: str,
) -> T:
    """`work(*args)` in a child process under `limits`; ChildFailed says which limit or
    failure ended it. `work` must be importable by name (the child is another process),
    and so must what it returns."""
    receive, send = CONTEXT.Pipe(duplex=False)
    child = CONTEXT.Process(
        target=_work_in_child,
        args=(send, work, args, limits, wording),
        name=name,
        daemon=True,
    )
    await asyncio.to_thread(child.start)
    send.close()  # the child holds the only writer: its exit is our end of file

    async def receive_within(seconds: float, late: ChildFailed) -> tuple[str, Any]:
        if not await asyncio.to_thread(receive.poll, seconds):
            raise late
        try:
            return await asyncio.to_thread(receive.recv)  # type: ignore[no-any-return]
        except (EOFError, OSError):
            await asyncio.to_thread(child.join, 5)
            raise _crash_reason(child.exitcode, limits, wording) from None

    try:
        await receive_within(
            START_SECONDS,
            ChildFailed(wording.crashed, f"{wording.reader} did not start in {START_SECONDS} s"),
        )
        outcome, value = await receive_within(
            limits.seconds,
            ChildFailed("parse_timeout", f"reading the file took longer than {limits.seconds:g} s"),
        )
    finally:
        if child.is_alive():
            child.kill()
        await asyncio.to_thread(child.join, 5)
        receive.close()
    if outcome == "ok":
        return value  # type: ignore[no-any-return]
    if outcome == "memory_limit":
        megabytes = limits.memory_bytes // (1024 * 1024)
        raise ChildFailed("parse_limit", f"reading the file needed more than {megabytes} MB")
    raise ChildFailed(outcome, str(value))
