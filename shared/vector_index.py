"""The chunks' vector index: an IVFFlat index whose lists follow the number of chunks, and
its upkeep as the chunks grow.

Why IVFFlat and not HNSW (bench/search_scale.py, a million chunks of 500 companies, recall
of the ten nearest against exact search on 100 questions naming no company):

- HNSW (m 24, ef_construction 100, finq's index until 2026-11-29) found 0.64 of them at
  ef_search 100, and at most 0.80 at ef_search 1000 (42 ms); a denser graph (m 32,
  ef_construction 200, built in 21 minutes) at most 0.875. Filings' passages are clustered
  (topic, company, document), and the graph walk settles in the wrong tight cluster.
- IVFFlat with 1,000 lists, 10 of them probed, found 0.98 in 15 ms, built in 89 s.

An IVFFlat index is only as good as the lists it was built with, so the store sizes them
from the chunks it holds (pgvector's advice: a list per thousand rows up to a million, the
square root beyond) and rebuilds the index when the chunks have doubled or halved since.
An index with too few lists for its rows stays right, only slower: the probed lists hold
more of the rows (with one list, every search is exact). Rows written after a build join
their nearest list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import asyncpg

VECTOR_INDEX = "chunks_embedding_ivfflat"
# Built beside the live index and renamed over it, so searches keep an index throughout.
_NEXT_INDEX = f"{VECTOR_INDEX}_next"
# The index finq built before this one, dropped when a database is first maintained.
_FORMER_INDEXES = ("chunks_embedding_hnsw",)
# Lists each search reads (ivfflat.probes): 0.98 of the exact ten nearest at a million
# chunks in 1,000 lists, 15 ms p50; 16 gave 0.995 in 22 ms (bench/search_scale.py). With
# fewer lists than this a search reads them all and is exact.
PROBES = 10
# The chunks' count may drift this far (either way) from what the lists were sized for
# before the index is rebuilt: a rebuild at a million chunks takes about 90 s on two cores.
_REBUILD_FACTOR = 2
# k-means over pgvector's sample of 50 rows a list: 1,000 lists of 384 dimensions need
# about 80 MB; the default maintenance_work_mem (64 MB) would make it warn and go slower.
_BUILD_MEMORY = "512MB"
# Session advisory lock: one process rebuilds at a time; another that finds it taken leaves
# the rebuild to the one holding it.
_REBUILD_LOCK_KEY = 0x66696E7169  # "finqi"


def lists_for(rows: int) -> int:
    """IVFFlat lists for `rows` vectors: rows / 1000 up to a million, √rows beyond."""
    if rows <= 1_000_000:
        return max(1, rows // 1000)
    return math.isqrt(rows)


def vector_index_sql(lists: int, name: str = VECTOR_INDEX, concurrently: bool = False) -> str:
    """The index's definition with `lists` lists (the benchmark builds this one too)."""
    how = " CONCURRENTLY" if concurrently else ""
    return (
        f"CREATE INDEX{how} {name} ON chunks "
        f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {int(lists)})"
    )


def search_settings() -> list[str]:
    """The index's part of a search's settings (SET LOCAL)."""
    return [
        f"SET LOCAL ivfflat.probes = {PROBES}",
        # Under a filter that turns rows away, go on to further lists until enough pass.
        "SET LOCAL ivfflat.iterative_scan = relaxed_order",
    ]


async def drop_vector_index(conn: asyncpg.Connection) -> None:
    """Drop the chunks' vector index, and any index finq built for them before it (a
    column retyped, a bulk load that builds it afterwards, the rebuild's swap)."""
    for index in (VECTOR_INDEX, *_FORMER_INDEXES):
        await conn.execute(f"DROP INDEX IF EXISTS {index}")


@dataclass(frozen=True, slots=True)
class VectorIndexState:
    """What `maintain_vector_index` found and did."""

    rows: int
    lists_before: int | None  # None: there was no index
    lists: int | None  # the index's lists now (None: another process is rebuilding it)
    rebuilt: bool


async def index_lists(conn: asyncpg.Connection, name: str = VECTOR_INDEX) -> int | None:
    """The lists the index was built with, or None when there is no valid index."""
    options = await conn.fetchval(
        "SELECT c.reloptions FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = $1 AND i.indisvalid",
        name,
    )
    for option in options or ():
        key, _, value = option.partition("=")
        if key == "lists":
            return int(value)
    return None


async def held_vectors(conn: asyncpg.Connection) -> int:
    """How many chunks have a vector, as ANALYZE estimates it (a count would read the whole
    table: seconds at a million chunks), or counted when the table is small."""
    await conn.execute("ANALYZE chunks")
    estimate = await conn.fetchval(
        "SELECT (c.reltuples * (1 - coalesce(s.null_frac, 0)))::bigint "
        "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() "
        "AND s.tablename = 'chunks' AND s.attname = 'embedding' "
        "WHERE c.oid = 'chunks'::regclass"
    )
    if estimate is None or estimate < 100_000:
        # Exact where it is cheap: whether a small table has crossed a list's worth matters.
        return int(await conn.fetchval("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL"))
    return int(estimate)


def needs_rebuild(lists: int | None, rows: int) -> bool:
    """Whether an index of `lists` lists is too far from what `rows` rows want."""
    if lists is None:
        return True
    wanted = lists_for(rows)
    return wanted >= lists * _REBUILD_FACTOR or wanted * _REBUILD_FACTOR <= lists


async def maintain_vector_index(conn: asyncpg.Connection) -> VectorIndexState:
    """Build the chunks' vector index, or rebuild it when the chunks have outgrown its
    lists, without taking it from searches: the new index is built concurrently beside the
    old one and renamed over it. Run by the database's owner (as the set-up and the ingest
    commands connect), outside a transaction; the column must be typed already."""
    rows = await held_vectors(conn)
    before = await index_lists(conn)
    if not needs_rebuild(before, rows):
        return VectorIndexState(rows, before, before, rebuilt=False)
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _REBUILD_LOCK_KEY):
        return VectorIndexState(rows, before, None, rebuilt=False)
    try:
        # Read again under the lock: the process that held it may have just rebuilt.
        before = await index_lists(conn)
        if not needs_rebuild(before, rows):
            return VectorIndexState(rows, before, before, rebuilt=False)
        lists = lists_for(rows)
        # An interrupted rebuild leaves an invalid index under the next name.
        await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {_NEXT_INDEX}")
        await conn.execute(f"SET maintenance_work_mem = '{_BUILD_MEMORY}'")
        try:
            await conn.execute(vector_index_sql(lists, _NEXT_INDEX, concurrently=True))
        finally:
            await conn.execute("RESET maintenance_work_mem")
        async with conn.transaction():
            # The swap is one transaction, so a search sees the old index or the new one.
            await drop_vector_index(conn)
            await conn.execute(f"ALTER INDEX {_NEXT_INDEX} RENAME TO {VECTOR_INDEX}")
        return VectorIndexState(rows, before, lists, rebuilt=True)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _REBUILD_LOCK_KEY)
