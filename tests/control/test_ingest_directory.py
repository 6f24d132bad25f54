"""`finq ingest directory` loads SEC's directory of filers from the offline copy
(../shared/data/sec, skipped without it): one row per company with every share class's
ticker and the former names its submissions file gives; a second load replaces the first;
a missing file is refused with its path."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

from shared.sec_filers import read_sec_filers
from tests.helpers import require_shared_data, run_finq


async def test_the_directory_loads_every_company_once_with_its_share_classes_and_former_names(
    database: str,
) -> None:
    tickers_file = require_shared_data("sec", "company_tickers.json")
    rows = json.loads(tickers_file.read_text())
    companies = {row["cik_str"] for row in rows.values()}

    for _ in range(2):  # the second load replaces the first
        code, out, err = await run_finq(
            "ingest", "directory", "--file", str(tickers_file), database=database
        )
        assert code == 0, err
        assert out.strip() == f"loaded {len(companies):,} filers from {tickers_file}"

    conn = await asyncpg.connect(database)
    try:
        filers = {filer.cik: filer for filer in await read_sec_filers(conn)}
    finally:
        await conn.close()
    assert filers.keys() == companies
    assert filers[1652044].tickers == ("GOOGL", "GOOG")
    assert any("APPLE COMPUTER" in name.upper() for name in filers[320193].former_names)
    # SEC lists filers by market value; the largest comes first.
    assert min(filers.values(), key=lambda f: f.rank).cik == 1045810


async def test_a_directory_file_that_is_not_there_is_refused_with_its_path(
    database: str, tmp_path: Path
) -> None:
    missing = tmp_path / "company_tickers.json"

    code, _, err = await run_finq("ingest", "directory", "--file", str(missing), database=database)

    assert code == 1
    assert f"no directory file at {missing}" in err
