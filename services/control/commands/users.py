"""`finq users add NAME | list | revoke NAME`: who may ask, by API key."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from services.control.commands import Subparsers
from services.control.settings import ControlSettings

if TYPE_CHECKING:
    import asyncpg


def register(subparsers: Subparsers) -> None:
    users = subparsers.add_parser("users", help="who may ask: users and their API keys")
    users_commands = users.add_subparsers(dest="users_command", required=True)
    users_add = users_commands.add_parser("add", help="add a user and print their key once")
    users_add.add_argument("name")
    users_add.add_argument(
        "--operator",
        action="store_true",
        help="may open the admin page: every user's failed and slowest questions, dead letters",
    )
    users_add.set_defaults(handler=command_users_add)
    users_commands.add_parser(
        "list", help="every user, with key prefix and revocation"
    ).set_defaults(handler=command_users_list)
    users_revoke = users_commands.add_parser("revoke", help="revoke a user's key")
    users_revoke.add_argument("name")
    users_revoke.set_defaults(handler=command_users_revoke)


def command_users_add(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq users add NAME [--operator]`: the key is printed once, here, and never again."""
    from shared.identity import add_user

    async def add(conn: asyncpg.Connection) -> None:
        user, key = await add_user(conn, args.name, operator=args.operator)
        role = "operator " if user.operator else ""
        print(f"{role}user {user.name} ({user.id}) added; their API key, shown only now:")
        print(key)

    return as_owner(settings, add)


def command_users_list(_: argparse.Namespace, settings: ControlSettings) -> int:
    from shared.identity import list_users

    async def show(conn: asyncpg.Connection) -> None:
        print(f"{'name':<24} {'id':<20} {'key':<14} {'created':<17} {'revoked':<17} operator")
        for user in await list_users(conn):
            revoked = f"{user.revoked_at:%Y-%m-%d %H:%M}" if user.revoked_at else "-"
            key = f"{user.key_prefix}…" if user.key_prefix else "(no key)"
            print(
                f"{user.name:<24} {user.id:<20} {key:<14} "
                f"{user.created_at:%Y-%m-%d %H:%M} {revoked:<17} "
                f"{'yes' if user.operator else '-'}"
            )

    return as_owner(settings, show)


def command_users_revoke(args: argparse.Namespace, settings: ControlSettings) -> int:
    from shared.identity import revoke_user

    async def revoke(conn: asyncpg.Connection) -> None:
        user = await revoke_user(conn, args.name)
        print(f"user {user.name}: key {user.key_prefix}… revoked")

    return as_owner(settings, revoke)


def as_owner(
    settings: ControlSettings, action: Callable[[asyncpg.Connection], Awaitable[None]]
) -> int:
    """Run `action` on a connection as the database's owner: exit 0, or 2 when the users
    refuse it (an unknown or taken name), said on stderr as `finq users: ...`."""
    import asyncpg

    from shared.identity import IdentityError

    async def run() -> int:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            await action(conn)
            return 0
        except IdentityError as error:
            print(f"finq users: {error}", file=sys.stderr)
            return 2
        finally:
            await conn.close()

    return asyncio.run(run())
