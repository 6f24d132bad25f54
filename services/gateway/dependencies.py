"""What every route of the gateway is handed: its dependencies (the clients the lifespan
made), the caller (the user of the request's API key, and nobody else), the refusal it
raises, and the shapes of ids in a path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import asyncpg
from fastapi import Depends, Path, Request
from fastapi.responses import JSONResponse
from nats.aio.client import Client as NatsClient

from services.gateway.limits import Admission, RateLimiter
from services.gateway.settings import GatewaySettings
from services.gateway.uploads import Uploads
from services.gateway.waiting import PendingAnswers
from shared import bus
from shared.contracts.base import LINE_PATTERN
from shared.identity import LOCAL_USER, user_for_key


class ApiError(Exception):
    """A refusal a route raises: answered as `{code, message}` with its status (app.py)."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """The API's error body, `{code, message}`, with its status."""
    return JSONResponse(status_code=status, content={"code": code, "message": message})


@dataclass
class GatewayDeps:
    settings: GatewaySettings
    nc: NatsClient
    publisher: bus.Publisher
    pool: asyncpg.Pool
    pending: PendingAnswers
    reply_subject: str
    uploads: Uploads
    admission: Admission


async def get_deps(request: Request) -> GatewayDeps:
    deps: GatewayDeps = request.app.state.deps
    return deps


Deps = Annotated[GatewayDeps, Depends(get_deps)]


async def get_caller(request: Request, deps: Deps) -> str:
    """Who is asking: the owner of the request's API key (`Authorization: Bearer <key>`).
    Without a key, the local user when FINQ_AUTH=local and a 401 when it is `required`; a
    key that is unknown or revoked is a 401 either way. Nothing else sets identity."""
    header = request.headers.get("authorization")
    if header is None:
        if deps.settings.auth == "local":
            return LOCAL_USER
        raise ApiError(
            401, "unauthorized", "this finq requires an API key: Authorization: Bearer <key>"
        )
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "send the API key as Authorization: Bearer <key>")
    user = await user_for_key(deps.pool, key.strip())
    if user is None:
        raise ApiError(401, "unauthorized", "the API key is not valid (unknown or revoked)")
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.take(user)
    if wait:
        raise ApiError(
            429,
            "rate_limited",
            f"too many requests: {limiter.per_minute:g} a minute are allowed",
            {"Retry-After": limiter.retry_after(wait)},
        )
    return user


Caller = Annotated[str, Depends(get_caller)]
# An id in a path: at most as long as any id finq makes or takes, on one line.
PathId = Annotated[str, Path(min_length=1, max_length=100, pattern=LINE_PATTERN)]
# A W3C trace id, as answers carry it: 32 lower-case hex digits.
TraceId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
