"""Router wiring: load the company directory once, then route each question."""

from __future__ import annotations

import asyncpg

from services.router.rules import CompanyDirectory, CompanyEntry, route_question
from services.router.settings import RouterSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts import Envelope, QuestionAsked
from shared.runtime import StageClients, run, serve_stage


async def load_directory(pool: asyncpg.Pool) -> CompanyDirectory:
    rows = await pool.fetch("SELECT symbol, display_name, aliases FROM companies ORDER BY symbol")
    return CompanyDirectory(
        tuple(
            CompanyEntry(
                symbol=row["symbol"],
                display_name=row["display_name"],
                names=tuple(row["aliases"]),
            )
            for row in rows
        )
    )


async def build_handler(clients: StageClients) -> Handler:
    assert clients.pool is not None
    directory = await load_directory(clients.pool)

    async def handle(envelope: Envelope[QuestionAsked]) -> Forward:
        route = route_question(envelope.payload.question, directory)
        return Forward(subjects.ROUTE_DECIDED, envelope.carry(route))

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.ROUTER,
            RouterSettings(),
            QuestionAsked,
            build_handler,
            needs_database=True,
        )
    )
