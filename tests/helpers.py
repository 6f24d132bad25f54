"""Builders and locations the tests share."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from shared.contracts.tool_results import Fact
from shared.contracts.understanding import CompanyRef, MetricRef, Understood

REPO_ROOT = Path(__file__).resolve().parents[1]

# How long a pipeline may take to start: its stages load models and the router fetches the
# catalog's vectors from the ingest stage. Quiet, that is under half a minute; with three
# test workers starting pipelines at once on two cores it can take minutes. A deadline for
# setup, not a check of speed.
PIPELINE_READY_SECONDS = 300.0


def modules_loaded_by(*imports: str, then: str = "") -> list[str]:
    """Every module a fresh interpreter holds once it has imported `imports` (and run the
    statement `then`): what starting a process that does so costs, whatever this test
    process has loaded already."""
    script = f"import importlib, sys\nfor name in {list(imports)!r}:\n"
    script += f"    importlib.import_module(name)\n{then}\n"
    script += "print('\\n'.join(sorted(sys.modules)))\n"
    return subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()


def shared_data_dir() -> Path:
    """The reference data beside the checkout (`../shared/data`), or FINQ_SHARED_DATA."""
    configured = os.environ.get("FINQ_SHARED_DATA")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


def require_shared_data(*parts: str) -> Path:
    """The path under ../shared/data, or skip: a user's clone has no ../shared."""
    path = shared_data_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/data/{'/'.join(parts)}, which this checkout does not have")
    return path


@functools.cache
def parsed_filing(symbol: str, name: str) -> Any:
    """A filing under ../shared/data/filings/<symbol>/, parsed once for the whole session (a
    10-K PDF takes 20 to 60 seconds), or skip without it."""
    from services.ingest.document_parsing import parse_document

    return parse_document(require_shared_data("filings", symbol, name))


async def wait_until(
    condition: Callable[[], Awaitable[bool] | bool], within: float = 20.0, every: float = 0.05
) -> None:
    """Poll a condition that has no event to wait on, failing loudly at the deadline."""
    async with asyncio.timeout(within):
        while True:
            outcome = condition()
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if outcome:
                return
            await asyncio.sleep(every)


def make_fact(
    value: float,
    *,
    year: int = 2023,
    period_end: date = date(2023, 9, 30),
    company: str = "Apple",
    symbol: str = "AAPL",
    metric: str = "revenue",
    unit: str = "USD",
    source_id: str | None = None,
    quarter: int | None = None,
) -> Fact:
    """A fetched fact as the tools service would send it (a quarter's with `quarter`)."""
    return Fact(
        symbol=symbol,
        company=company,
        metric=metric,
        metric_label=metric.replace("_", " "),
        period=f"Q{quarter} FY{year}" if quarter else f"FY{year}",
        period_type="quarterly" if quarter else "annual",
        fiscal_quarter=quarter,
        fiscal_year=year,
        period_end=period_end,
        value=value,
        unit=unit,
        source_id=source_id or f"sec:{symbol}:{metric}:{year}",
    )


class CountingFetcher:
    """A connection that counts its round-trips, for the one-query promises of the tools."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.round_trips = 0

    async def fetch(self, query: str, *args: Any) -> Sequence[Any]:
        self.round_trips += 1
        return await self.conn.fetch(query, *args)


async def run_finq(*args: str, database: str, **env: str) -> tuple[int, str, str]:
    """Run the `finq` CLI against `database` (extra environment in `env`): code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.control.cli",
        *args,
        cwd=REPO_ROOT,
        env={**os.environ, "FINQ_DATABASE_URL": database, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def understanding(
    companies: dict[str, str] | None = None, metrics: Sequence[str] = (), **fields: object
) -> Understood:
    """What a router would have understood: companies (symbol → name) and metric ids."""
    return Understood(
        companies=[
            CompanyRef(symbol=symbol, name=name, text=name)
            for symbol, name in (companies or {}).items()
        ],
        metrics=[MetricRef(id=metric) for metric in metrics],
        **fields,  # type: ignore[arg-type]
    )


async def user_with_demo_portfolio(owner_dsn: str) -> str:
    """A new user of its own name holding the demo history (shared/portfolio/demo.py); its
    API key."""
    import uuid

    from shared.identity import add_user
    from shared.portfolio.demo import import_demo_history

    owner = await asyncpg.connect(owner_dsn)
    try:
        user, key = await add_user(owner, f"demo-{uuid.uuid4().hex[:8]}")
    finally:
        await owner.close()
    pool = await asyncpg.create_pool(owner_dsn, min_size=1, max_size=2)
    assert pool is not None
    try:
        outcome = await import_demo_history(pool, user.id)
    finally:
        await pool.close()
    assert outcome.errors == [] and outcome.rows > 100, outcome
    return key
