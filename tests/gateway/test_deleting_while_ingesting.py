"""An upload its user deletes while the ingest stage has it (DELETE /v1/documents/{id}) is
deleted at once, file and all, and the stage that is reading it finds it gone and stores
nothing: not the row again, not a chunk, not a figure. Real PostgreSQL, the services' role
(row-level security on), the real parser and the bundled embedding model."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from urllib.parse import urlsplit

import asyncpg
import numpy as np
import numpy.typing as npt
import pytest

from services.ingest.documents import DocumentSettings
from services.ingest.main import UploadReading, read_upload
from services.ingest.parser_process import ParserLimits
from shared.account_data import DocumentDeletion, delete_document
from shared.contracts.base import utc_now
from shared.contracts.documents import DocumentUploaded
from shared.contracts.envelope import Envelope
from shared.db import create_pool
from shared.embeddings import Embedder, MiniLMEmbedder
from tests.conftest import Servers

NOTES = "# Packing list\n\n## Tent\n\nThe tent pegs are in the blue bag, with the mallet.\n"
# Every table that can hold a row of an upload, by the column that names it.
UPLOAD_TABLES = {
    "documents": "id",
    "document_files": "document_id",
    "chunks": "document_id",
    "statement_figures": "document_id",
}


@pytest.fixture
async def service_pool(servers: Servers, database: str) -> AsyncIterator[asyncpg.Pool]:
    """The services' role on this test's database: row-level security applies."""
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=3)
    yield pool
    await pool.close()


class EmbedderThatWaits:
    """The real embedder, holding its first batch until the test lets it go: the upload is
    then being read (parsed, cut, half way through embedding) for as long as the test
    needs to delete it."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self.dimensions = embedder.dimensions
        self.embedding = threading.Event()
        self.go_on = threading.Event()

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        self.embedding.set()
        if not self.go_on.wait(timeout=120):
            raise TimeoutError("the test never let the embedding go on")
        return self.embedder.encode(texts, progress=progress)


def reading(embedder: Embedder) -> UploadReading:
    return UploadReading(
        embedder=embedder,
        documents=DocumentSettings(),
        limits=ParserLimits(seconds=30, memory_bytes=1024 * 1024 * 1024, cpu_seconds=30),
        max_attempts=3,
    )


async def stored_upload(owner: asyncpg.Connection, user: str) -> Envelope[DocumentUploaded]:
    """What the gateway commits for an upload (its row and bytes), and the message it
    publishes for the ingest stage."""
    document_id = uuid.uuid4()
    content = NOTES.encode()
    await owner.execute(
        "INSERT INTO documents (id, collection, title, doc_type, content_sha256, source_name, "
        "user_id, ingest_runs) VALUES ($1, 'uploads', 'packing.md', 'md', $2, 'packing.md', "
        "$3, 1)",
        document_id,
        hashlib.sha256(content).hexdigest(),
        user,
    )
    await owner.execute(
        "INSERT INTO document_files (document_id, user_id, file_name, size_bytes, content) "
        "VALUES ($1, $2, 'packing.md', $3, $4)",
        document_id,
        user,
        len(content),
        content,
    )
    return Envelope[DocumentUploaded](
        request_id=str(document_id),
        conversation_id=str(document_id),
        user_id=user,
        attempt=1,
        deadline=utc_now() + timedelta(hours=1),
        payload=DocumentUploaded(document_id=str(document_id), file_name="packing.md"),
    )


async def rows_of(owner: asyncpg.Connection, document_id: str) -> dict[str, int]:
    return {
        table: await owner.fetchval(
            f"SELECT count(*) FROM {table} WHERE {column} = $1", uuid.UUID(document_id)
        )
        for table, column in UPLOAD_TABLES.items()
    }


NOTHING = dict.fromkeys(UPLOAD_TABLES, 0)


async def test_an_upload_deleted_before_its_reading_begins_is_skipped_and_never_made_again(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    owner = await asyncpg.connect(database)
    try:
        upload = await stored_upload(owner, "ursula")
        document_id = upload.payload.document_id
        deleted = await delete_document(service_pool, "ursula", document_id)
        assert deleted == DocumentDeletion.DELETED
        assert await read_upload(service_pool, reading(minilm), upload) == "skipped"
        assert await rows_of(owner, document_id) == NOTHING
    finally:
        await owner.close()


async def test_an_upload_deleted_while_it_is_being_embedded_leaves_no_row_chunk_or_figure(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    embedder = EmbedderThatWaits(minilm)
    owner = await asyncpg.connect(database)
    try:
        upload = await stored_upload(owner, "ursula")
        document_id = upload.payload.document_id
        reading_it = asyncio.create_task(read_upload(service_pool, reading(embedder), upload))
        try:
            # Parsed, cut and being embedded: the row says so.
            assert await asyncio.to_thread(embedder.embedding.wait, 120)
            status = await owner.fetchval(
                "SELECT status FROM documents WHERE id = $1", uuid.UUID(document_id)
            )
            assert status == "embedding"
            deleted = await delete_document(service_pool, "ursula", document_id)
            assert deleted == DocumentDeletion.DELETED
        finally:
            embedder.go_on.set()
        assert await reading_it == "skipped"
        assert await rows_of(owner, document_id) == NOTHING
    finally:
        await owner.close()


async def test_only_its_uploader_deletes_an_upload_and_no_one_deletes_a_public_filing(
    database: str, service_pool: asyncpg.Pool
) -> None:
    owner = await asyncpg.connect(database)
    try:
        upload = await stored_upload(owner, "ursula")
        document_id = upload.payload.document_id
        public_id = await owner.fetchval(
            "INSERT INTO documents (collection, title, doc_type, content_sha256, status) "
            "VALUES ('filings', 'A 10-K', 'html', 'feed', 'ready') RETURNING id::text"
        )
        refused = await delete_document(service_pool, "mallory", document_id)
        assert refused == DocumentDeletion.NOT_FOUND
        assert await delete_document(service_pool, "ursula", public_id) == DocumentDeletion.PUBLIC
        assert await delete_document(service_pool, "ursula", "not-a-uuid") == (
            DocumentDeletion.NOT_FOUND
        )
        assert (await rows_of(owner, document_id))["documents"] == 1
        assert (await rows_of(owner, public_id))["documents"] == 1
    finally:
        await owner.close()
