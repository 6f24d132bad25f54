"""Metric values served from memory: the figures of the companies and metrics asked about
lately, each (company, metric, period type) read from PostgreSQL once, in one trip for all a
question lacks, and answered from memory after that.

The cache is emptied whenever the figures change: migration 019 makes every statement that
writes `metric_values` or `companies` send NOTIFY `finq_metric_values`, which this process
LISTENs for on a connection of its own. While that connection is down (not yet opened, lost
with the server) nothing is served from memory: a notification missed then could leave a
stale figure, so every read goes to the database until the connection is back, and the
cache starts empty again. It holds at most `max_groups` groups, the least recently used
dropped first.

With a read replica (`replica`, a pool to a streaming standby: FINQ_DATABASE_READ_URL) the
groups it lacks are read there, but only from a standby that has replayed past a fence: the
primary's WAL position read after the last change heard (see FENCE_SQL). A standby that is
behind, fails or cannot be reached leaves that read to the primary, as without one. LISTEN
stays on the primary: a standby sends no NOTIFY.

What it answers is what FINANCIAL_METRICS_SQL answers: the rows asked for, with their
recency within the company's metric, and one `held` row per group with the first and
latest fiscal year held (services/tools/financial_metrics.py reads both).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog

from services.tools.sql import Fetcher

log = structlog.get_logger("finq.tools.metric_values")

CHANNEL = "finq_metric_values"
# How long after a failed attempt to open the listening connection the next one is made;
# meanwhile reads go to the database.
RELISTEN_SECONDS = 5.0
MAX_GROUPS = 4096
# How long after a replica failed (could not be reached, errored, was too slow) every read
# goes to the primary before the replica is tried again; and how long a read from it may
# take before it counts as such a failure and the primary is asked instead.
REPLICA_RETRY_SECONDS = 5.0
REPLICA_TIMEOUT_SECONDS = 2.0

# The fence, read on the primary once per change heard: a standby that has replayed up to it
# shows every change heard until then. The insert position rather than pg_current_wal_lsn()
# (the write position): a NOTIFY is delivered when its transaction commits, and with
# synchronous_commit off that is before its commit record has been written out of the WAL
# buffers, so the write position may still be short of the change; the insert position is
# past every record inserted, that commit record among them. It may run ahead of what a
# standby can have yet (it receives WAL only once flushed), which costs a read from the
# primary, never a stale figure. As a number of bytes, to compare in Python with what each
# replica connection has seen.
FENCE_SQL = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint"
# How far a standby has replayed (NULL on a server that is no standby: not trusted, since
# whether it is the primary it seems to be cannot be told from here).
REPLAYED_SQL = "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint"

GROUPS_SQL = """
SELECT v.symbol, c.display_name, v.metric, v.period_type, v.fiscal_year, v.fiscal_quarter,
       v.period_start, v.period_end, v.value, v.unit, v.form, v.accession, v.xbrl_tag,
       v.filed, v.provenance, v.inputs, c.cik
FROM metric_values v
JOIN companies c ON c.symbol = v.symbol
WHERE v.symbol = ANY($1::text[]) AND v.metric = ANY($2::text[]) AND v.period_type = $3
ORDER BY v.symbol, v.metric, v.fiscal_year DESC, v.fiscal_quarter DESC
"""

GroupKey = tuple[str, str, str]  # symbol, metric, period type


@dataclass(frozen=True)
class Group:
    """One company's figures of one metric and period type, the latest first, each with
    its recency (1 = latest) and its recency among the same fiscal quarter."""

    rows: tuple[dict[str, Any], ...]
    first_year: int | None
    latest_year: int | None


def group_of(rows: Sequence[Any]) -> Group:
    """`rows` of one group, latest first (as GROUPS_SQL orders them)."""
    years = [row["fiscal_year"] for row in rows]
    first_year, latest_year = (min(years), max(years)) if years else (None, None)
    seen_quarters: dict[int, int] = {}
    annotated: list[dict[str, Any]] = []
    for recency, row in enumerate(rows, start=1):
        quarter = row["fiscal_quarter"]
        seen_quarters[quarter] = seen_quarters.get(quarter, 0) + 1
        annotated.append(
            {
                **dict(row),
                "recency": recency,
                "quarter_recency": seen_quarters[quarter],
                "first_year": first_year,
                "latest_year": latest_year,
            }
        )
    return Group(tuple(annotated), first_year, latest_year)


def wanted_rows(
    group: Group,
    fiscal_years: Sequence[int] | None,
    fiscal_quarters: Sequence[int] | None,
    last: int,
) -> list[dict[str, Any]]:
    """FINANCIAL_METRICS_SQL's WHERE, on one group."""
    if fiscal_years is not None:
        return [
            row
            for row in group.rows
            if row["fiscal_year"] in fiscal_years
            and (fiscal_quarters is None or row["fiscal_quarter"] in fiscal_quarters)
        ]
    if fiscal_quarters is not None:
        return [
            row
            for row in group.rows
            if row["fiscal_quarter"] in fiscal_quarters and row["quarter_recency"] == 1
        ]
    return [row for row in group.rows if row["recency"] <= last]


@dataclass
class MetricValueCache:
    dsn: str
    max_groups: int = MAX_GROUPS
    relisten_seconds: float = RELISTEN_SECONDS
    _groups: OrderedDict[GroupKey, Group] = field(default_factory=OrderedDict)
    _listener: asyncpg.Connection | None = None
    _next_try: float = 0.0
    _opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Moved on by every change heard: groups read before a change are not kept after it.
    _generation: int = 0
    # A pool to a streaming standby of the primary, or None: every read goes to `db`.
    replica: asyncpg.Pool | None = None
    replica_retry_seconds: float = REPLICA_RETRY_SECONDS
    replica_timeout_seconds: float = REPLICA_TIMEOUT_SECONDS
    _replica_next_try: float = 0.0
    # The fence (FENCE_SQL) and the generation it was read for: reused until the next change.
    _fence: int = 0
    _fence_generation: int = -1
    _fencing: asyncio.Lock = field(default_factory=asyncio.Lock)
    # How far each replica connection's server had replayed when last asked. Per connection,
    # not per pool: the read URL may be a service that spreads connections over several
    # standbys, each at its own position, and a connection stays on its server.
    _replayed: weakref.WeakKeyDictionary[asyncpg.Connection, int] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    # Counted for tests and the log: reads served from memory, and groups read (from either
    # server); of those, the reads from the replica, the reads it was behind for and the ones
    # it failed; the fences read on the primary, and the replay positions asked of a replica.
    hits: int = 0
    loads: int = 0
    reads_from_replica: int = 0
    replay_checks: int = 0
    replica_behind: int = 0
    replica_failures: int = 0
    fences_read: int = 0

    @property
    def held_groups(self) -> int:
        return len(self._groups)

    @property
    def listener_pid(self) -> int | None:
        """The server process of the listening connection (to end it in a test)."""
        listener = self._listener
        return listener.get_server_pid() if listener is not None and self.listening else None

    @property
    def listening(self) -> bool:
        return self._listener is not None and not self._listener.is_closed()

    def forget(self, *_: object) -> None:
        """The figures changed (a NOTIFY), or changes can no longer be heard."""
        self._generation += 1
        self._groups.clear()

    def _lost(self, *_: object) -> None:
        self._listener = None
        self.forget()
        log.warning("metric value changes are not heard; reading figures from the database")

    async def _listen(self) -> bool:
        if self.listening:
            return True
        if time.monotonic() < self._next_try:
            return False
        async with self._opening:
            if self.listening:
                return True
            try:
                conn = await asyncpg.connect(self.dsn, timeout=5)
                await conn.add_listener(CHANNEL, self.forget)
            except (OSError, asyncpg.PostgresError, TimeoutError) as error:
                self._next_try = time.monotonic() + self.relisten_seconds
                log.warning("cannot listen for metric value changes", error=repr(error))
                return False
            conn.add_termination_listener(self._lost)
            # Anything held from before was not watched.
            self.forget()
            self._listener = conn
            return True

    async def rows(
        self,
        db: Fetcher,
        symbols: Sequence[str],
        metrics: Sequence[str],
        period: str,
        fiscal_years: Sequence[int] | None,
        fiscal_quarters: Sequence[int] | None,
        last: int,
    ) -> list[dict[str, Any]]:
        """What FINANCIAL_METRICS_SQL returns for these arguments ('row' and 'held')."""
        keys = [(symbol, metric, period) for symbol in symbols for metric in metrics]
        listening = await self._listen()
        groups = {key: self._groups.get(key) for key in keys} if listening else {}
        missing = [key for key in keys if groups.get(key) is None]
        if missing:
            generation = self._generation
            loaded = await self._load(db, missing, period, from_replica=listening)
            groups.update(loaded)
            # Kept only if no change was heard while they were read, and changes still are.
            if listening and self.listening and generation == self._generation:
                self._groups.update(loaded)
                while len(self._groups) > self.max_groups:
                    self._groups.popitem(last=False)
        self.hits += len(keys) - len(missing)
        answer: list[dict[str, Any]] = []
        for key in keys:
            group = groups[key]
            assert group is not None
            if key in self._groups:
                self._groups.move_to_end(key)  # recently used
            for row in wanted_rows(group, fiscal_years, fiscal_quarters, last):
                answer.append({"kind": "row", **row})
            if group.rows:
                answer.append({"kind": "held", **group.rows[0]})
        return answer

    async def _load(
        self, db: Fetcher, keys: list[GroupKey], period: str, from_replica: bool
    ) -> dict[GroupKey, Group]:
        """The groups `keys`, from the replica when it may answer (only while changes are
        heard: otherwise there is no fence to hold it to), else from `db`, the primary."""
        symbols = sorted({symbol for symbol, _, _ in keys})
        metrics = sorted({metric for _, metric, _ in keys})
        fetched = await self._from_replica(db, symbols, metrics, period) if from_replica else None
        if fetched is None:
            fetched = await db.fetch(GROUPS_SQL, symbols, metrics, period)
        self.loads += 1
        by_key: dict[GroupKey, list[Any]] = {key: [] for key in keys}
        for row in fetched:
            key = (row["symbol"], row["metric"], period)
            if key in by_key:
                by_key[key].append(row)
        return {key: group_of(rows) for key, rows in by_key.items()}

    async def _fence_for_now(self, db: Fetcher) -> int:
        """The primary's WAL position read after the last change heard: read by the first
        load after each change, reused by the loads after it until the next one."""
        if self._fence_generation == self._generation:
            return self._fence
        async with self._fencing:
            # Loads waiting here take the one the first of them read.
            if self._fence_generation == self._generation:
                return self._fence
            # Tagged with the generation before the read: a change heard during it may or
            # may not be covered, so the next load reads a fence again.
            generation = self._generation
            [row] = await db.fetch(FENCE_SQL)
            self._fence, self._fence_generation = int(row[0]), generation
            self.fences_read += 1
            return self._fence

    async def _from_replica(
        self, db: Fetcher, symbols: list[str], metrics: list[str], period: str
    ) -> Sequence[Any] | None:
        """GROUPS_SQL's rows from the replica, or None when the primary must answer: no
        replica, one that failed lately, one that is behind the fence, or fails now."""
        if self.replica is None or time.monotonic() < self._replica_next_try:
            return None
        fence = await self._fence_for_now(db)
        try:
            async with asyncio.timeout(self.replica_timeout_seconds):
                async with self.replica.acquire() as conn:
                    # The check is a statement of its own, before the read: a statement's
                    # snapshot is taken when it starts, so a replay position read inside
                    # the same statement (a CTE) could have passed the fence after the
                    # snapshot and vouch for rows that do not show the change. Once a
                    # connection has seen its server past the fence, every later statement
                    # on it takes a snapshot after that, and the read is one round trip.
                    raw = _connection_of(conn)
                    if self._replayed.get(raw, -1) < fence:
                        replayed = await conn.fetchval(REPLAYED_SQL)
                        self.replay_checks += 1
                        if replayed is None or replayed < fence:
                            self.replica_behind += 1
                            return None
                        self._replayed[raw] = int(replayed)
                    fetched = await conn.fetch(GROUPS_SQL, symbols, metrics, period)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            # Unreachable, restarting, a query cancelled by a recovery conflict: the primary
            # answers, and alone for a while, so that a replica that is away does not cost
            # every question a failed connection attempt.
            self._replica_next_try = time.monotonic() + self.replica_retry_seconds
            self.replica_failures += 1
            log.warning("reading figures from the primary: the replica failed", error=repr(error))
            return None
        self.reads_from_replica += 1
        return fetched

    async def aclose(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.close()


def _connection_of(conn: Any) -> asyncpg.Connection:
    """The connection itself behind a pool's proxy: a proxy is made anew at every acquire,
    the connection (and the server it is on) stays."""
    inner = getattr(conn, "_con", None)
    return inner if isinstance(inner, asyncpg.Connection) else conn
