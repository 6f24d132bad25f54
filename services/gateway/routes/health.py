"""/healthz (the process answers) and /readyz (its dependencies answer, and every stage
consumes), for the probes of a deployment."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from services.gateway.dependencies import Deps, error_response
from services.gateway.http_models import ErrorBody
from shared import bus

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={503: {"model": ErrorBody, "description": "A dependency is not ready"}},
)
async def readyz(deps: Deps) -> JSONResponse:
    problems: list[str] = []
    if not deps.nc.is_connected:
        problems.append("NATS is not connected")
    try:
        await asyncio.wait_for(deps.pool.fetchval("SELECT 1"), timeout=2.0)
    except Exception:
        # Which dependency is down, never its error text (it can name hosts and users).
        problems.append("PostgreSQL is not reachable")
    if not problems:
        idle = await bus.stages_not_consuming(deps.nc.jetstream())
        if idle:
            # A stage still loading its models would let the first questions time out.
            problems.append(f"stages not consuming yet: {', '.join(idle)}")
    if problems:
        return error_response(503, "not_ready", "; ".join(problems))
    return JSONResponse({"status": "ready", "nats": "ok", "postgres": "ok", "stages": "consuming"})
