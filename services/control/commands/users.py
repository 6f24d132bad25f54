"""`finq users add NAME | list | revoke NAME | delete NAME`: who may ask, by API key."""

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
    users_delete = users_commands.add_parser(
        "delete", help="delete a user and every row of theirs (asks first)"
    )
    users_delete.add_argument("name")
    users_delete.add_argument("--yes", action="store_true", help="delete without asking")
    users_delete.set_defaults(handler=command_users_delete)


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


def command_users_delete(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq users delete NAME [--yes]`: what DELETE /v1/me does for a user, for an operator
    (shared/account_data.py): every row of theirs, then the user and their key. Asked on
    the terminal first, unless --yes; anything but yes deletes nothing."""
    from shared.account_data import delete_account
    from shared.identity import IdentityError

    async def delete(conn: asyncpg.Connection) -> None:
        user_id = await conn.fetchval("SELECT id FROM users WHERE name = $1", args.name)
        if user_id is None:
            raise IdentityError(f"no user named {args.name!r}")
        question = (
            f"Delete user {args.name} ({user_id}), their conversations, uploads, portfolio "
            "and every other row of theirs? This cannot be undone. [y/N] "
        )
        if not args.yes and not confirmed(question):
            raise IdentityError(f"user {args.name} was not deleted (not confirmed)")
        deleted = await delete_account(conn, user_id)
        rows = ", ".join(f"{table} {count}" for table, count in deleted.rows.items() if count)
        gone = "deleted, their key with them" if deleted.user_removed else "kept (it has no key)"
        print(f"user {args.name}: {sum(deleted.rows.values())} rows deleted ({rows or 'none'})")
        print(f"user {args.name} {gone}")

    return as_owner(settings, delete)


def confirmed(question: str) -> bool:
    """Whether the operator answers yes on the terminal (no answer at all is a no)."""
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


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
