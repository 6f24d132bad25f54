"""PostgreSQL access: the asyncpg pool (with pgvector registered) and the migration runner.

Migrations are plain SQL files in `shared/migrations/`, applied in file-name
order inside one transaction each and recorded in `schema_migrations`; an
advisory lock lets several processes start at once without racing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from pgvector.asyncpg import register_vector

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# An arbitrary constant shared by every finq process that migrates.
MIGRATION_LOCK_KEY = 0x66696E71  # "finq"


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)


async def create_pool(dsn: str, min_size: int = 2, max_size: int = 10) -> asyncpg.Pool:
    """The one pool a process uses; the schema must be migrated (the vector type must exist)."""
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection
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
