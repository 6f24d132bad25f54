"""The chunks' vector index (shared/vector_index.py) on the suite's real PostgreSQL with
pgvector: an IVFFlat index whose lists follow the chunks held, rebuilt beside the live one
when they outgrow it, by one process at a time, replacing the HNSW index finq had; and
searches through it that find exactly the nearest chunks while its lists are few."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import numpy as np
import pytest
from pgvector.asyncpg import register_vector

from services.tools.document_search import NEAREST_SQL, search_filters, search_settings
from shared.identity import LOCAL_USER
from shared.tools import SearchDocumentsArgs
from shared.vector_index import (
    PROBES,
    VECTOR_INDEX,
    index_lists,
    lists_for,
    maintain_vector_index,
    needs_rebuild,
    vector_index_sql,
)

DIMENSIONS = 384


@pytest.fixture
async def conn(database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database)
    await register_vector(conn)
    try:
        yield conn
    finally:
        await conn.close()


async def add_chunks(conn: asyncpg.Connection, count: int, seed: int = 7) -> np.ndarray:
    """`count` chunks of one public filing, with unit vectors clustered around a few
    directions as passages are; returns the vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, DIMENSIONS))
    vectors = centres[rng.integers(0, 8, count)] + 0.6 * rng.normal(size=(count, DIMENSIONS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    document = uuid.uuid4()
    await conn.execute(
        "INSERT INTO documents (id, title, doc_type, content_sha256, status) "
        "VALUES ($1, 'Synthetic 10-K', 'pdf', $2, 'ready')",
        document,
        str(document),
    )
    start = await conn.fetchval("SELECT count(*) FROM chunks")
    await conn.copy_records_to_table(
        "chunks",
        columns=("document_id", "chunk_index", "text", "quality", "collection", "embedding"),
        records=[
            (document, start + n, f"passage {n}", 1.0, "filings", vector.astype(np.float32))
            for n, vector in enumerate(vectors)
        ],
    )
    return vectors


async def nearest_ids(conn: asyncpg.Connection, query: np.ndarray, exact: bool) -> list[int]:
    """finq's vector query under its search settings; `exact` forbids the index."""
    filters = search_filters(SearchDocumentsArgs(query="q", limit=10), None, 2, LOCAL_USER)
    async with conn.transaction():
        for statement in search_settings():
            await conn.execute(statement)
        if exact:
            await conn.execute("SET LOCAL enable_indexscan = off")
        rows = await conn.fetch(
            NEAREST_SQL.format(where=filters.where).replace("$3", "10"),
            query.astype(np.float32),
            *filters.values,
        )
    return [row["id"] for row in rows]


def test_the_lists_follow_pgvectors_advice_for_the_rows_held() -> None:
    assert lists_for(0) == 1
    assert lists_for(999) == 1
    assert lists_for(4_500) == 4
    assert lists_for(1_000_000) == 1000
    assert lists_for(4_000_000) == 2000  # the square root beyond a million


def test_the_index_is_rebuilt_only_when_the_rows_want_twice_or_half_its_lists() -> None:
    assert needs_rebuild(None, 0)
    assert not needs_rebuild(1, 1_999)
    assert needs_rebuild(1, 2_000)
    assert not needs_rebuild(1000, 1_900_000)  # wants 1,378 lists
    assert needs_rebuild(1000, 4_000_000)
    assert needs_rebuild(1000, 500_000)
    assert not needs_rebuild(1000, 501_000)


async def test_a_new_database_searches_its_chunks_through_a_one_list_index(
    conn: asyncpg.Connection,
) -> None:
    definition = await conn.fetchval(
        "SELECT indexdef FROM pg_indexes WHERE indexname = $1", VECTOR_INDEX
    )
    assert "ivfflat" in definition and "vector_cosine_ops" in definition
    assert await index_lists(conn) == 1

    state = await maintain_vector_index(conn)

    assert (state.rows, state.lists, state.rebuilt) == (0, 1, False)


async def test_chunks_that_outgrow_the_index_get_it_rebuilt_with_more_lists(
    conn: asyncpg.Connection,
) -> None:
    vectors = await add_chunks(conn, 4_500)

    state = await maintain_vector_index(conn)

    assert (state.rows, state.lists_before, state.lists, state.rebuilt) == (4_500, 1, 4, True)
    assert await index_lists(conn) == 4
    indexes = await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")
    assert sum("embedding" in row["indexname"] for row in indexes) == 1
    # Sized now, so maintaining it again changes nothing.
    again = await maintain_vector_index(conn)
    assert (again.lists, again.rebuilt) == (4, False)
    # Fewer lists than a search probes: every search reads them all, and finds exactly the
    # nearest chunks, through the index.
    assert PROBES >= 4
    plan = await conn.fetch(
        "EXPLAIN SELECT id FROM chunks ORDER BY embedding <=> $1 LIMIT 10",
        vectors[0].astype(np.float32),
    )
    assert any(VECTOR_INDEX in row[0] for row in plan)
    for query in vectors[:20] + 0.1:
        assert await nearest_ids(conn, query, exact=False) == await nearest_ids(
            conn, query, exact=True
        )


async def test_a_database_with_finqs_former_hnsw_index_gets_the_ivfflat_one(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(f"DROP INDEX {VECTOR_INDEX}")
    await conn.execute(
        "CREATE INDEX chunks_embedding_hnsw ON chunks "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 24, ef_construction = 100)"
    )
    await add_chunks(conn, 300)

    state = await maintain_vector_index(conn)

    assert (state.lists_before, state.lists, state.rebuilt) == (None, 1, True)
    names = {
        row["indexname"]
        for row in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")
    }
    assert VECTOR_INDEX in names and "chunks_embedding_hnsw" not in names


async def test_a_rebuild_interrupted_before_its_swap_is_done_again(
    conn: asyncpg.Connection,
) -> None:
    await add_chunks(conn, 2_100)
    # What a killed rebuild leaves: the next index, built (here even valid), not swapped in.
    await conn.execute(vector_index_sql(7, f"{VECTOR_INDEX}_next"))

    state = await maintain_vector_index(conn)

    assert (state.lists_before, state.lists, state.rebuilt) == (1, 2, True)
    names = {
        row["indexname"]
        for row in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")
    }
    assert f"{VECTOR_INDEX}_next" not in names
    assert await index_lists(conn) == 2


async def test_two_processes_maintaining_at_once_rebuild_it_once(
    conn: asyncpg.Connection, database: str
) -> None:
    await add_chunks(conn, 3_000)
    other = await asyncpg.connect(database)
    try:
        states = await asyncio.gather(maintain_vector_index(conn), maintain_vector_index(other))
    finally:
        await other.close()

    assert sum(state.rebuilt for state in states) == 1
    # The other either found the lock taken (and left the rebuild to its holder) or came
    # after the swap and found the index sized.
    assert all(state.rebuilt or state.lists in (None, 3) for state in states)
    assert await index_lists(conn) == 3
