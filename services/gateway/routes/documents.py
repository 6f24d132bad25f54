"""The caller's documents: an upload (stored, then read by the ingest stage) and its job,
the list of the caller's uploads and the public filings, and an upload deleted with all
that was read from it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.http_models import DocumentJob, DocumentList, ErrorBody
from services.gateway.inputs import file_name_problem
from services.gateway.openapi import error_responses
from services.gateway.uploads import (
    DocumentFilter,
    UploadRejected,
    accept_upload,
    list_documents,
    read_document,
)
from shared.account_data import DocumentDeletion, delete_document
from shared.contracts.base import LINE_PATTERN
from shared.db import acting_as

DOCUMENTS_PATH = "/v1/documents"
# What multipart framing adds to an upload's own bytes.
MULTIPART_SLACK_BYTES = 64 * 1024
# The fields upload_document reads (its parameters): each may come once.
UPLOAD_FIELDS = ("file", "symbol", "form", "fiscal_year", "fiscal_quarter", "title")
# A company's ticker, as an upload names it and as the filings are kept.
TICKER_PATTERN = r"^[A-Za-z][A-Za-z.\-]{0,9}$"
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
    symbol: Annotated[str | None, Form(pattern=TICKER_PATTERN)] = None,
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


@router.get(
    DOCUMENTS_PATH,
    response_model=DocumentList,
    responses=error_responses(401, 422, 429, 503),
)
async def documents(
    deps: Deps,
    caller: Caller,
    company: Annotated[
        str | None, Query(pattern=TICKER_PATTERN, description="A company's ticker: AAPL")
    ] = None,
    form: Annotated[
        str | None,
        Query(min_length=1, max_length=20, pattern=LINE_PATTERN, description="10-K, 10-Q..."),
    ] = None,
    fiscal_year: Annotated[int | None, Query(ge=1900, le=2100)] = None,
    scope: Annotated[
        Literal["all", "uploads", "filings"],
        Query(description="Whose: the caller's uploads, the public filings, or both"),
    ] = "all",
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> JSONResponse:
    """The caller's uploads (newest first), then the public filings finq holds for
    everyone (by company, latest year first), with their jobs' status; `total` counts
    every page. Another user's uploads are never listed."""
    wanted = DocumentFilter(
        scope=scope,
        symbol=company.upper() if company else None,
        form=form.upper() if form else None,
        fiscal_year=fiscal_year,
    )
    listed, total = await list_documents(
        acting_as(deps.pool, caller), caller, wanted, limit, offset
    )
    return JSONResponse({"documents": listed, "total": total, "limit": limit, "offset": offset})


@router.delete(
    "/v1/documents/{document_id}",
    status_code=204,
    response_class=Response,
    responses={
        **error_responses(401, 404, 422, 429, 503),
        403: {
            "model": ErrorBody,
            "description": "A public filing: finq holds it for everyone, and no user deletes it",
        },
    },
)
async def delete_upload(document_id: PathId, deps: Deps, caller: Caller) -> Response:
    """Delete one of the caller's uploads and everything finq read from it: the stored
    file, its passages and their vectors, its statement figures. Search never finds it
    again. An upload still being read is deleted at once; the reading stops and stores
    nothing. Public filings cannot be deleted (403); another user's upload is not found
    (404). Answers already given from it stay in their conversations until those are
    deleted."""
    deleted = await delete_document(deps.pool, caller, document_id)
    if deleted == DocumentDeletion.PUBLIC:
        raise ApiError(
            403,
            "public_document",
            f"document {document_id!r} is a public filing, held for everyone; "
            "only your own uploads can be deleted",
        )
    if deleted == DocumentDeletion.NOT_FOUND:
        raise ApiError(404, "document_not_found", f"no document {document_id!r} of yours")
    return Response(status_code=204)
