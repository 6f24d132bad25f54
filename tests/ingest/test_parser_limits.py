"""Untrusted files are parsed in a child process under limits: a file that loops, balloons
or crashes its parser fails with the reason, and the process that asked lives on."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from services.ingest.document_model import ParsedDocument
from services.ingest.document_parsing import parse_document
from services.ingest.parser_process import ParserFailed, ParserLimits, parse_in_child

# The CPU limit sits past the wall-clock one: a spinning parser meets the wall clock first
# however busy the machine.
TIGHT = ParserLimits(seconds=2.0, memory_bytes=512 * 1024 * 1024, cpu_seconds=4)


# Stand-ins for a parser meeting a hostile file; module-level so the child can import them.
def parser_that_hangs(path: Path, **_: Any) -> ParsedDocument:
    threading.Event().wait()  # blocks until the parent kills the child
    raise AssertionError("not reached")


def parser_that_spins(path: Path, **_: Any) -> ParsedDocument:
    while True:
        pass


def parser_that_balloons(path: Path, **_: Any) -> ParsedDocument:
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))


def parser_that_crashes(path: Path, **_: Any) -> ParsedDocument:
    os.abort()


def parser_with_a_bug(path: Path, **_: Any) -> ParsedDocument:
    return {}["missing"]  # type: ignore[no-any-return]


async def test_a_file_parses_in_the_child_as_it_would_in_process(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text(
        "# Revenue\n\nApple's revenue grew.\n\n| year | revenue |\n|---|---|\n| 2023 | 383 |\n"
    )
    in_child = await parse_in_child(path, limits=TIGHT)
    assert in_child == parse_document(path)


@pytest.mark.parametrize(
    ("parser", "code", "says"),
    [
        (parser_that_hangs, "parse_timeout", "longer than 2 s"),
        (parser_that_spins, "parse_timeout", "longer than 2 s"),
        (parser_that_balloons, "parse_limit", "more than 512 MB"),
        (parser_that_crashes, "parser_crashed", "SIGABRT"),
        (parser_with_a_bug, "unreadable_document", "KeyError"),
    ],
)
async def test_a_hostile_file_fails_with_its_reason_and_the_child_is_gone(
    tmp_path: Path, parser: Any, code: str, says: str
) -> None:
    path = tmp_path / "hostile.pdf"
    path.write_bytes(b"%PDF-1.7\n")
    started = time.monotonic()
    with pytest.raises(ParserFailed) as failed:
        await parse_in_child(path, limits=TIGHT, parse=parser)
    assert failed.value.code == code
    assert says in failed.value.message
    assert time.monotonic() - started < 10
    # No child is left behind, running or a zombie.
    import multiprocessing

    assert multiprocessing.active_children() == []


async def test_a_corrupt_pdf_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n" + os.urandom(2048))
    with pytest.raises(ParserFailed) as failed:
        await parse_in_child(path, limits=TIGHT)
    assert failed.value.code == "unreadable_document"
    assert "broken.pdf" in failed.value.message
