"""Daily prices: parsing price CSVs, the bundled dataset's prices, ingest into PostgreSQL and
the `get_prices` tool in one round-trip.

The parsing tests run anywhere; the ones on real price files skip without ../shared/data.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import asyncpg
import pytest
from pydantic import ValidationError

from services.ingest.companyfacts import IngestError
from services.ingest.dataset import (
    DEFAULT_DATASET_DIR,
    MANIFEST_FILE,
    PRICES_FILE,
    load_dataset,
    read_dataset,
    write_dataset,
)
from services.ingest.prices import (
    PriceRecord,
    SkippedRow,
    ingest_price_files,
    parse_price_csv,
)
from services.tools.prices import get_prices
from shared.tools import GetPricesArgs
from tests.conftest import Servers, own_database
from tests.helpers import CountingFetcher, require_shared_data

HEADER = "Date,Open,High,Low,Close,Adj Close,Volume\n"
NULL_REASON = "null open, high, low, close, adj_close, volume"


def csv_text(*rows: str) -> str:
    return HEADER + "".join(f"{row}\n" for row in rows)


# --- parsing --------------------------------------------------------------------------


def test_a_null_row_is_skipped_and_reported_with_its_line() -> None:
    parse = parse_price_csv(
        csv_text(
            "2022-01-26,307.010010,307.510010,290.850006,294.630005,294.630005,28348800",
            "2022-01-27,null,null,null,null,null,null",
            "2022-01-28,295.619995,301.899994,293.029999,301.709991,301.709991,21847100",
        ),
        "FB",
        "FB.csv",
    )
    assert parse.skipped == [SkippedRow(line=3, day="2022-01-27", reason=NULL_REASON)]
    assert [row.day for row in parse.rows] == [date(2022, 1, 26), date(2022, 1, 28)]


def test_a_valid_row_is_kept_with_its_exact_values_and_spelling() -> None:
    parse = parse_price_csv(
        csv_text("1999-12-31,58.750000,58.875000,58.125000,58.375000,36.853397,12517600"),
        "MSFT",
        "MSFT.csv",
    )
    assert parse.skipped == []
    [row] = parse.rows
    assert row == PriceRecord(
        "MSFT", date(1999, 12, 31), 58.75, 58.875, 58.125, 58.375, 36.853397, 12517600, "MSFT.csv"
    )
    # Written back as the source wrote it, not as 58.75.
    assert row.cells() == (
        "58.750000", "58.875000", "58.125000", "58.375000", "36.853397", "12517600"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("2020-01-02,10,9,11,10,10,100", "high 9 is below low 11"),
        ("2020-01-02,10,12,9,12.5,12,100", "close 12.5 is outside the day's range 9..12"),
        ("2020-01-02,8,12,9,10,10,100", "open 8 is outside the day's range 9..12"),
        ("2020-01-02,0,0,0,0,0,100", "open 0 is not above zero"),
        ("2020-01-02,10,12,9,10,-1,100", "adj_close -1 is not above zero"),
        ("2020-01-02,10,,9,10,10,100", "empty high"),
        ("2020-01-02,10,12,9,nan,10,100", "non-numeric close 'nan'"),
        ("2020-01-02,10,12,9,10,10,1.5e6", "non-numeric volume '1.5e6'"),
        ("2020-01-02,10,12,9,null,10,", "null close; empty volume"),
        ("02/01/2020,10,12,9,10,10,100", "'02/01/2020' is not a date (YYYY-MM-DD)"),
        ("2020-02-30,10,12,9,10,10,100", "'2020-02-30' is not a date (YYYY-MM-DD)"),
        ("2020-01-02,10,12,9,10,10", "6 fields, expected 7"),
    ],
)
def test_impossible_or_unreadable_rows_are_skipped_with_the_reason(row: str, reason: str) -> None:
    parse = parse_price_csv(csv_text("2020-01-03,10,12,9,11,11,100", row), "EX", "EX.csv")
    assert [r.day for r in parse.rows] == [date(2020, 1, 3)]
    assert [(s.line, s.reason) for s in parse.skipped] == [(3, reason)]


def test_a_repeated_date_keeps_the_last_row_and_reports_the_earlier() -> None:
    parse = parse_price_csv(
        csv_text(
            "2020-01-03,10,12,9,11,11,100",
            "2020-01-02,10,12,9,10,10,100",
            "2020-01-03,10,12,9,11.5,11.5,200",
        ),
        "EX",
        "EX.csv",
    )
    assert [(r.day, r.close) for r in parse.rows] == [
        (date(2020, 1, 2), 10.0),
        (date(2020, 1, 3), 11.5),
    ]
    assert parse.skipped == [
        SkippedRow(2, "2020-01-03", "2020-01-03 appears again on line 4, which is kept")
    ]


def test_a_file_that_is_not_a_price_csv_is_refused() -> None:
    with pytest.raises(IngestError, match="expected 'Date,Open"):
        parse_price_csv("day,close\n2020-01-02,10\n", "EX", "EX.csv")


def test_the_real_facebook_file_has_one_null_row() -> None:
    path = require_shared_data("prices", "FB.csv")
    parse = parse_price_csv(path.read_text(), "FB", "FB.csv")
    assert parse.skipped == [SkippedRow(2441, "2022-01-27", NULL_REASON)]
    assert len(parse.rows) == 2440
    assert (parse.first_day, parse.last_day) == (date(2012, 5, 18), date(2022, 1, 28))


# --- the dataset files ------------------------------------------------------------------


def test_prices_round_trip_through_the_dataset_files_exactly(tmp_path: Path) -> None:
    parse = parse_price_csv(
        csv_text(
            "1980-12-12,0.1283479928970337,0.1289059966802597,0.1283479928970337,"
            "0.1283479928970337,0.09972153604030609,469033600",
            "1980-12-15,null,null,null,null,null,null",
        ),
        "AAPL",
        "AAPL.csv",
    )
    write_dataset(tmp_path, [], [], prices={"prices/AAPL.csv": parse})
    dataset = read_dataset(tmp_path)
    assert dataset.prices == tuple(parse.rows)
    assert dataset.prices[0].cells() == parse.rows[0].cells()
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    [entry] = manifest["prices"]
    assert entry["rows"] == 1 and entry["first_day"] == "1980-12-12"
    assert entry["skipped"] == [{"line": 3, "day": "1980-12-15", "reason": NULL_REASON}]


def test_the_bundled_dataset_holds_every_price_file() -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    assert {p.symbol for p in dataset.prices} == {"AAPL", "AMZN", "FB", "GOOGL", "MSFT", "NVDA"}
    assert len(dataset.prices) == 35_137
    [day] = [p for p in dataset.prices if (p.symbol, p.day) == ("AAPL", date(2023, 1, 3))]
    assert day.close == 125.06999969482422
    assert day.cells()[3] == "125.06999969482422"
    # The null rows are not held as zeros: the day is simply absent.
    assert not [p for p in dataset.prices if p.symbol == "FB" and p.day == date(2022, 1, 27)]
    companies = {c.symbol: c for c in dataset.companies}
    assert (companies["AMZN"].cik, companies["AMZN"].display_name) == (None, "Amazon")
    assert companies["FB"].aliases == ("meta", "facebook")
    assert companies["MSFT"].display_name == "Microsoft"
    # Under 5 MB, so it is kept as plain CSV.
    assert (DEFAULT_DATASET_DIR / PRICES_FILE).stat().st_size < 5_000_000
    manifest = json.loads((DEFAULT_DATASET_DIR / MANIFEST_FILE).read_text())
    skipped = {e["symbol"]: [s["line"] for s in e["skipped"]] for e in manifest["prices"]}
    assert skipped == {"AAPL": [], "AMZN": [], "FB": [2441], "GOOGL": [4393], "MSFT": [5556],
                       "NVDA": [5556]}  # fmt: skip


# --- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def loaded(servers: Servers) -> AsyncIterator[asyncpg.Connection]:
    """One database with the bundled dataset for the read-only tool tests of this module."""
    async with own_database(servers, "t_prices_bundled") as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
            yield conn
        finally:
            await conn.close()


async def test_ingesting_the_real_apple_file_stores_it_exactly_and_idempotently(
    database: str,
) -> None:
    path = require_shared_data("prices", "AAPL.csv")
    conn = await asyncpg.connect(database)
    try:
        first = await ingest_price_files(conn, [path])
        second = await ingest_price_files(conn, [path])
        row = await conn.fetchrow("SELECT * FROM prices WHERE symbol = 'AAPL' AND day = $1",
                                  date(2020, 8, 31))  # fmt: skip
        stored = await conn.fetchval("SELECT count(*) FROM prices WHERE symbol = 'AAPL'")
        company = await conn.fetchrow("SELECT * FROM companies WHERE symbol = 'AAPL'")
    finally:
        await conn.close()
    assert first == {
        "files": 1,
        "prices": 10_674,
        "prices_changed": 10_674,
        "companies_added": 1,
        "skipped": [],
    }
    assert (second["prices_changed"], second["companies_added"]) == (0, 0)
    assert stored == 10_674
    assert dict(row) == {
        "symbol": "AAPL",
        "day": date(2020, 8, 31),
        "open": 127.58000183105469,
        "high": 131.0,
        "low": 126.0,
        "close": 129.0399932861328,
        "adj_close": 127.09565734863281,
        "volume": 225_702_700,
        "source": "AAPL.csv",
    }
    # No SEC data loaded here: the company row is the minimal one, named by its ticker.
    assert (company["cik"], company["display_name"]) == (None, "AAPL")


async def test_ingesting_a_price_only_ticker_names_its_company_and_reports_skips(
    database: str,
) -> None:
    path = require_shared_data("prices", "FB.csv")
    conn = await asyncpg.connect(database)
    try:
        counts = await ingest_price_files(conn, [path])
        company = await conn.fetchrow("SELECT * FROM companies WHERE symbol = 'FB'")
        gap = await conn.fetchval("SELECT count(*) FROM prices WHERE day = '2022-01-27'")
    finally:
        await conn.close()
    assert counts["prices"] == 2440
    assert counts["skipped"] == [f"FB.csv line 2441 (2022-01-27): {NULL_REASON}"]
    assert company["display_name"] == "Meta Platforms"
    assert company["aliases"] == ["meta", "facebook"]
    assert gap == 0


async def test_loading_the_bundled_dataset_twice_changes_no_price(database: str) -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    conn = await asyncpg.connect(database)
    try:
        first = await load_dataset(conn, dataset)
        second = await load_dataset(conn, dataset)
        stored = await conn.fetchval("SELECT count(*) FROM prices")
    finally:
        await conn.close()
    assert first["prices"] == first["prices_changed"] == stored == len(dataset.prices)
    assert second["prices_changed"] == 0


async def test_apple_closes_in_2022_come_back_summarised_in_one_round_trip(
    loaded: asyncpg.Connection,
) -> None:
    fetcher = CountingFetcher(loaded)
    result = await get_prices(
        fetcher, GetPricesArgs(symbol="AAPL", start=date(2022, 1, 1), end=date(2022, 12, 31))
    )
    assert fetcher.round_trips == 1
    assert result.missing == [] and result.error is None
    facts = {fact.metric: fact for fact in result.facts}
    # Figures read off ../shared/data/prices/AAPL.csv.
    summary = {metric: (fact.value, fact.period, fact.unit) for metric, fact in facts.items()}
    assert summary == {
        "close_first": (182.00999450683594, "2022-01-03", "USD/share"),
        "close_last": (129.92999267578125, "2022-12-30", "USD/share"),
        "close_change_pct": (
            (129.92999267578125 / 182.00999450683594 - 1) * 100,
            "2022-01-03..2022-12-30",
            "%",
        ),
        "close_high": (182.00999450683594, "2022-01-03", "USD/share"),
        "close_low": (126.04000091552734, "2022-12-28", "USD/share"),
        "trading_days": (251.0, "2022-01-03..2022-12-30", "days"),
    }
    assert round(facts["close_change_pct"].value, 2) == -28.61
    low = facts["close_low"]
    assert (low.period_start, low.period_end, low.fiscal_year) == (
        date(2022, 12, 28),
        date(2022, 12, 28),
        2022,
    )
    assert {fact.company for fact in result.facts} == {"Apple"}
    [source] = result.sources
    assert source.source_id == "prices:AAPL:2022-01-03:2022-12-30"
    assert {fact.source_id for fact in result.facts} == {source.source_id}
    assert "AAPL.csv" in source.label and "not adjusted for dividends" in source.label
    assert result.arguments == GetPricesArgs(
        symbol="AAPL", start=date(2022, 1, 1), end=date(2022, 12, 31)
    )
    assert result.arguments.model_dump(mode="json") == {
        "symbol": "AAPL",
        "start": "2022-01-01",
        "end": "2022-12-31",
    }


async def test_a_window_running_past_the_last_day_held_says_what_is_missing(
    loaded: asyncpg.Connection,
) -> None:
    result = await get_prices(
        loaded, GetPricesArgs(symbol="AAPL", start=date(2023, 1, 1), end=date(2023, 12, 31))
    )
    facts = {fact.metric: fact for fact in result.facts}
    assert (facts["close_first"].period_end, facts["close_first"].value) == (
        date(2023, 1, 3),
        125.06999969482422,
    )
    assert (facts["close_last"].period_end, facts["close_last"].value) == (
        date(2023, 4, 14),
        165.2100067138672,
    )
    assert (facts["close_high"].period_end, facts["close_high"].value) == (
        date(2023, 4, 3),
        166.1699981689453,
    )
    assert (facts["close_low"].period_end, facts["close_low"].value) == (
        date(2023, 1, 5),
        125.0199966430664,
    )
    assert facts["trading_days"].value == 71
    assert result.missing == [
        "Apple's closing prices from 2023-04-15 to 2023-12-31 (held: 1980-12-12 to 2023-04-14)"
    ]


async def test_a_window_outside_the_days_held_gives_no_facts_and_says_what_is_held(
    loaded: asyncpg.Connection,
) -> None:
    result = await get_prices(
        loaded, GetPricesArgs(symbol="MSFT", start=date(2024, 1, 1), end=date(2024, 6, 30))
    )
    assert result.facts == [] and result.sources == []
    assert result.missing == [
        "Microsoft's closing prices from 2024-01-01 to 2024-06-30 (held: 1999-12-31 to 2022-01-28)"
    ]


async def test_a_company_without_prices_and_an_unknown_ticker_are_said_so(
    loaded: asyncpg.Connection,
) -> None:
    tesla = await get_prices(loaded, GetPricesArgs(symbol="TSLA"))
    assert tesla.facts == []
    # What is held for Tesla instead is said, so the user knows what to ask.
    [no_prices] = tesla.missing
    assert no_prices.startswith("Tesla's daily prices (finq holds Tesla's financial figures")
    assert "SEC filings index" in no_prices
    unknown = await get_prices(loaded, GetPricesArgs(symbol="ZZZZ"))
    assert unknown.missing == ["ZZZZ's daily prices (finq holds no prices for ZZZZ)"]


async def test_without_dates_the_last_30_trading_days_held(loaded: asyncpg.Connection) -> None:
    result = await get_prices(loaded, GetPricesArgs(symbol="AAPL"))
    facts = {fact.metric: fact for fact in result.facts}
    assert facts["trading_days"].value == 30
    assert facts["close_first"].period_end == date(2023, 3, 3)
    assert facts["close_last"].period_end == date(2023, 4, 14)
    assert result.missing == []


async def test_the_day_a_weekend_ends_a_window_is_no_gap(loaded: asyncpg.Connection) -> None:
    # MSFT's file ends on Friday 2022-01-28; the weekend after it is not a missing day.
    result = await get_prices(
        loaded, GetPricesArgs(symbol="MSFT", start=date(2022, 1, 3), end=date(2022, 1, 30))
    )
    assert result.missing == []
    assert {f.metric: f for f in result.facts}["close_last"].period_end == date(2022, 1, 28)


def test_start_after_end_is_refused() -> None:
    with pytest.raises(ValidationError, match="after end"):
        GetPricesArgs(symbol="AAPL", start=date(2023, 2, 1), end=date(2023, 1, 1))
