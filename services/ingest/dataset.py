"""The bundled dataset: its file format, reading and writing it, and loading it into PostgreSQL.

A dataset directory holds
- `companies.json`: the companies, sorted by symbol, each with its tickers (every share
  class, the symbol first) and its stock splits as its filings state them (effective
  date, ratio as a fraction, and the accession and XBRL tag they were read from);
- `metrics.json`: the metric catalog rows, in catalog order;
- `metric_values.csv`: one row per `metric_values` row, sorted by primary key,
  ISO dates, values as Python's shortest exact float repr; the last column, `inputs`,
  holds a derived value's inputs as compact JSON (`{"gross_profit":169148000000.0,
  "revenue":383285000000.0}`, exact too) and is empty for reported values;
- `prices.csv`: one row per `prices` row, sorted by (symbol, day), the figures
  spelled exactly as the source file spells them;
- `filings.csv`: one row per `filings` row, sorted by symbol, filing date and
  accession (see `services.ingest.filings`); a dataset without it holds no filings;
- `MANIFEST.json`: the source files (sha256 prefixes), the written files
  (row counts, sha256 prefixes), the filings per symbol, each price file's
  rows, days and skipped rows,
  and a generation date taken from the data.

Everything is deterministic (no wall clock, no dict-order accidents), so
rebuilding from the same sources gives byte-identical files and a diff of the
committed dataset shows exactly which figures changed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import date
from operator import attrgetter
from pathlib import Path
from typing import Any

import asyncpg

from services.ingest.companyfacts import (
    CompanyRecord,
    IngestError,
    MetricValueRecord,
    company_for_companyfacts,
    merged_array_sql,
    parse_companyfacts,
    read_json,
)
from services.ingest.derived import DerivedValueRecord, derive_metrics
from services.ingest.filings import (
    FilingRecord,
    check_unique_filings,
    filings_csv,
    read_filings_csv,
    upsert_filings,
)
from services.ingest.prices import (
    PRICE_COLUMNS,
    PriceParse,
    PriceRecord,
    upsert_prices,
)
from services.ingest.stock_splits import StockSplit
from shared.metric_catalog import CATALOG, Metric

DEFAULT_DATASET_DIR = Path(__file__).parent / "default_dataset"

COMPANIES_FILE = "companies.json"
METRICS_FILE = "metrics.json"
VALUES_FILE = "metric_values.csv"
PRICES_FILE = "prices.csv"
FILINGS_FILE = "filings.csv"
MANIFEST_FILE = "MANIFEST.json"
GENERATOR = "finq ingest"

# `inputs` is a column of derived rows only (`DerivedValueRecord`), stored as JSON.
VALUE_COLUMNS: tuple[str, ...] = (*(f.name for f in fields(MetricValueRecord)), "inputs")
VALUE_KEY: tuple[str, ...] = ("symbol", "metric", "period_type", "fiscal_year", "fiscal_quarter")
COMPANY_COLUMNS = (
    "symbol",
    "cik",
    "name",
    "display_name",
    "fiscal_year_end",
    "aliases",
    "tickers",
)
METRIC_COLUMNS = ("id", "label", "category", "unit", "description", "formula", "aliases")


@dataclass(frozen=True)
class Dataset:
    companies: tuple[CompanyRecord, ...]
    metrics: tuple[Metric, ...]
    values: tuple[MetricValueRecord, ...]
    prices: tuple[PriceRecord, ...] = ()
    filings: tuple[FilingRecord, ...] = ()


def sha256_prefix(data: bytes) -> str:
    """The first 16 hex digits of SHA-256, as ../shared/data/SOURCES.md records files."""
    return hashlib.sha256(data).hexdigest()[:16]


# attrgetter reads the columns in C: a load of thousands of values per company spent more
# of its time in a getattr per cell than in sending them.
_VALUE_KEY_OF = attrgetter(*VALUE_KEY)
_STORED_CELLS_OF = attrgetter(*VALUE_COLUMNS[:-1])


def _value_key(record: MetricValueRecord) -> tuple[Any, ...]:
    key: tuple[Any, ...] = _VALUE_KEY_OF(record)
    return key


def inputs_json(record: MetricValueRecord) -> str | None:
    """A derived value's inputs as compact JSON in formula order, or None for a reported one.

    json writes floats as their shortest exact repr, so the figures read back bit for bit.
    """
    if not isinstance(record, DerivedValueRecord) or not record.inputs:
        return None
    return json.dumps(dict(record.inputs), separators=(",", ":"), allow_nan=False)


def _value_cells(record: MetricValueRecord) -> tuple[Any, ...]:
    """The row of `metric_values` for a record, in VALUE_COLUMNS order."""
    return (*_STORED_CELLS_OF(record), inputs_json(record))


# --- writing --------------------------------------------------------------------


def _json_bytes(payload: Any) -> bytes:
    return (json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        # repr is the shortest string that reads back to the same double.
        return repr(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _company_row(company: CompanyRecord) -> dict[str, Any]:
    return {
        "symbol": company.symbol,
        "tickers": list(company.tickers),
        "cik": company.cik,
        "name": company.name,
        "display_name": company.display_name,
        "fiscal_year_end": company.fiscal_year_end,
        "aliases": list(company.aliases),
        "splits": [split.to_json() for split in company.splits],
    }


def _company_from_row(row: Mapping[str, Any]) -> CompanyRecord:
    # A dataset written before tickers and splits were recorded has neither key.
    return CompanyRecord(
        **{
            **row,
            "aliases": tuple(row["aliases"]),
            "tickers": tuple(row.get("tickers") or ()),
            "splits": tuple(StockSplit.from_json(split) for split in row.get("splits") or ()),
        }
    )


def _companies_bytes(companies: Iterable[CompanyRecord]) -> bytes:
    return _json_bytes([_company_row(c) for c in sorted(companies, key=lambda c: c.symbol)])


def _metrics_bytes(metrics: Iterable[Metric]) -> bytes:
    rows = []
    for metric in metrics:
        row = asdict(metric)
        row["aliases"], row["xbrl_tags"] = list(metric.aliases), list(metric.xbrl_tags)
        rows.append(row)
    return _json_bytes(rows)


def _values_bytes(values: Iterable[MetricValueRecord]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(VALUE_COLUMNS)
    for record in sorted(values, key=_value_key):
        writer.writerow([_csv_cell(cell) for cell in _value_cells(record)])
    return buffer.getvalue().encode("utf-8")


def _prices_bytes(prices: Iterable[PriceRecord]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PRICE_COLUMNS)
    for record in sorted(prices, key=lambda r: (r.symbol, r.day)):
        writer.writerow((record.symbol, record.day.isoformat(), *record.cells(), record.source))
    return buffer.getvalue().encode("utf-8")


def _price_files_manifest(prices: Mapping[str, PriceParse]) -> list[dict[str, Any]]:
    # What each price file gave and what it held that could not be stored, so a reader of
    # the dataset can see a gap is the source's (Yahoo's null rows), not a loss in finq.
    return [
        {
            "file": name,
            "symbol": parse.symbol,
            "rows": len(parse.rows),
            "first_day": parse.first_day.isoformat() if parse.first_day else None,
            "last_day": parse.last_day.isoformat() if parse.last_day else None,
            "skipped": [asdict(row) for row in parse.skipped],
        }
        for name, parse in sorted(prices.items())
    ]


def _filings_manifest(filings: Sequence[FilingRecord]) -> list[dict[str, Any]]:
    # Per symbol, so a diff of the manifest shows whose filings a rebuild added or lost.
    by_symbol: dict[str, list[date]] = {}
    for filing in filings:
        by_symbol.setdefault(filing.symbol, []).append(filing.filed)
    return [
        {
            "symbol": symbol,
            "rows": len(filed),
            "first_filed": min(filed).isoformat(),
            "last_filed": max(filed).isoformat(),
        }
        for symbol, filed in sorted(by_symbol.items())
    ]


def write_dataset(
    directory: Path,
    companies: Sequence[CompanyRecord],
    values: Sequence[MetricValueRecord],
    *,
    metrics: Sequence[Metric] = CATALOG,
    sources: Mapping[str, str] | None = None,
    prices: Mapping[str, PriceParse] | None = None,
    filings: Sequence[FilingRecord] = (),
) -> dict[str, int]:
    """Write the dataset files; `sources` maps source file names to sha256 prefixes.

    `prices` maps each price source file name to its parse. Returns the row count of each
    data file.
    """
    _check_unique(values)
    price_rows = [row for parse in (prices or {}).values() for row in parse.rows]
    _check_unique_prices(price_rows)
    filings = check_unique_filings(filings)
    directory.mkdir(parents=True, exist_ok=True)
    contents = {
        COMPANIES_FILE: (_companies_bytes(companies), len(companies)),
        METRICS_FILE: (_metrics_bytes(metrics), len(metrics)),
        VALUES_FILE: (_values_bytes(values), len(values)),
        PRICES_FILE: (_prices_bytes(price_rows), len(price_rows)),
        FILINGS_FILE: (filings_csv(filings), len(filings)),
    }
    filed = [record.filed for record in values if record.filed is not None]
    filed += [filing.filed for filing in filings]
    manifest = {
        "generator": GENERATOR,
        # The data's own date, not the wall clock, so a rebuild is byte-identical.
        "generated": max(filed).isoformat() if filed else None,
        "sources": [
            {"file": name, "sha256": digest} for name, digest in sorted((sources or {}).items())
        ],
        "files": [
            {"file": name, "rows": rows, "sha256": sha256_prefix(data)}
            for name, (data, rows) in contents.items()
        ],
        "prices": _price_files_manifest(prices or {}),
        "filings": _filings_manifest(filings),
    }
    for name, (data, _) in contents.items():
        (directory / name).write_bytes(data)
    (directory / MANIFEST_FILE).write_bytes(_json_bytes(manifest))
    return {name: rows for name, (_, rows) in contents.items()}


# --- reading --------------------------------------------------------------------


def _optional_date(text: str) -> date | None:
    return date.fromisoformat(text) if text else None


def _value_from_row(row: Mapping[str, str]) -> MetricValueRecord:
    filed = _optional_date(row["filed"])
    common = dict(
        symbol=row["symbol"],
        metric=row["metric"],
        period_type=row["period_type"],
        fiscal_year=int(row["fiscal_year"]),
        fiscal_quarter=int(row["fiscal_quarter"]),
        period_start=_optional_date(row["period_start"]),
        period_end=date.fromisoformat(row["period_end"]),
        value=float(row["value"]),
        unit=row["unit"],
        form=row["form"] or None,
        accession=row["accession"] or None,
        xbrl_tag=row["xbrl_tag"] or None,
        filed=filed,
        provenance=row["provenance"],
    )
    # A dataset written before inputs were recorded has no such column.
    if inputs := row.get("inputs"):
        terms = json.loads(inputs).items()
        return DerivedValueRecord(**common, inputs=tuple((t, float(v)) for t, v in terms))
    return MetricValueRecord(**common)


def _price_from_row(row: Sequence[str]) -> PriceRecord:
    symbol, day, *figures, source = row
    open_, high, low, close, adj_close, volume = figures
    return PriceRecord(
        symbol=symbol,
        day=date.fromisoformat(day),
        open=float(open_),
        high=float(high),
        low=float(low),
        close=float(close),
        adj_close=float(adj_close),
        volume=int(volume),
        source=source,
        text=tuple(figures),
    )


def _read_prices(path: Path) -> tuple[PriceRecord, ...]:
    # A dataset written before prices existed has no prices file: it holds no prices.
    if not path.is_file():
        return ()
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = tuple(next(reader, ()))
        if header != PRICE_COLUMNS:
            raise IngestError(f"{path}: the header is {header}, expected {PRICE_COLUMNS}")
        return tuple(_price_from_row(row) for row in reader)


def read_dataset(directory: Path) -> Dataset:
    """Read a directory `write_dataset` wrote."""
    missing = [
        name
        for name in (COMPANIES_FILE, METRICS_FILE, VALUES_FILE)
        if not (directory / name).is_file()
    ]
    if missing:
        raise IngestError(f"{directory} is not a finq dataset: {', '.join(missing)} missing")
    companies = tuple(
        _company_from_row(row)
        for row in json.loads((directory / COMPANIES_FILE).read_text("utf-8"))
    )
    metrics = tuple(
        Metric(**{**row, "aliases": tuple(row["aliases"]), "xbrl_tags": tuple(row["xbrl_tags"])})
        for row in json.loads((directory / METRICS_FILE).read_text("utf-8"))
    )
    with (directory / VALUES_FILE).open(newline="", encoding="utf-8") as handle:
        values = tuple(_value_from_row(row) for row in csv.DictReader(handle))
    prices = _read_prices(directory / PRICES_FILE)
    filings_path = directory / FILINGS_FILE
    filings = read_filings_csv(filings_path) if filings_path.is_file() else ()
    return Dataset(
        companies=companies, metrics=metrics, values=values, prices=prices, filings=filings
    )


# --- loading into PostgreSQL ------------------------------------------------------


def _check_unique(values: Iterable[MetricValueRecord]) -> None:
    # Two rows with one key would make the upsert fail halfway ("cannot affect row a
    # second time"); say which key instead.
    seen: set[tuple[Any, ...]] = set()
    for record in values:
        key = _value_key(record)
        if key in seen:
            raise IngestError(f"two values for {key}")
        seen.add(key)


def _check_unique_prices(prices: Iterable[PriceRecord]) -> None:
    # Two files for one ticker would give one (symbol, day) twice; name the day instead of
    # letting the upsert fail halfway.
    seen: set[tuple[str, date]] = set()
    for record in prices:
        key = (record.symbol, record.day)
        if key in seen:
            raise IngestError(f"two prices for {record.symbol} on {record.day}")
        seen.add(key)


# Tickers and aliases only accumulate: a companyfacts file alone knows one ticker and the
# current name, and loading it must not forget the share classes (GOOG) and former names
# ("apple computer") a submissions file or a filing gave. The loaded ones come first.
_MERGED_COLUMNS = ("aliases", "tickers")
_COMPANY_UPDATES = [
    f"{c} = {merged_array_sql(f'EXCLUDED.{c}', f'companies.{c}')}"
    if c in _MERGED_COLUMNS
    else f"{c} = EXCLUDED.{c}"
    for c in COMPANY_COLUMNS[1:]
]
_UPSERT_COMPANIES = f"""
INSERT INTO companies ({", ".join(COMPANY_COLUMNS)})
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (symbol) DO UPDATE SET
    {", ".join(_COMPANY_UPDATES)}
"""

_UPSERT_METRICS = f"""
INSERT INTO metrics ({", ".join(METRIC_COLUMNS)})
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in METRIC_COLUMNS[1:])}
"""

_LOAD_TABLE = "finq_metric_values_load"
_VALUE_UPDATES = [c for c in VALUE_COLUMNS if c not in VALUE_KEY]
_UPSERT_VALUES = f"""
INSERT INTO metric_values ({", ".join(VALUE_COLUMNS)})
SELECT {", ".join(VALUE_COLUMNS)} FROM {_LOAD_TABLE}
ON CONFLICT ({", ".join(VALUE_KEY)}) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in _VALUE_UPDATES)}
WHERE ({", ".join(f"metric_values.{c}" for c in _VALUE_UPDATES)})
    IS DISTINCT FROM ({", ".join(f"EXCLUDED.{c}" for c in _VALUE_UPDATES)})
"""


async def load_dataset(conn: asyncpg.Connection, dataset: Dataset) -> dict[str, int]:
    """Upsert a dataset in one transaction; loading the same dataset twice changes nothing.

    Returns the rows in the dataset per table and how many metric values, prices and
    filings were inserted or changed (`metric_values_changed`, `prices_changed`,
    `filings_changed`).
    """
    _check_unique(dataset.values)
    _check_unique_prices(dataset.prices)
    filings = check_unique_filings(dataset.filings)
    async with conn.transaction():
        await conn.executemany(
            _UPSERT_COMPANIES,
            [
                (
                    c.symbol,
                    c.cik,
                    c.name,
                    c.display_name,
                    c.fiscal_year_end,
                    list(c.aliases),
                    list(c.tickers),
                )
                for c in dataset.companies
            ],
        )
        await conn.executemany(
            _UPSERT_METRICS,
            [
                (m.id, m.label, m.category, m.unit, m.description, m.formula, list(m.aliases))
                for m in dataset.metrics
            ],
        )
        # COPY into a scratch table, then one set-based upsert: far faster than a row-at-a-time
        # INSERT, and the ON CONFLICT makes a reload idempotent. Dropped first in case a caller's
        # outer transaction still holds one from an earlier call.
        await conn.execute(f"DROP TABLE IF EXISTS {_LOAD_TABLE}")
        await conn.execute(
            f"CREATE TEMP TABLE {_LOAD_TABLE} (LIKE metric_values INCLUDING DEFAULTS) "
            "ON COMMIT DROP"
        )
        await conn.copy_records_to_table(
            _LOAD_TABLE,
            records=[_value_cells(v) for v in dataset.values],
            columns=list(VALUE_COLUMNS),
        )
        status = await conn.execute(_UPSERT_VALUES)
        prices_changed = await upsert_prices(conn, dataset.prices) if dataset.prices else 0
        # After the companies: a filing references its company.
        filings_changed = await upsert_filings(conn, filings) if filings else 0
    return {
        "companies": len(dataset.companies),
        "metrics": len(dataset.metrics),
        "metric_values": len(dataset.values),
        "metric_values_changed": int(status.split()[-1]),
        "prices": len(dataset.prices),
        "prices_changed": prices_changed,
        "filings": len(filings),
        "filings_changed": filings_changed,
    }


def parse_companyfacts_files(
    paths: Sequence[Path], symbol: str | None = None
) -> tuple[list[CompanyRecord], list[MetricValueRecord]]:
    """Companies and values of companyfacts files; `symbol` is only allowed with one file."""
    if symbol and len(paths) != 1:
        raise IngestError("--symbol names one company: pass exactly one companyfacts file with it")
    companies: list[CompanyRecord] = []
    values: list[MetricValueRecord] = []
    for path in paths:
        doc = read_json(path)
        company = company_for_companyfacts(path, doc, symbol)
        if any(c.symbol == company.symbol for c in companies):
            raise IngestError(f"{path}: a second companyfacts file for {company.symbol}")
        company_values = parse_companyfacts(doc, company.symbol)
        if not company_values:
            raise IngestError(f"{path}: no annual 10-K values for any catalog metric")
        companies.append(company)
        # The margins, growth rates and ratios too, as the default dataset has them (without
        # prices here, so no valuation metrics), per-share ones across the splits the file states.
        derived = derive_metrics(company_values, splits={company.symbol: company.splits})
        values.extend([*company_values, *derived])
    return companies, values


async def ingest_companyfacts_files(
    conn: asyncpg.Connection, paths: list[Path], symbol: str | None = None
) -> dict[str, int]:
    """`finq ingest companyfacts PATH...`: parse the files and upsert them with the catalog."""
    companies, values = parse_companyfacts_files(paths, symbol)
    dataset = Dataset(companies=tuple(companies), metrics=CATALOG, values=tuple(values))
    return await load_dataset(conn, dataset)
