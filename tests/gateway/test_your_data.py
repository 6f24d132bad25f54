"""A user's own data through the API: their documents listed (with the public filings),
filtered and paged; an upload deleted with everything read from it, so search never finds
it again and no row anywhere names it; a conversation deleted with its questions, answers
and logs; everything they own exported (never a key); and the account deleted, every
user-owned table of the database (found from its catalog) left with no row of theirs while
another user's rows stay. Each test's people are its own, on the session's pipeline (real
PostgreSQL with row-level security, real NATS, the five stages)."""

from __future__ import annotations

import hashlib
import os
import string
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from services.tools.document_search import DocumentSearch
from shared.account_data import OWNED_TABLES, delete_account
from shared.db import create_pool
from shared.embeddings import MiniLMEmbedder
from shared.identity import LOCAL_USER, add_user
from shared.portfolio.demo import import_demo_history
from shared.tools import SearchDocumentsArgs
from tests.conftest import RunningFinq, Servers
from tests.helpers import wait_until

# An upload is read (parsed, embedded) by the ingest stage; the first one loads its model.
INGEST_SECONDS = 240
# The kinds of column an id can be written in.
TEXT_TYPES = ("text", "character varying", "uuid", "jsonb", "json")


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def new_person(finq: RunningFinq, role: str, portfolio: bool = False) -> Person:
    """A user of this test's own (and, with `portfolio`, the demo history imported)."""
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        user, key = await add_user(owner, f"{role}-{os.urandom(4).hex()}")
    finally:
        await owner.close()
    if portfolio:
        pool = await asyncpg.create_pool(finq.servers.postgres.dsn, min_size=1, max_size=2)
        assert pool is not None
        try:
            outcome = await import_demo_history(pool, user.id)
        finally:
            await pool.close()
        assert outcome.errors == [], outcome
    return Person(user.id, user.name, key)


@pytest.fixture
async def owner(finq: RunningFinq) -> AsyncIterator[asyncpg.Connection]:
    """The database's owner, who sees every row: to check what the API left behind."""
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    yield conn
    await conn.close()


async def upload(
    client: httpx.AsyncClient, person: Person, name: str, text: str, **fields: str
) -> str:
    """An upload of `text` as `name`, read to the end by the ingest stage; its id."""
    sent = await client.post(
        "/v1/documents",
        files={"file": (name, text.encode(), "text/markdown")},
        data=fields,
        headers=person.headers,
    )
    assert sent.status_code == 202, sent.text
    document_id: str = sent.json()["id"]

    async def read() -> bool:
        job = await client.get(f"/v1/documents/{document_id}", headers=person.headers)
        assert job.json()["status"] != "failed", job.text
        return job.json()["status"] == "ready"

    await wait_until(read, within=INGEST_SECONDS, every=0.25)
    return document_id


async def ask(client: httpx.AsyncClient, person: Person, question: str, **more: str) -> Any:
    asked = await client.post(
        "/v1/ask", json={"question": question, **more}, headers=person.headers
    )
    assert asked.status_code == 200, asked.text
    return asked.json()


async def user_owned_tables(owner: asyncpg.Connection) -> list[str]:
    """Every table of the database that holds a user's rows: the ones with a `user_id`
    column, as the catalog says (a table added later is found the same way)."""
    rows = await owner.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid "
        "WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attname = 'user_id' "
        "AND NOT a.attisdropped ORDER BY c.relname"
    )
    return [row["relname"] for row in rows]


async def rows_of_user(owner: asyncpg.Connection, user_id: str) -> dict[str, int]:
    """How many rows of `user_id` each user-owned table holds (and the users table)."""
    counts = {
        table: await owner.fetchval(f"SELECT count(*) FROM {table} WHERE user_id = $1", user_id)
        for table in await user_owned_tables(owner)
    }
    counts["users"] = await owner.fetchval("SELECT count(*) FROM users WHERE id = $1", user_id)
    return counts


async def rows_naming(owner: asyncpg.Connection, value: str) -> dict[str, int]:
    """Every table's rows holding `value` in any column an id can be written in."""
    columns = await owner.fetch(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = 'public' AND data_type = ANY($1::text[])",
        list(TEXT_TYPES),
    )
    found: dict[str, int] = {}
    for column in columns:
        table, name = column["table_name"], column["column_name"]
        count = await owner.fetchval(
            f'SELECT count(*) FROM "{table}" WHERE "{name}"::text LIKE $1', f"%{value}%"
        )
        if count:
            found[f"{table}.{name}"] = count
    return found


def a_ticker() -> str:
    """A company ticker no other test uses (ZZQKRT): letters only, as tickers are."""
    return "ZZ" + "".join(string.ascii_uppercase[byte % 26] for byte in os.urandom(4))


async def add_public_filing(
    owner: asyncpg.Connection, symbol: str, form: str, year: int, quarter: int | None = None
) -> str:
    """A filing finq holds for everyone (no user), as `finq ingest filings` stores one."""
    return str(
        await owner.fetchval(
            "INSERT INTO documents (collection, title, doc_type, symbol, form, fiscal_year, "
            "fiscal_quarter, content_sha256, status, progress) "
            "VALUES ('filings', $1, 'html', $2, $3, $4, $5, $6, 'ready', 1) RETURNING id",
            f"{symbol} {form} FY{year}",
            symbol,
            form,
            year,
            quarter,
            uuid.uuid4().hex,
        )
    )


async def test_the_list_holds_my_uploads_then_the_public_filings_filtered_and_paged(
    client: httpx.AsyncClient, finq: RunningFinq, owner: asyncpg.Connection
) -> None:
    alice, bob = await new_person(finq, "lister"), await new_person(finq, "other")
    ticker = a_ticker()
    # In the order they are listed: the latest period first.
    filings = [
        await add_public_filing(owner, ticker, "10-K", 2023),
        await add_public_filing(owner, ticker, "10-Q", 2023, 2),
        await add_public_filing(owner, ticker, "10-K", 2022),
    ]
    try:
        hers = await upload(
            client, alice, "notes.md", "# Notes\n\nOn the company.\n", symbol=ticker.lower()
        )
        other = await upload(client, alice, "other.md", "# Other\n\nNo company named.\n")
        his = await upload(client, bob, "his.md", "# His\n\nBob's own.\n", symbol=ticker)

        async def listed(person: Person, **query: str | int) -> Any:
            response = await client.get("/v1/documents", params=query, headers=person.headers)
            assert response.status_code == 200, response.text
            return response.json()

        everything = await listed(alice, company=ticker)
        assert [d["id"] for d in everything["documents"]] == [hers, *filings]
        assert everything["total"] == 4 and everything["documents"][0]["public"] is False
        assert all(d["public"] for d in everything["documents"][1:])
        # Her own uploads only, of any company; never another user's.
        mine = await listed(alice, scope="uploads", limit=100)
        assert {d["id"] for d in mine["documents"]} == {hers, other}
        assert mine["total"] == 2
        theirs = await listed(bob, company=ticker)
        assert [d["id"] for d in theirs["documents"]] == [his, *filings]
        filed = await listed(alice, company=ticker, scope="filings", form="10-k")
        assert [d["id"] for d in filed["documents"]] == [filings[0], filings[2]]
        of_2023 = await listed(alice, company=ticker, fiscal_year=2023, scope="filings")
        assert [d["id"] for d in of_2023["documents"]] == filings[:2]
        # Pages: the same total on each, and together every document once.
        first = await listed(alice, company=ticker, limit=3, offset=0)
        second = await listed(alice, company=ticker, limit=3, offset=3)
        assert (first["total"], second["total"]) == (4, 4)
        pages = [d["id"] for d in first["documents"] + second["documents"]]
        assert pages == [hers, *filings]
        past = await listed(alice, company=ticker, limit=3, offset=30)
        assert past["documents"] == [] and past["total"] == 4
    finally:
        await owner.execute("DELETE FROM documents WHERE id = ANY($1::uuid[])", filings)


async def test_a_deleted_upload_is_never_found_again_and_no_row_anywhere_names_it(
    client: httpx.AsyncClient,
    finq: RunningFinq,
    owner: asyncpg.Connection,
    minilm: MiniLMEmbedder,
) -> None:
    alice = await new_person(finq, "deleter")
    secret = f"Marlinfish{os.urandom(3).hex()}"
    memo = f"# Deal memo\n\n## Codename\n\nThe codename for the acquisition is {secret}.\n"
    document_id = await upload(client, alice, "deal-memo.md", memo)
    # A filing's statements are stored as figures beside its chunks (a markdown file has
    # no pages to cite, so the ingest stage stores none for this one): one as it would be.
    await owner.execute(
        "INSERT INTO statement_figures (document_id, user_id, statement, label, period_end, "
        "value, unit, page) VALUES ($1, $2, 'income', 'Revenue', '2023-09-30', 1, 'USD', 1)",
        uuid.UUID(document_id),
        alice.id,
    )
    service = await create_pool(finq.servers.postgres.service_dsn, min_size=1, max_size=2)
    search = DocumentSearch(minilm)
    query = SearchDocumentsArgs(query=f"What is the codename {secret} of the acquisition?")
    try:
        found = await search.search(service, query, alice.id)
        assert document_id in {p.document_id for p in found.passages}

        deleted = await client.delete(f"/v1/documents/{document_id}", headers=alice.headers)
        assert deleted.status_code == 204, deleted.text
        assert deleted.content == b""

        after = await search.search(service, query, alice.id)
        assert document_id not in {p.document_id for p in after.passages}
    finally:
        await service.close()
    job = await client.get(f"/v1/documents/{document_id}", headers=alice.headers)
    assert job.status_code == 404 and job.json()["code"] == "document_not_found"
    again = await client.delete(f"/v1/documents/{document_id}", headers=alice.headers)
    assert again.status_code == 404
    answer = await ask(client, alice, "What does the deal memo say about the codename?")
    assert secret not in answer["answer"]
    assert await rows_naming(owner, document_id) == {}
    assert await rows_naming(owner, secret) == {}


async def test_a_public_filing_is_refused_and_another_users_upload_is_not_found(
    client: httpx.AsyncClient, finq: RunningFinq, owner: asyncpg.Connection
) -> None:
    alice, bob = await new_person(finq, "keeper"), await new_person(finq, "intruder")
    filing = await add_public_filing(owner, a_ticker(), "10-K", 2023)
    try:
        refused = await client.delete(f"/v1/documents/{filing}", headers=alice.headers)
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "public_document"
        assert set(refused.json()) == {"code", "message"}
        hers = await upload(client, alice, "private.md", "# Private\n\nAlice's.\n")
        theirs = await client.delete(f"/v1/documents/{hers}", headers=bob.headers)
        assert theirs.status_code == 404 and theirs.json()["code"] == "document_not_found"
        still = await client.get(f"/v1/documents/{hers}", headers=alice.headers)
        assert still.status_code == 200
        assert await owner.fetchval("SELECT count(*) FROM documents WHERE id = $1::uuid", filing)
    finally:
        await owner.execute("DELETE FROM documents WHERE id = $1::uuid", filing)


async def test_a_deleted_conversation_takes_its_turns_questions_answers_and_logs(
    client: httpx.AsyncClient, finq: RunningFinq, owner: asyncpg.Connection
) -> None:
    alice, bob = await new_person(finq, "talker"), await new_person(finq, "listener")
    first = await ask(client, alice, "What was Apple's revenue in fiscal 2023?")
    conversation_id = first["conversation_id"]
    follow_up = await ask(client, alice, "And in 2022?", conversation_id=conversation_id)
    requests = [first["request_id"], follow_up["request_id"]]
    # A metric reading waiting on the conversation's next turn hangs off it too.
    await owner.execute(
        "INSERT INTO alias_pending (conversation_id, phrase, metric) VALUES ($1, 'sales', "
        "'revenue')",
        conversation_id,
    )
    path = f"/v1/conversations/{conversation_id}"

    theirs = await client.delete(path, headers=bob.headers)
    assert theirs.status_code == 404 and theirs.json()["code"] == "conversation_not_found"
    assert (await client.get(path, headers=alice.headers)).status_code == 200

    deleted = await client.delete(path, headers=alice.headers)
    assert deleted.status_code == 204, deleted.text
    assert (await client.get(path, headers=alice.headers)).status_code == 404
    for request_id in requests:
        log = await client.get(f"/v1/requests/{request_id}", headers=alice.headers)
        assert log.status_code == 404
    listed = await client.get("/v1/conversations", headers=alice.headers)
    assert conversation_id not in {c["id"] for c in listed.json()["conversations"]}
    assert (await client.delete(path, headers=alice.headers)).status_code == 404
    assert await rows_naming(owner, conversation_id) == {}
    for request_id in requests:
        assert await rows_naming(owner, request_id) == {}


async def test_the_export_holds_everything_i_own_and_never_a_key(
    client: httpx.AsyncClient, finq: RunningFinq, owner: asyncpg.Connection
) -> None:
    alice = await new_person(finq, "exporter", portfolio=True)
    bob = await new_person(finq, "bystander")
    answer = await ask(client, alice, "What was Apple's revenue in fiscal 2023?")
    document_id = await upload(client, alice, "diary.md", "# Diary\n\nA quiet week.\n")
    his = await ask(client, bob, "What was Apple's revenue in fiscal 2022?")

    response = await client.get("/v1/me/export", headers=alice.headers)
    assert response.status_code == 200, response.text
    exported = response.json()
    assert exported["user"]["id"] == alice.id and exported["user"]["name"] == alice.name
    assert [key["prefix"] for key in exported["keys"]] == [alice.key[:11]]
    conversation = next(
        c for c in exported["conversations"] if c["id"] == answer["conversation_id"]
    )
    assert [m["role"] for m in conversation["messages"]] == ["user", "assistant"]
    assert conversation["messages"][1]["answer"]["answer"] == answer["answer"]
    assert answer["request_id"] in {r["request_id"] for r in exported["requests"]}
    assert [d["id"] for d in exported["documents"]] == [document_id]
    assert exported["documents"][0]["source_name"] == "diary.md"
    portfolio = exported["portfolio"]
    for part, table in (
        ("accounts", "accounts"),
        ("imports", "portfolio_imports"),
        ("trades", "trades"),
        ("income", "income"),
        ("transfers", "transfers"),
    ):
        held = await owner.fetchval(f"SELECT count(*) FROM {table} WHERE user_id = $1", alice.id)
        assert len(portfolio[part]) == held > 0, part
    text = response.text
    assert alice.key not in text and hashlib.sha256(alice.key.encode()).hexdigest() not in text
    assert his["conversation_id"] not in text and bob.id not in text


async def test_deleting_my_account_leaves_no_row_of_mine_in_any_user_owned_table(
    client: httpx.AsyncClient, finq: RunningFinq, owner: asyncpg.Connection
) -> None:
    alice = await new_person(finq, "leaver", portfolio=True)
    bob = await new_person(finq, "stayer", portfolio=True)
    conversations: dict[str, str] = {}
    for person in (alice, bob):
        asked = await ask(client, person, "What was Apple's revenue in fiscal 2023?")
        conversations[person.id] = asked["conversation_id"]
        await owner.execute(
            "INSERT INTO alias_pending (conversation_id, phrase, metric) "
            "VALUES ($1, 'sales', 'revenue')",
            asked["conversation_id"],
        )
        document_id = await upload(client, person, "notes.md", f"# Notes\n\n{person.name}.\n")
        await owner.execute(
            "INSERT INTO statement_figures (document_id, user_id, statement, label, "
            "period_end, value, unit, page) "
            "VALUES ($1, $2, 'income', 'Revenue', '2023-09-30', 1, 'USD', 1)",
            uuid.UUID(document_id),
            person.id,
        )
    mine_before = await rows_of_user(owner, alice.id)
    # Every table holds some of her data before, but the uploads' files: those are dropped
    # once read (tests/gateway/test_deleting_while_ingesting.py deletes one still held).
    assert {table for table, count in mine_before.items() if not count} <= {"document_files"}
    his_before = await rows_of_user(owner, bob.id)

    deleted = await client.delete("/v1/me", headers=alice.headers)
    assert deleted.status_code == 200, deleted.text
    receipt = deleted.json()
    assert receipt["user_id"] == alice.id and receipt["user_removed"] is True
    assert receipt["rows"]["trades"] == mine_before["trades"]

    assert await rows_of_user(owner, alice.id) == dict.fromkeys(mine_before, 0)
    assert await rows_of_user(owner, bob.id) == his_before
    pending = {row["conversation_id"] for row in await owner.fetch("SELECT * FROM alias_pending")}
    assert conversations[alice.id] not in pending and conversations[bob.id] in pending
    refused = await client.get("/v1/conversations", headers=alice.headers)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    assert (await client.delete("/v1/me", headers=alice.headers)).status_code == 401
    assert (await client.get("/v1/conversations", headers=bob.headers)).status_code == 200


# --- without HTTP: what `finq users delete` runs ------------------------------------


@pytest.fixture
async def service_pool(servers: Servers, database: str) -> AsyncIterator[asyncpg.Pool]:
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=2)
    yield pool
    await pool.close()


async def test_the_tables_an_account_deletion_empties_are_every_table_holding_a_user(
    database: str,
) -> None:
    owner = await asyncpg.connect(database)
    try:
        assert sorted(OWNED_TABLES) == await user_owned_tables(owner)
    finally:
        await owner.close()


async def test_the_local_user_keeps_its_row_but_none_of_its_data(
    database: str, service_pool: asyncpg.Pool
) -> None:
    owner = await asyncpg.connect(database)
    try:
        await owner.execute(
            "INSERT INTO conversations (id, user_id, title) VALUES ('c-local', $1, 'q')",
            LOCAL_USER,
        )
        deleted = await delete_account(service_pool, LOCAL_USER)
        assert deleted.user_removed is False and deleted.rows["conversations"] == 1
        assert await owner.fetchval("SELECT count(*) FROM users WHERE id = $1", LOCAL_USER) == 1
        assert await rows_of_user(owner, LOCAL_USER) == {
            **dict.fromkeys(await user_owned_tables(owner), 0),
            "users": 1,
        }
    finally:
        await owner.close()
