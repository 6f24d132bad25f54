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

What it answers is what FINANCIAL_METRICS_SQL answers: the rows asked for, with their
recency within the company's metric, and one `held` row per group with the first and
latest fiscal year held (services/tools/financial_metrics.py reads both).
"""

from __future__ import annotations

import asyncio
import time
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
    # Counted for tests and the log: reads served from memory, and groups read.
    hits: int = 0
    loads: int = 0

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
            loaded = await self._load(db, missing, period)
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

    async def _load(self, db: Fetcher, keys: list[GroupKey], period: str) -> dict[GroupKey, Group]:
        symbols = sorted({symbol for symbol, _, _ in keys})
        metrics = sorted({metric for _, metric, _ in keys})
        fetched = await db.fetch(GROUPS_SQL, symbols, metrics, period)
        self.loads += 1
        by_key: dict[GroupKey, list[Any]] = {key: [] for key in keys}
        for row in fetched:
            key = (row["symbol"], row["metric"], period)
            if key in by_key:
                by_key[key].append(row)
        return {key: group_of(rows) for key, rows in by_key.items()}

    async def aclose(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.close()
