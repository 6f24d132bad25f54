"""The caller's portfolio: an activity file imported, and the accounts it made."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import Field

from services.gateway.dependencies import ApiError, Caller, Deps
from services.gateway.http_models import ErrorBody
from services.gateway.inputs import file_name_problem
from services.gateway.openapi import error_responses
from shared.contracts.base import LINE_PATTERN
from shared.db import acting_as
from shared.portfolio.import_process import ActivityParseFailed, parse_in_child
from shared.portfolio.store import (
    AccountList,
    ImportOutcome,
    RowProblem,
    import_activity,
    list_accounts,
)

PORTFOLIO_IMPORT_PATH = "/v1/portfolio/import"
# What an activity file may be sent as: CSV is text, and some clients name it only that.
CSV_TYPES = frozenset({"text/csv", "application/csv", "text/plain"})
PORTFOLIO_IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The CSV file itself, as the body (see shared/portfolio/csv_format.py "
        "for its columns), at most FINQ_GATEWAY_PORTFOLIO_IMPORT_MAX_BYTES",
        "content": {"text/csv": {"schema": {"type": "string", "minLength": 1}}},
    }
}


class InvalidActivity(ErrorBody):
    """422 from POST /v1/portfolio/import: every row that cannot be imported (nothing was
    stored). Other refusals with 422 carry no rows."""

    errors: list[RowProblem] = Field(default_factory=list)


router = APIRouter()


@router.post(
    PORTFOLIO_IMPORT_PATH,
    response_model=ImportOutcome,
    responses={
        **error_responses(400, 401, 413, 415, 429, 503),
        411: {"model": ErrorBody, "description": "The body came without Content-Length"},
        422: {"model": InvalidActivity, "description": "Rows that cannot be imported"},
    },
    openapi_extra=PORTFOLIO_IMPORT_BODY,
)
async def import_portfolio(
    deps: Deps,
    caller: Caller,
    request: Request,
    file_name: Annotated[
        str, Query(min_length=1, max_length=255, pattern=LINE_PATTERN)
    ] = "activity.csv",
) -> Response:
    """Import a CSV file of activity (trades, income, transfers) into the caller's
    accounts, all or nothing: 200 with what was stored, or with `duplicate_of` when the
    same file was imported before (nothing stored); 422 `invalid_activity` naming every
    row that cannot be imported (nothing stored). The file is read in a child process
    with limits on time and memory."""
    declared = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if declared not in CSV_TYPES:
        raise ApiError(
            415,
            "unsupported_media_type",
            f"send the CSV file as the body, with Content-Type text/csv (not {declared!r})",
        )
    if problem := file_name_problem(file_name):
        raise ApiError(422, "invalid_file_name", problem)
    # A length past the limit is refused unread (BodyLimit). A body sent in chunks is
    # refused too: past the limit, BodyLimit ends it early and answers 413, and a CSV cut
    # short reads as a whole file, which would be stored.
    if not request.headers.get("content-length", "").isdigit():
        raise ApiError(
            411, "length_required", "send the file with its Content-Length, not in chunks"
        )
    data = await request.body()
    if not data:
        raise ApiError(422, "empty_file", "the file is empty: a header row is required")
    try:
        outcome = await import_activity(deps.pool, caller, file_name, data, parse_in_child)
    except ActivityParseFailed as failed:
        raise ApiError(422, failed.code, failed.message) from None
    if outcome.errors:
        rows = len({error.row for error in outcome.errors})
        refusal = InvalidActivity(
            code="invalid_activity",
            message=f"{rows} row{'s' if rows > 1 else ''} of {file_name} cannot be "
            "imported; nothing was stored",
            errors=outcome.errors,
        )
        return Response(refusal.model_dump_json(), status_code=422, media_type="application/json")
    return Response(outcome.model_dump_json(), media_type="application/json")


@router.get(
    "/v1/portfolio/accounts",
    response_model=AccountList,
    responses=error_responses(401, 429, 503),
)
async def portfolio_accounts(deps: Deps, caller: Caller) -> AccountList:
    """The caller's accounts, by name."""
    return AccountList(accounts=await list_accounts(acting_as(deps.pool, caller)))
