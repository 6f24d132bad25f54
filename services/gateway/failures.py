"""What a request that fails inside the gateway gets: the API's JSON error body, never a
dropped connection or a stack trace. A database or broker that is unreachable (a restart,
connections killed under the pool) is a 503 with Retry-After: the request may simply be
sent again. Anything else is a 500 with the reason in the logs, not in the body.

This is pure ASGI, inside Starlette's outermost error middleware: that one sends its 500
and then re-raises into the server, which closes the connection, and clients saw the
connection drop instead of the body.
"""

from __future__ import annotations

import json

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.outages import is_transient

log = structlog.get_logger("finq.gateway")

# Seconds a client waits before sending again a request that met an unreachable dependency.
RETRY_AFTER_SECONDS = 1


def _response(status: int, code: str, message: str, retry_after: int | None) -> list[Message]:
    body = json.dumps({"code": code, "message": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


class UnexpectedErrors:
    """ASGI middleware answering an exception no handler took with a JSON 503 or 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            if started:
                raise  # half an answer is out: only closing the connection is honest
            if is_transient(error):
                log.warning("dependency unavailable", error=repr(error), path=scope["path"])
                messages = _response(
                    503,
                    "unavailable",
                    "finq's database or message bus is not reachable just now; try again",
                    RETRY_AFTER_SECONDS,
                )
            else:
                log.exception("unexpected error", error=repr(error), path=scope["path"])
                messages = _response(
                    500, "internal_error", "finq hit an unexpected error; see its logs", None
                )
            for message in messages:
                await send(message)
