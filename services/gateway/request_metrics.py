"""The gateway's request metrics (finq_http_requests_total and
finq_http_request_duration_seconds, shared/metrics.py) and GET /metrics.

The middleware is pure ASGI and the outermost of the gateway's own, so it sees the status
the client got, refusals by the body limit and the JSON 500s included. A request is
labelled with its route's template ("/v1/requests/{request_id}"), never its path, so ids
never become series; a path no route matches is `unmatched`.
"""

from __future__ import annotations

import time

from fastapi import FastAPI
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.metrics import HTTP_REQUEST_SECONDS, HTTP_REQUESTS, exposition

METRICS_PATH = "/metrics"
UNMATCHED_ROUTE = "unmatched"


def route_template(scope: Scope) -> str:
    """The template of the route that took the request (Starlette notes it in the scope
    once it has matched, a partial match for a method the route does not take included)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else UNMATCHED_ROUTE


class RequestMetrics:
    """ASGI middleware counting each HTTP request by route, method and status, and timing
    it from arrival to the end of its response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before responding

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noting_status)
        finally:
            route = route_template(scope)
            method = str(scope.get("method", ""))
            HTTP_REQUESTS.labels(route, method, str(status)).inc()
            HTTP_REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)


def add_request_metrics(app: FastAPI) -> None:
    """Count the app's requests and serve GET /metrics (Prometheus text format). /metrics
    is left out of the OpenAPI schema: it is for the scraper, not the API's clients, and
    asks for no key (it holds counts by route and status, no user's data)."""
    app.add_middleware(RequestMetrics)

    @app.get(METRICS_PATH, include_in_schema=False)
    async def metrics() -> Response:
        body, content_type = exposition()
        return Response(body, media_type=content_type)
