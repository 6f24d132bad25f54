"""Companies known by every share class's ticker and by their former names, and stock splits
read from the companies' own XBRL facts.

The synthetic tests run anywhere; the ones on real SEC files skip without ../shared/data.
"""

from __future__ import annotations

import json
from datetime import date
from fractions import Fraction
from pathlib import Path
from typing import Any

import asyncpg

from services.ingest.build_default_dataset import companyfacts_company
from services.ingest.companyfacts import CompanyRecord, company_from_submissions, read_json
from services.ingest.dataset import (
    DEFAULT_DATASET_DIR,
    Dataset,
    load_dataset,
    parse_companyfacts_files,
    read_dataset,
)
from services.ingest.filing_tickers import read_filing_tickers, tickers_under
from services.ingest.filings import ingest_submissions_files
from services.ingest.stock_splits import StockSplit, stock_splits
from tests.helpers import require_shared_data, run_finq

APPLE, NVIDIA, TESLA, ALPHABET = "0000320193", "0001045810", "0001318605", "0001652044"
RATIO_TAG = "StockholdersEquityNoteStockSplitConversionRatio1"


# --- builders -----------------------------------------------------------------------


def cover_page(cik: str, classes: list[tuple[str, str]]) -> bytes:
    """An inline-XBRL cover page listing (security title, trading symbol) pairs."""
    rows = "".join(
        f'<tr><td><ix:nonNumeric contextRef="c-{i}" name="dei:Security12bTitle">{title}'
        f'</ix:nonNumeric></td><td><ix:nonNumeric contextRef="c-{i}" name="dei:TradingSymbol">'
        f"{symbol}</ix:nonNumeric></td></tr>"
        for i, (title, symbol) in enumerate(classes, start=2)
    )
    return (
        '<html><body><div style="display:none"><ix:header><ix:nonNumeric contextRef="c-1" '
        f'name="dei:EntityCentralIndexKey">{cik}</ix:nonNumeric></ix:header></div>'
        f"<table>{rows}</table></body></html>"
    ).encode()


def split_fact(
    ratio: float, end: str, accession: str, filed: str, start: str | None = None
) -> dict[str, Any]:
    raw: dict[str, Any] = {"end": end, "val": ratio, "accn": accession, "form": "10-Q"}
    raw["filed"] = filed
    if start is not None:
        raw["start"] = start
    return raw


def splits_doc(*facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "cik": 1234,
        "entityName": "EXAMPLE CORP",
        "facts": {"us-gaap": {RATIO_TAG: {"units": {"pure": list(facts)}}}},
    }


def dated(splits: tuple[StockSplit, ...]) -> list[tuple[date, Fraction]]:
    return [(split.effective, split.ratio) for split in splits]


def submissions_doc(
    cik: str,
    name: str,
    tickers: list[str],
    former: list[str] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    return {
        "cik": cik,
        "name": name,
        "tickers": tickers,
        "fiscalYearEnd": "1231",
        "formerNames": [{"name": n, "from": "2000-01-01T00:00:00.000Z"} for n in former],
        "filings": {"recent": {"accessionNumber": [], "form": [], "filingDate": []}},
    }


# --- tickers --------------------------------------------------------------------------


def test_a_cover_page_gives_each_share_class_but_not_its_notes() -> None:
    page = cover_page(
        "0000001234",
        [
            ("Class A Common Stock, $0.001 par value", "exa"),
            ("Class C Capital Stock, $0.001 par value", "EXC"),
            ("1.375% Notes due 2029", "EXA29"),
            ("Warrants to purchase Class A Common Stock", "EXA.WS"),
        ],
    )
    listed = read_filing_tickers(page, Path("exa-10-k.htm"))
    assert listed is not None
    assert (listed.cik, listed.tickers) == ("0000001234", ("EXA", "EXC"))


def test_a_page_without_dei_facts_lists_no_tickers() -> None:
    assert read_filing_tickers(b"<html><body><p>GOOG</p></body></html>", Path("x.html")) is None


def test_submissions_give_every_ticker_with_the_first_as_the_symbol() -> None:
    company = company_from_submissions(
        submissions_doc("1234", "Example Holdings, Inc.", ["exa", "EXB", "EXA", "not a ticker"])
    )
    assert company.symbol == "EXA"
    assert company.tickers == ("EXA", "EXB")


def test_the_symbol_always_leads_the_tickers() -> None:
    company = CompanyRecord("GOOGL", ALPHABET, "Alphabet Inc.", "Alphabet", "1231", (), ("GOOG",))
    assert company.tickers == ("GOOGL", "GOOG")
    assert CompanyRecord("AMZN", "", "Amazon", "Amazon", None, ()).tickers == ("AMZN",)


def test_goog_is_among_alphabets_tickers_after_building_from_its_filings() -> None:
    path = require_shared_data("sec", "companyfacts", f"CIK{ALPHABET}.json")
    listings = tickers_under(require_shared_data("filings"))
    # No submissions file for Alphabet among the sources: its 10-K's cover page names both.
    company = companyfacts_company(path, read_json(path), listings)
    assert company.symbol == "GOOGL"
    assert company.tickers == ("GOOGL", "GOOG")
    assert [listing.path.name for listing in listings[ALPHABET]] == ["googl-10-k-2025-02-05.html"]


def test_the_bundled_dataset_knows_alphabet_by_goog_too() -> None:
    companies = {c.symbol: c for c in read_dataset(DEFAULT_DATASET_DIR).companies}
    assert companies["GOOGL"].tickers == ("GOOGL", "GOOG")
    assert all(company.tickers[0] == symbol for symbol, company in companies.items())


# --- former names ---------------------------------------------------------------------


def test_former_names_become_lowercase_aliases_without_legal_suffixes() -> None:
    company = company_from_submissions(
        submissions_doc(
            "1234",
            "Example Holdings, Inc.",
            ["EXA"],
            [
                "EXAMPLE COMPUTER INC",
                "EXAMPLE COMPUTER INC/ FA",
                "EXAMPLE MOTORS INC/DE/",
                "EXAMPLE CORP/CA",
                "EXAMPLE HOLDINGS INC",
            ],
        )
    )
    assert company.aliases == (
        "example holdings",
        "example computer",
        "example motors",
        "example",
    )


def test_real_former_names_are_aliases() -> None:
    def aliases(cik: str) -> tuple[str, ...]:
        path = require_shared_data("sec", "submissions", f"CIK{cik}.json")
        return company_from_submissions(read_json(path)).aliases

    assert aliases(APPLE) == ("apple", "apple computer")  # APPLE COMPUTER INC, …INC/ FA
    assert aliases(TESLA) == ("tesla", "tesla motors")  # TESLA MOTORS INC
    assert aliases(NVIDIA) == ("nvidia",)  # NVIDIA CORP/CA is the same name


# --- stock splits -----------------------------------------------------------------------


def test_a_split_is_dated_by_when_it_took_effect_not_when_it_was_approved() -> None:
    splits = stock_splits(
        splits_doc(
            # The board's approval, in two 10-Qs, then the split itself in later filings.
            split_fact(20, "2022-02-01", "q1", "2022-04-27"),
            split_fact(20, "2022-02-01", "q3", "2022-10-26"),
            split_fact(20, "2022-07-15", "q3", "2022-10-26"),
            split_fact(20, "2022-07-15", "k", "2023-02-03"),
        )
    )
    assert splits == (
        StockSplit(
            date(2022, 7, 15), Fraction(20), "q3", date(2022, 10, 26), f"us-gaap:{RATIO_TAG}"
        ),
    )


def test_a_ratio_restated_over_statement_periods_does_not_date_a_split() -> None:
    splits = stock_splits(
        splits_doc(
            split_fact(5, "2019-09-30", "q", "2020-10-26", start="2019-01-01"),
            split_fact(5, "2020-12-31", "k", "2021-02-08", start="2020-01-01"),
            split_fact(5, "2020-08-10", "q", "2020-10-26"),
            # A month around the split does date it.
            split_fact(1.5, "2024-06-30", "q2", "2025-05-28", start="2024-06-01"),
        )
    )
    assert dated(splits) == [
        (date(2020, 8, 10), Fraction(5)),
        (date(2024, 6, 30), Fraction(3, 2)),
    ]


def test_two_splits_of_one_ratio_years_apart_stay_two() -> None:
    splits = stock_splits(
        splits_doc(
            split_fact(2, "2000-06-20", "a", "2000-08-01"),
            split_fact(2, "2005-02-25", "b", "2005-04-01"),
            split_fact(0, "2006-01-01", "c", "2006-02-01"),  # no ratio at all: ignored
        )
    )
    assert dated(splits) == [(date(2000, 6, 20), Fraction(2)), (date(2005, 2, 25), Fraction(2))]


def test_splits_read_from_companyfacts_match_the_known_splits() -> None:
    def splits(cik: str) -> tuple[StockSplit, ...]:
        return stock_splits(read_json(require_shared_data("sec", "companyfacts", f"CIK{cik}.json")))

    # Each a few days to three weeks before the first split-adjusted trading day announced
    # (Apple 2014-06-09 and 2020-08-31, NVIDIA 2021-07-20, Tesla 2020-08-31 and 2022-08-25,
    # Alphabet 2014-04-03 and 2022-07-18), or in the month of it (NVIDIA's 2024-06-10).
    assert dated(splits(APPLE)) == [
        (date(2014, 6, 6), Fraction(7)),
        (date(2020, 8, 28), Fraction(4)),
    ]
    assert dated(splits(NVIDIA)) == [
        (date(2021, 7, 19), Fraction(4)),
        (date(2024, 6, 30), Fraction(10)),
    ]
    assert dated(splits(TESLA)) == [
        (date(2020, 8, 10), Fraction(5)),
        (date(2022, 8, 5), Fraction(3)),
    ]
    # The 2014 class C dividend doubled the share count like a 2-for-1 split.
    assert dated(splits(ALPHABET)) == [
        (date(2014, 4, 2), Fraction(2)),
        (date(2022, 7, 15), Fraction(20)),
    ]
    apple_2020 = splits(APPLE)[1]
    # Cited like a figure: the first filing that gave the date, Apple's FY2020 10-K.
    assert (apple_2020.accession, apple_2020.filed) == ("0000320193-20-000096", date(2020, 10, 30))
    assert apple_2020.tag == f"us-gaap:{RATIO_TAG}"


def test_the_bundled_dataset_holds_each_companys_splits_with_provenance() -> None:
    companies = {c.symbol: c for c in read_dataset(DEFAULT_DATASET_DIR).companies}
    assert dated(companies["NVDA"].splits) == [
        (date(2021, 7, 19), Fraction(4)),
        (date(2024, 6, 30), Fraction(10)),
    ]
    assert companies["NVDA"].splits[1].accession == "0001045810-25-000116"
    assert companies["AMZN"].splits == ()  # held for its prices only: no facts, no splits


def test_a_companyfacts_ingest_brings_per_share_figures_across_the_splits_it_states(
    tmp_path: Path,
) -> None:
    def eps(value: float, year: int, filed: str) -> dict[str, Any]:
        return {
            "start": f"{year}-01-01",
            "end": f"{year}-12-31",
            "val": value,
            "accn": f"k-{year}",
            "fy": year,
            "fp": "FY",
            "form": "10-K",
            "filed": filed,
        }

    doc = splits_doc(split_fact(4, "2022-06-01", "q-2022", "2022-08-01"))
    doc["facts"]["us-gaap"]["EarningsPerShareDiluted"] = {
        "units": {"USD/shares": [eps(8.0, 2021, "2022-02-01"), eps(2.2, 2022, "2023-02-01")]}
    }
    path = tmp_path / "companyfacts" / "CIK0000001234.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    [company], values = parse_companyfacts_files([path], "EXA")
    assert dated(company.splits) == [(date(2022, 6, 1), Fraction(4))]
    [growth] = [v for v in values if (v.metric, v.fiscal_year) == ("eps_growth", 2022)]
    # 2.2 against 8.0 / 4: growth of 10%, not the split's -72.5%.
    assert round(growth.value, 9) == 10.0
    assert growth.provenance == "derived:(eps_diluted / (eps_diluted[-1] / 4) - 1) * 100"


# --- the database -------------------------------------------------------------------------


async def test_finq_ingest_default_stores_every_share_class_ticker(database: str) -> None:
    code, _, err = await run_finq("ingest", "default", database=database)
    assert code == 0, err
    conn = await asyncpg.connect(database)
    try:
        rows = await conn.fetch("SELECT symbol, tickers FROM companies ORDER BY symbol")
    finally:
        await conn.close()
    tickers = {row["symbol"]: row["tickers"] for row in rows}
    assert tickers["GOOGL"] == ["GOOGL", "GOOG"]
    assert tickers["AAPL"] == ["AAPL"]
    assert all(held[0] == symbol for symbol, held in tickers.items())


async def test_ingesting_submissions_gives_a_held_company_its_tickers_and_former_names(
    database: str, tmp_path: Path
) -> None:
    # Held from a companyfacts file alone: one ticker, its current name.
    held = CompanyRecord(
        "EXA", "0000001234", "EXAMPLE HOLDINGS INC", "Example Holdings", "1231", ("example",)
    )
    directory = tmp_path / "submissions"
    directory.mkdir()
    paths = []
    for cik, name, tickers, former in (
        ("0000001234", "EXAMPLE HOLDINGS INC", ["EXA", "EXB"], ["EXAMPLE WIDGETS CORP/DE/"]),
        ("0000005678", "NEWCO INC", ["NEWA", "NEWB"], ["OLDCO INC"]),
    ):
        paths.append(directory / f"CIK{cik}.json")
        paths[-1].write_text(json.dumps(submissions_doc(cik, name, tickers, former)))
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, Dataset(companies=(held,), metrics=(), values=()))
        first = await ingest_submissions_files(conn, paths)
        second = await ingest_submissions_files(conn, paths)
        # Loading the companyfacts company again forgets neither the other share class nor
        # the former name.
        await load_dataset(conn, Dataset(companies=(held,), metrics=(), values=()))
        rows = await conn.fetch("SELECT symbol, aliases, tickers FROM companies ORDER BY symbol")
    finally:
        await conn.close()
    assert (first["companies_added"], first["companies_updated"]) == (1, 1)
    assert (second["companies_added"], second["companies_updated"]) == (0, 0)
    stored = {row["symbol"]: (row["aliases"], row["tickers"]) for row in rows}
    assert stored == {
        "EXA": (["example", "example holdings", "example widgets"], ["EXA", "EXB"]),
        "NEWA": (["newco", "oldco"], ["NEWA", "NEWB"]),
    }
