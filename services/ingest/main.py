"""The ingest stage: reads each uploaded document (finq.v3.document.uploaded) the gateway
stored, parses it in a child process with limits, chunks, embeds and stores it, acting for
the uploader, and records status and progress on the document's row. It is also the one
process that holds the embedding model: it encodes texts for the router and the tools on
request (shared/embedding_service.py), so they stay small.

Every outcome ends on the row: `ready`, or `failed` with a reason said of the file (a
parser that timed out, ran out of memory or crashed; a file that is not what its name
says; a file whose reading killed the worker more than FINQ_INGEST_MAX_ATTEMPTS times).
The bytes are deleted once read; the chunks hold what the file said. An upload its user
deletes meanwhile (DELETE /v1/documents/{id}) is dropped wherever its reading is: no row,
chunk or figure of it is made again.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import asyncpg
import structlog

from services.ingest.document_store import DocumentGone, EmbeddingDimensionMismatch
from services.ingest.documents import DocumentSettings, ingest_file
from services.ingest.parser_process import ParserFailed, ParserLimits, parse_in_child
from services.ingest.settings import IngestSettings
from shared import subjects
from shared.bus import Done, Handler, PoisonReporter
from shared.contracts.documents import DocumentUploaded
from shared.contracts.envelope import Envelope
from shared.db import UserScope, acting_as
from shared.embedding_service import EmbeddingServer
from shared.embeddings import Embedder, stage_embedder
from shared.metrics import INGEST_JOBS
from shared.runtime import StageClients, run, serve_stage
from shared.tools import UPLOADS_COLLECTION

log = structlog.get_logger("finq.ingest")

# This run of this upload begins (again): counted, so a file that kills its worker every
# time is given up on. Nothing is returned when the upload was read already, failed, or a
# newer upload of the same bytes owns the row.
BEGIN_SQL = """
UPDATE documents SET ingest_attempts = ingest_attempts + 1, status = 'parsing',
       progress = 0.05, updated_at = now()
WHERE id = $1 AND ingest_runs = $2 AND status IN ('pending', 'parsing', 'embedding')
RETURNING ingest_attempts
"""
FILE_SQL = "SELECT file_name, content FROM document_files WHERE document_id = $1"
FAIL_SQL = """
UPDATE documents SET status = 'failed', progress = 0, error = $2::jsonb, updated_at = now()
WHERE id = $1
"""
DROP_FILE_SQL = "DELETE FROM document_files WHERE document_id = $1"
HELD_SQL = "SELECT 1 FROM documents WHERE id = $1"

Outcome = Literal["ready", "failed", "skipped"]


@dataclass(frozen=True)
class UploadReading:
    """What reading an upload needs besides the upload: the embedder, how documents are
    cut, the parser's limits and how often a run may begin."""

    embedder: Embedder
    documents: DocumentSettings
    limits: ParserLimits
    max_attempts: int


async def _fail(db: UserScope, document_id: str, code: str, message: str) -> None:
    async with db.acquire() as conn:
        await conn.execute(FAIL_SQL, document_id, json.dumps({"code": code, "message": message}))
        await conn.execute(DROP_FILE_SQL, document_id)


async def read_upload(
    pool: asyncpg.Pool, reading: UploadReading, envelope: Envelope[DocumentUploaded]
) -> Outcome:
    """Read one stored upload to the end: `ready`, `failed` with a reason, or `skipped` when
    there is nothing (left) to do. Raises only what a retry may cure (the database away)."""
    uploaded = envelope.payload
    document_id = uploaded.document_id
    db = acting_as(pool, envelope.user_id)  # every read and write is the uploader's
    attempts = await db.fetchval(BEGIN_SQL, document_id, envelope.attempt)
    if attempts is None:
        return "skipped"
    name = uploaded.file_name
    if attempts > reading.max_attempts:
        await _fail(
            db,
            document_id,
            "ingest_gave_up",
            f"reading {name!r} stopped the ingest worker {reading.max_attempts} times; "
            "it is not tried again",
        )
        return "failed"
    stored = await db.fetchrow(FILE_SQL, document_id)
    if stored is None:
        if await db.fetchval(HELD_SQL, document_id) is None:
            return "skipped"  # its user deleted it, file and all
        await _fail(db, document_id, "upload_lost", f"the bytes of {name!r} are not held")
        return "failed"
    limits = reading.limits

    async def parse_with_limits(path: Path, content_type: str | None) -> Any:
        return await parse_in_child(path, content_type=content_type, limits=limits)

    with tempfile.TemporaryDirectory(prefix="finq-ingest-") as folder:
        # Named by its suffix only: the user's file name is theirs to show, not a path here.
        path = Path(folder) / f"upload{Path(stored['file_name']).suffix.lower()}"
        path.write_bytes(stored["content"])
        try:
            await ingest_file(
                db,
                reading.embedder,
                path,
                collection=UPLOADS_COLLECTION,
                settings=reading.documents,
                overrides=uploaded.overrides(),
                user_id=envelope.user_id,
                document_id=document_id,
                display_name=name,
                force=True,
                parse=parse_with_limits,
            )
        except ParserFailed as failure:
            await _fail(db, document_id, failure.code, failure.message.replace(path.name, name))
            return "failed"
        except EmbeddingDimensionMismatch as failure:
            await _fail(db, document_id, "embedding_mismatch", str(failure))
            return "failed"
        except DocumentGone:
            # Deleted by its user while it was read: nothing of it was stored, nor is now.
            return "skipped"
    await db.execute(DROP_FILE_SQL, document_id)
    return "ready"


def reading_of(settings: IngestSettings, embedder: Embedder) -> UploadReading:
    return UploadReading(
        embedder=embedder,
        documents=settings,
        limits=ParserLimits(
            seconds=settings.ingest_parse_timeout_seconds,
            memory_bytes=settings.ingest_parse_max_mb * 1024 * 1024,
            cpu_seconds=settings.ingest_parse_cpu_seconds,
        ),
        max_attempts=settings.ingest_max_attempts,
    )


async def build_handler(clients: StageClients) -> Handler:
    settings = clients.settings
    assert isinstance(settings, IngestSettings) and clients.pool is not None
    pool = clients.pool
    # Loaded before the stage pulls work (unless FINQ_EMBEDDING_PRELOAD=false): the stage
    # is ready when it can embed.
    embedder = await asyncio.to_thread(stage_embedder, settings)
    reading = reading_of(settings, embedder)
    # The one process that holds the model: it encodes for the router and the tools too.
    server = EmbeddingServer(clients.nc, embedder)
    await server.start()
    clients.cleanup.push_async_callback(server.close)

    async def handle(envelope: Envelope[DocumentUploaded]) -> Done:
        outcome = await read_upload(pool, reading, envelope)
        INGEST_JOBS.labels(outcome).inc()
        log.info("upload read", document_id=envelope.payload.document_id, outcome=outcome)
        return Done(envelope)

    return handle  # type: ignore[return-value]


def poison_reporter(clients: StageClients) -> PoisonReporter:
    """An upload whose message is given up on (undecodable, or failing past max_deliver)
    ends failed with the reason, not pending forever."""
    assert clients.pool is not None
    pool = clients.pool

    async def report(envelope: Envelope[Any], reason: str) -> None:
        document_id = getattr(envelope.payload, "document_id", None)
        if document_id is None:
            return
        await _fail(
            acting_as(pool, envelope.user_id),
            document_id,
            "ingest_failed",
            f"the upload could not be read: {reason[:300]}",
        )
        INGEST_JOBS.labels("failed").inc()

    return report


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.INGEST,
            IngestSettings(),
            DocumentUploaded,
            build_handler,
            needs_database=True,
            poison_reporter=poison_reporter,
        )
    )
