"""Metric values from memory (services/tools/metric_values.py), against a real PostgreSQL
with the bundled dataset: the cache answers exactly as FINANCIAL_METRICS_SQL does, reads
each group once, forgets everything when a figure changes (NOTIFY from migration 019), and
reads from the database while it cannot hear changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from services.ingest.dataset import DEFAULT_DATASET_DIR, load_dataset, read_dataset
from services.tools.financial_metrics import FINANCIAL_METRICS_SQL
from services.tools.metric_values import MetricValueCache
from services.tools.settings import ToolsSettings
from tests.helpers import wait_until

# (symbols, metrics, period, fiscal years, fiscal quarters, last)
CASES: list[tuple[list[str], list[str], str, list[int] | None, list[int] | None, int]] = [
    (["AAPL"], ["revenue"], "annual", [2023], None, 1),
    (["AAPL", "NVDA"], ["revenue", "net_income"], "annual", [2023, 2024, 2031], None, 1),
    (["AAPL"], ["revenue"], "annual", None, None, 5),
    (["AAPL"], ["revenue"], "quarterly", [2023], [1, 2], 1),
    (["NVDA"], ["revenue"], "quarterly", None, [3], 1),
    (["TSLA"], ["revenue", "gross_margin"], "ttm", None, None, 4),
    (["GOOGL"], ["net_margin", "operating_income"], "annual", [2020, 2022], None, 1),
    (["GOOGL"], ["revenue"], "annual", [], None, 1),
    (["ZZZZ", "AAPL"], ["revenue"], "annual", None, None, 1),
]


def comparable(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as the tool reads them; a `held` row by its group's span (the query's DISTINCT
    ON picks any row of the group for it)."""
    out = []
    for row in rows:
        if row["kind"] == "held":
            out.append(
                ("held", row["symbol"], row["metric"], row["first_year"], row["latest_year"])
            )
        else:
            out.append(
                (
                    "row",
                    row["symbol"],
                    row["display_name"],
                    row["metric"],
                    row["period_type"],
                    row["fiscal_year"],
                    row["fiscal_quarter"],
                    row["value"],
                    row["accession"],
                    row["provenance"],
                    str(row["inputs"]),
                    row["cik"],
                )
            )
    return sorted(out, key=repr)


@pytest.fixture
async def figures(database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database)
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    yield conn
    await conn.close()


async def test_the_cache_answers_every_kind_of_request_as_the_query_does(
    database: str, figures: asyncpg.Connection
) -> None:
    cache = MetricValueCache(database)
    try:
        for case in CASES:
            expected = comparable(await figures.fetch(FINANCIAL_METRICS_SQL, *case))
            assert comparable(await cache.rows(figures, *case)) == expected, case
            # ...and again, now from memory.
            loads = cache.loads
            assert comparable(await cache.rows(figures, *case)) == expected, case
            assert cache.loads == loads, case
        assert cache.listening and cache.held_groups > 0
    finally:
        await cache.aclose()


async def test_a_changed_figure_is_never_served_from_memory(
    database: str, figures: asyncpg.Connection
) -> None:
    case = (["AAPL"], ["revenue"], "annual", [2023], None, 1)
    cache = MetricValueCache(database)
    try:
        [before] = [r for r in await cache.rows(figures, *case) if r["kind"] == "row"]
        assert cache.held_groups == 1
        await figures.execute(
            "UPDATE metric_values SET value = value + 1 WHERE symbol = 'AAPL' "
            "AND metric = 'revenue' AND period_type = 'annual' AND fiscal_year = 2023"
        )
        await wait_until(lambda: cache.held_groups == 0)  # the NOTIFY, heard
        [after] = [r for r in await cache.rows(figures, *case) if r["kind"] == "row"]
        assert after["value"] == before["value"] + 1
    finally:
        await cache.aclose()


async def test_while_changes_cannot_be_heard_figures_come_from_the_database(
    database: str, figures: asyncpg.Connection
) -> None:
    case = (["NVDA"], ["net_income"], "annual", [2024], None, 1)
    cache = MetricValueCache(database, relisten_seconds=3600)
    try:
        await cache.rows(figures, *case)
        assert cache.held_groups == 1
        # The listening connection is lost, and cannot be opened again for now.
        cache.dsn = "postgresql://nobody@127.0.0.1:1/none"
        await figures.execute("SELECT pg_terminate_backend($1)", cache.listener_pid)
        await wait_until(lambda: not cache.listening)
        assert cache.held_groups == 0
        await figures.execute(
            "UPDATE metric_values SET value = 7 WHERE symbol = 'NVDA' AND metric = 'net_income' "
            "AND period_type = 'annual' AND fiscal_year = 2024"
        )
        for _ in range(2):
            [row] = [r for r in await cache.rows(figures, *case) if r["kind"] == "row"]
            assert row["value"] == 7 and cache.held_groups == 0  # read, never kept
        # Listening again, it starts empty and keeps what it reads from then on.
        cache.dsn, cache.relisten_seconds, cache._next_try = database, 0.0, 0.0
        [row] = [r for r in await cache.rows(figures, *case) if r["kind"] == "row"]
        assert row["value"] == 7 and cache.listening and cache.held_groups == 1
    finally:
        await cache.aclose()


async def test_the_least_recently_used_groups_go_first_past_the_limit(
    database: str, figures: asyncpg.Connection
) -> None:
    cache = MetricValueCache(database, max_groups=2)
    try:
        for metric in ("revenue", "net_income", "revenue", "total_assets"):
            await cache.rows(figures, ["AAPL"], [metric], "annual", None, None, 1)
        loads = cache.loads
        await cache.rows(figures, ["AAPL"], ["revenue"], "annual", None, None, 1)
        assert cache.loads == loads  # used last but one: kept
        await cache.rows(figures, ["AAPL"], ["net_income"], "annual", None, None, 1)
        assert cache.loads == loads + 1  # the oldest: dropped
        assert cache.held_groups == 2
    finally:
        await cache.aclose()


async def test_more_companies_than_the_bound_holds_are_answered_as_the_query_does(
    database: str, figures: asyncpg.Connection
) -> None:
    """FINQ_TOOLS_METRIC_CACHE_GROUPS of 3 and every company asked in turn, twice: each answer
    is the database's, whether its group was still in memory or had been dropped."""
    symbols = [r["symbol"] for r in await figures.fetch("SELECT symbol FROM companies")]
    assert len(symbols) > 3
    cache = MetricValueCache(
        database, max_groups=ToolsSettings(tools_metric_cache_groups=3).tools_metric_cache_groups
    )
    try:
        for _ in range(2):
            for symbol in symbols:
                for case in (
                    ([symbol], ["revenue"], "annual", None, None, 3),
                    ([symbol], ["net_income", "total_assets"], "quarterly", None, None, 2),
                ):
                    expected = comparable(await figures.fetch(FINANCIAL_METRICS_SQL, *case))
                    assert comparable(await cache.rows(figures, *case)) == expected, case
                    assert cache.held_groups <= 3
        assert cache.loads > len(symbols) * 3  # groups were dropped and read again
    finally:
        await cache.aclose()
