"""Loading data into real PostgreSQL, and the metrics tool reading it back in one round-trip."""

from __future__ import annotations

import asyncpg
import pytest

from services.ingest.dataset import (
    DEFAULT_DATASET_DIR,
    ingest_companyfacts_files,
    load_dataset,
    read_dataset,
)
from services.tools.financial_metrics import get_financial_metrics
from shared.db import list_migrations, migrate
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import CountingFetcher, require_shared_data


async def test_migrations_are_applied_once_and_recorded(database: str) -> None:
    assert await migrate(database) == []
    conn = await asyncpg.connect(database)
    try:
        versions = [r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")]
        assert versions == [m.version for m in list_migrations()]
        assert versions[0] == "001_core"
        assert await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
    finally:
        await conn.close()


async def test_loading_the_bundled_dataset_twice_changes_nothing_the_second_time(
    database: str,
) -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    conn = await asyncpg.connect(database)
    try:
        first = await load_dataset(conn, dataset)
        second = await load_dataset(conn, dataset)
        stored = await conn.fetchval("SELECT count(*) FROM metric_values")
    finally:
        await conn.close()
    assert first["metric_values"] == len(dataset.values) == stored
    assert first["metric_values_changed"] == len(dataset.values)
    assert second["metric_values_changed"] == 0


async def test_many_companies_metrics_and_years_come_back_in_one_round_trip(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        fetcher = CountingFetcher(conn)
        result = await get_financial_metrics(
            fetcher,
            GetFinancialMetricsArgs(
                symbols=["AAPL", "NVDA"],
                metrics=["revenue", "net_income"],
                fiscal_years=[2023, 2024, 2031],
            ),
        )
    finally:
        await conn.close()
    assert fetcher.round_trips == 1
    assert len(result.facts) == 8
    apple_2023 = next(
        f for f in result.facts if (f.symbol, f.metric, f.fiscal_year) == ("AAPL", "revenue", 2023)
    )
    assert apple_2023.value == 383_285_000_000
    source = next(s for s in result.sources if s.source_id == apple_2023.source_id)
    assert source.accession == "0000320193-23-000106"
    assert source.form == "10-K"
    assert source.xbrl_tag == "RevenueFromContractWithCustomerExcludingAssessedTax"
    # The year not held is named, with the years that are.
    assert len(result.missing) == 4
    assert all("fiscal 2031" in item and "held: fiscal" in item for item in result.missing)


async def test_without_years_each_metric_comes_back_for_its_latest_year(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        latest = await conn.fetchval(
            "SELECT max(fiscal_year) FROM metric_values "
            "WHERE symbol='AAPL' AND metric='revenue' AND period_type='annual'"
        )
        result = await get_financial_metrics(
            conn, GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"])
        )
    finally:
        await conn.close()
    assert [f.fiscal_year for f in result.facts] == [latest]
    assert result.missing == []


async def test_ingesting_a_companyfacts_file_stores_it_with_provenance(database: str) -> None:
    path = require_shared_data("sec", "companyfacts", "CIK0001045810.json")
    conn = await asyncpg.connect(database)
    try:
        counts = await ingest_companyfacts_files(conn, [path])
        row = await conn.fetchrow(
            "SELECT value, period_end, form, accession, xbrl_tag, provenance FROM metric_values "
            "WHERE symbol = 'NVDA' AND metric = 'revenue' AND fiscal_year = 2025"
        )
    finally:
        await conn.close()
    assert counts["metric_values"] > 100
    assert row["value"] == 130_497_000_000
    assert str(row["period_end"]) == "2025-01-26"
    assert row["form"] == "10-K"
    assert row["provenance"] == f"xbrl:us-gaap:{row['xbrl_tag']}"


async def test_a_derived_figure_comes_back_with_its_formula_and_inputs_in_one_round_trip(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        fetcher = CountingFetcher(conn)
        result = await get_financial_metrics(
            fetcher,
            GetFinancialMetricsArgs(
                symbols=["AAPL"],
                metrics=["gross_margin", "return_on_equity", "revenue"],
                fiscal_years=[2023],
            ),
        )
        ttm = await get_financial_metrics(
            conn,
            GetFinancialMetricsArgs(
                symbols=["AAPL"],
                metrics=["return_on_equity"],
                period="ttm",
                fiscal_years=[2023],
                fiscal_quarters=[2],
            ),
        )
    finally:
        await conn.close()
    assert fetcher.round_trips == 1
    # Twelve months of income over balances at the quarter's end, a year apart.
    [ttm_roe] = ttm.facts
    assert [(i.term, i.period) for i in ttm_roe.inputs] == [
        ("net_income", "TTM to Q2 FY2023"),
        ("stockholders_equity", "Q2 FY2023"),
        ("stockholders_equity[-1]", "Q2 FY2022"),
    ]
    margin, roe, revenue = result.facts
    assert margin.formula == "gross_profit / revenue * 100"
    assert [(i.term, i.metric_label, i.value, i.unit, i.period) for i in margin.inputs] == [
        ("gross_profit", "Gross profit", 169_148_000_000.0, "USD", "FY2023"),
        ("revenue", "Revenue", 383_285_000_000.0, "USD", "FY2023"),
    ]
    # The opening balance is the previous fiscal year's, in the formula's order.
    assert [(i.term, i.fiscal_year, i.value) for i in roe.inputs] == [
        ("net_income", 2023, 96_995_000_000.0),
        ("stockholders_equity", 2023, 62_146_000_000.0),
        ("stockholders_equity[-1]", 2022, 50_672_000_000.0),
    ]
    assert roe.inputs[2].period == "FY2022"
    # A figure read from a filing has no arithmetic.
    assert (revenue.formula, revenue.inputs) == (None, [])


async def test_a_from_to_span_with_a_limit_keeps_the_latest_periods_in_one_round_trip(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        fetcher = CountingFetcher(conn)
        args = GetFinancialMetricsArgs.model_validate(
            {
                "symbols": ["AAPL", "NVDA", "GOOGL", "TSLA"],
                "metrics": ["revenue", "net income", "gross margin"],
                "from": 2019,
                "to": 2023,
                "limit": 2,
            }
        )
        result = await get_financial_metrics(fetcher, args)
    finally:
        await conn.close()
    assert fetcher.round_trips == 1
    assert args.fiscal_years == [2019, 2020, 2021, 2022, 2023]
    # 4 companies × 3 metrics × the 2 latest of the 5 years asked that are held: Tesla's
    # figures end with fiscal 2021, so its two are 2020 and 2021, and 2022-2023 are missing.
    assert len(result.facts) == 24
    years: dict[str, set[int]] = {}
    for fact in result.facts:
        years.setdefault(fact.symbol, set()).add(fact.fiscal_year)
    assert years == {
        "AAPL": {2022, 2023},
        "NVDA": {2022, 2023},
        "GOOGL": {2022, 2023},
        "TSLA": {2020, 2021},
    }
    assert all(item.startswith("Tesla's") for item in result.missing)
    assert len(result.missing) == 3 * 2


def test_from_and_to_must_come_together_in_order() -> None:
    base = {"symbols": ["AAPL"], "metrics": ["revenue"]}
    for wrong in (
        {"from": 2023, "to": 2019},
        {"from": 2019},
        {"from": 2019, "to": 2020, "last": 2},
    ):
        with pytest.raises(ValueError):
            GetFinancialMetricsArgs.model_validate({**base, **wrong})
