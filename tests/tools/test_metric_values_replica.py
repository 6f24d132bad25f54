"""Metric values read from a streaming read replica (services/tools/metric_values.py),
against a real hot standby of a PostgreSQL of this module's own: figures the cache lacks are
read there once the standby has replayed past the fence (the primary's WAL position after
the last change heard), and from the primary while it is behind or away, so no answer is
ever older than a change the cache has heard of."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import asyncpg
import pytest

from services.control.commands.database_setup import prepare_database
from services.control.servers import SERVICE_ROLE, PostgresServer, free_port
from services.tools.main import replica_pool
from services.tools.metric_values import FENCE_SQL, REPLAYED_SQL, MetricValueCache
from services.tools.settings import ToolsSettings
from shared.db import create_pool
from shared.runtime import StageClients
from tests.helpers import wait_until

# One company and metric per test, so that no test sees another's changes.
SYMBOLS = ("AAA", "BBB", "CCC", "DDD")
METRICS = ("revenue", "net_income")


@dataclass
class Cluster:
    primary: PostgresServer
    standby: PostgresServer

    def standby_service_dsn(self) -> str:
        """The services' role on the standby: the primary's role and password, replicated."""
        password = self.primary.service_password()
        return f"postgresql://{SERVICE_ROLE}:{password}@127.0.0.1:{self.standby.port}/finq"


async def seed(dsn: str) -> None:
    """The few rows the tests read: one annual figure per company and metric."""
    conn = await asyncpg.connect(dsn)
    try:
        for metric in METRICS:
            await conn.execute(
                "INSERT INTO metrics (id, label, category, unit, description) "
                "VALUES ($1, $1, 'income', 'USD', $1) ON CONFLICT DO NOTHING",
                metric,
            )
        for symbol in SYMBOLS:
            await conn.execute(
                "INSERT INTO companies (symbol, cik, name, display_name) VALUES ($1, '1', $1, $1)",
                symbol,
            )
            for metric in METRICS:
                await conn.execute(
                    "INSERT INTO metric_values (symbol, metric, period_type, fiscal_year, "
                    "period_end, value, unit, provenance) "
                    "VALUES ($1, $2, 'annual', 2024, '2024-12-31', 100, 'USD', 'test')",
                    symbol,
                    metric,
                )
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A primary of this module's own (migrated, a few rows) and a hot standby of it: the
    session's server stays as it is, and the copy is small."""
    home = tmp_path_factory.mktemp("replica")
    primary = PostgresServer(home / "primary" / "data", free_port())
    primary.start()
    try:
        asyncio.run(
            prepare_database(primary.dsn, load_default=False, service_dsn=primary.service_dsn)
        )
        asyncio.run(seed(primary.dsn))
        standby = PostgresServer.standby_of(primary, home / "standby" / "data", free_port())
        standby.start()
        try:
            yield Cluster(primary, standby)
        finally:
            standby.stop()
    finally:
        primary.stop()


@pytest.fixture
async def primary(cluster: Cluster) -> AsyncIterator[asyncpg.Pool]:
    """The services' pool on the primary, as the tools stage has it."""
    pool = await create_pool(cluster.primary.service_dsn, min_size=1, max_size=2)
    yield pool
    await pool.close()


@pytest.fixture
async def owner(cluster: Cluster) -> AsyncIterator[asyncpg.Connection]:
    """The owner on the primary, who changes figures."""
    conn = await asyncpg.connect(cluster.primary.dsn)
    yield conn
    await conn.close()


@pytest.fixture
async def standby_owner(cluster: Cluster) -> AsyncIterator[asyncpg.Connection]:
    """A superuser on the standby, who may pause its replay."""
    conn = await asyncpg.connect(cluster.standby.dsn)
    yield conn
    await conn.execute("SELECT pg_wal_replay_resume()")
    await conn.close()


@pytest.fixture
async def cache(cluster: Cluster) -> AsyncIterator[MetricValueCache]:
    """The cache as services/tools/main.py makes it with FINQ_DATABASE_READ_URL set."""
    replica = await create_pool(cluster.standby_service_dsn(), min_size=0, max_size=2)
    values = MetricValueCache(cluster.primary.service_dsn, replica=replica)
    yield values
    await values.aclose()
    await replica.close()


async def figure(cache: MetricValueCache, db: asyncpg.Pool, symbol: str, metric: str) -> float:
    rows = await cache.rows(db, [symbol], [metric], "annual", None, None, 1)
    [row] = [row for row in rows if row["kind"] == "row"]
    return float(row["value"])


async def read_from_replica(
    cache: MetricValueCache, db: asyncpg.Pool, symbol: str, metric: str
) -> float:
    """The figure, read once the replica answers it: a standby a little behind the fence
    (WAL written by the primary's own background work) leaves a read to the primary, and
    the next one, after the cache forgot, has a new fence to pass."""
    answer: list[float] = []

    async def from_replica() -> bool:
        before = cache.reads_from_replica
        cache.forget()
        answer[:] = [await figure(cache, db, symbol, metric)]
        return cache.reads_from_replica == before + 1

    await wait_until(from_replica, within=20)
    return answer[0]


async def set_value(owner: asyncpg.Connection, symbol: str, metric: str, value: float) -> None:
    await owner.execute(
        "UPDATE metric_values SET value = $3 WHERE symbol = $1 AND metric = $2",
        symbol,
        metric,
        value,
    )


async def test_figures_are_read_from_the_replica_then_served_from_memory(
    cache: MetricValueCache, primary: asyncpg.Pool, owner: asyncpg.Connection
) -> None:
    await set_value(owner, "AAA", "revenue", 11)
    assert await read_from_replica(cache, primary, "AAA", "revenue") == 11
    loads, replica_reads = cache.loads, cache.reads_from_replica
    fences, checks = cache.fences_read, cache.replay_checks
    assert await figure(cache, primary, "AAA", "revenue") == 11
    assert (cache.loads, cache.reads_from_replica) == (loads, replica_reads)  # from memory
    # Another group, with no change heard since: the replica again, with the same fence,
    # on a connection already seen past it, so in one round trip (no replay check).
    assert await figure(cache, primary, "AAA", "net_income") == 100
    assert cache.reads_from_replica == replica_reads + 1
    assert (cache.fences_read, cache.replay_checks) == (fences, checks)
    assert cache.replica_failures == 0


async def test_a_change_on_the_primary_empties_memory_and_the_next_read_shows_it(
    cache: MetricValueCache, primary: asyncpg.Pool, owner: asyncpg.Connection
) -> None:
    await set_value(owner, "BBB", "revenue", 20)
    assert await read_from_replica(cache, primary, "BBB", "revenue") == 20
    await set_value(owner, "BBB", "revenue", 21)
    await wait_until(lambda: cache.held_groups == 0)  # the NOTIFY, heard on the primary
    assert await figure(cache, primary, "BBB", "revenue") == 21
    # Whichever server answered, what is kept is the new figure; and the replica, once it
    # has replayed the change, answers it too.
    assert await figure(cache, primary, "BBB", "revenue") == 21
    assert await read_from_replica(cache, primary, "BBB", "revenue") == 21


async def test_a_replica_whose_replay_is_paused_leaves_the_figures_to_the_primary(
    cache: MetricValueCache,
    primary: asyncpg.Pool,
    owner: asyncpg.Connection,
    standby_owner: asyncpg.Connection,
) -> None:
    await set_value(owner, "CCC", "revenue", 30)
    assert await read_from_replica(cache, primary, "CCC", "revenue") == 30
    await standby_owner.execute("SELECT pg_wal_replay_pause()")
    await wait_until(
        lambda: standby_owner.fetchval("SELECT pg_get_wal_replay_pause_state() = 'paused'")
    )
    await set_value(owner, "CCC", "revenue", 31)
    await wait_until(lambda: cache.held_groups == 0)
    replica_reads, behind = cache.reads_from_replica, cache.replica_behind
    assert await figure(cache, primary, "CCC", "revenue") == 31
    assert cache.reads_from_replica == replica_reads and cache.replica_behind == behind + 1
    # The standby does hold the old figure: it was there to be served, and was not.
    stale = await standby_owner.fetchval(
        "SELECT value FROM metric_values WHERE symbol = 'CCC' AND metric = 'revenue'"
    )
    assert stale == 30
    # What is kept is the primary's figure: from memory, still the new one.
    loads = cache.loads
    assert await figure(cache, primary, "CCC", "revenue") == 31 and cache.loads == loads
    # Replay resumed and caught up with the fence, the replica answers again.
    await standby_owner.execute("SELECT pg_wal_replay_resume()")
    fence = (await primary.fetchrow(FENCE_SQL))[0]
    await wait_until(lambda: replayed_past(standby_owner, fence))
    replica_reads = cache.reads_from_replica
    assert await figure(cache, primary, "CCC", "net_income") == 100
    assert cache.reads_from_replica == replica_reads + 1
    assert await read_from_replica(cache, primary, "CCC", "revenue") == 31


async def replayed_past(standby: asyncpg.Connection, fence: int) -> bool:
    replayed = await standby.fetchval(REPLAYED_SQL)
    return replayed is not None and replayed >= fence


async def test_a_replica_that_is_away_leaves_the_figures_to_the_primary(
    cluster: Cluster, primary: asyncpg.Pool, owner: asyncpg.Connection
) -> None:
    closed_port = free_port()  # nothing listens there
    password = cluster.primary.service_password()
    away = await create_pool(
        f"postgresql://{SERVICE_ROLE}:{password}@127.0.0.1:{closed_port}/finq", min_size=0
    )
    cache = MetricValueCache(cluster.primary.service_dsn, replica=away, replica_retry_seconds=60)
    try:
        await set_value(owner, "DDD", "revenue", 40)
        assert await figure(cache, primary, "DDD", "revenue") == 40
        assert cache.replica_failures == 1 and cache.reads_from_replica == 0
        # Not tried again for a while: the next group goes straight to the primary.
        assert await figure(cache, primary, "DDD", "net_income") == 100
        assert cache.replica_failures == 1
        # Answers stay right across a change.
        await set_value(owner, "DDD", "revenue", 41)
        await wait_until(lambda: cache.held_groups == 0)
        assert await figure(cache, primary, "DDD", "revenue") == 41
        assert cache.reads_from_replica == 0
    finally:
        await cache.aclose()
        await away.close()


async def test_the_tools_stage_starts_with_a_replica_that_is_away_and_closes_its_pool() -> None:
    url = f"postgresql://{SERVICE_ROLE}:secret-word@127.0.0.1:{free_port()}/finq"
    settings = ToolsSettings(database_read_url=url)
    assert "secret-word" not in repr(settings)
    # Only what replica_pool reads: the settings and the stack closed at shutdown.
    clients = StageClients(None, None, None, None, settings)  # type: ignore[arg-type]
    pool = await replica_pool(clients)
    assert pool is not None and pool.get_size() == 0  # no connection tried yet
    await clients.cleanup.aclose()
    assert pool.is_closing()
    for unset in (None, ""):
        clients = StageClients(None, None, None, None, ToolsSettings(database_read_url=unset))  # type: ignore[arg-type]
        assert await replica_pool(clients) is None
