"""Gateway wiring: serve the FastAPI app with uvicorn on uvloop and httptools."""

from __future__ import annotations

import uvicorn

from services.gateway.app import create_app
from services.gateway.http_protocol import JsonErrorsHttpToolsProtocol
from services.gateway.settings import GatewaySettings


def main() -> None:
    settings = GatewaySettings()
    uvicorn.run(
        create_app(settings),
        host=settings.gateway_host,
        port=settings.gateway_port,
        backlog=settings.gateway_backlog,
        loop="uvloop",
        # httptools, answering a request it cannot parse with the API's JSON error body.
        http=JsonErrorsHttpToolsProtocol,
        access_log=False,
        log_level=settings.log_level.lower(),
        timeout_graceful_shutdown=10,
    )
