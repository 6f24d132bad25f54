"""Isolation in the database, not only in the code: every user-owned table has row-level
security enabled and forced; the services' role is not the owner, is no superuser and
cannot bypass it, and logs in with a SCRAM password; a transaction sees and writes only
the rows of the user it acts for, and none when it acts for no one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest

from services.control.servers import SERVICE_ROLE
from shared.db import (
    ACT_AS_SQL,
    acting_as,
    create_pool,
    ensure_service_role,
    list_migrations,
    login_of,
    migrate,
)
from tests.conftest import Servers

# The tables whose rows belong to a user.
PORTFOLIO_OWNED = {"accounts", "portfolio_imports", "trades", "income", "transfers"}
USER_OWNED = {
    "questions",
    "answers",
    "conversations",
    "messages",
    "query_log",
    "documents",
    *PORTFOLIO_OWNED,
}
USER_OWNED_CHILDREN = {"chunks"}  # a document's, owned by its uploader


def service_dsn(servers: Servers, owner_dsn: str) -> str:
    return servers.postgres.service_dsn_for(urlsplit(owner_dsn).path.lstrip("/"))


@pytest.fixture
async def owner(database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database)
    yield conn
    await conn.close()


@pytest.fixture
async def service(servers: Servers, database: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(service_dsn(servers, database))
    yield conn
    await conn.close()


async def seed_two_users(owner: asyncpg.Connection) -> None:
    """A conversation, question, answer, turn and log row for alice and for bob, and a
    portfolio: an account, an import, and a trade, an income and a transfer row."""
    for user in ("alice", "bob"):
        await seed_portfolio(owner, user)
        await owner.execute(
            "INSERT INTO conversations (id, user_id, title) VALUES ($1, $2, 'q')", f"c-{user}", user
        )
        await owner.execute(
            "INSERT INTO questions (request_id, conversation_id, user_id, question, deadline) "
            "VALUES ($1, $2, $3, 'q', now() + interval '1 minute')",
            f"r-{user}",
            f"c-{user}",
            user,
        )
        await owner.execute(
            "INSERT INTO answers (request_id, answer, body, validation_passed, "
            "validation_severity, attempt, user_id) VALUES ($1, 'a', '{}', true, 'none', 0, $2)",
            f"r-{user}",
            user,
        )
        await owner.execute(
            "INSERT INTO messages (conversation_id, request_id, role, content, user_id) "
            "VALUES ($1, $2, 'user', 'q', $3)",
            f"c-{user}",
            f"r-{user}",
            user,
        )
        await owner.execute(
            "INSERT INTO query_log (request_id, conversation_id, user_id, question, validation, "
            "attempts) VALUES ($1, $2, $3, 'q', '{}', 1)",
            f"r-{user}",
            f"c-{user}",
            user,
        )


async def seed_portfolio(owner: asyncpg.Connection, user: str) -> None:
    await owner.execute("INSERT INTO users (id, name) VALUES ($1, $1)", user)
    account = await owner.fetchval(
        "INSERT INTO accounts (user_id, name, kind) VALUES ($1, 'Brokerage', 'brokerage') "
        "RETURNING id",
        user,
    )
    imported = await owner.fetchval(
        "INSERT INTO portfolio_imports (user_id, file_name, sha256, rows) "
        "VALUES ($1, 'a.csv', repeat('0', 64), 3) RETURNING id",
        user,
    )
    ids = (user, imported, account)
    await owner.execute(
        "INSERT INTO transfers (user_id, import_id, account_id, row, kind, amount, trade_date, "
        "settlement_date) VALUES ($1, $2, $3, 2, 'deposit', 100, '2023-01-03', '2023-01-03')",
        *ids,
    )
    await owner.execute(
        "INSERT INTO trades (user_id, import_id, account_id, row, side, symbol, quantity, price, "
        "amount, trade_date, settlement_date) VALUES ($1, $2, $3, 3, 'buy', 'AAPL', 1, 90, -90, "
        "'2023-01-04', '2023-01-05')",
        *ids,
    )
    await owner.execute(
        "INSERT INTO income (user_id, import_id, account_id, row, kind, amount, trade_date, "
        "settlement_date) VALUES ($1, $2, $3, 4, 'interest', 1, '2023-01-31', '2023-01-31')",
        *ids,
    )


async def insert_document(conn: asyncpg.Connection, user_id: str | None, title: str) -> str:
    document_id = uuid.uuid4()
    await conn.execute(
        "INSERT INTO documents (id, collection, title, doc_type, content_sha256, user_id, "
        "status) VALUES ($1, $2, $3, 'txt', $4, $5, 'ready')",
        document_id,
        "filings" if user_id is None else "uploads",
        title,
        uuid.uuid4().hex,
        user_id,
    )
    await conn.execute(
        "INSERT INTO chunks (document_id, chunk_index, text, quality, collection, user_id) "
        "VALUES ($1, 0, $2, 1, $3, $4)",
        document_id,
        title,
        "filings" if user_id is None else "uploads",
        user_id,
    )
    return str(document_id)


async def test_every_user_owned_table_has_row_level_security_enabled_and_forced(
    owner: asyncpg.Connection,
) -> None:
    with_user_id = {
        row["table_name"]
        for row in await owner.fetch(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND column_name = 'user_id'"
        )
    }
    assert with_user_id >= USER_OWNED | USER_OWNED_CHILDREN
    rows = await owner.fetch(
        "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
        "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relname = ANY($1)",
        sorted(with_user_id),
    )
    assert {row["relname"] for row in rows} == with_user_id
    for row in rows:
        assert row["relrowsecurity"], f"{row['relname']} has row-level security disabled"
        assert row["relforcerowsecurity"], f"{row['relname']} does not force it on its owner"
        policies = await owner.fetchval(
            "SELECT count(*) FROM pg_policies WHERE tablename = $1", row["relname"]
        )
        assert policies >= 2, f"{row['relname']} has no policy for its users"


async def test_the_services_role_owns_nothing_is_no_superuser_and_cannot_bypass_the_policies(
    servers: Servers, owner: asyncpg.Connection
) -> None:
    role = login_of(servers.postgres.service_dsn).user
    assert role == SERVICE_ROLE
    attributes = await owner.fetchrow(
        "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolcanlogin "
        "FROM pg_roles WHERE rolname = $1",
        role,
    )
    assert attributes is not None
    assert attributes["rolcanlogin"]
    assert not attributes["rolsuper"] and not attributes["rolbypassrls"]
    assert not attributes["rolcreaterole"] and not attributes["rolcreatedb"]
    owned = await owner.fetch(
        "SELECT relname FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles "
        "WHERE rolname = $1)",
        role,
    )
    assert owned == []
    assert not await owner.fetchval("SELECT has_schema_privilege($1, 'public', 'CREATE')", role)
    # The key digests stay out of its reach; it asks a function whose key is whose.
    assert not await owner.fetchval("SELECT has_table_privilege($1, 'users', 'SELECT')", role)
    # Its password is kept as a SCRAM verifier, never in clear or as MD5.
    verifier = await owner.fetchval("SELECT rolpassword FROM pg_authid WHERE rolname = $1", role)
    assert verifier.startswith("SCRAM-SHA-256$")


async def test_the_services_log_in_with_their_password_and_no_one_without_one(
    servers: Servers,
) -> None:
    good = await asyncpg.connect(servers.postgres.service_dsn)
    assert await good.fetchval("SELECT current_user") == SERVICE_ROLE
    await good.close()
    wrong = servers.postgres.service_dsn.replace(servers.postgres.service_password(), "guess")
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(wrong)
    # The owner is reached over the data folder's socket only, never over TCP unchecked.
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{servers.postgres.port}/finq")


async def test_a_transaction_that_acts_for_no_user_sees_and_writes_no_users_rows(
    owner: asyncpg.Connection, service: asyncpg.Connection
) -> None:
    await seed_two_users(owner)
    for table in sorted(USER_OWNED):
        assert (
            await service.fetchval(f"SELECT count(*) FROM {table} WHERE user_id IS NOT NULL") == 0
        )
    with pytest.raises(asyncpg.PostgresError):
        await service.execute("INSERT INTO conversations (id, title) VALUES ('c-nobody', 't')")


async def test_acting_for_a_user_shows_and_changes_only_that_users_rows(
    owner: asyncpg.Connection, service: asyncpg.Connection
) -> None:
    await seed_two_users(owner)
    async with service.transaction():
        await service.execute(ACT_AS_SQL, "alice")
        for table in sorted(USER_OWNED - {"documents"}):
            users = {row["user_id"] for row in await service.fetch(f"SELECT user_id FROM {table}")}
            assert users == {"alice"}, table
        # Bob's rows are not there to change or remove.
        assert await service.execute("UPDATE conversations SET title = 'x' WHERE id = 'c-bob'") == (
            "UPDATE 0"
        )
        assert await service.execute("DELETE FROM messages WHERE user_id = 'bob'") == "DELETE 0"
        assert await service.execute("DELETE FROM trades WHERE user_id = 'bob'") == "DELETE 0"
        # A row written while acting for alice is hers by default.
        await service.execute("INSERT INTO conversations (id, title) VALUES ('c-alice-2', 't')")
    assert await owner.fetchval("SELECT user_id FROM conversations WHERE id = 'c-alice-2'") == (
        "alice"
    )
    async with service.transaction():
        await service.execute(ACT_AS_SQL, "alice")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            # Nor can she write a row in bob's name, or move one of hers to him.
            await service.execute(
                "INSERT INTO conversations (id, user_id, title) VALUES ('c-forged', 'bob', 't')"
            )
    async with service.transaction():
        await service.execute(ACT_AS_SQL, "alice")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await service.execute("UPDATE conversations SET user_id = 'bob' WHERE id = 'c-alice'")
    assert await owner.fetchval("SELECT title FROM conversations WHERE id = 'c-bob'") == "q"
    assert await owner.fetchval("SELECT count(*) FROM messages WHERE user_id = 'bob'") == 1
    assert await owner.fetchval("SELECT count(*) FROM trades WHERE user_id = 'bob'") == 1


async def test_public_documents_are_read_by_everyone_and_an_upload_by_its_uploader_only(
    owner: asyncpg.Connection, service: asyncpg.Connection
) -> None:
    public = await insert_document(owner, None, "Apple 10-K 2023")
    alices = await insert_document(owner, "alice", "alice's fake Apple 10-K")
    for user, expected in (("alice", {public, alices}), ("bob", {public})):
        async with service.transaction():
            await service.execute(ACT_AS_SQL, user)
            seen = {str(row["id"]) for row in await service.fetch("SELECT id FROM documents")}
            chunks = {
                str(row["document_id"])
                for row in await service.fetch("SELECT document_id FROM chunks")
            }
            assert seen == chunks == expected, user
    assert await owner.fetchval("SELECT public FROM documents WHERE id = $1", uuid.UUID(public))
    assert not await owner.fetchval("SELECT public FROM documents WHERE id = $1", uuid.UUID(alices))
    async with service.transaction():
        await service.execute(ACT_AS_SQL, "alice")
        # A user cannot relabel a public filing, nor add one.
        assert await service.execute(
            "UPDATE documents SET title = 'mine' WHERE user_id IS NULL"
        ) == ("UPDATE 0")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await insert_document(service, None, "an official-looking filing")


async def test_the_services_role_asks_whose_a_key_is_without_reading_the_keys(
    owner: asyncpg.Connection, service: asyncpg.Connection
) -> None:
    from shared.identity import add_user, user_for_key

    user, key = await add_user(owner, "erin")
    assert await user_for_key(service, key) == user.id
    assert await user_for_key(service, "finq_" + "B" * 43) is None
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await service.fetch("SELECT key_sha256 FROM users")


@pytest.mark.parametrize("user_id", ["alice", "o'brien\\"])
async def test_a_pooled_scope_acts_for_its_user_and_leaves_the_connection_acting_for_no_one(
    servers: Servers, owner: asyncpg.Connection, database: str, user_id: str
) -> None:
    """Ids written into the SQL (no quote) and ids sent as a parameter behave alike; the
    pool sends no reset on release, so the setting must end with the transaction."""
    await seed_two_users(owner)
    if user_id != "alice":
        await owner.execute(
            "INSERT INTO conversations (id, user_id, title) VALUES ('c-odd', $1, 'odd')", user_id
        )
    pool = await create_pool(service_dsn(servers, database), min_size=1, max_size=1)
    try:
        scope = acting_as(pool, user_id)
        assert await scope.fetchval("SELECT current_setting('app.user_id')") == user_id
        seen = {row["user_id"] for row in await scope.fetch("SELECT user_id FROM conversations")}
        assert seen == {user_id}
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await scope.execute(
                "INSERT INTO conversations (id, user_id, title) VALUES ('c-x', 'bob', 't')"
            )
        async with pool.acquire() as conn:  # the same, only connection, back in the pool
            assert await conn.fetchval("SELECT finq_acting_user()") is None
            assert await conn.fetchval("SELECT count(*) FROM conversations") == 0
    finally:
        await pool.close()


async def assert_logs_in_reads_figures_and_no_user_table(service_dsn: str) -> None:
    """The services' role made by ensure_service_role: it logs in, reads the figures and is
    refused the table of users (kept for the owner's SECURITY DEFINER functions)."""
    conn = await asyncpg.connect(service_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM metric_values") >= 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM users")
    finally:
        await conn.close()


async def test_an_owner_that_is_no_superuser_can_prepare_the_services_role_twice(
    servers: Servers, database: str, owner: asyncpg.Connection
) -> None:
    """As CloudNativePG's application owner is (CREATEROLE, no superuser, no CREATEDB): on
    PostgreSQL 16 and later such a role may not name SUPERUSER, REPLICATION, BYPASSRLS or
    CREATEDB in an ALTER ROLE at all, even to keep them off, so the second run (every
    start of `finq migrate`) must only set what differs."""
    suffix = uuid.uuid4().hex[:8]
    app_owner, service_role = f"app_owner_{suffix}", f"app_service_{suffix}"
    name = urlsplit(database).path.lstrip("/")
    await owner.execute(f"CREATE ROLE {app_owner} LOGIN CREATEROLE")
    try:
        # What it needs to hand on: the tables, sequences and functions with grant option.
        await owner.execute(f'GRANT CONNECT ON DATABASE "{name}" TO {app_owner} WITH GRANT OPTION')
        await owner.execute(f"GRANT USAGE ON SCHEMA public TO {app_owner} WITH GRANT OPTION")
        for kind in ("TABLES", "SEQUENCES", "FUNCTIONS"):
            await owner.execute(
                f"GRANT ALL ON ALL {kind} IN SCHEMA public TO {app_owner} WITH GRANT OPTION"
            )
        host = urlsplit(database).query  # the Unix socket of the session's server
        owner_dsn = f"postgresql://{app_owner}@/{name}?{host}"
        password = uuid.uuid4().hex
        port = servers.postgres.port
        service = f"postgresql://{service_role}:{password}@127.0.0.1:{port}/{name}"
        assert await ensure_service_role(owner_dsn, service) == service_role
        # An attribute that drifted, one this owner may set: the second run takes it back.
        await owner.execute(f"ALTER ROLE {service_role} CREATEROLE")
        assert await ensure_service_role(owner_dsn, service) == service_role
        role = await owner.fetchrow(
            "SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, "
            "rolreplication FROM pg_roles WHERE rolname = $1",
            service_role,
        )
        assert tuple(role) == (True, False, False, False, False, False)
        await assert_logs_in_reads_figures_and_no_user_table(service)
    finally:
        await owner.execute(f"DROP OWNED BY {app_owner}, {service_role}")
        await owner.execute(f"DROP ROLE IF EXISTS {service_role}")
        await owner.execute(f"DROP ROLE {app_owner}")


async def test_the_migrations_run_under_an_owner_that_is_no_superuser_once_vector_is_made(
    servers: Servers,
) -> None:
    """As in deploy/k8s-cnpg: CloudNativePG makes the database's owner with CREATEROLE and
    no superuser, and its postInitApplicationSQL (run as a superuser) makes the one thing
    the migrations cannot: the vector extension, which pgvector does not mark trusted. Every
    migration, and the services' role, then need nothing more of the owner."""
    suffix = uuid.uuid4().hex[:8]
    app_owner, name = f"cnpg_owner_{suffix}", f"cnpg_{suffix}"
    service_role = f"cnpg_service_{suffix}"
    admin = await asyncpg.connect(servers.postgres.dsn)
    try:
        await admin.execute(f"CREATE ROLE {app_owner} LOGIN CREATEROLE")
        await admin.execute(f'CREATE DATABASE "{name}" OWNER {app_owner}')
        superuser_here = await asyncpg.connect(servers.postgres.dsn_for(name))
        try:
            await superuser_here.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            await superuser_here.close()
        host = urlsplit(servers.postgres.dsn).query  # the Unix socket
        owner_dsn = f"postgresql://{app_owner}@/{name}?{host}"
        applied = await migrate(owner_dsn)
        assert len(applied) == len(list_migrations())
        assert await migrate(owner_dsn) == []
        password = uuid.uuid4().hex
        service = f"postgresql://{service_role}:{password}@127.0.0.1:{servers.postgres.port}/{name}"
        for _ in range(2):  # every start of `finq migrate`
            assert await ensure_service_role(owner_dsn, service) == service_role
        await assert_logs_in_reads_figures_and_no_user_table(service)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f"DROP ROLE IF EXISTS {service_role}")
        await admin.execute(f"DROP ROLE IF EXISTS {app_owner}")
        await admin.close()
