"""Companyfacts parsing, the metric catalog's phrase lookup and the bundled default dataset.

The synthetic tests run anywhere; the ones on real SEC files skip without ../shared/data.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from services.ingest.build_default_dataset import build_dataset
from services.ingest.companyfacts import (
    CompanyRecord,
    IngestError,
    MetricValueRecord,
    common_name,
    company_for_companyfacts,
    company_from_submissions,
    display_name,
    fiscal_calendar,
    parse_companyfacts,
    read_json,
)
from services.ingest.dataset import (
    DEFAULT_DATASET_DIR,
    MANIFEST_FILE,
    read_dataset,
    write_dataset,
)
from shared.metric_catalog import CATALOG, METRICS_BY_ID
from shared.metric_resolver import MetricResolver
from tests.helpers import require_shared_data

APPLE, NVIDIA, TESLA, ALPHABET = "0000320193", "0001045810", "0001318605", "0001652044"
REVENUE_TAG = "RevenueFromContractWithCustomerExcludingAssessedTax"


# --- builders -----------------------------------------------------------------------


def fact(
    value: float,
    end: str,
    accession: str,
    fy: int,
    filed: str,
    start: str | None = None,
    form: str = "10-K",
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "end": end,
        "val": value,
        "accn": accession,
        "fy": fy,
        "fp": "FY",
        "form": form,
        "filed": filed,
    }
    if start is not None:
        raw["start"] = start
    return raw


def annual(value: float, year: int, accession: str, fy: int, filed: str) -> dict[str, Any]:
    """A calendar-year flow fact."""
    return fact(value, f"{year}-12-31", accession, fy, filed, start=f"{year}-01-01")


def companyfacts(tags: dict[str, list[dict[str, Any]]], unit: str = "USD") -> dict[str, Any]:
    return {
        "cik": 1234,
        "entityName": "EXAMPLE CORP",
        "facts": {"us-gaap": {tag: {"units": {unit: facts}} for tag, facts in tags.items()}},
    }


def values_of(records: list[MetricValueRecord], metric: str) -> dict[int, MetricValueRecord]:
    """The annual values of a metric by fiscal year (quarters: test_ingest_quarters.py)."""
    return {r.fiscal_year: r for r in records if r.metric == metric and r.period_type == "annual"}


@cache
def parsed(cik: str) -> list[MetricValueRecord]:
    path = require_shared_data("sec", "companyfacts", f"CIK{cik}.json")
    return parse_companyfacts(read_json(path), "TEST")


def value(cik: str, metric: str, year: int) -> MetricValueRecord:
    return values_of(parsed(cik), metric)[year]


# --- real SEC figures --------------------------------------------------------------------


def test_apple_revenue_matches_the_10_ks() -> None:
    assert value(APPLE, "revenue", 2022).value == 394_328_000_000
    assert value(APPLE, "revenue", 2024).value == 391_035_000_000
    fy2023 = value(APPLE, "revenue", 2023)
    assert fy2023.value == 383_285_000_000
    assert fy2023.period_start == date(2022, 9, 25)
    assert fy2023.period_end == date(2023, 9, 30)
    assert fy2023.accession == "0000320193-23-000106"
    assert fy2023.form == "10-K"
    assert fy2023.filed == date(2023, 11, 3)
    assert fy2023.xbrl_tag == REVENUE_TAG
    assert fy2023.provenance == f"xbrl:us-gaap:{REVENUE_TAG}"
    assert (fy2023.period_type, fy2023.fiscal_quarter, fy2023.unit) == ("annual", 0, "USD")


def test_nvidia_fiscal_2025_revenue_ends_in_january_2025() -> None:
    fy2025 = value(NVIDIA, "revenue", 2025)
    assert fy2025.value == 130_497_000_000
    assert fy2025.period_end == date(2025, 1, 26)
    assert value(NVIDIA, "net_income", 2025).value == 72_880_000_000


def test_alphabet_and_tesla_figures() -> None:
    assert value(ALPHABET, "net_income", 2023).value == 73_795_000_000
    assert value(ALPHABET, "revenue", 2024).value == 350_018_000_000
    assert value(TESLA, "revenue", 2021).value == 53_823_000_000
    assert value(TESLA, "net_income", 2021).value == 5_519_000_000


def test_apple_revenue_before_fiscal_2016_comes_from_sales_revenue_net() -> None:
    fy2015 = value(APPLE, "revenue", 2015)
    assert fy2015.value == 233_715_000_000
    assert fy2015.provenance == "xbrl:us-gaap:SalesRevenueNet"
    assert value(APPLE, "revenue", 2016).xbrl_tag == "Revenues"
    assert value(APPLE, "revenue", 2019).xbrl_tag == REVENUE_TAG


def test_a_figure_read_from_a_later_10_k_keeps_its_own_fiscal_year() -> None:
    path = require_shared_data("sec", "companyfacts", f"CIK{APPLE}.json")
    doc = read_json(path)
    # Keep only what the FY2024 10-K reports: FY2022 revenue is one of its comparatives.
    for body in doc["facts"]["us-gaap"].values():
        for unit, facts in body["units"].items():
            body["units"][unit] = [f for f in facts if f["accn"] == "0000320193-24-000123"]
    fy2022 = values_of(parse_companyfacts(doc, "AAPL"), "revenue")[2022]
    assert fy2022.value == 394_328_000_000
    assert fy2022.period_end == date(2022, 9, 24)
    assert fy2022.accession == "0000320193-24-000123"


def test_the_first_xbrl_10_k_does_not_fold_its_comparatives_into_its_own_year() -> None:
    # Apple's FY2009 10-K (fy 2009) also reports FY2007 and FY2008.
    revenue = values_of(parsed(APPLE), "revenue")
    assert revenue[2007].period_end == date(2007, 9, 29)
    assert revenue[2008].period_end == date(2008, 9, 27)
    assert revenue[2009].period_end == date(2009, 9, 26)


def test_nvidia_mislabelled_10_ks_are_outvoted() -> None:
    # NVIDIA's 10-K for the year ended 2012-01-29 says fy 2011; NVIDIA calls it fiscal 2012.
    fy2012 = value(NVIDIA, "revenue", 2012)
    assert fy2012.period_end == date(2012, 1, 29)
    assert value(NVIDIA, "revenue", 2010).period_end == date(2010, 1, 31)


def test_restated_values_come_from_the_latest_filing() -> None:
    # Alphabet's 2019 10-K reported 2018 operating income of 26,321 M; its 2020 10-K restated it.
    restated = value(ALPHABET, "operating_income", 2018)
    assert restated.value == 27_524_000_000
    assert restated.accession == "0001652044-20-000008"
    # Apple's 10-K/A of January 2010 restated FY2009 revenue (36,537 M → 42,905 M).
    assert value(APPLE, "revenue", 2009).value == 42_905_000_000


def test_total_liabilities_are_derived_only_where_no_line_exists() -> None:
    derived = value(NVIDIA, "total_liabilities", 2014)
    assert derived.provenance == "derived:LiabilitiesAndStockholdersEquity-StockholdersEquity"
    assert derived.xbrl_tag is None
    assert derived.value > 0
    assert value(NVIDIA, "total_liabilities", 2015).provenance == "xbrl:us-gaap:Liabilities"
    assert all(
        not r.provenance.startswith("derived")
        for r in parsed(APPLE)
        if r.metric == "total_liabilities"
    )


def test_alphabet_2015_diluted_eps_stays_missing() -> None:
    # Only per-class figures (dimensioned, not in companyfacts) and no diluted share count
    # to compute one from: nothing is invented.
    eps = values_of(parsed(ALPHABET), "eps_diluted")
    assert 2015 not in eps and {2014, 2016} <= eps.keys()


# Lines Apple's recent 10-Ks do not show: goodwill, intangibles and accrued liabilities are
# folded into other lines after FY2017, interest after FY2023; sales and marketing and general
# and administrative expense are split out only from FY2023.
APPLE_RECENT_GAPS = {
    "goodwill",
    "intangible_assets",
    "accrued_liabilities",
    "interest_expense",
    "interest_paid",
    "selling_and_marketing",
    "general_and_administrative",
}


def test_every_reported_catalog_metric_has_recent_values_for_apple() -> None:
    years = {(r.metric, r.fiscal_year) for r in parsed(APPLE)}
    for metric in CATALOG:
        # Derived metrics are not parsed from companyfacts; see test_derived_metrics.py.
        if metric.derived or metric.id in APPLE_RECENT_GAPS:
            continue
        for year in range(2019, 2026):
            assert (metric.id, year) in years, (metric.id, year)
    assert value(APPLE, "eps_diluted", 2023).unit == "USD/share"
    assert value(APPLE, "eps_diluted", 2023).value == 6.13


# --- synthetic rules ---------------------------------------------------------------------


def test_tag_fallback_is_chosen_per_year() -> None:
    doc = companyfacts(
        {
            "SalesRevenueNet": [annual(80, 2019, "a-19", 2019, "2020-02-01")],
            "Revenues": [
                annual(90, 2020, "a-20", 2020, "2021-02-01"),
                annual(100, 2021, "a-21", 2021, "2022-02-01"),
            ],
            REVENUE_TAG: [annual(101, 2021, "a-21", 2021, "2022-02-01")],
        }
    )
    revenue = values_of(parse_companyfacts(doc, "EX"), "revenue")
    assert {year: r.xbrl_tag for year, r in revenue.items()} == {
        2019: "SalesRevenueNet",
        2020: "Revenues",
        2021: REVENUE_TAG,
    }
    assert revenue[2021].value == 101


def test_an_implausibly_small_revenue_tag_is_skipped() -> None:
    doc = companyfacts(
        {
            # A segment figure under the preferred tag: 40% of the total.
            REVENUE_TAG: [
                annual(40, 2021, "a-21", 2021, "2022-02-01"),
                annual(60, 2022, "a-22", 2022, "2023-02-01"),
            ],
            "Revenues": [
                annual(100, 2021, "a-21", 2021, "2022-02-01"),
                annual(100, 2022, "a-22", 2022, "2023-02-01"),
            ],
        }
    )
    revenue = values_of(parse_companyfacts(doc, "EX"), "revenue")
    assert (revenue[2021].xbrl_tag, revenue[2021].value) == ("Revenues", 100)
    # 60% of the other tag is within the rule: the preferred tag stands.
    assert (revenue[2022].xbrl_tag, revenue[2022].value) == (REVENUE_TAG, 60)


def test_fiscal_year_comes_from_the_period_not_the_filing() -> None:
    doc = companyfacts(
        {
            "Revenues": [
                # The company's first XBRL 10-K (fy 2011) reports three years.
                annual(10, 2009, "k-11", 2011, "2012-02-27"),
                annual(20, 2010, "k-11", 2011, "2012-02-27"),
                annual(30, 2011, "k-11", 2011, "2012-02-27"),
                annual(40, 2012, "k-12", 2012, "2013-02-27"),
                annual(30, 2011, "k-12", 2012, "2013-02-27"),
            ]
        }
    )
    revenue = values_of(parse_companyfacts(doc, "EX"), "revenue")
    assert {y: r.value for y, r in revenue.items()} == {2009: 10, 2010: 20, 2011: 30, 2012: 40}
    # A repeated, unchanged figure is cited from the filing that first reported it.
    assert revenue[2011].accession == "k-11"


def test_a_mislabelled_filing_is_outvoted_by_the_others() -> None:
    # Fiscal years ending late January; the 2013 filing carries fy 2012 by mistake.
    facts = [
        fact(1, "2012-01-29", "k-12", 2012, "2012-03-01", start="2011-01-31"),
        fact(2, "2013-01-27", "k-13", 2012, "2013-03-01", start="2012-01-30"),
        fact(3, "2014-01-26", "k-14", 2014, "2014-03-01", start="2013-01-28"),
        fact(4, "2015-01-25", "k-15", 2015, "2015-03-01", start="2014-01-27"),
    ]
    calendar = fiscal_calendar(companyfacts({"Revenues": facts})["facts"]["us-gaap"])
    assert calendar == {
        date(2012, 1, 29): 2012,
        date(2013, 1, 27): 2013,
        date(2014, 1, 26): 2014,
        date(2015, 1, 25): 2015,
    }


def test_restatement_wins_and_is_cited() -> None:
    doc = companyfacts(
        {
            "NetIncomeLoss": [
                annual(100, 2020, "k-20", 2020, "2021-02-01"),
                annual(90, 2020, "k-21", 2021, "2022-02-01"),
                annual(120, 2021, "k-21", 2021, "2022-02-01"),
                # Same filing date: the later accession breaks the tie.
                annual(95, 2020, "k-21a", 2021, "2022-02-01"),
            ]
        }
    )
    income = values_of(parse_companyfacts(doc, "EX"), "net_income")
    assert (income[2020].value, income[2020].accession) == (95, "k-21a")
    assert income[2021].value == 120


def test_only_annual_10_k_periods_are_taken() -> None:
    doc = companyfacts(
        {
            "Revenues": [
                annual(100, 2021, "k-21", 2021, "2022-02-01"),
                annual(999, 2021, "q-21", 2021, "2022-02-01") | {"form": "10-Q"},
                fact(25, "2021-12-31", "k-21", 2021, "2022-02-01", start="2021-10-01"),
            ],
            "Assets": [
                fact(500, "2021-12-31", "k-21", 2021, "2022-02-01"),
                # Not a fiscal year end (e.g. an acquisition date in a note).
                fact(7, "2021-06-30", "k-21", 2021, "2022-02-01"),
            ],
        }
    )
    # The three-month 10-K fact is a reported Q4 (tests/ingest/test_ingest_quarters.py), no year.
    records = [r for r in parse_companyfacts(doc, "EX") if r.period_type == "annual"]
    assert [(r.metric, r.fiscal_year, r.value) for r in records] == [
        ("revenue", 2021, 100),
        ("total_assets", 2021, 500),
    ]
    assets = records[1]
    assert assets.period_start is None and assets.period_end == date(2021, 12, 31)


def test_total_liabilities_derivation_uses_one_filing() -> None:
    doc = companyfacts(
        {
            "Revenues": [
                annual(100, 2020, "k-20", 2020, "2021-02-01"),
                annual(110, 2021, "k-21", 2021, "2022-02-01"),
            ],
            "Liabilities": [fact(333, "2021-12-31", "k-21", 2021, "2022-02-01")],
            "LiabilitiesAndStockholdersEquity": [
                fact(500, "2020-12-31", "k-20", 2020, "2021-02-01"),
                fact(600, "2021-12-31", "k-21", 2021, "2022-02-01"),
            ],
            "StockholdersEquity": [fact(200, "2020-12-31", "k-20", 2020, "2021-02-01")],
        }
    )
    liabilities = values_of(parse_companyfacts(doc, "EX"), "total_liabilities")
    assert liabilities[2020].value == 300
    assert liabilities[2020].provenance == (
        "derived:LiabilitiesAndStockholdersEquity-StockholdersEquity"
    )
    assert liabilities[2020].accession == "k-20"
    assert (liabilities[2021].value, liabilities[2021].xbrl_tag) == (333, "Liabilities")


def test_eps_reads_the_per_share_unit() -> None:
    doc = companyfacts(
        {"EarningsPerShareDiluted": [annual(6.13, 2023, "k-23", 2023, "2024-02-01")]},
        unit="USD/shares",
    )
    [eps] = parse_companyfacts(doc, "EX")
    assert (eps.metric, eps.value, eps.unit) == ("eps_diluted", 6.13, "USD/share")


def test_a_document_that_is_not_companyfacts_is_refused() -> None:
    with pytest.raises(IngestError, match="companyfacts"):
        parse_companyfacts({"hello": "world"}, "EX")


# --- the catalog ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("top line", "revenue"),
        ("Sales", "revenue"),
        ("R&D", "research_and_development"),
        ("r and d", "research_and_development"),
        ("Research & Development", "research_and_development"),
        ("capex", "capital_expenditures"),
        ("capital expenditure", "capital_expenditures"),
        ("diluted EPS", "eps_diluted"),
        ("earnings per share", "eps_diluted"),
        ("earnings", "net_income"),
        ("bottom line", "net_income"),
        ("shareholders' equity", "stockholders_equity"),
        ("Stockholders’ equity", "stockholders_equity"),
        ("book value", "stockholders_equity"),
        ("CFO", "operating_cash_flow"),
        ("cash", "cash_and_equivalents"),
        ("net_income", "net_income"),
        ("  Total   Assets ", "total_assets"),
    ],
)
def test_resolve_metric(phrase: str, metric: str) -> None:
    resolved = MetricResolver.from_catalog().exact(phrase)
    assert resolved is not None and resolved.metric_id == metric


@pytest.mark.parametrize("phrase", ["weather", "margin", "growth", ""])
def test_resolve_metric_refuses_other_phrases(phrase: str) -> None:
    assert MetricResolver.from_catalog().exact(phrase) is None


def test_catalog_shape() -> None:
    # The catalog's own tests: tests/shared/test_metric_catalog.py; here what the parser needs.
    assert len(CATALOG) >= 140 and set(METRICS_BY_ID) == {m.id for m in CATALOG}
    for metric in CATALOG:
        assert metric.unit in {"USD", "USD/share", "%", "x", "days", "shares"}
        assert metric.kind in {"flow", "instant"}
        assert bool(metric.xbrl_tags) != metric.derived
        assert all(alias == alias.lower() for alias in metric.aliases)


# --- companies ---------------------------------------------------------------------------


def test_company_names() -> None:
    assert common_name("NVIDIA CORP") == "NVIDIA"
    assert common_name("Alphabet Inc.") == "Alphabet"
    assert common_name("Tesla, Inc.") == "Tesla"
    assert common_name("NVIDIA CORP/CA") == "NVIDIA"
    assert common_name("JPMORGAN CHASE & CO") == "JPMORGAN CHASE"
    assert display_name(ALPHABET, "ALPHABET INC.") == "Alphabet"
    assert display_name(NVIDIA, "NVIDIA CORP") == "NVIDIA"
    assert display_name("0000000001", "ACME WIDGETS CORP") == "Acme Widgets"


def test_company_from_apple_submissions() -> None:
    path = require_shared_data("sec", "submissions", f"CIK{APPLE}.json")
    company = company_from_submissions(read_json(path))
    assert company == CompanyRecord(
        symbol="AAPL",
        cik=APPLE,
        name="Apple Inc.",
        display_name="Apple",
        fiscal_year_end="0926",
        aliases=("apple", "apple computer"),
    )


def _write(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def test_symbol_resolution(tmp_path: Path) -> None:
    doc = companyfacts({"Revenues": [annual(1, 2021, "k", 2021, "2022-02-01")]})
    facts_path = _write(tmp_path / "companyfacts" / "CIK0000001234.json", doc)
    # No submissions beside it and no symbol: the error says what to do.
    with pytest.raises(IngestError, match="--symbol"):
        company_for_companyfacts(facts_path, doc)
    alone = company_for_companyfacts(facts_path, doc, "exmp")
    assert (alone.symbol, alone.cik, alone.display_name) == ("EXMP", "0000001234", "Example")
    assert alone.fiscal_year_end == "1231"

    _write(
        tmp_path / "submissions" / "CIK0000001234.json",
        {"cik": "0000001234", "name": "Example Corp", "tickers": ["EXC"], "fiscalYearEnd": "1231"},
    )
    assert company_for_companyfacts(facts_path, doc).symbol == "EXC"
    # The explicit symbol wins over the submissions ticker; the rest still comes from there.
    chosen = company_for_companyfacts(facts_path, doc, "EXQ")
    assert (chosen.symbol, chosen.name) == ("EXQ", "Example Corp")


# --- the dataset files -------------------------------------------------------------------


def test_dataset_round_trip_is_exact(tmp_path: Path) -> None:
    company = CompanyRecord("EX", "0000001234", "EXAMPLE CORP", "Example", "1231", ("example",))
    records = [
        MetricValueRecord(
            "EX", "eps_diluted", "annual", 2021, 0, date(2021, 1, 1), date(2021, 12, 31),
            0.1 + 0.2, "USD/share", "10-K", "k-21", "EarningsPerShareDiluted",
            date(2022, 2, 1), "xbrl:us-gaap:EarningsPerShareDiluted",
        ),
        MetricValueRecord(
            "EX", "total_liabilities", "annual", 2021, 0, None, date(2021, 12, 31),
            123_456_789_012.0, "USD", "10-K", "k-21", None, date(2022, 2, 3),
            "derived:LiabilitiesAndStockholdersEquity-StockholdersEquity",
        ),
    ]  # fmt: skip
    write_dataset(tmp_path, [company], list(reversed(records)), sources={"x.json": "ab"})
    dataset = read_dataset(tmp_path)
    assert dataset.companies == (company,)
    assert dataset.metrics == CATALOG
    assert dataset.values == tuple(records)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert manifest["generated"] == "2022-02-03"
    assert manifest["generator"] == "finq ingest"


def test_the_committed_default_dataset_reads_back() -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    # AMZN and FB are held for their prices only; MSFT for its prices and filings.
    symbols = {c.symbol for c in dataset.companies}
    assert symbols == {"AAPL", "AMZN", "FB", "GOOGL", "MSFT", "NVDA", "TSLA"}
    assert dataset.metrics == CATALOG
    [fy2023] = [
        v
        for v in dataset.values
        if (v.symbol, v.metric, v.period_type, v.fiscal_year) == ("AAPL", "revenue", "annual", 2023)
    ]
    assert fy2023.value == 383_285_000_000
    assert fy2023.accession == "0000320193-23-000106"
    assert fy2023.provenance == f"xbrl:us-gaap:{REVENUE_TAG}"
    manifest = json.loads((DEFAULT_DATASET_DIR / MANIFEST_FILE).read_text())
    rows = {entry["file"]: entry["rows"] for entry in manifest["files"]}
    assert rows["metric_values.csv"] == len(dataset.values)
    assert {v.metric for v in dataset.values} <= set(METRICS_BY_ID)


def test_the_default_dataset_is_what_the_builder_produces(tmp_path: Path) -> None:
    source = require_shared_data("sec")
    build_dataset(source, require_shared_data("prices"), tmp_path)
    committed = sorted(p.name for p in DEFAULT_DATASET_DIR.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == committed
    for name in committed:
        assert (tmp_path / name).read_bytes() == (DEFAULT_DATASET_DIR / name).read_bytes(), name
