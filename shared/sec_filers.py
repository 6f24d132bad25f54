"""SEC's directory of filers: every company with a ticker (SEC's company_tickers.json, one
row per ticker, a company's share classes as separate rows), merged into one entry per
company (CIK), with former names where a submissions file gives them.

`finq ingest directory` loads it into `sec_filers`; services/router/filer_directory.py
resolves a question's company names and tickers against it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg


@dataclass(frozen=True)
class Filer:
    cik: int
    name: str  # as SEC writes it: "NVIDIA CORP", "Apple Inc."
    tickers: tuple[str, ...]  # every share class's, in SEC's order: ("GOOGL", "GOOG")
    # Its place in SEC's file, which lists filers by market value: 0 is the largest. Breaks
    # a tie between names only where one company is far better known (see the resolver).
    rank: int
    former_names: tuple[str, ...] = field(default=())


def filers_from_sec_tickers(rows: Mapping[str, Mapping[str, Any]]) -> list[Filer]:
    """One Filer per CIK from company_tickers.json's `{"0": {"cik_str", "ticker",
    "title"}, ...}`, in the file's order."""
    by_cik: dict[int, Filer] = {}
    for position, row in enumerate(rows.values()):
        cik = int(row["cik_str"])
        ticker = str(row["ticker"]).upper()
        held = by_cik.get(cik)
        if held is None:
            by_cik[cik] = Filer(cik, str(row["title"]), (ticker,), position)
        elif ticker not in held.tickers:
            by_cik[cik] = Filer(cik, held.name, (*held.tickers, ticker), held.rank)
    return list(by_cik.values())


def with_former_names(
    filers: Iterable[Filer], submissions: Iterable[Mapping[str, Any]]
) -> list[Filer]:
    """The filers with the former names SEC's submissions files give (`formerNames`)."""
    former: dict[int, tuple[str, ...]] = {}
    for document in submissions:
        names = tuple(str(entry["name"]) for entry in document.get("formerNames") or [])
        if names:
            former[int(document["cik"])] = names
    return [
        Filer(f.cik, f.name, f.tickers, f.rank, former.get(f.cik, f.former_names)) for f in filers
    ]


def read_sec_directory(tickers_file: Path, submissions_dir: Path | None = None) -> list[Filer]:
    """The directory from an offline copy of company_tickers.json, with former names from the
    CIK*.json submissions files in `submissions_dir` when given."""
    filers = filers_from_sec_tickers(json.loads(tickers_file.read_text(encoding="utf-8")))
    if submissions_dir is None:
        return filers
    documents = (
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(submissions_dir.glob("CIK*.json"))
    )
    return with_former_names(filers, documents)


SEC_FILERS_CHANNEL = "finq_sec_filers"

# --- the directory in the database (migration 022): each load replaces it whole, in one
# transaction, so a filer SEC dropped goes too and a reader never sees half of one.


async def load_sec_directory(conn: asyncpg.Connection, filers: Sequence[Filer]) -> int:
    """Replace the directory with `filers`; returns how many were loaded. Routers hear of it
    on SEC_FILERS_CHANNEL when it commits (services/router/directory_watch.py)."""
    records = [(f.cik, f.name, list(f.tickers), f.rank, list(f.former_names)) for f in filers]
    async with conn.transaction():
        await conn.execute(f"NOTIFY {SEC_FILERS_CHANNEL}")
        await conn.execute("DELETE FROM sec_filers")
        await conn.copy_records_to_table(
            "sec_filers",
            records=records,
            columns=["cik", "name", "tickers", "rank", "former_names"],
        )
    return len(records)


async def read_sec_filers(conn: asyncpg.Connection) -> list[Filer]:
    """The directory as loaded, in SEC's order."""
    rows = await conn.fetch(
        "SELECT cik, name, tickers, rank, former_names FROM sec_filers ORDER BY rank"
    )
    return [
        Filer(
            row["cik"], row["name"], tuple(row["tickers"]), row["rank"], tuple(row["former_names"])
        )
        for row in rows
    ]
