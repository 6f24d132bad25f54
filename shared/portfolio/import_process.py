"""An activity file from the network is parsed in a child process with limits on time,
memory and CPU.

The gateway serves every user from one process: a file made to be slow to read (a field of
a million characters, a quoted field that never closes, fifty thousand rows of validation)
must cost a refused import, never the event loop or the memory of the process that answers
everyone else. The ingest stage reads documents the same way (shared/limited_child.py): a
fresh child forked from a server that has the reader imported already, an address-space and
a CPU-time limit set in the child before it reads a byte, and a wall-clock limit the parent
enforces by killing it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from shared.fork_server import preload
from shared.limited_child import ChildFailed, ChildLimits, Wording, run_in_child
from shared.portfolio.activity import AssetClass
from shared.portfolio.csv_format import ParsedActivity, parse_activity_csv

preload(["shared.portfolio.csv_format"])

Reader = Callable[[bytes, Collection[str]], ParsedActivity]
WORDING = Wording(unreadable="unreadable_file", crashed="reader_crashed", reader="the reader")


@dataclass(frozen=True)
class ImportLimits(ChildLimits):
    """What parsing one file may take. The defaults read the largest file the gateway
    takes (5 MiB, 50,000 rows) in a few seconds and well under the memory."""

    seconds: float = 30.0
    memory_bytes: int = 1024 * 1024 * 1024
    cpu_seconds: int = 30


class ActivityParseFailed(ChildFailed):
    """The file could not be read within its limits: `code` and `message` say so of the
    file, never of the server."""


async def parse_in_child(
    data: bytes,
    known_symbols: Mapping[str, AssetClass] | Collection[str],
    limits: ImportLimits | None = None,
    read: Reader = parse_activity_csv,
) -> ParsedActivity:
    """`read(data, known_symbols)` in a child process under `limits`; ActivityParseFailed
    says which limit or failure ended it. `read` must be importable by name (the child is
    another process)."""
    try:
        parsed = await run_in_child(
            read,
            # The symbols alone: a set pickles smaller than the mapping, and is all it reads.
            (data, frozenset(known_symbols)),
            limits or ImportLimits(),
            WORDING,
            name="finq-parse-activity",
        )
    except ChildFailed as failed:
        raise ActivityParseFailed(failed.code, failed.message) from None
    assert isinstance(parsed, ParsedActivity)
    return parsed
