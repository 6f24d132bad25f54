"""SEC submissions → filings: parsing, fiscal periods, the bundled dataset, and the
`get_recent_filings` tool reading a database of its own.

The synthetic tests run anywhere; the ones on real SEC files skip without ../shared/data.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path

import asyncpg
import pytest
from pydantic import ValidationError

from services.ingest.companyfacts import IngestError, read_json
from services.ingest.dataset import DEFAULT_DATASET_DIR, MANIFEST_FILE, load_dataset, read_dataset
from services.ingest.filings import (
    FilingRecord,
    fiscal_period,
    ingest_submissions_files,
    parse_submissions,
    parse_submissions_page,
    read_submissions_files,
)
from services.tools.filings import get_recent_filings
from shared.tools import TOOL_ARGUMENTS, GetRecentFilingsArgs
from tests.helpers import CountingFetcher, require_shared_data

APPLE, NVIDIA, TESLA, MICROSOFT = "0000320193", "0001045810", "0001318605", "0000789019"
TESLA_PAGE = f"CIK{TESLA}-submissions-001.json"


def submissions_path(name: str) -> Path:
    return require_shared_data("sec", "submissions", name)


@cache
def parsed(cik: str, symbol: str) -> dict[str, FilingRecord]:
    doc = read_json(submissions_path(f"CIK{cik}.json"))
    return {f.accession: f for f in parse_submissions(doc, symbol)}


# --- real submissions ----------------------------------------------------------------


def test_apple_fiscal_2023_10_k() -> None:
    filing = parsed(APPLE, "AAPL")["0000320193-23-000106"]
    assert filing == FilingRecord(
        accession="0000320193-23-000106",
        symbol="AAPL",
        cik=APPLE,
        form="10-K",
        filed=date(2023, 11, 3),
        report_date=date(2023, 9, 30),
        fiscal_year=2023,
        fiscal_quarter=0,
        primary_document="aapl-20230930.htm",
        description="10-K",
        url="https://www.sec.gov/Archives/edgar/data/320193/000032019323000106/aapl-20230930.htm",
    )


def test_nvidia_year_ended_in_january_2025_is_fiscal_2025() -> None:
    filing = parsed(NVIDIA, "NVDA")["0001045810-25-000023"]
    assert (filing.form, filing.report_date) == ("10-K", date(2025, 1, 26))
    assert (filing.fiscal_year, filing.fiscal_quarter) == (2025, 0)
    # Its first quarter of fiscal 2026 ended three months later.
    q1 = parsed(NVIDIA, "NVDA")["0001045810-25-000116"]
    assert (q1.report_date, q1.fiscal_year, q1.fiscal_quarter) == (date(2025, 4, 27), 2026, 1)


def test_apple_10_q_for_the_quarter_ended_december_2024_is_q1_fiscal_2025() -> None:
    [filing] = [
        f
        for f in parsed(APPLE, "AAPL").values()
        if f.form == "10-Q" and f.report_date == date(2024, 12, 28)
    ]
    assert (filing.fiscal_year, filing.fiscal_quarter) == (2025, 1)
    quarters = {
        f.report_date: f.fiscal_quarter
        for f in parsed(APPLE, "AAPL").values()
        if f.form == "10-Q" and f.fiscal_year == 2025
    }
    assert quarters == {date(2024, 12, 28): 1, date(2025, 3, 29): 2, date(2025, 6, 28): 3}


def test_8_ks_carry_their_items_and_no_fiscal_period() -> None:
    filing = parsed(APPLE, "AAPL")["0000320193-26-000005"]
    assert filing.form == "8-K"
    assert (filing.fiscal_year, filing.fiscal_quarter) == (None, None)
    assert filing.description == (
        "Item 2.02 Results of Operations and Financial Condition; "
        "Item 9.01 Financial Statements and Exhibits"
    )


def test_every_filing_is_kept_or_counted_as_skipped() -> None:
    doc = read_json(submissions_path(f"CIK{APPLE}.json"))
    result = parse_submissions_page(doc, "AAPL")
    assert len(result.filings) + sum(result.skipped.values()) == len(
        doc["filings"]["recent"]["accessionNumber"]
    )
    # Insider forms are left out, and said to be.
    assert result.skipped["4"] == 596
    assert {f.form for f in result.filings} == {"10-K", "10-Q", "8-K", "8-K/A", "DEF 14A"}


def test_tesla_older_filings_page_is_read_with_the_main_file() -> None:
    main = submissions_path(f"CIK{TESLA}.json")
    page = submissions_path(TESLA_PAGE)
    files = read_submissions_files([main])
    assert [path.name for path in files.read] == [main.name, TESLA_PAGE]
    assert files.pages_absent == []
    by_accession = {f.accession: f for f in files.filings}
    first_10_k = by_accession["0001193125-11-054847"]
    assert (first_10_k.form, first_10_k.report_date) == ("10-K", date(2010, 12, 31))
    assert (first_10_k.fiscal_year, first_10_k.fiscal_quarter) == (2010, 0)
    assert first_10_k.url.endswith("/1318605/000119312511054847/d10k.htm")
    ipo = by_accession["0001193125-10-017054"]
    assert (ipo.form, ipo.fiscal_year, ipo.description) == (
        "S-1",
        None,
        "REGISTRATION STATEMENT ON FORM S-1",
    )
    # The page alone: the same rows, given the main file's CIK and fiscal year end.
    from_page = parse_submissions(read_json(page), "TSLA", cik=TESLA, fiscal_year_end="1231")
    assert from_page == [f for f in files.filings if f.filed <= date(2018, 2, 12)]
    # A page passed on its own brings its main file from beside it.
    assert read_submissions_files([page]).filings == files.filings


def test_a_page_without_its_main_file_is_refused(tmp_path: Path) -> None:
    page = tmp_path / TESLA_PAGE
    page.write_text(json.dumps({"accessionNumber": [], "form": [], "filingDate": []}))
    with pytest.raises(IngestError, match="pass it too"):
        read_submissions_files([page])
    with pytest.raises(IngestError, match="submissions file name"):
        read_submissions_files([tmp_path / "tesla.json"])


def test_pages_listed_but_not_staged_are_named() -> None:
    files = read_submissions_files([submissions_path(f"CIK{MICROSOFT}.json")])
    assert files.pages_absent == [
        f"CIK{MICROSOFT}-submissions-001.json",
        f"CIK{MICROSOFT}-submissions-002.json",
    ]
    assert files.companies[0].symbol == "MSFT"


def _annual_calendar() -> dict[str, dict[date, int]]:
    """symbol → {fiscal year end → fiscal year}, as companyfacts parsing decided it."""
    calendar: dict[str, dict[date, int]] = {}
    for value in read_dataset(DEFAULT_DATASET_DIR).values:
        if value.period_type == "annual":
            calendar.setdefault(value.symbol, {})[value.period_end] = value.fiscal_year
    return calendar


def test_fiscal_periods_agree_with_the_companyfacts_calendar() -> None:
    """Every 10-K whose report date lies in the span companyfacts covers ends on one of its
    fiscal year ends, with the same fiscal year; every 10-Q in that span falls in the year
    of the next year end, in the quarter counted from the actual previous year end."""
    calendar = _annual_calendar()
    paths = sorted(require_shared_data("sec", "submissions").glob("CIK*.json"))
    filings = read_submissions_files(paths).filings
    checked_annual = checked_quarterly = 0
    for filing in filings:
        ends = calendar.get(filing.symbol)
        if not ends or filing.report_date is None or filing.fiscal_quarter is None:
            continue
        if not min(ends) < filing.report_date <= max(ends):
            continue
        if filing.fiscal_quarter == 0:
            assert ends.get(filing.report_date) == filing.fiscal_year, filing
            checked_annual += 1
        else:
            closing = min(end for end in ends if end >= filing.report_date)
            opening = max(end for end in ends if end < filing.report_date)
            quarter = round((filing.report_date - opening).days / 91.3)
            assert (filing.fiscal_year, filing.fiscal_quarter) == (ends[closing], quarter), filing
            checked_quarterly += 1
    # Apple FY2016-FY2025, NVIDIA FY2020-FY2026, Tesla FY2010-FY2021 with amendments.
    assert checked_annual >= 30
    assert checked_quarterly >= 80


@pytest.mark.parametrize(
    ("form", "report_date", "year_end", "period"),
    [
        # Apple's nominal "0926"; its 52/53-week years end on the last Saturday of September.
        ("10-K", date(2023, 9, 30), "0926", (2023, 0)),
        ("10-K", date(2022, 9, 24), "0926", (2022, 0)),
        ("10-Q", date(2023, 7, 1), "0926", (2023, 3)),
        # A 53-week year nominally ending 31 December that ends on 2 January.
        ("10-K", date(2021, 1, 2), "1231", (2020, 0)),
        ("10-Q", date(2021, 4, 3), "1231", (2021, 1)),
        ("10-K/A", date(2024, 12, 31), "1231", (2024, 0)),
        ("20-F", date(2024, 3, 31), "0331", (2024, 0)),
        # Late January year ends are named after the year they end in.
        ("10-K", date(2026, 1, 25), "0131", (2026, 0)),
        ("10-Q", date(2025, 10, 26), "0131", (2026, 3)),
        # A "10-Q" five months into the year is no quarter end: no quarter is guessed.
        ("10-Q", date(2021, 5, 31), "1231", (2021, None)),
        ("8-K", date(2023, 9, 30), "0926", (None, None)),
        ("10-K", None, "0926", (None, None)),
        ("10-K", date(2023, 9, 30), None, (None, None)),
        # "0229" is a day only in leap years.
        ("10-K", date(2023, 2, 28), "0229", (2023, 0)),
    ],
)
def test_fiscal_period(
    form: str,
    report_date: date | None,
    year_end: str | None,
    period: tuple[int | None, int | None],
) -> None:
    assert fiscal_period(form, report_date, year_end) == period


def test_a_synthetic_page_parses_without_a_header() -> None:
    page = {
        "accessionNumber": ["0000000001-24-000001", "0000000001-24-000002", "x"],
        "filingDate": ["2024-02-01", "2024-02-02", "2024-02-03"],
        "reportDate": ["2023-12-31", "", ""],
        "form": ["10-K", "4", "UPLOAD"],
        "primaryDocument": ["ex-20231231.htm", "form4.xml", ""],
        "primaryDocDescription": ["ANNUAL REPORT", "", ""],
    }
    result = parse_submissions_page(page, "EX", cik="1", fiscal_year_end="1231")
    [filing] = result.filings
    assert (filing.cik, filing.fiscal_year, filing.fiscal_quarter) == ("0000000001", 2023, 0)
    assert filing.url == (
        "https://www.sec.gov/Archives/edgar/data/1/000000000124000001/ex-20231231.htm"
    )
    assert dict(result.skipped) == {"4": 1, "UPLOAD": 1}
    with pytest.raises(IngestError, match="CIK"):
        parse_submissions(page, "EX")


def test_tool_arguments_spell_forms_as_edgar_does() -> None:
    args = GetRecentFilingsArgs(symbol="AAPL", forms=["10k", "def  14a", "8-K", "10-K"])
    assert args.forms == ["10-K", "DEF 14A", "8-K"]
    assert args.limit == 10
    assert TOOL_ARGUMENTS["get_recent_filings"] is GetRecentFilingsArgs
    with pytest.raises(ValidationError):
        GetRecentFilingsArgs(symbol="AAPL", limit=101)
    with pytest.raises(ValidationError):
        GetRecentFilingsArgs(symbol="AAPL", forms=["10-K; DROP TABLE filings"])


# --- the bundled dataset -------------------------------------------------------------


def test_the_bundled_dataset_holds_the_filings() -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    by_accession = {f.accession: f for f in dataset.filings}
    apple = by_accession["0000320193-23-000106"]
    assert (apple.symbol, apple.form, apple.fiscal_year, apple.filed) == (
        "AAPL",
        "10-K",
        2023,
        date(2023, 11, 3),
    )
    # Microsoft has submissions but no companyfacts: it is a company all the same.
    assert "MSFT" in {c.symbol for c in dataset.companies}
    assert {f.symbol for f in dataset.filings} == {"AAPL", "MSFT", "NVDA", "TSLA"}
    assert min(f.filed for f in dataset.filings if f.symbol == "TSLA") == date(2010, 1, 29)
    manifest = json.loads((DEFAULT_DATASET_DIR / MANIFEST_FILE).read_text())
    per_symbol = {entry["symbol"]: entry["rows"] for entry in manifest["filings"]}
    assert sum(per_symbol.values()) == len(dataset.filings)
    assert per_symbol == {
        symbol: sum(1 for f in dataset.filings if f.symbol == symbol) for symbol in per_symbol
    }
    assert (DEFAULT_DATASET_DIR / "filings.csv").stat().st_size < 3_000_000


# --- PostgreSQL ------------------------------------------------------------------------


async def test_ingested_submissions_answer_recent_filings_in_one_round_trip(
    database: str,
) -> None:
    paths = [submissions_path(f"CIK{APPLE}.json"), submissions_path(f"CIK{TESLA}.json")]
    conn = await asyncpg.connect(database)
    try:
        first = await ingest_submissions_files(conn, paths)
        second = await ingest_submissions_files(conn, paths)
        apple = await conn.fetchrow(
            "SELECT name, fiscal_year_end FROM companies WHERE symbol = 'AAPL'"
        )
        fetcher = CountingFetcher(conn)
        tens = await get_recent_filings(
            fetcher, GetRecentFilingsArgs(symbol="AAPL", forms=["10-K"], limit=3)
        )
        fy2023 = await get_recent_filings(
            fetcher, GetRecentFilingsArgs(symbol="AAPL", fiscal_year=2023)
        )
        tesla = await get_recent_filings(fetcher, GetRecentFilingsArgs(symbol="TSLA", limit=100))
    finally:
        await conn.close()
    assert (first["companies_added"], second["companies_added"]) == (2, 0)
    assert first["filings_changed"] == first["filings"] > 400
    assert second["filings_changed"] == 0
    assert first["files_read"] == 3  # Tesla's older-filings page came along
    assert first["skipped_forms"]["4"] > 0
    assert (apple["name"], apple["fiscal_year_end"]) == ("Apple Inc.", "0926")

    assert fetcher.round_trips == 3
    assert [s.accession for s in tens.sources] == [
        "0000320193-25-000079",
        "0000320193-24-000123",
        "0000320193-23-000106",
    ]
    assert tens.facts == [] and tens.missing == []
    source = tens.sources[2]
    assert source.source_id == "filing:0000320193-23-000106"
    assert source.label == (
        "Apple 10-K for fiscal 2023, filed 2023-11-03, accession 0000320193-23-000106"
    )
    assert (source.form, source.filed) == ("10-K", date(2023, 11, 3))
    assert source.url is not None and source.url.endswith("/aapl-20230930.htm")
    assert (source.fiscal_year, source.fiscal_quarter, source.period_end) == (
        2023,
        0,
        date(2023, 9, 30),
    )
    # A fiscal year selects the periodic reports of that year, newest first.
    assert [(s.form, s.fiscal_quarter) for s in fy2023.sources] == [
        ("10-K", 0),
        ("10-Q", 3),
        ("10-Q", 2),
        ("10-Q", 1),
    ]
    assert fy2023.sources[1].label.startswith("Apple 10-Q for Q3 of fiscal 2023, filed 2023-08-04")
    assert tesla.arguments == GetRecentFilingsArgs(symbol="TSLA", limit=100)
    assert tesla.arguments.model_dump(mode="json") == {"symbol": "TSLA", "limit": 100}
    filed = [s.filed for s in tesla.sources]
    assert len(filed) == 100 and filed == sorted(filed, reverse=True)


async def test_recent_filings_say_what_is_held_when_nothing_matches(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        stored = await conn.fetchval("SELECT count(*) FROM filings")
        far = await get_recent_filings(
            conn, GetRecentFilingsArgs(symbol="AAPL", forms=["10-K", "20-F"], fiscal_year=2031)
        )
        eight_k = await get_recent_filings(
            conn, GetRecentFilingsArgs(symbol="MSFT", forms=["8-K"], fiscal_year=2024)
        )
        unknown = await get_recent_filings(conn, GetRecentFilingsArgs(symbol="ZZZZ"))
        no_filings = await get_recent_filings(conn, GetRecentFilingsArgs(symbol="GOOGL"))
        microsoft = await get_recent_filings(
            conn, GetRecentFilingsArgs(symbol="MSFT", forms=["10-K"], limit=1)
        )
    finally:
        await conn.close()
    assert stored == len(read_dataset(DEFAULT_DATASET_DIR).filings)
    assert far.sources == []
    assert len(far.missing) == 2
    ten_k, twenty_f = far.missing
    assert ten_k.startswith("Apple's 10-K for fiscal 2031 (held for Apple: ")
    assert "10-K for fiscal 2015 to 2025;" in ten_k
    assert "8-K filed 2015-03-13 to" in ten_k
    assert twenty_f.startswith("Apple's 20-F filings (finq holds none; held for Apple: ")
    assert eight_k.missing == [
        "Microsoft's 8-K for fiscal 2024 (8-K filings have no fiscal year; ask without one)"
    ]
    assert unknown.missing == ["filings of ZZZZ (finq knows no company with that ticker)"]
    # A company held without filings: the answer says what is held for it instead.
    [nothing] = no_filings.missing
    assert nothing.startswith("Alphabet's filings (finq holds Alphabet's financial figures for")
    assert "daily prices from 2004-08-19 to" in nothing
    [latest] = microsoft.sources
    assert latest.label == (
        "Microsoft 10-K for fiscal 2025, filed 2025-07-30, accession 0000950170-25-100235"
    )
