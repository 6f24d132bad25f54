"""Document uploads: POST /v1/documents stores the file and a `documents` row (status
pending), then a bounded pool of ingest workers parses, chunks and embeds it, recording
status and progress on the row, which GET /v1/documents/{id} reads.

The file is on disk and the row in Postgres before the request returns, so a gateway that
stops mid-job loses nothing: at the next start, unfinished uploads are queued again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from services.ingest.document_parsing import DocumentParseError, UnsupportedDocument
from services.ingest.document_store import EmbeddingDimensionMismatch, set_progress
from services.ingest.documents import DocumentSettings, ingest_file
from shared.embeddings import Embedder, EmbeddingSettings, load_embedder
from shared.tool_schemas import UPLOADS_COLLECTION

log = structlog.get_logger("finq.gateway.uploads")

# What an upload may be: its suffix and the content types browsers and clients send for it.
ALLOWED_TYPES: dict[str, frozenset[str]] = {
    ".pdf": frozenset({"application/pdf", "application/x-pdf"}),
    ".html": frozenset({"text/html", "application/xhtml+xml"}),
    ".htm": frozenset({"text/html", "application/xhtml+xml"}),
    ".docx": frozenset({"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}),
    ".txt": frozenset({"text/plain"}),
    ".md": frozenset({"text/markdown", "text/x-markdown", "text/plain"}),
}
_DOC_TYPES = {".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx", ".txt": "txt",
              ".md": "md"}  # fmt: skip
# Clients that do not know a file's type send this; the suffix then decides.
_UNKNOWN_TYPES = frozenset({"", "application/octet-stream"})


class UploadRejected(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def check_type(filename: str, content_type: str | None) -> str:
    """The upload's suffix if its name and type are ones finq reads; else a 415."""
    suffix = Path(filename).suffix.lower()
    allowed = ", ".join(sorted(ALLOWED_TYPES))
    if suffix not in ALLOWED_TYPES:
        raise UploadRejected(
            415, "unsupported_media_type", f"{filename!r} is not a type finq reads ({allowed})"
        )
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared not in _UNKNOWN_TYPES and declared not in ALLOWED_TYPES[suffix]:
        raise UploadRejected(
            415,
            "unsupported_media_type",
            f"{filename!r} was sent as {declared}, which is not a {suffix} file",
        )
    return suffix


INSERT_UPLOAD_SQL = """
INSERT INTO documents (id, collection, title, doc_type, content_sha256, source_name, status,
                       progress, user_id, symbol, form, fiscal_year, fiscal_quarter, metadata)
VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $10, $11, $12::jsonb)
ON CONFLICT (collection, content_sha256, (coalesce(user_id, ''))) DO UPDATE SET updated_at = now()
RETURNING id, status, (xmax = 0) AS created
"""

DOCUMENT_SQL = """
SELECT id, collection, title, doc_type, symbol, company, form, fiscal_year, fiscal_quarter,
       period_end, filed, source_name, source_url, page_count, nonempty_page_count,
       table_count, chunk_count, metadata, status, progress, error, created_at, updated_at
FROM documents WHERE id = $1 AND (user_id = $2 OR user_id IS NULL)
"""

UNFINISHED_SQL = """
SELECT id, source_name, metadata FROM documents
WHERE collection = $1 AND status IN ('pending', 'parsing', 'embedding') AND user_id IS NOT NULL
ORDER BY created_at
"""


@dataclass(frozen=True, slots=True)
class UploadJob:
    document_id: str
    path: Path
    file_name: str
    user_id: str
    overrides: dict[str, Any]


@dataclass
class IngestWorkers:
    """A bounded queue of upload jobs and the tasks that work it, created with the gateway
    and drained (jobs in hand finished, the rest left for the next start) when it stops."""

    pool: asyncpg.Pool
    settings: DocumentSettings
    embedding: EmbeddingSettings
    workers: int = 1
    queue: asyncio.Queue[UploadJob] = field(default_factory=lambda: asyncio.Queue(maxsize=100))
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _embedder: Embedder | None = None
    _embedder_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"ingest-worker-{n}")
            for n in range(self.workers)
        ]
        await self.requeue_unfinished()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def requeue_unfinished(self) -> int:
        rows = await self.pool.fetch(UNFINISHED_SQL, UPLOADS_COLLECTION)
        queued = 0
        for row in rows:
            metadata = json.loads(row["metadata"]) if row["metadata"] else {}
            upload = metadata.get("upload") or {}
            path = Path(upload.get("path", ""))
            if not await asyncio.to_thread(path.is_file):
                await set_progress(
                    self.pool,
                    str(row["id"]),
                    "failed",
                    0,
                    {"code": "upload_lost", "message": "the uploaded file is no longer there"},
                )
                continue
            job = UploadJob(
                str(row["id"]),
                path,
                row["source_name"],
                upload.get("user_id", ""),
                upload.get("overrides", {}),
            )
            self.queue.put_nowait(job)
            queued += 1
        return queued

    async def embedder(self) -> Embedder:
        # Loaded at the first upload, not at start: most gateways never ingest anything.
        async with self._embedder_lock:
            if self._embedder is None:
                self._embedder = await asyncio.to_thread(load_embedder, self.embedding)
            return self._embedder

    async def _work(self) -> None:
        while True:
            job = await self.queue.get()
            try:
                await self.run(job)
            finally:
                self.queue.task_done()

    async def run(self, job: UploadJob) -> None:
        """One upload, start to finish; every failure ends on the row, never in the air."""
        error: dict[str, str] | None = None
        try:
            await set_progress(self.pool, job.document_id, "parsing", 0.05)
            await ingest_file(
                self.pool,
                await self.embedder(),
                job.path,
                collection=UPLOADS_COLLECTION,
                settings=self.settings,
                overrides=job.overrides,
                user_id=job.user_id,
                document_id=job.document_id,
                display_name=job.file_name,
                force=True,
            )
        except (UnsupportedDocument, DocumentParseError) as failure:
            # Said of the file as the user named it, not as it is stored here.
            message = str(failure).replace(job.path.name, job.file_name)
            error = {"code": "unreadable_document", "message": message}
        except EmbeddingDimensionMismatch as failure:
            error = {"code": "embedding_mismatch", "message": str(failure)}
        except asyncio.CancelledError:
            raise  # stopping: the row stays unfinished and is queued again at start
        except Exception as failure:
            log.exception("upload ingest failed", document_id=job.document_id)
            error = {"code": "ingest_failed", "message": f"{type(failure).__name__}: {failure}"}
        if error is not None:
            await set_progress(self.pool, job.document_id, "failed", 0, error)


async def accept_upload(
    workers: IngestWorkers,
    *,
    file_name: str,
    content_type: str | None,
    chunks: Any,
    user_id: str,
    overrides: dict[str, Any],
) -> tuple[dict[str, Any], bool]:
    """Check, store and queue an upload; returns its document and whether it is new.

    `chunks` is an async iterator of the body's bytes, read up to the size limit (413
    past it), so a large upload never sits whole in memory."""
    suffix = check_type(file_name, content_type)
    limit = workers.settings.document_upload_max_bytes
    folder = workers.settings.document_upload_dir.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    document_id = str(uuid.uuid4())
    path = folder / f"{document_id}{suffix}"
    digest = hashlib.sha256()
    size = 0
    try:
        with path.open("wb") as out:
            async for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise UploadRejected(
                        413,
                        "document_too_large",
                        f"{file_name!r} is over the {limit:,}-byte upload limit",
                    )
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise UploadRejected(422, "empty_document", f"{file_name!r} is empty")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    metadata = {"upload": {"path": str(path), "user_id": user_id, "overrides": overrides}}
    row = await workers.pool.fetchrow(
        INSERT_UPLOAD_SQL,
        uuid.UUID(document_id),
        UPLOADS_COLLECTION,
        overrides.get("title") or file_name,
        _DOC_TYPES[suffix],
        digest.hexdigest(),
        file_name,
        user_id,
        overrides.get("symbol"),
        overrides.get("form"),
        overrides.get("fiscal_year"),
        overrides.get("fiscal_quarter"),
        json.dumps(metadata),
    )
    stored_id = str(row["id"])
    queue = bool(row["created"])
    if not queue and row["status"] == "failed":
        # The same bytes failed before: read them again, from this copy.
        await workers.pool.execute(
            "UPDATE documents SET metadata = $2::jsonb, status = 'pending', error = NULL "
            "WHERE id = $1",
            row["id"],
            json.dumps(metadata),
        )
        queue = True
    elif not queue:
        path.unlink(missing_ok=True)  # already held: the answer is that document
    if queue:
        try:
            workers.queue.put_nowait(UploadJob(stored_id, path, file_name, user_id, overrides))
        except asyncio.QueueFull:
            await set_progress(
                workers.pool,
                stored_id,
                "failed",
                0,
                {"code": "ingest_busy", "message": "too many documents were waiting"},
            )
            raise UploadRejected(
                503, "ingest_busy", "too many documents are waiting to be read; try again soon"
            ) from None
    document = await read_document(workers.pool, stored_id, user_id)
    assert document is not None  # written above for this user
    return document, queue


async def read_document(
    pool: asyncpg.Pool, document_id: str, user_id: str
) -> dict[str, Any] | None:
    try:
        key = uuid.UUID(document_id)
    except ValueError:
        return None
    row = await pool.fetchrow(DOCUMENT_SQL, key, user_id)
    if row is None:
        return None
    document = dict(row)
    document["id"] = str(row["id"])
    metadata = json.loads(row["metadata"]) if row["metadata"] else {}
    metadata.pop("upload", None)  # where the file sits on the server is not the user's business
    document["metadata"] = metadata
    document["error"] = json.loads(row["error"]) if row["error"] else None
    for key_name in ("period_end", "filed", "created_at", "updated_at"):
        if document[key_name] is not None:
            document[key_name] = document[key_name].isoformat()
    return document
