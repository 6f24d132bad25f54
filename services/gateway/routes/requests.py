"""GET /v1/requests/{request_id}: what finq did with one of the caller's questions."""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.dependencies import ApiError, Caller, Deps, PathId
from services.gateway.http_models import RequestLog
from services.gateway.openapi import error_responses
from services.gateway.request_log import read_request_log
from shared.db import acting_as

router = APIRouter()


@router.get(
    "/v1/requests/{request_id}",
    response_model=RequestLog,
    responses=error_responses(401, 404, 422, 429, 503),
)
async def request_log(request_id: PathId, deps: Deps, caller: Caller) -> RequestLog:
    found = await read_request_log(acting_as(deps.pool, caller), request_id, caller)
    if found is None:
        raise ApiError(404, "request_not_found", f"no logged request {request_id!r} of yours")
    return found
