"""Document ingest is a stage of its own: the gateway stores an upload and publishes it; the
ingest stage reads it, acting for the uploader, with the parser in a child process under
limits. Every upload ends `ready` or `failed` with a reason: a parser past its limit is
not retried, a file that keeps killing its worker is given up on, and an upload in
progress survives a kill -9 of the worker and ends ready."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from services.ingest.documents import DocumentSettings
from services.ingest.main import UploadReading, read_upload
from services.ingest.parser_process import ParserLimits
from shared.contracts.base import utc_now
from shared.contracts.documents import DocumentUploaded
from shared.contracts.envelope import Envelope
from shared.db import create_pool
from shared.embeddings import MiniLMEmbedder
from shared.identity import add_user
from shared.subjects import Stage
from tests.conftest import RunningFinq, Servers
from tests.helpers import modules_loaded_by, wait_until

NOTES = "# Team notes\n\n## Budget\n\nThe travel budget for the spring offsite is 12,500 dollars.\n"


def test_the_gateway_imports_no_parsing_code() -> None:
    parsing = [
        name
        for name in modules_loaded_by("services.gateway.app")
        if name.startswith(("services.ingest", "pymupdf", "fitz", "lxml", "docx"))
    ]
    assert parsing == []


@pytest.fixture
async def service_pool(servers: Servers, database: str) -> AsyncIterator[asyncpg.Pool]:
    """The services' role on this test's database: row-level security applies."""
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=2)
    yield pool
    await pool.close()


def reading(minilm: MiniLMEmbedder, seconds: float = 30.0, attempts: int = 3) -> UploadReading:
    return UploadReading(
        embedder=minilm,
        documents=DocumentSettings(),
        limits=ParserLimits(seconds=seconds, memory_bytes=1024 * 1024 * 1024, cpu_seconds=30),
        max_attempts=attempts,
    )


async def store_upload(
    owner: asyncpg.Connection, user: str, name: str, content: bytes, runs: int = 1
) -> Envelope[DocumentUploaded]:
    """What the gateway commits for an upload, and the message it publishes."""
    document_id = uuid.uuid4()
    await owner.execute(
        "INSERT INTO documents (id, collection, title, doc_type, content_sha256, source_name, "
        "user_id, ingest_runs) VALUES ($1, 'uploads', $2, 'md', $3, $2, $4, $5)",
        document_id,
        name,
        hashlib.sha256(content).hexdigest(),
        user,
        runs,
    )
    await owner.execute(
        "INSERT INTO document_files (document_id, user_id, file_name, size_bytes, content) "
        "VALUES ($1, $2, $3, $4, $5)",
        document_id,
        user,
        name,
        len(content),
        content,
    )
    return Envelope[DocumentUploaded](
        request_id=str(document_id),
        conversation_id=str(document_id),
        user_id=user,
        attempt=runs,
        deadline=utc_now() + timedelta(hours=1),
        payload=DocumentUploaded(document_id=str(document_id), file_name=name),
    )


async def document_row(owner: asyncpg.Connection, envelope: Envelope[DocumentUploaded]) -> dict:
    row = await owner.fetchrow(
        "SELECT status, error, ingest_attempts, chunk_count, "
        "(SELECT count(*) FROM document_files f WHERE f.document_id = d.id) AS files, "
        "(SELECT array_agg(DISTINCT c.user_id) FROM chunks c WHERE c.document_id = d.id) "
        "AS chunk_users FROM documents d WHERE id = $1",
        uuid.UUID(envelope.payload.document_id),
    )
    found = dict(row)
    found["error"] = json.loads(found["error"]) if found["error"] else None
    return found


async def test_an_upload_is_read_to_ready_as_its_uploader_and_its_bytes_are_dropped(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    owner = await asyncpg.connect(database)
    try:
        upload = await store_upload(owner, "ursula", "notes.md", NOTES.encode())
        assert await read_upload(service_pool, reading(minilm), upload) == "ready"
        row = await document_row(owner, upload)
        # Read once more (a redelivery): nothing left to do.
        assert await read_upload(service_pool, reading(minilm), upload) == "skipped"
    finally:
        await owner.close()
    assert (row["status"], row["error"], row["ingest_attempts"]) == ("ready", None, 1)
    assert row["chunk_count"] >= 1 and row["chunk_users"] == ["ursula"]
    assert row["files"] == 0


async def test_a_parse_past_its_time_limit_fails_with_the_reason_and_is_not_retried(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    # A 4 MB markdown file takes the parser well over a hundredth of a second.
    big = ("| a | b |\n|---|---|\n" + "| cell | 1 |\n" * 300_000).encode()
    owner = await asyncpg.connect(database)
    try:
        upload = await store_upload(owner, "ursula", "huge-table.md", big)
        assert await read_upload(service_pool, reading(minilm, seconds=0.01), upload) == "failed"
        row = await document_row(owner, upload)
        assert await read_upload(service_pool, reading(minilm), upload) == "skipped"
    finally:
        await owner.close()
    assert row["status"] == "failed" and row["files"] == 0
    assert row["error"]["code"] == "parse_timeout"
    assert "longer than 0.01 s" in row["error"]["message"]


async def test_an_upload_that_kept_killing_its_worker_is_given_up_on(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    owner = await asyncpg.connect(database)
    try:
        upload = await store_upload(owner, "ursula", "notes.md", NOTES.encode())
        # Three runs began and none finished (their worker died each time).
        await owner.execute(
            "UPDATE documents SET ingest_attempts = 3, status = 'parsing' WHERE id = $1",
            uuid.UUID(upload.payload.document_id),
        )
        assert await read_upload(service_pool, reading(minilm, attempts=3), upload) == "failed"
        row = await document_row(owner, upload)
    finally:
        await owner.close()
    assert row["error"]["code"] == "ingest_gave_up"
    assert "'notes.md'" in row["error"]["message"] and "3 times" in row["error"]["message"]


async def test_a_message_of_an_earlier_run_or_another_users_name_reads_nothing(
    database: str, service_pool: asyncpg.Pool, minilm: MiniLMEmbedder
) -> None:
    owner = await asyncpg.connect(database)
    try:
        upload = await store_upload(owner, "ursula", "notes.md", NOTES.encode(), runs=2)
        stale = upload.model_copy(update={"attempt": 1})
        assert await read_upload(service_pool, reading(minilm), stale) == "skipped"
        # Row-level security: acting for someone else, the upload is not there to read.
        forged = upload.model_copy(update={"user_id": "mallory"})
        assert await read_upload(service_pool, reading(minilm), forged) == "skipped"
        row = await document_row(owner, upload)
    finally:
        await owner.close()
    assert (row["status"], row["ingest_attempts"], row["files"]) == ("pending", 0, 1)


def long_handbook(sections: int = 120) -> bytes:
    """Written for this test: enough text (about 120 passages) that embedding it takes
    seconds, so the worker is killed while it reads; no more, since it is read twice."""
    parts = ["# Operations handbook\n"]
    for n in range(sections):
        parts.append(
            f"\n## Procedure {n}\n\nStep {n} of the warehouse procedure: check the pallet "
            f"labels against order {n * 7}, record the count in the ledger, and report any "
            "damaged goods to the shift lead before the end of the day. " * 4
        )
    return "".join(parts).encode()


async def test_an_upload_in_progress_survives_a_kill_of_its_worker_and_ends_ready(
    finq: RunningFinq,
) -> None:
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        _, key = await add_user(owner, f"kim-{os.urandom(3).hex()}")
    finally:
        await owner.close()
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=finq.url, timeout=60) as client:
        accepted = await client.post(
            "/v1/documents",
            files={"file": ("handbook.md", long_handbook(), "text/markdown")},
            headers=headers,
        )
        assert accepted.status_code == 202, accepted.text
        document_id = accepted.json()["id"]

        async def status() -> str:
            response = await client.get(f"/v1/documents/{document_id}", headers=headers)
            return str(response.json()["status"])

        async def being_read() -> bool:
            return await status() in {"parsing", "embedding", "ready"}

        await wait_until(being_read, within=60, every=0.02)
        assert await status() != "ready", "read before the worker could be killed"
        worker = next(s for s in finq.supervisor.services if s.stage is Stage.INGEST)
        assert worker.process is not None
        os.kill(worker.process.pid, signal.SIGKILL)

        async def read_after_restart() -> bool:
            finq.supervisor.restart_crashed()
            return await status() in {"ready", "failed"}

        await wait_until(read_after_restart, within=240, every=0.25)
        final = (await client.get(f"/v1/documents/{document_id}", headers=headers)).json()
    assert final["status"] == "ready", final["error"]
    assert final["chunk_count"] > 10
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        attempts = await owner.fetchval(
            "SELECT ingest_attempts FROM documents WHERE id = $1", uuid.UUID(document_id)
        )
    finally:
        await owner.close()
    assert attempts == 2  # begun, killed, begun again
