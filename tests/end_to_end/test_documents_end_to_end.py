"""Documents through the five real processes: the bundled glossary answers a term finq does
not compute, uploads are checked for type and size, read in the background with progress,
and then found and quoted with their page by the questions that name them."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pypdfium2 as pdfium
import pytest

from tests.conftest import Servers, own_pipeline
from tests.helpers import require_shared_data, wait_until

pytestmark = pytest.mark.e2e

# Written for this test: a small handbook a team might upload.
HANDBOOK = """# Northwind Onboarding Handbook

## Expense reports

Submit expense reports within thirty days of the purchase. Receipts are required for any
item above the travel policy's limit, and reports are approved by your manager.

## Equipment

Every new hire receives a laptop and a headset on the first day. Lost equipment is
reported to the help desk the same day.
"""
# Above the whole Apple 10-K (730 KB), so one pipeline serves every test.
UPLOAD_LIMIT = 1_000_000
# The pages of Apple's fiscal 2022 10-K (of 80) the last test uploads: the business section
# and the risk factors, whose page numbers stay as printed, then the financial statements.
# Reading and embedding all 80 took the pipeline about 110 CPU-seconds, the slowest part of
# the suite; a third of the pages keeps a real filing's text, layout and tables.
FILING_PAGES = (*range(16), *range(27, 35))


def pages_of(pdf: Path, pages: Sequence[int]) -> bytes:
    """A PDF of `pages` (numbered from 0) of another, in that order."""
    source = pdfium.PdfDocument(pdf)
    cut = pdfium.PdfDocument.new()
    try:
        cut.import_pages(source, list(pages))
        out = io.BytesIO()
        cut.save(out)
        return out.getvalue()
    finally:
        cut.close()
        source.close()


@pytest.fixture(scope="module")
async def pipeline(
    servers: Servers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    """A pipeline of this module's own: uploads must not reach the shared pipeline, whose
    golden questions expect no filings loaded."""
    async with own_pipeline(
        servers,
        tmp_path_factory.mktemp("documents"),
        "t_documents_e2e",
        {"FINQ_DOCUMENT_UPLOAD_MAX_BYTES": str(UPLOAD_LIMIT), "FINQ_EMBEDDING_PRELOAD": "true"},
        load_glossary=True,
    ) as client:
        yield client


async def ready(client: httpx.AsyncClient, document_id: str, within: float = 240) -> dict[str, Any]:
    """The document once its job has finished (ready or failed)."""
    seen: dict[str, Any] = {}

    async def finished() -> bool:
        seen.update((await client.get(f"/v1/documents/{document_id}")).json())
        return seen["status"] in {"ready", "failed"}

    await wait_until(finished, within=within, every=0.25)
    return seen


async def test_a_term_finq_does_not_compute_is_explained_from_the_glossary(
    client: httpx.AsyncClient,
) -> None:
    body = (await client.post("/v1/ask", json={"question": "What is a Roth IRA?"})).json()

    assert body["route"]["tool_calls"][0]["arguments"]["collection"] == "glossary"
    assert body["answer"].startswith("[1] ")
    assert "tax-free" in body["answer"]
    assert body["citations"][0]["label"].startswith("Roth IRA")
    assert body["validation"]["passed"] and not body["validation"]["repairs"]


async def test_an_upload_of_an_unsupported_type_is_a_415(pipeline: httpx.AsyncClient) -> None:
    response = await pipeline.post(
        "/v1/documents",
        files={"file": ("tool.exe", b"MZ\x90\x00", "application/octet-stream")},
    )

    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


async def test_a_pdf_sent_as_another_type_is_a_415(pipeline: httpx.AsyncClient) -> None:
    response = await pipeline.post(
        "/v1/documents", files={"file": ("report.pdf", b"%PDF-1.4", "image/png")}
    )

    assert response.status_code == 415


async def test_an_upload_over_the_size_limit_is_a_413_and_leaves_nothing_behind(
    pipeline: httpx.AsyncClient,
) -> None:
    big = b"A line of notes that goes on and on.\n" * (UPLOAD_LIMIT // 30)
    response = await pipeline.post(
        "/v1/documents", files={"file": ("notes.txt", big, "text/plain")}
    )

    assert response.status_code == 413
    assert response.json()["code"] == "document_too_large"


async def test_an_empty_upload_is_a_422(pipeline: httpx.AsyncClient) -> None:
    response = await pipeline.post(
        "/v1/documents", files={"file": ("empty.md", b"", "text/markdown")}
    )

    assert response.status_code == 422
    assert response.json()["code"] == "empty_document"


async def test_an_unknown_document_is_a_404_json_error(pipeline: httpx.AsyncClient) -> None:
    for document_id in ("no-such-id", "6f1c1d5e-0000-4000-8000-000000000000"):
        response = await pipeline.get(f"/v1/documents/{document_id}")
        assert response.status_code == 404
        assert response.json()["code"] == "document_not_found"


async def test_an_uploaded_handbook_is_read_and_then_quoted_by_name(
    pipeline: httpx.AsyncClient,
) -> None:
    accepted = await pipeline.post(
        "/v1/documents", files={"file": ("handbook.md", HANDBOOK.encode(), "text/markdown")}
    )
    assert accepted.status_code == 202
    job = accepted.json()
    assert job["status"] in {"pending", "parsing", "embedding", "ready"}

    document = await ready(pipeline, job["id"])
    again = await pipeline.post(
        "/v1/documents", files={"file": ("handbook.md", HANDBOOK.encode(), "text/markdown")}
    )
    body = (
        await pipeline.post(
            "/v1/ask",
            json={"question": "What does the onboarding handbook say about expense reports?"},
        )
    ).json()

    assert (document["status"], document["progress"], document["error"]) == ("ready", 1, None)
    assert document["title"] == "Northwind Onboarding Handbook"
    assert document["chunk_count"] >= 1
    assert (again.status_code, again.json()["id"]) == (200, job["id"])
    assert body["route"]["intent"] == "document_search"
    assert "within thirty days" in body["answer"]
    # The user's own file, cited as theirs.
    assert body["citations"][0]["label"] == "your upload “Northwind Onboarding Handbook”"
    assert body["validation"]["passed"]


async def test_a_file_that_cannot_be_read_fails_its_job_with_the_reason(
    pipeline: httpx.AsyncClient,
) -> None:
    response = await pipeline.post(
        "/v1/documents",
        files={"file": ("broken.pdf", b"%PDF-1.4 this is not a real PDF", "application/pdf")},
    )
    assert response.status_code == 202

    failed = await ready(pipeline, response.json()["id"])

    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "unreadable_document"
    assert "broken.pdf" in failed["error"]["message"]


async def test_a_filing_question_names_its_year_and_gets_that_filings_page(
    pipeline: httpx.AsyncClient,
) -> None:
    pdf = require_shared_data("filings", "AAPL", "APPLE_2022_10K.pdf")
    accepted = await pipeline.post(
        "/v1/documents",
        files={"file": (pdf.name, pages_of(pdf, FILING_PAGES), "application/pdf")},
        data={"symbol": "AAPL", "form": "10-K", "fiscal_year": "2022"},
    )
    assert accepted.status_code == 202, accepted.text
    document = await ready(pipeline, accepted.json()["id"])
    assert document["status"] == "ready", document["error"]
    assert (document["symbol"], document["form"], document["fiscal_year"]) == (
        "AAPL",
        "10-K",
        2022,
    )
    assert document["page_count"] == len(FILING_PAGES) and document["table_count"] > 3

    body = (
        await pipeline.post(
            "/v1/ask",
            json={
                "question": "What did Apple say about supply chain risks in its fiscal 2022 10-K?"
            },
        )
    ).json()
    arguments = body["route"]["tool_calls"][0]["arguments"]
    assert (arguments["symbols"], arguments["forms"], arguments["fiscal_year"]) == (
        ["AAPL"],
        ["10-K"],
        2022,
    )
    # The user uploaded it: it is cited as their file (with its page), never as Apple's
    # filing, and not linked to EDGAR; `finq ingest filings` makes the official copy.
    assert body["answer"].startswith("[1] your upload “Apple 10-K FY2022”, page")
    assert all(c["page"] and not c.get("url") for c in body["citations"])
    assert "supplier" in body["answer"].lower() or "supply" in body["answer"].lower()
    assert body["validation"]["passed"], body["validation"]
