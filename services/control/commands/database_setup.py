"""The database made ready for finq: created, migrated, the services' role made, the bundled
dataset and glossary loaded. `finq up`, `finq ingest`, the evaluations' own databases, the
tests and the benchmarks all start from it."""

from __future__ import annotations

import json

from services.control.progress import Progress


async def prepare_database(
    dsn: str,
    load_default: bool = True,
    load_glossary: bool | None = None,
    service_dsn: str | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Create and migrate the database (as its owner, `dsn`), make the role the services
    connect as (`service_dsn`'s user and password) with the privileges it needs, load the
    bundled dataset unless this version of it is already there (a new finq release's
    dataset is loaded once, over the old one), and the bundled glossary documents that
    changed (with `load_glossary`, by default when the dataset is loaded). Each of these
    says on `progress` that it is under way."""
    import hashlib

    import asyncpg

    from services.ingest.dataset import (
        DEFAULT_DATASET_DIR,
        MANIFEST_FILE,
        load_dataset,
        read_dataset,
    )
    from services.ingest.document_store import ensure_embedding_column
    from shared.db import ensure_database, ensure_service_role, migrate
    from shared.embeddings import EmbeddingSettings

    progress = progress or Progress.silent()
    with progress.waiting("migrating the database"):
        await ensure_database(dsn)
        await migrate(dsn)
        if service_dsn is not None:
            await ensure_service_role(dsn, service_dsn)
        # Typed here, by the owner: the services' role may not change the schema.
        conn = await asyncpg.connect(dsn)
        try:
            await ensure_embedding_column(conn, EmbeddingSettings().dimensions)
        finally:
            await conn.close()
    if load_glossary if load_glossary is not None else load_default:
        await load_glossary_documents(dsn, progress)
    await maintain_chunk_index(dsn, progress)
    if not load_default:
        return {}
    digest = hashlib.sha256((DEFAULT_DATASET_DIR / MANIFEST_FILE).read_bytes()).hexdigest()
    conn = await asyncpg.connect(dsn)
    try:
        if await conn.fetchval("SELECT true FROM dataset_loads WHERE manifest_sha256 = $1", digest):
            return {}
        with progress.waiting("loading the bundled dataset"):
            counts = await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        await conn.execute(
            "INSERT INTO dataset_loads (manifest_sha256, counts) VALUES ($1, $2::jsonb)"
            " ON CONFLICT DO NOTHING",
            digest,
            json.dumps(counts),
        )
        return counts
    finally:
        await conn.close()


async def maintain_chunk_index(dsn: str, progress: Progress | None = None) -> None:
    """Size the chunks' vector index to the chunks held (shared/vector_index.py), as the
    owner: at each start and after each ingest of documents."""
    import asyncpg

    from shared.vector_index import maintain_vector_index

    progress = progress or Progress.silent()
    conn = await asyncpg.connect(dsn)
    try:
        with progress.waiting("checking the passages' search index"):
            state = await maintain_vector_index(conn)
        if state.rebuilt:
            progress.above(
                f"rebuilt the passages' search index: {state.lists} lists for "
                f"{state.rows:,} passages"
            )
    finally:
        await conn.close()


async def load_glossary_documents(dsn: str, progress: Progress | None = None) -> int:
    """The glossary's explainers and metric definitions, embedded where they changed (the
    embedding model is loaded only then)."""
    progress = progress or Progress.silent()
    from services.ingest.documents import glossary_to_embed, load_glossary
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, LazyEmbedder
    from shared.stored_vectors import with_stored_vectors

    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        pending = await glossary_to_embed(pool)
        if not pending:
            return 0
        # finq ships MiniLM's vectors of the glossary's passages: the model is loaded only
        # for a passage that changed since, or for another embedding provider.
        embedder = with_stored_vectors(LazyEmbedder(EmbeddingSettings()))
        with progress.waiting(f"embedding {len(pending)} glossary documents"):
            stored = await load_glossary(pool, embedder, pending)
        progress.above(f"embedded {len(stored)} glossary documents")
        return len(stored)
    finally:
        await pool.close()
