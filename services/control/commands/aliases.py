"""`finq aliases`: the metric phrases users typed that the catalog did not know, how each was
read, and the aliases learned from them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from services.control.commands import Subparsers
from services.control.settings import ControlSettings
from shared.logs import redact


def register(subparsers: Subparsers) -> None:
    aliases = subparsers.add_parser(
        "aliases", help="metric phrases that missed or needed a fallback, and learned aliases"
    )
    aliases.add_argument("--limit", type=int, default=50)
    aliases.add_argument("--json", action="store_true")
    aliases.set_defaults(handler=command_aliases)


def command_aliases(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq aliases`: the metric phrases users typed that the catalog did not know."""
    import asyncpg

    from shared.metric_aliases import list_alias_misses, load_learned_aliases

    async def run() -> tuple[list[Any], dict[str, str]]:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            return await list_alias_misses(conn, args.limit), await load_learned_aliases(conn)
        finally:
            await conn.close()

    try:
        misses, learned = asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot read {redact(settings.operator_dsn)}: {error}", file=sys.stderr)
        return 2
    if args.json:
        body = {
            "misses": [
                {
                    **miss.__dict__,
                    "first_seen": miss.first_seen.isoformat(),
                    "last_seen": miss.last_seen.isoformat(),
                }
                for miss in misses
            ],
            "learned": learned,
        }
        print(json.dumps(body, indent=2))
        return 0
    print(f"{'count':>5}  {'phrase':<32} {'read as':<28} last seen")
    for miss in misses:
        reading = (
            f"{miss.resolved_to} ({miss.method} {miss.confidence:.2f})" if miss.resolved_to else "-"
        )
        print(f"{miss.count:>5}  {miss.phrase:<32} {reading:<28} {miss.last_seen:%Y-%m-%d %H:%M}")
    if learned:
        print("\nlearned aliases:")
        for phrase, metric in sorted(learned.items()):
            print(f"  {phrase} → {metric}")
    return 0
