"""The periods held per company (migration 024): `metric_periods` is, after every write of
metric_values whatever its path, exactly the DISTINCT (symbol, period_type, fiscal_year,
fiscal_quarter, period_start, period_end) of metric_values, with each period's count of
figures; against the suite's real PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from services.ingest.dataset import (
    DEFAULT_DATASET_DIR,
    ingest_companyfacts_files,
    load_dataset,
    read_dataset,
)
from shared.db import MIGRATIONS_DIR, migrate
from tests.conftest import Servers
from tests.helpers import require_shared_data, wait_until

PERIOD = "symbol, period_type, fiscal_year, fiscal_quarter, period_start, period_end"
HELD = f"SELECT {PERIOD}, figures FROM metric_periods ORDER BY {PERIOD}"
PROJECTION = (
    f"SELECT {PERIOD}, count(*) AS figures FROM metric_values GROUP BY {PERIOD} ORDER BY {PERIOD}"
)


@pytest.fixture
async def conn(database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database)
    try:
        yield conn
    finally:
        await conn.close()


async def assert_periods_match(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """The periods held are the figures' distinct periods, each with its count."""
    held = [tuple(row) for row in await conn.fetch(HELD)]
    assert held == [tuple(row) for row in await conn.fetch(PROJECTION)]
    assert await conn.fetchval(
        f"SELECT count(*) FROM (SELECT DISTINCT {PERIOD} FROM metric_values) d"
    ) == len(held)
    return held


async def test_loading_the_bundled_dataset_again_keeps_the_periods(
    conn: asyncpg.Connection,
) -> None:
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    await load_dataset(conn, dataset)  # COPY, then INSERT ... ON CONFLICT: every row new
    held = await assert_periods_match(conn)
    assert len(held) > 100
    # Among them periods without a start (instants), held once each.
    assert any(row[4] is None for row in held)
    counts = await load_dataset(conn, dataset)
    assert counts["metric_values_changed"] == 0
    assert await assert_periods_match(conn) == held


async def test_a_reload_that_moves_a_period_moves_its_figures(conn: asyncpg.Connection) -> None:
    """The upsert's UPDATE path: a restated period end moves every figure of the period."""
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    await load_dataset(conn, dataset)
    symbol = dataset.values[0].symbol
    year = max(v.fiscal_year for v in dataset.values if v.symbol == symbol)
    moved = tuple(
        dataclasses.replace(v, period_end=v.period_end + timedelta(days=1))
        if v.symbol == symbol and v.fiscal_year == year
        else v
        for v in dataset.values
    )
    counts = await load_dataset(conn, dataclasses.replace(dataset, values=moved))
    assert counts["metric_values_changed"] > 0
    await assert_periods_match(conn)


async def test_inserts_updates_and_deletes_of_single_figures(conn: asyncpg.Connection) -> None:
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    # A figure of a period not held yet, then a second one of the same period.
    for metric in ("revenue", "net_income"):
        await conn.execute(
            "INSERT INTO metric_values (symbol, metric, period_type, fiscal_year, fiscal_quarter,"
            " period_start, period_end, value, unit, provenance)"
            " VALUES ('AAPL', $1, 'quarterly', 1990, 2, NULL, '1990-03-31', 1, 'USD', 'test')",
            metric,
        )
        await assert_periods_match(conn)
    # One figure of a period moved to other dates: the period stays for the other figures.
    where = "symbol = 'AAPL' AND period_type = 'annual' AND fiscal_year = 2023"
    figures = await conn.fetchval(f"SELECT count(*) FROM metric_values WHERE {where}")
    assert figures > 2
    await conn.execute(
        f"UPDATE metric_values SET period_end = period_end + 7, period_start = NULL"
        f" WHERE {where} AND metric = 'revenue'"
    )
    await assert_periods_match(conn)
    # Then all of them: the old period goes.
    await conn.execute(f"UPDATE metric_values SET period_end = period_end + 7 WHERE {where}")
    await assert_periods_match(conn)
    # A value changed, no period: every count as it was.
    before = await conn.fetch(HELD)
    await conn.execute(f"UPDATE metric_values SET value = value + 1 WHERE {where}")
    assert await conn.fetch(HELD) == before
    # A figure's year changed (a key column): it moves period too.
    await conn.execute(
        "UPDATE metric_values SET fiscal_year = 1991 WHERE symbol = 'AAPL' AND fiscal_year = 1990"
        " AND metric = 'revenue'"
    )
    await assert_periods_match(conn)
    await conn.execute("DELETE FROM metric_values WHERE symbol = 'AAPL' AND fiscal_year < 2000")
    await assert_periods_match(conn)


async def test_deleting_a_company_and_truncating_remove_their_periods(
    conn: asyncpg.Connection,
) -> None:
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    await conn.execute("DELETE FROM metric_values WHERE symbol = 'TSLA'")
    held = await assert_periods_match(conn)
    assert held and not any(row[0] == "TSLA" for row in held)
    # A statement rolled back leaves the periods as they were.
    with pytest.raises(asyncpg.RaiseError):
        async with conn.transaction():
            await conn.execute("DELETE FROM metric_values WHERE symbol = 'AAPL'")
            await conn.execute("DO $$ BEGIN RAISE EXCEPTION 'undo'; END $$")
    assert await assert_periods_match(conn) == held
    await conn.execute("TRUNCATE metric_values")
    assert await assert_periods_match(conn) == []
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    await assert_periods_match(conn)


async def test_ingesting_companyfacts_files_keeps_the_periods(conn: asyncpg.Connection) -> None:
    """`finq ingest companyfacts` (and `finq ingest sec`, which loads the same way): the
    reported figures and the derived ones, over the bundled dataset's."""
    nvidia = require_shared_data("sec", "companyfacts", "CIK0001045810.json")
    apple = require_shared_data("sec", "companyfacts", "CIK0000320193.json")
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    await ingest_companyfacts_files(conn, [nvidia, apple])
    held = await assert_periods_match(conn)
    assert {row[0] for row in held} >= {"NVDA", "AAPL"}


async def test_two_writers_of_one_period_both_count(database: str) -> None:
    """Two transactions adding figures of the same new period at once: the second waits on
    the period's row and adds to it."""
    first, second = await asyncpg.connect(database), await asyncpg.connect(database)
    insert = (
        "INSERT INTO metric_values (symbol, metric, period_type, fiscal_year, fiscal_quarter,"
        " period_start, period_end, value, unit, provenance)"
        " VALUES ('ZZZ', $1, 'annual', 2024, 0, '2024-01-01', '2024-12-31', 1, 'USD', 'test')"
    )
    try:
        await first.execute(
            "INSERT INTO companies (symbol, cik, name, display_name) VALUES ('ZZZ', '1', 'Z', 'Z')"
        )
        await first.execute(
            "INSERT INTO metrics (id, label, category, unit, description)"
            " VALUES ('m1', 'm1', 'test', 'USD', ''), ('m2', 'm2', 'test', 'USD', '')"
        )
        first_tx, second_tx = first.transaction(), second.transaction()
        await first_tx.start()
        await second_tx.start()
        await first.execute(insert, "m1")
        waiting = asyncio.create_task(second.execute(insert, "m2"))
        # Seen waiting on a lock by the server itself, not after a guessed pause.
        blocked = "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1"
        await wait_until(lambda: first.fetchval(blocked, second.get_server_pid()))
        assert not waiting.done()
        await first_tx.commit()
        await waiting
        await second_tx.commit()
        assert await first.fetchval("SELECT figures FROM metric_periods WHERE symbol = 'ZZZ'") == 2
        await assert_periods_match(first)
    finally:
        await first.close()
        await second.close()


async def test_the_services_role_reads_the_periods_and_cannot_write_them(
    servers: Servers, database: str, conn: asyncpg.Connection
) -> None:
    await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
    service = await asyncpg.connect(
        servers.postgres.service_dsn_for(urlsplit(database).path.lstrip("/"))
    )
    try:
        held = await service.fetchval("SELECT count(*) FROM metric_periods")
        assert held == await conn.fetchval("SELECT count(*) FROM metric_periods") > 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await service.execute(
                "INSERT INTO metric_periods VALUES ('X', 'annual', 1, 0, NULL, '2000-01-01', 1)"
            )
        assert await service.execute("DELETE FROM metric_periods") == "DELETE 0"
        # A figure it writes still moves the periods (the owner's trigger writes them).
        await service.execute("DELETE FROM metric_values WHERE symbol = 'MSFT'")
    finally:
        await service.close()
    await assert_periods_match(conn)


async def test_the_migration_fills_the_periods_of_the_figures_already_held(
    servers: Servers, tmp_path: Path
) -> None:
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in MIGRATIONS_DIR.glob("*.sql"):
        if path.name < "024":
            shutil.copy(path, earlier)
    name = "t_metric_periods_migration"
    admin = await asyncpg.connect(servers.postgres.dsn_for("postgres"))
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.execute(f"CREATE DATABASE {name}")
        dsn = servers.postgres.dsn_for(name)
        await migrate(dsn, earlier)
        conn = await asyncpg.connect(dsn)
        try:
            await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
            assert await migrate(dsn) == ["024_metric_periods"]
            held = await assert_periods_match(conn)
            assert len(held) > 100
        finally:
            await conn.close()
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()
