"""An activity file from the network is parsed in a child process with limits on time,
memory and CPU.

The gateway serves every user from one process: a file made to be slow to read (a field of
a million characters, a quoted field that never closes, fifty thousand rows of validation)
must cost a refused import, never the event loop or the memory of the process that answers
everyone else. The pattern is the ingest stage's for documents
(services/ingest/parser_process.py): a fresh child forked from a server that has the reader
imported already, an address-space and a CPU-time limit set in the child before it reads a
byte, and a wall-clock limit the parent enforces by killing it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import signal
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection

from shared.portfolio.activity import AssetClass
from shared.portfolio.csv_format import ParsedActivity, parse_activity_csv

# The fork server is one per process and context. In a process that parses documents too
# (the tests) it may have started preloading the document parsers instead: a child forked
# from it then imports the CSV reader by name, which costs time, not correctness.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["shared.portfolio.csv_format"])

Reader = Callable[[bytes, Collection[str]], ParsedActivity]


@dataclass(frozen=True)
class ImportLimits:
    """What parsing one file may take. The defaults read the largest file the gateway
    takes (5 MiB, 50,000 rows) in a few seconds and well under the memory."""

    seconds: float = 30.0
    memory_bytes: int = 1024 * 1024 * 1024
    cpu_seconds: int = 30


class ActivityParseFailed(Exception):
    """The file could not be read within its limits: `code` and `message` say so of the
    file, never of the server."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _limit_child(limits: ImportLimits) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _parse_in_child(
    send: Connection,
    read: Reader,
    data: bytes,
    known_symbols: Collection[str],
    limits: ImportLimits,
) -> None:
    _limit_child(limits)
    try:
        parsed = read(data, known_symbols)
    except MemoryError:
        send.send(("memory_limit", ""))
    except Exception as error:  # the reader's own bug on this file: the import's reason
        send.send(("unreadable_file", f"{type(error).__name__}: {error}"))
    else:
        send.send(("ok", parsed))
    finally:
        send.close()


def _crash_reason(exit_code: int | None, limits: ImportLimits) -> ActivityParseFailed:
    if exit_code is not None and exit_code < 0:
        signum = -exit_code
        if signum in (signal.SIGXCPU, signal.SIGKILL):
            return ActivityParseFailed(
                "parse_limit",
                f"reading the file used more than {limits.cpu_seconds} s of CPU "
                "(or was stopped for its memory)",
            )
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return ActivityParseFailed("reader_crashed", f"the reader crashed on this file ({name})")
    return ActivityParseFailed(
        "reader_crashed", f"the reader stopped on this file (exit {exit_code})"
    )


async def parse_in_child(
    data: bytes,
    known_symbols: Mapping[str, AssetClass] | Collection[str],
    limits: ImportLimits | None = None,
    read: Reader = parse_activity_csv,
) -> ParsedActivity:
    """`read(data, known_symbols)` in a child process under `limits`; ActivityParseFailed
    says which limit or failure ended it. `read` must be importable by name (the child is
    another process)."""
    limits = limits or ImportLimits()
    receive, send = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_parse_in_child,
        # The symbols alone: a set pickles smaller than the mapping, and is all it reads.
        args=(send, read, data, frozenset(known_symbols), limits),
        name="finq-parse-activity",
        daemon=True,
    )
    await asyncio.to_thread(child.start)
    send.close()  # the child holds the only writer: its exit is our end of file
    try:
        if not await asyncio.to_thread(receive.poll, limits.seconds):
            raise ActivityParseFailed(
                "parse_timeout", f"reading the file took longer than {limits.seconds:g} s"
            )
        try:
            outcome, value = await asyncio.to_thread(receive.recv)
        except (EOFError, OSError):
            await asyncio.to_thread(child.join, 5)
            raise _crash_reason(child.exitcode, limits) from None
    finally:
        if child.is_alive():
            child.kill()
        await asyncio.to_thread(child.join, 5)
        receive.close()
    if outcome == "ok":
        assert isinstance(value, ParsedActivity)
        return value
    if outcome == "memory_limit":
        megabytes = limits.memory_bytes // (1024 * 1024)
        raise ActivityParseFailed(
            "parse_limit", f"reading the file needed more than {megabytes} MB"
        )
    raise ActivityParseFailed(outcome, str(value))
