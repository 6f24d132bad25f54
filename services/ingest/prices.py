"""Daily price CSVs: parsing them, and upserting them into `prices`.

The files are Yahoo Finance downloads, header `Date,Open,High,Low,Close,Adj Close,Volume`,
one row per trading day. `Close` is split-adjusted as of the download but not adjusted for
dividends; `Adj Close` is adjusted for both.

Yahoo writes `null` for every figure of a day it has no data for. Such rows, rows with an
empty or non-numeric figure, rows whose figures cannot be true (high below low, an open or
close outside the day's range, a price not above zero) and all but the last row of a repeated
date are skipped and reported with their line number: a gap is an honest answer, a zero is not.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg

from services.ingest.companyfacts import CompanyRecord, IngestError, normalize_symbol

HEADER: tuple[str, ...] = ("Date", "Open", "High", "Low", "Close", "Adj Close", "Volume")
PRICE_FIGURES: tuple[str, ...] = ("open", "high", "low", "close", "adj_close", "volume")
PRICE_COLUMNS: tuple[str, ...] = ("symbol", "day", *PRICE_FIGURES, "source")
PRICE_KEY: tuple[str, ...] = ("symbol", "day")

# Plain decimals only: float() would also take "nan", "inf" and "1_000", none of which is a price.
# A sign is allowed here so that a negative price is reported as impossible, not as unreadable.
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_WHOLE = re.compile(r"[0-9]+")
# date.fromisoformat also takes "20230103" and week dates; the files write YYYY-MM-DD.
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class PriceRecord:
    """One row of `prices`."""

    symbol: str
    day: date
    open: float
    high: float
    low: float
    close: float
    adj_close: float
    volume: int
    source: str  # the file the row came from: "AAPL.csv"
    # open … volume as the file spells them ("45.000000", "0.1283479928970337"), so the bundled
    # dataset writes them back unchanged; not part of a record's identity.
    text: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def cells(self) -> tuple[str, ...]:
        """open … volume as text: the source's own spelling when known, else exact reprs."""
        if self.text:
            return self.text
        return (
            *(repr(float(getattr(self, name))) for name in PRICE_FIGURES[:-1]),
            str(self.volume),
        )


@dataclass(frozen=True)
class SkippedRow:
    line: int  # in the file, the header being line 1
    day: str  # the Date cell as written
    reason: str


@dataclass(frozen=True)
class PriceParse:
    symbol: str
    source: str  # the file parsed: "AAPL.csv"
    rows: list[PriceRecord]  # by day, one per day
    skipped: list[SkippedRow]  # by line

    @property
    def first_day(self) -> date | None:
        return self.rows[0].day if self.rows else None

    @property
    def last_day(self) -> date | None:
        return self.rows[-1].day if self.rows else None


def _unreadable(texts: Sequence[str]) -> str | None:
    """Why the figures cannot be read, or None when every one is a number."""
    problems: dict[str, list[str]] = {}
    for name, text in zip(PRICE_FIGURES, texts, strict=True):
        if not text:
            problems.setdefault("empty", []).append(name)
        elif text.lower() == "null":
            problems.setdefault("null", []).append(name)
        elif not (_WHOLE if name == "volume" else _DECIMAL).fullmatch(text):
            problems.setdefault("non-numeric", []).append(f"{name} {text!r}")
    if not problems:
        return None
    return "; ".join(f"{kind} {', '.join(names)}" for kind, names in problems.items())


def _impossible(texts: Sequence[str], values: Sequence[float]) -> str | None:
    """Why the figures cannot be one trading day's, or None when they can."""
    for name, text, value in zip(PRICE_FIGURES[:-1], texts, values, strict=False):
        if value <= 0:
            return f"{name} {text} is not above zero"
    open_, high, low, close = values[:4]
    if high < low:
        return f"high {texts[1]} is below low {texts[2]}"
    for name, text, value in (("open", texts[0], open_), ("close", texts[3], close)):
        if not low <= value <= high:
            return f"{name} {text} is outside the day's range {texts[2]}..{texts[1]}"
    return None


def _day(text: str) -> date | None:
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:  # "2023-02-30"
        return None


def parse_price_csv(text: str, symbol: str, source: str) -> PriceParse:
    """The usable rows of a price CSV and the rows skipped, each with its line and reason."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise IngestError(f"{source} is empty")
    names = tuple(cell.strip().lstrip("\ufeff") for cell in header)
    if names != HEADER:
        raise IngestError(
            f"{source}: the header is {','.join(names)!r}, expected {','.join(HEADER)!r}"
        )
    kept: dict[date, tuple[int, PriceRecord]] = {}
    skipped: list[SkippedRow] = []
    for cells in reader:
        line = reader.line_num
        if not cells:
            continue  # a blank line holds no day
        day_text = cells[0].strip()
        if len(cells) != len(HEADER):
            skipped.append(
                SkippedRow(line, day_text, f"{len(cells)} fields, expected {len(HEADER)}")
            )
            continue
        day = _day(day_text)
        if day is None:
            skipped.append(SkippedRow(line, day_text, f"{day_text!r} is not a date (YYYY-MM-DD)"))
            continue
        texts = tuple(cell.strip() for cell in cells[1:])
        reason = _unreadable(texts)
        if reason is None:
            prices = [float(t) for t in texts[:-1]]
            reason = _impossible(texts, prices)
        if reason is not None:
            skipped.append(SkippedRow(line, day_text, reason))
            continue
        record = PriceRecord(symbol, day, *prices, int(texts[-1]), source, texts)
        earlier = kept.get(day)
        if earlier is not None:
            skipped.append(
                SkippedRow(
                    earlier[0], day_text, f"{day_text} appears again on line {line}, which is kept"
                )
            )
        kept[day] = (line, record)
    skipped.sort(key=lambda row: row.line)
    return PriceParse(
        symbol=symbol,
        source=source,
        rows=[kept[day][1] for day in sorted(kept)],
        skipped=skipped,
    )


def describe_skipped(source: str, row: SkippedRow) -> str:
    return f"{source} line {row.line} ({row.day}): {row.reason}"


# --- companies held with prices only ----------------------------------------------


@dataclass(frozen=True)
class PriceOnlyName:
    display_name: str
    aliases: tuple[str, ...]


# How people name the tickers of ../shared/data/prices that have no SEC companyfacts there,
# so that a question saying "Amazon" finds AMZN. FB is Meta Platforms' ticker until June
# 2022, and its price file is still named for it.
PRICE_ONLY_NAMES: dict[str, PriceOnlyName] = {
    "AMZN": PriceOnlyName("Amazon", ("amazon", "amazon.com")),
    "FB": PriceOnlyName("Meta Platforms", ("meta", "facebook")),
    "MSFT": PriceOnlyName("Microsoft", ("microsoft",)),
}


def price_only_company(symbol: str) -> CompanyRecord:
    """A minimal company row for a ticker finq holds prices of but no SEC data for.

    Unknown tickers are named by the ticker itself, so the row can always be made.
    """
    known = PRICE_ONLY_NAMES.get(symbol)
    name = known.display_name if known is not None else symbol
    return CompanyRecord(
        symbol=symbol,
        cik=None,  # type: ignore[arg-type]  # no CIK is known; companies.cik allows NULL
        name=name,
        display_name=name,
        fiscal_year_end=None,
        aliases=known.aliases if known is not None else (),
    )


# --- loading into PostgreSQL ------------------------------------------------------

_LOAD_TABLE = "finq_prices_load"
_PRICE_UPDATES = [c for c in PRICE_COLUMNS if c not in PRICE_KEY]
_UPSERT_PRICES = f"""
INSERT INTO prices ({", ".join(PRICE_COLUMNS)})
SELECT {", ".join(PRICE_COLUMNS)} FROM {_LOAD_TABLE}
ON CONFLICT ({", ".join(PRICE_KEY)}) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in _PRICE_UPDATES)}
WHERE ({", ".join(f"prices.{c}" for c in _PRICE_UPDATES)})
    IS DISTINCT FROM ({", ".join(f"EXCLUDED.{c}" for c in _PRICE_UPDATES)})
"""

# Never overwrites: a company already held (from SEC data) keeps its CIK and names.
_INSERT_COMPANY = """
INSERT INTO companies (symbol, cik, name, display_name, fiscal_year_end, aliases)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (symbol) DO NOTHING
"""


async def upsert_prices(conn: asyncpg.Connection, records: Sequence[PriceRecord]) -> int:
    """Upsert rows inside the caller's transaction; returns how many were inserted or changed."""
    if not conn.is_in_transaction():
        # The scratch table is ON COMMIT DROP: outside a transaction it would vanish at once.
        raise RuntimeError("upsert_prices must run inside a transaction")
    # COPY into a scratch table, then one set-based upsert: far faster than row-at-a-time
    # INSERTs, and the ON CONFLICT makes a reload idempotent. Dropped first in case an outer
    # transaction still holds one from an earlier call.
    await conn.execute(f"DROP TABLE IF EXISTS {_LOAD_TABLE}")
    await conn.execute(f"CREATE TEMP TABLE {_LOAD_TABLE} (LIKE prices) ON COMMIT DROP")
    await conn.copy_records_to_table(
        _LOAD_TABLE,
        records=[
            (r.symbol, r.day, r.open, r.high, r.low, r.close, r.adj_close, r.volume, r.source)
            for r in records
        ],
        columns=list(PRICE_COLUMNS),
    )
    status = await conn.execute(_UPSERT_PRICES)
    return int(status.split()[-1])


async def ingest_price_files(
    conn: asyncpg.Connection, paths: Sequence[Path], symbol: str | None = None
) -> dict[str, Any]:
    """`finq ingest prices PATH...`: parse the files and upsert them in one transaction.

    The symbol is the file's stem ("AAPL.csv" → AAPL) unless given (one file only). A symbol
    with no company row gets a minimal one (`price_only_company`). Returns the counts and
    the rows skipped, each as "AAPL.csv line 12 (2022-01-27): null open, …".
    """
    if symbol and len(paths) != 1:
        raise IngestError("--symbol names one company: pass exactly one price file with it")
    parsed: dict[str, PriceParse] = {}
    for path in paths:
        file_symbol = normalize_symbol(symbol or path.stem)
        if file_symbol in parsed:
            raise IngestError(f"{path}: a second price file for {file_symbol}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise IngestError(f"cannot read {path}: {error}") from error
        parse = parse_price_csv(text, file_symbol, path.name)
        if not parse.rows:
            raise IngestError(f"{path}: no usable price rows")
        parsed[file_symbol] = parse
    records = [record for parse in parsed.values() for record in parse.rows]
    async with conn.transaction():
        companies_added = 0
        for file_symbol in parsed:
            company = price_only_company(file_symbol)
            status = await conn.execute(
                _INSERT_COMPANY,
                company.symbol,
                company.cik,
                company.name,
                company.display_name,
                company.fiscal_year_end,
                list(company.aliases),
            )
            companies_added += int(status.split()[-1])
        changed = await upsert_prices(conn, records)
    return {
        "files": len(parsed),
        "prices": len(records),
        "prices_changed": changed,
        "companies_added": companies_added,
        "skipped": [
            describe_skipped(parse.source, row)
            for parse in parsed.values()
            for row in parse.skipped
        ],
    }
