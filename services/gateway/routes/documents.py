"""The caller's documents: an upload (stored, then read by the ingest stage) and its job."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import JSONResponse

from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.http_models import DocumentJob
from services.gateway.inputs import file_name_problem
from services.gateway.openapi import error_responses
from services.gateway.uploads import UploadRejected, accept_upload, read_document
from shared.contracts import LINE_PATTERN
from shared.db import acting_as

DOCUMENTS_PATH = "/v1/documents"
# What multipart framing adds to an upload's own bytes.
MULTIPART_SLACK_BYTES = 64 * 1024
# The fields upload_document reads (its parameters): each may come once.
UPLOAD_FIELDS = ("file", "symbol", "form", "fiscal_year", "fiscal_quarter", "title")
UPLOAD_DESCRIPTION = (
    "PDF, EDGAR HTML, DOCX, TXT or MD, at most FINQ_DOCUMENT_UPLOAD_MAX_BYTES: its type is the "
    "part's Content-Type when that is a type finq reads, else its name's suffix; the name is "
    "the file's own (no folders, no control characters, at most 255 characters)"
)

router = APIRouter()


@router.post(
    DOCUMENTS_PATH,
    status_code=202,
    response_model=DocumentJob,
    responses={
        200: {"model": DocumentJob, "description": "The same file is held already"},
        **error_responses(400, 401, 413, 415, 422, 429, 503),
    },
)
async def upload_document(
    deps: Deps,
    caller: Caller,
    request: Request,
    file: Annotated[UploadFile, File(description=UPLOAD_DESCRIPTION)],
    symbol: Annotated[str | None, Form(pattern=r"^[A-Za-z][A-Za-z.\-]{0,9}$")] = None,
    form: Annotated[str | None, Form(max_length=20, pattern=LINE_PATTERN)] = None,
    fiscal_year: Annotated[int | None, Form(ge=1900, le=2100)] = None,
    fiscal_quarter: Annotated[int | None, Form(ge=1, le=4)] = None,
    title: Annotated[str | None, Form(max_length=300, pattern=LINE_PATTERN)] = None,
) -> JSONResponse:
    """Upload a document to search. Returns its job (202, or 200 when the same file is
    already held); GET /v1/documents/{id} reports progress."""
    # Each field read here once, the file included: a second part of the same name
    # would otherwise replace the first unseen (other fields are ignored, as the schema
    # allows). The form is parsed already; this reads it from memory.
    parts = await request.form()
    if repeated := [name for name in UPLOAD_FIELDS if len(parts.getlist(name)) > 1]:
        raise ApiError(
            422, "repeated_field", f"send each field once; sent more than once: {repeated}"
        )
    if problem := file_name_problem(file.filename or ""):
        raise ApiError(422, "invalid_file_name", problem)
    limit = deps.settings.document_upload_max_bytes
    declared = request.headers.get("content-length", "")
    # Multipart framing adds a little; anything far past the limit is refused unread.
    if declared.isdigit() and int(declared) > limit + MULTIPART_SLACK_BYTES:
        raise ApiError(413, "document_too_large", f"the upload is over {limit:,} bytes")

    async def body() -> AsyncIterator[bytes]:
        while chunk := await file.read(1024 * 1024):
            yield chunk

    overrides = {
        "symbol": symbol.upper() if symbol else None,
        "form": form.upper() if form else None,
        "fiscal_year": fiscal_year,
        "fiscal_quarter": fiscal_quarter,
        "title": title,
    }
    try:
        document, queued = await accept_upload(
            deps.uploads,
            file_name=file.filename or "upload",
            content_type=file.content_type,
            chunks=body(),
            user_id=caller,
            overrides={k: v for k, v in overrides.items() if v is not None},
        )
    except UploadRejected as rejected:
        raise ApiError(rejected.status, rejected.code, rejected.message) from None
    return JSONResponse(document, status_code=202 if queued else 200)


@router.get(
    "/v1/documents/{document_id}",
    response_model=DocumentJob,
    responses=error_responses(401, 404, 422, 429, 503),
)
async def document(document_id: PathId, deps: Deps, caller: Caller) -> JSONResponse:
    """A document and its ingest job: status (pending, parsing, embedding, ready,
    failed), progress from 0 to 1, error, pages, tables and chunks."""
    found = await read_document(acting_as(deps.pool, caller), document_id, caller)
    if found is None:
        raise ApiError(404, "document_not_found", f"no document {document_id!r} of yours")
    return JSONResponse(found)
