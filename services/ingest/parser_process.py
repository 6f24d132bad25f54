"""Untrusted files are parsed in a child process with limits on time, memory and CPU.

A PDF, HTML page or Word file uploaded by anyone is input to large C libraries (MuPDF,
libxml2, zip): a file made to loop, to balloon or to crash one must cost a failed job with
a reason, never the ingest worker, its other jobs or the machine. Each file gets a fresh
child forked from a server that has the parsers imported already (a fork costs
milliseconds, an import of the parsers hundreds), with an address-space and a CPU-time
limit set before it reads a byte, and a wall-clock limit enforced by the parent, which
kills it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from services.ingest.document_model import ParsedDocument
from services.ingest.document_parsing import (
    DocumentParseError,
    UnsupportedDocument,
    parse_document,
)

# The fork server imports the parsers once; each file's child is a fork of it.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["services.ingest.document_parsing"])

Parser = Callable[..., ParsedDocument]


@dataclass(frozen=True)
class ParserLimits:
    """What one file may take to parse. The defaults read a 300-page 10-K in a few seconds
    and a few hundred MB; a file past them is refused with the limit it hit."""

    seconds: float = 120.0
    memory_bytes: int = 1536 * 1024 * 1024
    cpu_seconds: int = 120


class ParserFailed(Exception):
    """The file could not be parsed within its limits; `code` and `message` are the job's
    error, said of the file, never of the server."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _limit_child(limits: ParserLimits) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _parse_in_child(
    send: Connection, parse: Parser, path: Path, content_type: str | None, limits: ParserLimits
) -> None:
    _limit_child(limits)
    try:
        document = parse(path, content_type=content_type)
    except MemoryError:
        send.send(("memory_limit", ""))
    except (UnsupportedDocument, DocumentParseError) as error:
        send.send(("unreadable_document", str(error)))
    except Exception as error:  # a parser's own bug on this file: the job's reason
        send.send(("unreadable_document", f"{type(error).__name__}: {error}"))
    else:
        send.send(("ok", document))
    finally:
        send.close()


def _crash_reason(exit_code: int | None, limits: ParserLimits) -> ParserFailed:
    if exit_code is not None and exit_code < 0:
        signum = -exit_code
        if signum == signal.SIGXCPU or signum == signal.SIGKILL:
            return ParserFailed(
                "parse_limit",
                f"reading the file used more than {limits.cpu_seconds} s of CPU "
                "(or was stopped for its memory)",
            )
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return ParserFailed("parser_crashed", f"the parser crashed on this file ({name})")
    return ParserFailed("parser_crashed", f"the parser stopped on this file (exit {exit_code})")


async def parse_in_child(
    path: Path,
    *,
    content_type: str | None = None,
    limits: ParserLimits | None = None,
    parse: Parser = parse_document,
) -> ParsedDocument:
    """`parse(path)` run in a child process under `limits`; ParserFailed says which limit or
    failure ended it. `parse` must be importable by name (the child is another process)."""
    limits = limits or ParserLimits()
    receive, send = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_parse_in_child,
        args=(send, parse, path, content_type, limits),
        name=f"finq-parse-{path.name[:40]}",
        daemon=True,
    )
    await asyncio.to_thread(child.start)
    send.close()  # the child holds the only writer: its exit is our end of file
    try:
        if not await asyncio.to_thread(receive.poll, limits.seconds):
            raise ParserFailed(
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
        assert isinstance(value, ParsedDocument)
        return value
    if outcome == "memory_limit":
        megabytes = limits.memory_bytes // (1024 * 1024)
        raise ParserFailed("parse_limit", f"reading the file needed more than {megabytes} MB")
    raise ParserFailed(outcome, str(value))
