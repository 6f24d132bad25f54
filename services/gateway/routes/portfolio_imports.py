"""The caller's portfolio imports: GET /v1/portfolio/imports lists them, and
DELETE /v1/portfolio/imports/{import_id} undoes one (shared/portfolio/store.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.openapi import error_responses
from shared.db import acting_as
from shared.portfolio.store import (
    ImportNotFound,
    ImportSummary,
    UndoneImport,
    UndoRefused,
    list_imports,
    undo_import,
)

IMPORTS_PATH = "/v1/portfolio/imports"


class ImportList(BaseModel):
    """GET /v1/portfolio/imports: a page of the caller's imports, newest first."""

    imports: list[ImportSummary]
    total: int = Field(description="How many imports the caller has in all")
    limit: int
    offset: int


router = APIRouter()


@router.get(
    IMPORTS_PATH,
    response_model=ImportList,
    responses=error_responses(401, 422, 429, 503),
)
async def portfolio_imports(
    deps: Deps,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> ImportList:
    """The files of activity the caller imported, newest first: id, file name and kind,
    the accounts their rows name, how many rows, and when."""
    imports, total = await list_imports(acting_as(deps.pool, caller), limit, offset)
    return ImportList(imports=imports, total=total, limit=limit, offset=offset)


@router.delete(
    f"{IMPORTS_PATH}/{{import_id}}",
    response_model=UndoneImport,
    responses={
        **error_responses(401, 404, 422, 429, 503),
        409: {
            **error_responses(409)[409],
            "description": "Undoing it would leave a later sale without its shares: the "
            "message names the sale, and the import to undo first",
        },
    },
)
async def undo_portfolio_import(import_id: PathId, deps: Deps, caller: Caller) -> UndoneImport:
    """Undo an import: its trades, income and transfers are removed, with the accounts
    only it named, and everything derived (positions, lots, cost basis, cash) is replayed
    from the rows that remain. The same file may then be imported again. Refused with 409
    when a later import sells shares this one bought."""
    # The id is taken as any id in a path is: an import's is a UUID, and anything else
    # names no import of the caller's (404), as a document's id does.
    try:
        return await undo_import(deps.pool, caller, import_id)
    except ImportNotFound:
        raise ApiError(404, "import_not_found", f"no import {import_id!r} of yours") from None
    except UndoRefused as refused:
        raise ApiError(409, refused.code, refused.message) from None
