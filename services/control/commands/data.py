"""`finq data check`: gaps and suspicious values in the data held, per company."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from services.control.commands import Subparsers
from services.control.settings import ControlSettings
from shared.logs import redact


def register(subparsers: Subparsers) -> None:
    data = subparsers.add_parser("data", help="look at the data held")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    check = data_commands.add_parser(
        "check",
        help="gaps and suspicious values per company; exit 1 on an error-level finding",
    )
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(handler=command_data_check)


def command_data_check(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq data check [--json]`: see services.ingest.data_check."""
    import asyncpg

    from services.ingest.data_check import CheckReport, check_database, format_report

    async def run() -> CheckReport:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            return await check_database(conn)
        finally:
            await conn.close()

    try:
        report = asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot check {redact(settings.operator_dsn)}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 1 if report.errors else 0
