"""`finq migrate`: the database's schema brought up to date, and the services' role."""

from __future__ import annotations

import argparse
import asyncio

from services.control.commands import Subparsers
from services.control.settings import ControlSettings


def register(subparsers: Subparsers) -> None:
    subparsers.add_parser("migrate", help="apply the database migrations").set_defaults(
        handler=command_migrate
    )


def command_migrate(_: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq migrate`: the schema, as the owner; then, when FINQ_DATABASE_URL names the
    services' own role, that role (made or brought up to date from the URL's password)."""
    from shared.db import ensure_database, ensure_service_role, migrate

    service_dsn = settings.database_url if "database_url" in settings.model_fields_set else None

    async def run() -> tuple[list[str], str | None]:
        await ensure_database(settings.operator_dsn)
        applied = await migrate(settings.operator_dsn)
        role = None
        if service_dsn is not None and service_dsn != settings.operator_dsn:
            role = await ensure_service_role(settings.operator_dsn, service_dsn)
        return applied, role

    applied, role = asyncio.run(run())
    print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")
    if role is not None:
        print(f"the services connect as {role} (row-level security applies to it)")
    return 0
