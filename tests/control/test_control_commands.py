"""`finq` commands against a real PostgreSQL: the bundled dataset loaded once per version,
and the alias log listed."""

from __future__ import annotations

import json

import asyncpg

from services.control.commands.database_setup import prepare_database
from shared.metric_aliases import record_metric_phrases
from shared.metric_resolver import Resolution
from tests.helpers import run_finq


async def test_the_bundled_dataset_is_loaded_once_per_version(database: str) -> None:
    first = await prepare_database(database)
    assert first["metric_values"] > 30_000
    assert await prepare_database(database) == {}, "the same version is not loaded again"

    conn = await asyncpg.connect(database)
    try:
        # A database filled by an older finq has no record of this version: it gets it once,
        # and only what changed is written.
        await conn.execute("DELETE FROM dataset_loads")
        again = await prepare_database(database)
        assert again["metric_values_changed"] == 0
        assert await conn.fetchval("SELECT count(*) FROM dataset_loads") == 1
    finally:
        await conn.close()


async def test_finq_aliases_lists_misses_and_fallback_readings(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        typo = Resolution("gross margn", "gross_margin", 0.917, "fuzzy")
        for question in ("Apple gross margn", "NVIDIA gross margn"):
            await record_metric_phrases(conn, "c1", question, [typo], ["ceo pay"])
        await conn.execute(
            "INSERT INTO learned_aliases (phrase, metric, confirmed_by) "
            "VALUES ('net incme', 'net_income', 'r1')"
        )
    finally:
        await conn.close()

    code, out, _ = await run_finq("aliases", "--json", database=database)
    assert code == 0, out
    body = json.loads(out)
    misses = {miss["phrase"]: miss for miss in body["misses"]}
    assert misses["gross margn"]["count"] == 2
    assert misses["gross margn"]["resolved_to"] == "gross_margin"
    assert misses["gross margn"]["example"] == "NVIDIA gross margn"
    assert misses["ceo pay"]["resolved_to"] is None
    assert body["learned"] == {"net incme": "net_income"}

    code, out, err = await run_finq("aliases", database=database)
    text = out + err
    assert code == 0, text
    assert "gross_margin (fuzzy 0.92)" in text
    assert "net incme → net_income" in text
