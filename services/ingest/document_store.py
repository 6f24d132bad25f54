"""Writes parsed documents into `documents` and `chunks`: chunked, given temporal context,
embedded, and stored with their filter fields, so search can filter and rank them.

The embedding column is typed by the store, not the migration: its dimension follows the
embedder setting (384 for the bundled MiniLM, whatever `FINQ_EMBEDDING_DIMENSIONS` says for
an OpenAI model), and the vector index (shared/vector_index.py) is built for that
type.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np

from services.ingest.chunking import Chunk, chunk_document
from services.ingest.document_model import ParsedDocument
from services.ingest.statement_store import replace_statement_figures, statement_rows
from services.ingest.temporal import context_prefix, extract_temporal, temporal_metadata
from shared.db import DatabasePool
from shared.embeddings import Embedder
from shared.vector_index import drop_vector_index, lists_for, vector_index_sql

# The store's own advisory lock key, so two ingests do not retype the column at once.
_SCHEMA_LOCK_KEY = 0x66696E7164  # "finqd"
# Passages embedded per call. 16 is as quick as 64 on MiniLM (less padding: 24 against 21
# chunks a second on two cores) and a call takes well under a second, so a question's
# embedding, which waits its turn at the model (shared/embeddings.py), is not held long.
EMBED_BATCH = 16


class EmbeddingDimensionMismatch(RuntimeError):
    """Chunks already hold vectors of another dimension than the embedder's."""


class DocumentGone(LookupError):
    """The upload being stored was deleted by its user meanwhile: nothing of it is stored."""


async def ensure_embedding_column(conn: asyncpg.Connection, dimensions: int) -> None:
    """Type `chunks.embedding` as vector(dimensions) with its vector index, once. A database
    whose chunks hold another dimension is refused with what to do about it."""
    current = await conn.fetchval(
        "SELECT atttypmod FROM pg_attribute "
        "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
    )
    if current == dimensions:
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK_KEY)
        current = await conn.fetchval(
            "SELECT atttypmod FROM pg_attribute "
            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        )
        if current == dimensions:
            return
        held = await conn.fetchval("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL")
        if held:
            raise EmbeddingDimensionMismatch(
                f"the chunks table holds {held} vectors of {current} dimensions and the "
                f"embedder makes {dimensions}; delete the documents (finq documents clear) "
                "or set FINQ_EMBEDDING_PROVIDER/FINQ_EMBEDDING_DIMENSIONS back"
            )
        await drop_vector_index(conn)
        await conn.execute(
            f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dimensions)})"
        )
        # No vectors yet: one list, every search exact until maintain_vector_index sizes it.
        await conn.execute(vector_index_sql(lists_for(0)))


@dataclass(frozen=True, slots=True)
class PreparedChunk:
    """A chunk with its temporal context, ready to embed and store."""

    chunk: Chunk
    context: str
    temporal: dict[str, Any]
    document_label: str = ""

    @property
    def embedded_text(self) -> str:
        # Which document ("Apple 10-K FY2019") and which periods the passage is about: a
        # passage of one year's filing reads much like the next year's, and without these
        # an unfiltered question naming the year cannot tell them apart.
        return "\n".join(
            part for part in (self.document_label, self.context, self.chunk.text) if part
        )


def fiscal_year_end_month(fiscal_year_end: str | None) -> int:
    """SEC's "0926" → 9; a year end in the first days of a month belongs to the month
    before (52/53-week years that end on "0103" close the December year)."""
    if not fiscal_year_end or len(fiscal_year_end) != 4:
        return 12
    month, day = int(fiscal_year_end[:2]), int(fiscal_year_end[2:])
    return (month - 1 or 12) if day <= 7 else month


def document_label(document: ParsedDocument) -> str:
    """ "Apple 10-K FY2019", "Apple 10-Q Q3 FY2023", or the title for anything else."""
    if document.company and document.form and document.fiscal_year:
        quarter = f" Q{document.fiscal_quarter}" if document.fiscal_quarter else ""
        return f"{document.company} {document.form}{quarter} FY{document.fiscal_year}"
    return document.title


def prepare_chunks(
    document: ParsedDocument, size: int, overlap: int, year_end_month: int = 12
) -> list[PreparedChunk]:
    """Chunks of `document` with the temporal context each one states, resolved against the
    document's own date (period end, else filing date)."""
    anchor = document.period_end or document.filed
    label = document_label(document)
    prepared: list[PreparedChunk] = []
    for chunk in chunk_document(document.blocks, size=size, overlap=overlap):
        mentions = extract_temporal(chunk.text, anchor, year_end_month)
        prepared.append(
            PreparedChunk(chunk, context_prefix(mentions), dict(temporal_metadata(mentions)), label)
        )
    return prepared


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredDocument:
    document_id: str
    title: str
    chunks: int
    tables: int
    pages: int | None
    nonempty_pages: int | None
    seconds: float
    reused: bool = False  # already stored as it is: nothing was embedded


UPSERT_DOCUMENT_SQL = """
INSERT INTO documents (id, collection, title, doc_type, symbol, company, form, fiscal_year,
                       fiscal_quarter, period_end, filed, source_name, source_url,
                       content_sha256, page_count, nonempty_page_count, table_count,
                       metadata, status, progress, user_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
        $18::jsonb, 'embedding', 0, $19)
ON CONFLICT (collection, content_sha256, (coalesce(user_id, ''))) DO UPDATE SET
    title = EXCLUDED.title, doc_type = EXCLUDED.doc_type, symbol = EXCLUDED.symbol,
    company = EXCLUDED.company, form = EXCLUDED.form, fiscal_year = EXCLUDED.fiscal_year,
    fiscal_quarter = EXCLUDED.fiscal_quarter, period_end = EXCLUDED.period_end,
    filed = EXCLUDED.filed, source_name = EXCLUDED.source_name,
    source_url = EXCLUDED.source_url, page_count = EXCLUDED.page_count,
    nonempty_page_count = EXCLUDED.nonempty_page_count, table_count = EXCLUDED.table_count,
    metadata = EXCLUDED.metadata, status = 'embedding', progress = 0, error = NULL,
    updated_at = now()
RETURNING id
"""

# An upload's row is the gateway's: the store fills it in, and never makes it again once
# its user has deleted it (the same parameters as UPSERT_DOCUMENT_SQL).
FILL_UPLOAD_SQL = """
UPDATE documents SET title = $3, doc_type = $4, symbol = $5, company = $6, form = $7,
    fiscal_year = $8, fiscal_quarter = $9, period_end = $10, filed = $11, source_name = $12,
    source_url = $13, content_sha256 = $14, page_count = $15, nonempty_page_count = $16,
    table_count = $17, metadata = $18::jsonb, status = 'embedding', progress = 0, error = NULL,
    updated_at = now()
WHERE id = $1 AND collection = $2 AND user_id IS NOT DISTINCT FROM $19
RETURNING id
"""
# Held until the chunks are stored: a deletion of the upload waits for them and takes them
# with it, or came first and nothing is stored.
LOCK_UPLOAD_SQL = "SELECT id FROM documents WHERE id = $1 FOR UPDATE"

CHUNK_COLUMNS = (
    "document_id", "chunk_index", "page", "page_end", "heading", "text", "context",
    "is_table", "table_number", "quality", "temporal", "collection", "symbol", "form",
    "fiscal_year", "fiscal_quarter", "period_end", "embedding", "user_id",
)  # fmt: skip
# INSERT, not COPY: PostgreSQL refuses COPY FROM into a table under row-level security, and
# asyncpg pipelines an executemany's rows in one batch.
INSERT_CHUNK_SQL = (
    f"INSERT INTO chunks ({', '.join(CHUNK_COLUMNS)}) "
    f"VALUES ({', '.join(f'${n}' for n in range(1, len(CHUNK_COLUMNS) + 1))})"
)


def _metadata(document: ParsedDocument) -> str:
    extra: dict[str, Any] = {}
    if document.instructor:
        extra["instructor"] = document.instructor
    if document.lessons:
        extra["lessons"] = [
            {"number": lesson.number, "title": lesson.title, "link": lesson.link}
            for lesson in document.lessons
        ]
    return json.dumps(extra)


async def set_progress(
    pool: DatabasePool, document_id: str, status: str, progress: float, error: Any = None
) -> None:
    await pool.execute(
        "UPDATE documents SET status = $2, progress = $3, error = $4::jsonb, updated_at = now() "
        "WHERE id = $1",
        uuid.UUID(document_id),
        status,
        progress,
        json.dumps(error) if error is not None else None,
    )


async def store_document(
    pool: DatabasePool,
    embedder: Embedder,
    document: ParsedDocument,
    *,
    collection: str,
    digest: str,
    size: int = 1000,
    overlap: int = 200,
    year_end_month: int = 12,
    user_id: str | None = None,
    document_id: str | None = None,
    show_progress_bar: bool = False,
    prepared: list[PreparedChunk] | None = None,
) -> StoredDocument:
    """Chunk, embed and store `document` (replacing the chunks of the same bytes stored
    before). The document row's status and progress follow the work. `prepared` are the
    chunks when the caller has already cut them (the benchmark times that step apart).

    With a `document_id` (an upload, whose row the gateway made), raises DocumentGone when
    the row is deleted before the chunks are stored: none are."""
    started = time.perf_counter()
    if prepared is None:
        prepared = await asyncio.to_thread(prepare_chunks, document, size, overlap, year_end_month)
    async with pool.acquire() as conn:
        await ensure_embedding_column(conn, embedder.dimensions)
        row_id = await conn.fetchval(
            FILL_UPLOAD_SQL if document_id else UPSERT_DOCUMENT_SQL,
            uuid.UUID(document_id) if document_id else uuid.uuid4(),
            collection,
            document.title,
            document.doc_type,
            document.symbol,
            document.company,
            document.form,
            document.fiscal_year,
            document.fiscal_quarter,
            document.period_end,
            document.filed,
            document.source_name,
            document.source_url,
            digest,
            document.page_count,
            document.nonempty_page_count,
            document.table_count,
            _metadata(document),
            user_id,
        )
    if row_id is None:
        raise DocumentGone(f"document {document_id} was deleted before it was read")
    stored_id = str(row_id)
    # The statements are read beside the text, so a filing answers figures from its own
    # tables (services/tools/statement_facts.py).
    statements = await asyncio.to_thread(statement_rows, document, row_id, user_id)
    vectors = await _embed(embedder, prepared, pool, stored_id, show_progress_bar)
    records = [
        (
            row_id, item.chunk.chunk_index, item.chunk.page, item.chunk.page_end,
            item.chunk.heading, item.chunk.text, item.context, item.chunk.is_table,
            item.chunk.table_number, item.chunk.quality, json.dumps(item.temporal), collection,
            document.symbol, document.form, document.fiscal_year, document.fiscal_quarter,
            document.period_end, vector, user_id,
        )
        for item, vector in zip(prepared, vectors, strict=True)
    ]  # fmt: skip
    async with pool.acquire() as conn, conn.transaction():
        if document_id and await conn.fetchval(LOCK_UPLOAD_SQL, row_id) is None:
            raise DocumentGone(f"document {document_id} was deleted while it was read")
        await conn.execute("DELETE FROM chunks WHERE document_id = $1", row_id)
        await conn.executemany(INSERT_CHUNK_SQL, records)
        await replace_statement_figures(conn, row_id, statements)
        await conn.execute(
            "UPDATE documents SET status = 'ready', progress = 1, chunk_count = $2, "
            "updated_at = now() WHERE id = $1",
            row_id,
            len(records),
        )
    return StoredDocument(
        document_id=stored_id,
        title=document.title,
        chunks=len(records),
        tables=document.table_count,
        pages=document.page_count,
        nonempty_pages=document.nonempty_page_count,
        seconds=time.perf_counter() - started,
    )


async def _embed(
    embedder: Embedder,
    prepared: Sequence[PreparedChunk],
    pool: DatabasePool,
    document_id: str,
    show_progress_bar: bool,
) -> list[np.ndarray]:
    """Vectors for the chunks: in one call with a progress bar on a terminal, else in
    batches, each recorded as the document's progress for whoever polls the job."""
    texts = [item.embedded_text for item in prepared]
    if show_progress_bar:
        return list(await asyncio.to_thread(embedder.encode, texts, progress=True))
    out: list[np.ndarray] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = texts[start : start + EMBED_BATCH]
        out.extend(await asyncio.to_thread(embedder.encode, batch))
        done = (start + len(batch)) / len(texts)
        await set_progress(pool, document_id, "embedding", round(0.2 + 0.8 * done, 3))
    return out
