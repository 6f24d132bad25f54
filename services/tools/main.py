"""Tools wiring: each route.decided becomes tools.completed."""

from __future__ import annotations

from services.tools.runner import run_route
from services.tools.settings import ToolsSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts import Envelope, RouteDecided
from shared.runtime import StageClients, run, serve_stage


async def build_handler(clients: StageClients) -> Handler:
    pool = clients.pool
    assert pool is not None

    async def handle(envelope: Envelope[RouteDecided]) -> Forward:
        completed = await run_route(pool, envelope.payload)
        return Forward(subjects.TOOLS_COMPLETED, envelope.carry(completed))

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.TOOLS, ToolsSettings(), RouteDecided, build_handler, needs_database=True
        )
    )
