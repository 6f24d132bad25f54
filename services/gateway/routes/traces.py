"""GET /v1/traces/{trace_id}: one trace's questions of the caller's, stage by stage."""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.dependencies import ApiError, Caller, Deps, TraceId
from services.gateway.openapi import error_responses
from services.gateway.traces import Trace, read_trace
from shared.db import acting_as

router = APIRouter()


@router.get(
    "/v1/traces/{trace_id}",
    response_model=Trace,
    responses=error_responses(401, 404, 422, 429, 503),
)
async def trace(trace_id: TraceId, deps: Deps, caller: Caller) -> Trace:
    """One trace's questions (the caller's own), stage by stage: each stage's start,
    duration, decision and errors, and how the question was routed, in plain words
    (the trace id is an answer's `trace_id`)."""
    found = await read_trace(
        acting_as(deps.pool, caller), trace_id, caller, deps.settings.jaeger_url
    )
    if found is None:
        raise ApiError(404, "trace_not_found", f"no trace {trace_id!r} of yours")
    return found
