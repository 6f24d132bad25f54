"""Hearing that the companies finq holds, or SEC's directory of filers, changed, so the
router reads them again before its next question: after `finq ingest sec COST` the
question that was answered "load it with …" is answered with figures, with no restart.

Migration 019 makes every statement that writes `companies` or `metric_values` NOTIFY
`finq_metric_values`; `finq ingest directory` NOTIFYs `finq_sec_filers` (shared/sec_filers.py)
as it commits. This LISTENs on a connection of its own, opened when the router starts and
again, on the question after it was lost, at most every `relisten_seconds`. Nothing runs in
the background: a change heard only marks what is stale, and the next question reloads it.
A connection that was lost may have missed changes, so both count as stale when it is back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import asyncpg
import structlog

from shared.sec_filers import SEC_FILERS_CHANNEL

log = structlog.get_logger()

COMPANIES_CHANNEL = "finq_metric_values"
RELISTEN_SECONDS = 5.0


@dataclass
class Stale:
    """What changed since it was last read: the held companies, SEC's directory."""

    companies: bool = False
    filers: bool = False

    def __bool__(self) -> bool:
        return self.companies or self.filers


@dataclass
class DirectoryWatch:
    dsn: str
    relisten_seconds: float = RELISTEN_SECONDS
    _listener: asyncpg.Connection | None = None
    _stale: Stale = field(default_factory=Stale)
    _next_try: float = 0.0

    @property
    def listening(self) -> bool:
        return self._listener is not None and not self._listener.is_closed()

    async def open(self) -> bool:
        """Listen; True when a connection was opened (what changed before it went unheard)."""
        if self.listening or time.monotonic() < self._next_try:
            return False
        try:
            conn = await asyncpg.connect(self.dsn, timeout=5)
            await conn.add_listener(COMPANIES_CHANNEL, self._companies_changed)
            await conn.add_listener(SEC_FILERS_CHANNEL, self._filers_changed)
        except (OSError, asyncpg.PostgresError, TimeoutError) as error:
            self._next_try = time.monotonic() + self.relisten_seconds
            log.warning("cannot listen for company changes", error=repr(error))
            return False
        conn.add_termination_listener(self._lost)
        self._listener = conn
        return True

    async def take(self) -> Stale:
        """What changed since the last call (and clears it)."""
        if await self.open():
            self._stale = Stale(companies=True, filers=True)
        stale, self._stale = self._stale, Stale()
        return stale

    def _companies_changed(self, *_: object) -> None:
        self._stale.companies = True

    def _filers_changed(self, *_: object) -> None:
        self._stale.filers = True

    def _lost(self, *_: object) -> None:
        self._listener = None
        log.warning("company changes are not heard until the listener is back")

    async def aclose(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.close()
