"""PostgreSQL access: the asyncpg pool (with pgvector registered) and the migration runner.

Migrations are plain SQL files in `shared/migrations/`, applied in file-name
order inside one transaction each and recorded in `schema_migrations`; an
advisory lock lets several processes start at once without racing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import asyncpg
from pgvector.asyncpg import register_vector

from shared.telemetry import database_span

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# An arbitrary constant shared by every finq process that migrates.
MIGRATION_LOCK_KEY = 0x66696E71  # "finq"


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)


class TracedConnection(asyncpg.Connection):  # type: ignore[misc]
    """A pooled connection whose every statement is a CLIENT span under the span in hand
    (a stage's `process` span, the gateway's request): a trace shows which queries a stage
    ran and how long each took. The pool's own reset on release is not traced."""

    def _traced(self, query: str) -> AbstractContextManager[object]:
        if query == self.get_reset_query():
            return nullcontext()
        return database_span(query)

    def get_reset_query(self) -> str:
        """None: a connection goes back to the pool as it came. finq keeps no session state
        on a pooled connection (the acting user is set for one transaction, temporary tables
        drop on commit, no LISTEN, no session advisory lock, no SET without LOCAL), and an
        open transaction is still rolled back on release. asyncpg's default would send
        `pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL` on every release: a
        round trip per transaction, in every stage, for nothing."""
        return ""

    # The user the next transaction acts for, sent with its BEGIN (UserScope.acquire).
    _act_as_on_begin: str | None = None

    def act_as_on_begin(self, user_id: str) -> None:
        """Make the next `BEGIN` (asyncpg's, as `transaction()` starts) also set
        `app.user_id` to `user_id`, in the same simple query. Only for an id that a SQL
        literal holds as it is (LITERAL_USER_ID): it is written into the statement."""
        if not LITERAL_USER_ID.match(user_id):
            raise ValueError("this user id must be sent as a parameter")
        self._act_as_on_begin = user_id

    async def execute(self, query: str, *args: Any, **options: Any) -> str:
        act_as, self._act_as_on_begin = self._act_as_on_begin, None
        if act_as is not None and query.startswith("BEGIN") and not args:
            with self._traced(query):
                merged = f"{query} SELECT set_config('app.user_id', '{act_as}', true);"
                return str(await super().execute(merged, **options))
        with self._traced(query):
            return str(await super().execute(query, *args, **options))

    async def executemany(self, command: str, args: Any, **options: Any) -> None:
        with self._traced(command):
            await super().executemany(command, args, **options)

    async def fetch(self, query: str, *args: Any, **options: Any) -> list[Any]:
        with self._traced(query):
            return list(await super().fetch(query, *args, **options))

    async def fetchrow(self, query: str, *args: Any, **options: Any) -> Any:
        with self._traced(query):
            return await super().fetchrow(query, *args, **options)

    async def fetchval(self, query: str, *args: Any, **options: Any) -> Any:
        with self._traced(query):
            return await super().fetchval(query, *args, **options)


# No statement and no client call waits longer than this: a query that hangs (a lock, an
# overloaded server) fails, and the work is retried or refused, instead of holding its
# message and its connection for ever.
QUERY_TIMEOUT_SECONDS = 15.0


async def create_pool(
    dsn: str,
    min_size: int = 2,
    max_size: int = 10,
    query_timeout_seconds: float = QUERY_TIMEOUT_SECONDS,
) -> asyncpg.Pool:
    """The one pool a process uses; the schema must be migrated (the vector type must exist).
    The server cancels a statement past `query_timeout_seconds` (statement_timeout, and
    lock_timeout for waiting on a lock), and the client gives up on a call a second after."""
    milliseconds = str(int(query_timeout_seconds * 1000))
    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        connection_class=TracedConnection,
        command_timeout=query_timeout_seconds + 1,
        timeout=10,  # establishing a connection
        server_settings={"statement_timeout": milliseconds, "lock_timeout": milliseconds},
    )


@dataclass(frozen=True)
class Migration:
    version: str
    path: Path

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]


def list_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    return [Migration(path.stem, path) for path in sorted(directory.glob("*.sql"))]


async def migrate(dsn: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply the migrations not yet applied; returns the versions applied now."""
    conn = await asyncpg.connect(dsn)
    applied_now: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
        try:
            await conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version    text PRIMARY KEY,
                       checksum   text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {
                row["version"]: row["checksum"]
                for row in await conn.fetch("SELECT version, checksum FROM schema_migrations")
            }
            for migration in list_migrations(directory):
                if migration.version in done:
                    continue
                async with conn.transaction():
                    await conn.execute(migration.path.read_text())
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)",
                        migration.version,
                        migration.checksum,
                    )
                applied_now.append(migration.version)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    finally:
        await conn.close()
    return applied_now


async def ensure_database(dsn: str) -> None:
    """Create the DSN's database if the server does not have it yet (a fresh data folder)."""
    url = urlsplit(dsn)
    name = url.path.lstrip("/")
    if not name:
        return
    admin_dsn = urlunsplit(url._replace(path="/postgres"))
    conn = await asyncpg.connect(admin_dsn)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            # Identifiers cannot be bound as parameters; quote it the way Postgres does.
            quoted = await conn.fetchval("SELECT quote_ident($1)", name)
            await conn.execute(f"CREATE DATABASE {quoted}")
    finally:
        await conn.close()


# The setting every row-level security policy reads (shared/migrations/013): local to the
# transaction, so a pooled connection never carries one user's identity into another's work.
ACT_AS_SQL = "SELECT set_config('app.user_id', $1, true)"


# The user ids finq makes (`u_<hex>`, `local`, the demo's) and any other made only of
# these characters, which a single-quoted SQL literal holds as they are.
LITERAL_USER_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,200}$")


class UserScope:
    """A pool whose every connection acts for one user: each `acquire()` is a transaction
    that has set `app.user_id`, so row-level security shows that user's rows (and the public
    ones) and refuses to write any other user's. The methods a pool offers for one statement
    run it in a transaction of its own. Code written against a pool takes one unchanged."""

    def __init__(self, pool: asyncpg.Pool, user_id: str) -> None:
        if not user_id:
            raise ValueError("a user scope needs a user id")
        self.pool = pool
        self.user_id = user_id

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        async with self.pool.acquire() as conn:
            # A connection of finq's pool sends the setting with the transaction's BEGIN,
            # one round trip instead of two (TracedConnection.act_as_on_begin).
            merged = LITERAL_USER_ID.match(self.user_id) and hasattr(conn, "act_as_on_begin")
            if merged:
                conn.act_as_on_begin(self.user_id)
            async with conn.transaction():
                if not merged:
                    await conn.execute(ACT_AS_SQL, self.user_id)
                yield conn

    async def execute(self, query: str, *args: Any) -> str:
        async with self.acquire() as conn:
            return str(await conn.execute(query, *args))

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        async with self.acquire() as conn:
            return list(await conn.fetch(query, *args))

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        async with self.acquire() as conn:
            return await conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        async with self.acquire() as conn:
            return await conn.fetchval(query, *args)


# What code that runs a statement or takes a connection accepts: the pool itself (the
# owner's commands, public data) or the pool acting for one user.
DatabasePool = asyncpg.Pool | UserScope


def acting_as(pool: asyncpg.Pool, user_id: str) -> UserScope:
    """`pool` as `user_id` sees the database."""
    return UserScope(pool, user_id)


# What the services' role may do: read and write rows (row-level security decides which),
# never read the users table or the migration record, never change the schema.
_SERVICE_ROLE_TABLES_DENIED = ("users", "schema_migrations")
_SERVICE_ROLE_FUNCTIONS = (
    "finq_user_for_key(text)",
    "finq_unanswered_questions(timestamptz, timestamptz)",
    "finq_unfinished_uploads(text, timestamptz)",
    "finq_acting_user_is_operator()",
    "finq_operator_questions(text, timestamptz, integer)",
    "finq_operator_question(text)",
    "finq_acting_user_account()",
    "finq_forget_acting_user()",
)


# The services' role's attributes: pg_roles' column, the keyword, and whether it is on.
_SERVICE_ROLE_ATTRIBUTES = {
    "rolcanlogin": ("LOGIN", True),
    "rolsuper": ("SUPERUSER", False),
    "rolcreatedb": ("CREATEDB", False),
    "rolcreaterole": ("CREATEROLE", False),
    "rolbypassrls": ("BYPASSRLS", False),
    "rolreplication": ("REPLICATION", False),
}


@dataclass(frozen=True)
class RoleLogin:
    user: str
    password: str


def login_of(dsn: str) -> RoleLogin:
    """The role and password a DSN logs in with (from its URL or its query string)."""
    url = urlsplit(dsn)
    query = {key: values[-1] for key, values in parse_qs(url.query).items()}
    return RoleLogin(
        unquote(url.username or query.get("user", "")),
        unquote(url.password or query.get("password", "")),
    )


SCRAM_ITERATIONS = 4096  # PostgreSQL's own default for the verifiers it makes


def scram_verifier(password: str, salt: bytes | None = None) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677): what
    `ALTER ROLE ... PASSWORD` accepts in place of the password itself."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    encoded = [base64.b64encode(part).decode() for part in (salt, stored_key, server_key)]
    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{encoded[0]}${encoded[1]}:{encoded[2]}"


async def ensure_service_role(owner_dsn: str, service_dsn: str) -> str | None:
    """Create (or bring up to date) the role the services connect as, from `service_dsn`'s
    user and password: a login role that is not a superuser, cannot bypass row-level
    security and owns nothing, with row privileges on the owner's tables. Returns the role,
    or None when the services connect as the owner (nothing to do)."""
    service = login_of(service_dsn)
    conn = await asyncpg.connect(owner_dsn)
    try:
        owner = await conn.fetchval("SELECT current_user")
        if not service.user or service.user == owner:
            return None
        if not service.password:
            raise ValueError(
                f"the services' DSN names role {service.user!r} without a password; "
                "finq's services authenticate with one (SCRAM)"
            )
        role = await conn.fetchval("SELECT quote_ident($1)", service.user)
        database = await conn.fetchval("SELECT quote_ident(current_database())")
        # Sent as its SCRAM verifier, never in clear: a statement the server logs (one that
        # failed, say) shows nothing that logs in.
        password = await conn.fetchval("SELECT quote_literal($1)", scram_verifier(service.password))
        # Roles are the cluster's, shared by its databases: two databases prepared at once
        # must not both create it.
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY + 1)
        try:
            current = await conn.fetchrow(
                f"SELECT {', '.join(_SERVICE_ROLE_ATTRIBUTES)} FROM pg_roles WHERE rolname = $1",
                service.user,
            )
            # A new role is given every attribute (CREATE ROLE takes every NO... from an owner
            # that is no superuser); an existing one only what differs: since PostgreSQL 16
            # an owner that is no superuser (as CloudNativePG's application owner) may not
            # name SUPERUSER, REPLICATION, BYPASSRLS, nor CREATEDB without having it, in an
            # ALTER ROLE at all, even to keep them off; the second start would fail on them.
            attributes = " ".join(
                keyword if wanted else f"NO{keyword}"
                for column, (keyword, wanted) in _SERVICE_ROLE_ATTRIBUTES.items()
                if current is None or current[column] != wanted
            )
            verb = "CREATE" if current is None else "ALTER"
            await conn.execute(f"{verb} ROLE {role} WITH {attributes} PASSWORD {password}")
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY + 1)
        await conn.execute(f"GRANT CONNECT ON DATABASE {database} TO {role}")
        await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        await conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
        denied = ", ".join(_SERVICE_ROLE_TABLES_DENIED)
        await conn.execute(f"REVOKE ALL ON {denied} FROM {role}")
        for function in _SERVICE_ROLE_FUNCTIONS:
            await conn.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {role}")
        return service.user
    finally:
        await conn.close()
