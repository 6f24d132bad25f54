"""Commands that act for a user they name connect as the database's owner (the operator's
DSN) and look the user up by name; then `shared.db.acting_as` makes every row written that
user's and every read that user's only. `finq portfolio` and the demo user use them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg


class UnknownUser(LookupError):
    """No user has the name a command was given."""


async def owner_pool(dsn: str) -> asyncpg.Pool:
    """A small pool as the database's owner, for one command's reads and writes."""
    from shared.db import create_pool

    return await create_pool(dsn, min_size=1, max_size=2)


async def user_id_of(pool: asyncpg.Pool, name: str) -> str:
    """The id of the user named `name` (the owner reads the users table)."""
    user_id = await pool.fetchval("SELECT id FROM users WHERE name = $1", name)
    if user_id is None:
        raise UnknownUser(f"no user named {name!r} (finq users list)")
    return str(user_id)
