"""Users and their API keys: made and revoked by `finq users`, checked by the gateway.

A key is `finq_` and 43 URL-safe characters (32 random bytes). It is shown once, when it is
made, and stored only as its SHA-256: with that much randomness a fast hash cannot be
reversed by guessing, and a lookup by hash is one indexed query. The gateway alone turns a
key into a user id; no stage takes identity from anything else.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

# Requests without a key act as this user when FINQ_AUTH=local (see migration 012).
LOCAL_USER = "local"
KEY_PREFIX = "finq_"
_KEY = re.compile(r"^finq_[A-Za-z0-9_-]{43}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
# What a `User` is read from (never the key's hash).
_USER_COLUMNS = "id, name, key_prefix, created_at, revoked_at, operator"


class Database(Protocol):
    async def fetchrow(self, query: str, *args: Any) -> Any: ...
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...
    async def execute(self, query: str, *args: Any) -> str: ...


class IdentityError(ValueError):
    """A user name or key that cannot be used, with the reason in words."""


@dataclass(frozen=True)
class User:
    id: str
    name: str
    key_prefix: str | None
    created_at: datetime
    revoked_at: datetime | None
    # May read how finq does for every user (GET /v1/admin/..., migration 018).
    operator: bool = False


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def looks_like_key(key: str) -> bool:
    return bool(_KEY.match(key))


async def add_user(db: Database, name: str, operator: bool = False) -> tuple[User, str]:
    """A new user and their API key (returned once, never stored); an operator may read
    how finq does for every user (the admin page)."""
    if not _NAME.match(name):
        raise IdentityError(
            f"{name!r} is not a user name: lowercase letters, digits, '.', '_' or '-', "
            "up to 63, starting with a letter or digit"
        )
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = await db.fetchrow(
        "INSERT INTO users (id, name, key_sha256, key_prefix, operator) "
        f"VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING {_USER_COLUMNS}",
        "u_" + secrets.token_hex(8),
        name,
        key_digest(key),
        key[: len(KEY_PREFIX) + 6],
        operator,
    )
    if row is None:
        raise IdentityError(f"a user named {name!r} exists already")
    return User(**dict(row)), key


async def list_users(db: Database) -> list[User]:
    rows = await db.fetch(f"SELECT {_USER_COLUMNS} FROM users ORDER BY created_at, name")
    return [User(**dict(row)) for row in rows]


async def revoke_user(db: Database, name: str) -> User:
    """Revoke a user's key: every later request with it gets 401. Their rows stay theirs."""
    row = await db.fetchrow(
        "UPDATE users SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1 "
        f"AND key_sha256 IS NOT NULL RETURNING {_USER_COLUMNS}",
        name,
    )
    if row is None:
        raise IdentityError(f"no user named {name!r} with a key")
    return User(**dict(row))


async def user_for_key(db: Database, key: str) -> str | None:
    """The id of the user a key belongs to, or None for an unknown or revoked key."""
    if not looks_like_key(key):
        return None
    # Through a SECURITY DEFINER function: the services' role cannot read the users table.
    row = await db.fetchrow("SELECT finq_user_for_key($1) AS id", key_digest(key))
    return None if row is None or row["id"] is None else str(row["id"])
