"""Document uploads at the gateway: POST /v1/documents checks the file's type and size as
it is read, then commits its `documents` row (status pending) and its bytes
(`document_files`) in one transaction and publishes finq.v3.document.uploaded; the ingest
stage (services/ingest/main.py) parses, chunks and embeds it, recording status and progress
on the row, which GET /v1/documents/{id} reads.

The gateway parses nothing: a hostile file costs it the bytes it received, never the
regex or parser time of the process that serves every other request. The upload is
durable before the 202 (PostgreSQL's commit), so a process that stops mid-job loses
nothing: the ingest stage's message is redelivered, and a gateway that starts publishes
again every stored upload not yet read (the same message id: a duplicate is dropped).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from shared import subjects
from shared.bus import Publisher
from shared.contracts.base import utc_now
from shared.contracts.documents import DocumentUploaded
from shared.contracts.envelope import Envelope
from shared.db import DatabasePool, acting_as
from shared.tools import UPLOADS_COLLECTION

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
    """The upload's suffix, which names its document type, or a 415. The part's declared
    Content-Type decides when it is a type finq reads (a client that names the type knows
    it; the name is only a name); the name's suffix decides when the type is unknown
    (none, or application/octet-stream). A declared type finq does not read is a 415."""
    suffix = Path(filename).suffix.lower()
    declared = (content_type or "").split(";")[0].strip().lower()
    by_type = next((s for s, types in ALLOWED_TYPES.items() if declared in types), None)
    if by_type is not None:
        # The name's own suffix when it agrees (.md sent as text/plain stays markdown).
        return suffix if declared in ALLOWED_TYPES.get(suffix, ()) else by_type
    allowed = ", ".join(sorted(ALLOWED_TYPES))
    if declared not in _UNKNOWN_TYPES:
        raise UploadRejected(
            415,
            "unsupported_media_type",
            f"{filename!r} was sent as {declared}, which is not a type finq reads ({allowed})",
        )
    if suffix not in ALLOWED_TYPES:
        raise UploadRejected(
            415, "unsupported_media_type", f"{filename!r} is not a type finq reads ({allowed})"
        )
    return suffix


INSERT_UPLOAD_SQL = """
INSERT INTO documents (id, collection, title, doc_type, content_sha256, source_name, status,
                       progress, user_id, symbol, form, fiscal_year, fiscal_quarter, metadata,
                       ingest_runs)
VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $10, $11, $12::jsonb, 1)
ON CONFLICT (collection, content_sha256, (coalesce(user_id, ''))) DO UPDATE SET updated_at = now()
RETURNING id, status, ingest_runs, (xmax = 0) AS created
"""

INSERT_FILE_SQL = """
INSERT INTO document_files (document_id, user_id, file_name, content_type, size_bytes, content)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (document_id) DO UPDATE SET file_name = EXCLUDED.file_name,
    content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes,
    content = EXCLUDED.content
"""

# The same bytes failed before: read them again, as a new run (a new message id).
REQUEUE_SQL = """
UPDATE documents SET status = 'pending', progress = 0, error = NULL, metadata = $2::jsonb,
       ingest_runs = ingest_runs + 1, ingest_attempts = 0, updated_at = now()
WHERE id = $1
RETURNING ingest_runs
"""

DOCUMENT_COLUMNS = """
id, collection, title, doc_type, symbol, company, form, fiscal_year, fiscal_quarter,
period_end, filed, source_name, source_url, page_count, nonempty_page_count, table_count,
chunk_count, metadata, status, progress, error, public, created_at, updated_at
"""
DOCUMENT_SQL = f"""
SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = $1 AND (user_id = $2 OR user_id IS NULL)
"""

# GET /v1/documents: the user's uploads (newest first), then the public filings (by company,
# latest period first: a year's annual report before its quarters'); the glossary and course
# material are found by asking, not listed.
# $2..$4 filter when given; $5 says whose: 'all', 'uploads' or 'filings'.
_LISTED = """
FROM documents
WHERE ((user_id = $1 AND $5 <> 'filings')
       OR (user_id IS NULL AND collection = 'filings' AND $5 <> 'uploads'))
  AND ($2::text IS NULL OR symbol = $2)
  AND ($3::text IS NULL OR form = $3)
  AND ($4::integer IS NULL OR fiscal_year = $4)
"""
LIST_DOCUMENTS_SQL = f"""
SELECT {DOCUMENT_COLUMNS} {_LISTED}
ORDER BY public, CASE WHEN public THEN NULL ELSE created_at END DESC, symbol,
         fiscal_year DESC NULLS LAST, fiscal_quarter DESC NULLS FIRST, form, title, id
LIMIT $6 OFFSET $7
"""
COUNT_DOCUMENTS_SQL = f"SELECT count(*) {_LISTED}"

# Every user's stored uploads not yet read: a SECURITY DEFINER function (shared/migrations),
# since the gateway's role sees only the rows of the user a transaction acts for.
UNFINISHED_SQL = "SELECT * FROM finq_unfinished_uploads($1, $2)"

# How long an upload's message stays worth working on: reading a large PDF and embedding
# it takes minutes, and a redelivered message must not be dropped as expired.
INGEST_DEADLINE = timedelta(days=1)


@dataclass
class Uploads:
    """Where uploads go: the database (row and bytes) and the bus (the ingest stage's work)."""

    pool: asyncpg.Pool
    publisher: Publisher
    max_bytes: int
    spool_dir: Path | None = None  # where a body is held while it arrives (the temp dir)

    async def publish(
        self, document_id: str, user_id: str, run: int, uploaded: DocumentUploaded
    ) -> None:
        envelope = Envelope[DocumentUploaded](
            request_id=document_id,
            conversation_id=document_id,
            user_id=user_id,
            # One message per run: a redelivery or a republish of the same run is a duplicate.
            attempt=run,
            deadline=utc_now() + INGEST_DEADLINE,
            payload=uploaded,
        )
        await self.publisher.publish(subjects.DOCUMENT_UPLOADED, envelope)

    async def republish_unfinished(self, idle_for: timedelta = timedelta(0)) -> int:
        """Publish again every stored upload not yet read and untouched for `idle_for` (a
        crash between the commit and the publish loses none)."""
        rows = await self.pool.fetch(UNFINISHED_SQL, UPLOADS_COLLECTION, utc_now() - idle_for)
        for row in rows:
            metadata = json.loads(row["metadata"]) if row["metadata"] else {}
            overrides = (metadata.get("upload") or {}).get("overrides") or {}
            uploaded = DocumentUploaded(
                document_id=str(row["id"]),
                file_name=row["file_name"],
                content_type=row["content_type"],
                **overrides,
            )
            await self.publish(str(row["id"]), row["user_id"], row["ingest_runs"], uploaded)
        return len(rows)


async def _spool(chunks: Any, spool: Any, file_name: str, limit: int) -> tuple[str, int]:
    """Write the body to `spool` as it arrives, refusing it past `limit`; its SHA-256 and
    size."""
    digest = hashlib.sha256()
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise UploadRejected(
                413, "document_too_large", f"{file_name!r} is over the {limit:,}-byte upload limit"
            )
        digest.update(chunk)
        spool.write(chunk)
    if size == 0:
        raise UploadRejected(422, "empty_document", f"{file_name!r} is empty")
    return digest.hexdigest(), size


async def accept_upload(
    uploads: Uploads,
    *,
    file_name: str,
    content_type: str | None,
    chunks: Any,
    user_id: str,
    overrides: dict[str, Any],
) -> tuple[dict[str, Any], bool]:
    """Check, store and queue an upload; returns its document and whether it was queued.

    `chunks` is an async iterator of the body's bytes, read up to the size limit (413
    past it) into a temporary file, so a large upload never sits whole in memory while it
    arrives; its bytes go to the database in one statement."""
    suffix = check_type(file_name, content_type)
    # The ingest stage knows the stored file's type by its name's suffix: a name without
    # the type's suffix is stored with it added (the user's name stays the document's).
    stored_name = file_name if Path(file_name).suffix.lower() == suffix else file_name + suffix
    if uploads.spool_dir is not None:
        uploads.spool_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=uploads.spool_dir) as spool:
        digest, size = await _spool(chunks, spool, file_name, uploads.max_bytes)
        spool.seek(0)
        content = await asyncio.to_thread(spool.read)
    document_id = uuid.uuid4()
    metadata = {"upload": {"overrides": overrides}}
    uploaded = DocumentUploaded(
        document_id=str(document_id),
        file_name=file_name[:300],
        content_type=content_type,
        **overrides,
    )
    # The row and the bytes commit together, acting for the uploader: row-level security
    # keeps both theirs.
    db = acting_as(uploads.pool, user_id)
    async with db.acquire() as conn:
        row = await conn.fetchrow(
            INSERT_UPLOAD_SQL,
            document_id,
            UPLOADS_COLLECTION,
            overrides.get("title") or file_name,
            _DOC_TYPES[suffix],
            digest,
            file_name,
            user_id,
            overrides.get("symbol"),
            overrides.get("form"),
            overrides.get("fiscal_year"),
            overrides.get("fiscal_quarter"),
            json.dumps(metadata),
        )
        run: int | None = None
        if row["created"]:
            run = row["ingest_runs"]
        elif row["status"] == "failed":
            run = await conn.fetchval(REQUEUE_SQL, row["id"], json.dumps(metadata))
        if run is not None:
            await conn.execute(
                INSERT_FILE_SQL, row["id"], user_id, stored_name, content_type, size, content
            )
    stored_id = str(row["id"])
    if run is not None:
        try:
            await uploads.publish(
                stored_id, user_id, run, uploaded.model_copy(update={"document_id": stored_id})
            )
        except Exception:
            # Stored and committed: the next gateway to start publishes it again.
            log.exception("upload stored but not yet queued", document_id=stored_id)
    document = await read_document(db, stored_id, user_id)
    assert document is not None  # written above for this user
    return document, run is not None


async def read_document(
    pool: DatabasePool, document_id: str, user_id: str
) -> dict[str, Any] | None:
    try:
        key = uuid.UUID(document_id)
    except ValueError:
        return None
    row = await pool.fetchrow(DOCUMENT_SQL, key, user_id)
    return None if row is None else _document(row)


@dataclass(frozen=True)
class DocumentFilter:
    """Which documents GET /v1/documents lists: whose, and of which company, form, year."""

    scope: str = "all"  # all, uploads (the user's own) or filings (the public ones)
    symbol: str | None = None
    form: str | None = None
    fiscal_year: int | None = None


async def list_documents(
    pool: DatabasePool, user_id: str, wanted: DocumentFilter, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of the documents `wanted` of the user's own and the public filings, and how
    many there are in all (read in one transaction: the page and the count agree)."""
    filters = (user_id, wanted.symbol, wanted.form, wanted.fiscal_year, wanted.scope)
    async with pool.acquire() as conn:
        rows = await conn.fetch(LIST_DOCUMENTS_SQL, *filters, limit, offset)
        total = await conn.fetchval(COUNT_DOCUMENTS_SQL, *filters)
    return [_document(row) for row in rows], total


def _document(row: asyncpg.Record) -> dict[str, Any]:
    """A documents row as the API shows it (DocumentJob)."""
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
