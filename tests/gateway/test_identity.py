"""Who is asking: API keys made by `finq users`, checked by the gateway alone, and an
authorization matrix over every endpoint that reads or writes a user's rows: only the
owner reads or writes; another user gets 404 (never a hint that the row exists); a wrong
or revoked key gets 401; without a key a local finq acts as the local user and a finq that
requires keys answers 401."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import asyncpg
import httpx
import pytest

from shared.identity import (
    IdentityError,
    add_user,
    list_users,
    looks_like_key,
    revoke_user,
    user_for_key,
)
from tests.conftest import RunningFinq, another_gateway
from tests.helpers import wait_until


async def test_a_key_is_shown_once_stored_as_a_hash_and_stops_working_when_revoked(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        user, key = await add_user(conn, "dana")
        assert looks_like_key(key) and user.key_prefix and key.startswith(user.key_prefix)
        stored = await conn.fetchval("SELECT key_sha256 FROM users WHERE name = 'dana'")
        assert key not in stored and len(stored) == 64
        assert await user_for_key(conn, key) == user.id
        with pytest.raises(IdentityError, match="exists already"):
            await add_user(conn, "dana")
        with pytest.raises(IdentityError, match="not a user name"):
            await add_user(conn, "Dana Smith")
        await revoke_user(conn, "dana")
        assert await user_for_key(conn, key) is None
        assert await user_for_key(conn, "finq_" + "x" * 43) is None
        assert [u.name for u in await list_users(conn)] == ["local", "dana"]
    finally:
        await conn.close()


@dataclass
class People:
    alice: str
    bob: str
    revoked: str


@pytest.fixture(scope="module")
def people(finq: RunningFinq) -> People:
    async def make() -> People:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            suffix = os.urandom(3).hex()
            _, alice = await add_user(conn, f"alice-{suffix}")
            _, bob = await add_user(conn, f"bob-{suffix}")
            _, carol = await add_user(conn, f"carol-{suffix}")
            await revoke_user(conn, f"carol-{suffix}")
            return People(alice, bob, carol)
        finally:
            await conn.close()

    import asyncio

    return asyncio.run(make())


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class AliceRows:
    conversation_id: str
    request_id: str
    document_id: str


@pytest.fixture
async def alice_rows(client: httpx.AsyncClient, people: People) -> AliceRows:
    asked = await client.post(
        "/v1/ask", json={"question": "Apple revenue fiscal 2023"}, headers=bearer(people.alice)
    )
    assert asked.status_code == 200, asked.text
    body = asked.json()
    uploaded = await client.post(
        "/v1/documents",
        files={"file": ("alice-notes.txt", b"Alice's private notes on Apple.\n", "text/plain")},
        headers=bearer(people.alice),
    )
    assert uploaded.status_code in (200, 202), uploaded.text
    return AliceRows(body["conversation_id"], body["request_id"], uploaded.json()["id"])


def reads(rows: AliceRows) -> list[tuple[str, str]]:
    return [
        ("GET", f"/v1/conversations/{rows.conversation_id}"),
        ("GET", f"/v1/requests/{rows.request_id}"),
        ("GET", f"/v1/documents/{rows.document_id}"),
    ]


def deletions(rows: AliceRows) -> list[tuple[str, str]]:
    return [
        ("DELETE", f"/v1/documents/{rows.document_id}"),
        ("DELETE", f"/v1/conversations/{rows.conversation_id}"),
    ]


# What reads or deletes the caller's data as a whole: no path names whose.
ACCOUNT_CALLS = [("GET", "/v1/documents"), ("GET", "/v1/me/export"), ("DELETE", "/v1/me")]


async def test_only_the_owner_reads_their_conversation_request_log_and_document(
    client: httpx.AsyncClient, people: People, alice_rows: AliceRows
) -> None:
    for method, path in reads(alice_rows):
        owner = await client.request(method, path, headers=bearer(people.alice))
        assert owner.status_code == 200, (path, owner.text)
        for who, headers in (("other user", bearer(people.bob)), ("no key (local)", {})):
            other = await client.request(method, path, headers=headers)
            assert other.status_code == 404, (path, who, other.text)
            assert set(other.json()) == {"code", "message"}
        for who, key in (("wrong key", "finq_" + "A" * 43), ("revoked key", people.revoked)):
            refused = await client.request(method, path, headers=bearer(key))
            assert refused.status_code == 401, (path, who, refused.text)
            assert refused.json()["code"] == "unauthorized"
            assert refused.headers["www-authenticate"].startswith("Bearer")


async def test_only_the_owner_deletes_their_upload_and_conversation(
    client: httpx.AsyncClient, people: People, alice_rows: AliceRows
) -> None:
    for method, path in deletions(alice_rows):
        for who, headers in (("other user", bearer(people.bob)), ("no key (local)", {})):
            other = await client.request(method, path, headers=headers)
            assert other.status_code == 404, (path, who, other.text)
            assert set(other.json()) == {"code", "message"}
        for who, key in (("wrong key", "finq_" + "A" * 43), ("revoked key", people.revoked)):
            refused = await client.request(method, path, headers=bearer(key))
            assert refused.status_code == 401, (path, who, refused.text)
            assert refused.json()["code"] == "unauthorized"
        owner = await client.request(method, path, headers=bearer(people.alice))
        assert owner.status_code == 204, (path, owner.text)
    # The request's log went with its conversation.
    for method, path in reads(alice_rows):
        gone = await client.request(method, path, headers=bearer(people.alice))
        assert gone.status_code == 404, (path, gone.text)


async def test_the_document_list_and_the_export_hold_only_the_callers_own(
    client: httpx.AsyncClient, people: People, alice_rows: AliceRows
) -> None:
    hers = (alice_rows.conversation_id, alice_rows.request_id, alice_rows.document_id)
    for method, path in ACCOUNT_CALLS:
        for who, key in (("wrong key", "finq_" + "A" * 43), ("revoked key", people.revoked)):
            refused = await client.request(method, path, headers=bearer(key))
            assert refused.status_code == 401, (path, who, refused.text)
            assert refused.json()["code"] == "unauthorized"
    mine = await client.get("/v1/me/export", headers=bearer(people.alice))
    assert mine.status_code == 200 and all(id_ in mine.text for id_ in hers)
    listed = await client.get("/v1/documents?scope=uploads", headers=bearer(people.alice))
    assert alice_rows.document_id in listed.text
    for headers in (bearer(people.bob), {}):
        for path in ("/v1/me/export", "/v1/documents?scope=uploads&limit=100"):
            theirs = await client.get(path, headers=headers)
            assert theirs.status_code == 200, (path, theirs.text)
            assert not any(id_ in theirs.text for id_ in hers), path


async def test_a_conversation_is_listed_and_continued_by_its_owner_only(
    client: httpx.AsyncClient, people: People, alice_rows: AliceRows
) -> None:
    def listed(response: httpx.Response) -> set[str]:
        assert response.status_code == 200, response.text
        return {c["id"] for c in response.json()["conversations"]}

    mine = await client.get("/v1/conversations", headers=bearer(people.alice))
    assert alice_rows.conversation_id in listed(mine)
    for headers in (bearer(people.bob), {}):
        theirs = await client.get("/v1/conversations", headers=headers)
        assert alice_rows.conversation_id not in listed(theirs)
    follow_up = {"question": "and in 2022?", "conversation_id": alice_rows.conversation_id}
    hijack = await client.post("/v1/ask", json=follow_up, headers=bearer(people.bob))
    assert hijack.status_code == 404, hijack.text
    refused = await client.post("/v1/ask", json=follow_up, headers=bearer(people.revoked))
    assert refused.status_code == 401
    owner = await client.post("/v1/ask", json=follow_up, headers=bearer(people.alice))
    assert owner.status_code == 200, owner.text
    assert owner.json()["conversation_id"] == alice_rows.conversation_id


async def test_only_the_owner_lists_and_undoes_their_portfolio_import(
    client: httpx.AsyncClient, people: People
) -> None:
    activity = f"date,account,action,amount\n2024-01-02,Savings {os.urandom(3).hex()},deposit,100\n"
    imported = await client.post(
        "/v1/portfolio/import",
        content=activity.encode(),
        headers={**bearer(people.alice), "Content-Type": "text/csv"},
    )
    assert imported.status_code == 200, imported.text
    path = f"/v1/portfolio/imports/{imported.json()['import_id']}"

    def listed(response: httpx.Response) -> set[str]:
        assert response.status_code == 200, response.text
        return {i["id"] for i in response.json()["imports"]}

    for headers in (bearer(people.bob), {}):
        assert path.rsplit("/", 1)[1] not in listed(
            await client.get("/v1/portfolio/imports", headers=headers)
        )
        other = await client.delete(path, headers=headers)
        assert other.status_code == 404, other.text
        assert set(other.json()) == {"code", "message"}
    for key in ("finq_" + "A" * 43, people.revoked):
        refused = await client.delete(path, headers=bearer(key))
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    assert path.rsplit("/", 1)[1] in listed(
        await client.get("/v1/portfolio/imports", headers=bearer(people.alice))
    )
    owner = await client.delete(path, headers=bearer(people.alice))
    assert owner.status_code == 200, owner.text


@pytest.fixture(scope="module")
def gateway_requiring_keys(
    finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A second gateway on the same bus and database, with FINQ_AUTH=required."""
    with another_gateway(finq, tmp_path_factory, {"FINQ_AUTH": "required"}) as url:
        yield url


@pytest.fixture
async def strict_client(gateway_requiring_keys: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway_requiring_keys, timeout=60.0) as http:
        yield http


async def test_when_keys_are_required_a_request_without_one_is_refused_everywhere(
    strict_client: httpx.AsyncClient, people: People, alice_rows: AliceRows
) -> None:
    calls = [
        *reads(alice_rows),
        *deletions(alice_rows),
        *ACCOUNT_CALLS,
        ("GET", "/v1/conversations"),
        ("POST", "/v1/ask"),
        ("POST", "/v1/documents"),
        ("GET", "/v1/companies"),
        ("GET", "/v1/portfolio/imports"),
        ("DELETE", "/v1/portfolio/imports/00000000-0000-0000-0000-000000000000"),
    ]
    for method, path in calls:
        response = await strict_client.request(
            method, path, json={"question": "Apple revenue 2023"} if path == "/v1/ask" else None
        )
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["code"] == "unauthorized"
    assert (await strict_client.get("/healthz")).status_code == 200
    owner = await strict_client.get(
        f"/v1/conversations/{alice_rows.conversation_id}", headers=bearer(people.alice)
    )
    assert owner.status_code == 200, owner.text


async def test_an_offset_past_any_real_list_is_a_422_not_a_500(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/conversations", params={"offset": 10**19})
    assert response.status_code == 422
    assert set(response.json()) == {"code", "message"}


async def test_an_upload_is_quoted_to_its_owner_and_to_no_one_else(
    client: httpx.AsyncClient, people: People
) -> None:
    secret = f"The codename for the acquisition is Bluefin{os.urandom(3).hex()}."
    notes = f"# Deal memo\n\n## Codename\n\n{secret}\n".encode()
    uploaded = await client.post(
        "/v1/documents",
        files={"file": ("deal-memo.md", notes, "text/markdown")},
        headers=bearer(people.alice),
    )
    assert uploaded.status_code == 202, uploaded.text
    document_id = uploaded.json()["id"]

    async def read() -> bool:
        job = await client.get(f"/v1/documents/{document_id}", headers=bearer(people.alice))
        return job.json()["status"] in {"ready", "failed"}

    await wait_until(read, within=120, every=0.25)
    question = {"question": "What does the deal memo say about the codename?"}
    hers = (await client.post("/v1/ask", json=question, headers=bearer(people.alice))).json()
    assert secret in hers["answer"]
    assert hers["citations"][0]["label"].startswith("your upload")
    for headers in (bearer(people.bob), {}):
        theirs = await client.post("/v1/ask", json=question, headers=headers)
        assert theirs.status_code == 200, theirs.text
        body = theirs.json()
        assert "Bluefin" not in body["answer"]
        assert all(c.get("source_id", "").find(document_id) < 0 for c in body["citations"])
