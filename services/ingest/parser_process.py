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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.ingest.document_model import ParsedDocument
from services.ingest.document_parsing import (
    DocumentParseError,
    UnsupportedDocument,
    parse_document,
)
from shared.fork_server import preload
from shared.limited_child import ChildFailed, ChildLimits, Wording, run_in_child

# The fork server imports the parsers once; each file's child is a fork of it.
preload(["services.ingest.document_parsing"])

Parser = Callable[..., ParsedDocument]
WORDING = Wording(
    unreadable="unreadable_document",
    crashed="parser_crashed",
    reader="the parser",
    plain_errors=(UnsupportedDocument, DocumentParseError),
)


@dataclass(frozen=True)
class ParserLimits(ChildLimits):
    """What one file may take to parse. The defaults read a 300-page 10-K in a few seconds
    and a few hundred MB; a file past them is refused with the limit it hit."""

    seconds: float = 120.0
    memory_bytes: int = 1536 * 1024 * 1024
    cpu_seconds: int = 120


class ParserFailed(ChildFailed):
    """The file could not be parsed within its limits; `code` and `message` are the job's
    error, said of the file, never of the server."""


def _parse_file(parse: Parser, path: Path, content_type: str | None) -> ParsedDocument:
    return parse(path, content_type=content_type)


async def parse_in_child(
    path: Path,
    *,
    content_type: str | None = None,
    limits: ParserLimits | None = None,
    parse: Parser = parse_document,
) -> ParsedDocument:
    """`parse(path)` run in a child process under `limits`; ParserFailed says which limit or
    failure ended it. `parse` must be importable by name (the child is another process)."""
    try:
        document = await run_in_child(
            _parse_file,
            (parse, path, content_type),
            limits or ParserLimits(),
            WORDING,
            name=f"finq-parse-{path.name[:40]}",
        )
    except ChildFailed as failed:
        raise ParserFailed(failed.code, failed.message) from None
    assert isinstance(document, ParsedDocument)
    return document
