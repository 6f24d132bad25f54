"""GET /v1/portfolio/imports and DELETE /v1/portfolio/imports/{id} on the session's pipeline:
the caller's imports a page at a time, newest first; undoing the first of two imports leaves
the positions importing the second alone gives; an undo that would leave a later sale
without its shares is a 409 naming it; another user's import is a 404 and stays theirs."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import httpx
import pytest

from shared.db import acting_as
from shared.identity import add_user
from shared.portfolio.ledger import Ledger
from shared.portfolio.store import load_activities
from tests.conftest import RunningFinq
from tests.shared.test_portfolio_undo import SALE_FILE, SECOND_FILE

FIRST_FILE = b"""date,account,account_type,action,symbol,quantity,price,fees,amount,to_account
2023-01-03,Brokerage,brokerage,deposit,,,,,10000,
2023-01-04,Brokerage,,buy,AAPL,10,125.07,1.00,,
2023-01-05,Brokerage,,buy,MSFT,5,222.31,,,
2023-04-03,Brokerage,,transfer,,,,,500,Roth IRA
2023-04-03,Roth IRA,roth_ira,buy,VTI,2,200.10,,,
"""


@dataclass
class Person:
    id: str
    headers: dict[str, str]


@pytest.fixture
async def owner_pool(finq: RunningFinq) -> AsyncIterator[asyncpg.Pool]:
    """The database's owner, to make users and read back what the gateway stored."""
    pool = await asyncpg.create_pool(finq.servers.postgres.dsn, min_size=1, max_size=2)
    assert pool is not None
    try:
        yield pool
    finally:
        await pool.close()


async def person(owner_pool: asyncpg.Pool, name: str) -> Person:
    user, key = await add_user(owner_pool, f"{name}-{os.urandom(3).hex()}")
    return Person(user.id, {"Authorization": f"Bearer {key}"})


async def imported(client: httpx.AsyncClient, who: Person, name: str, data: bytes) -> str:
    response = await client.post(
        "/v1/portfolio/import",
        params={"file_name": name},
        content=data,
        headers={**who.headers, "Content-Type": "text/csv"},
    )
    assert response.status_code == 200, response.text
    import_id: str = response.json()["import_id"]
    return import_id


async def ledger_of(owner_pool: asyncpg.Pool, who: Person) -> Ledger:
    return Ledger.build(await load_activities(acting_as(owner_pool, who.id)))


async def test_undoing_a_after_importing_a_then_b_leaves_the_positions_of_b_alone(
    client: httpx.AsyncClient, owner_pool: asyncpg.Pool
) -> None:
    alice = await person(owner_pool, "undo-alice")
    bob = await person(owner_pool, "undo-bob")
    first = await imported(client, alice, "first.csv", FIRST_FILE)
    await imported(client, alice, "second.csv", SECOND_FILE)
    await imported(client, bob, "second.csv", SECOND_FILE)

    undone = await client.delete(f"/v1/portfolio/imports/{first}", headers=alice.headers)

    assert undone.status_code == 200, undone.text
    assert undone.json() == {
        "import_id": first,
        "file_name": "first.csv",
        "rows_removed": 5,
        "accounts_removed": ["Roth IRA"],
    }
    hers, his = await ledger_of(owner_pool, alice), await ledger_of(owner_pool, bob)
    assert hers.holdings() == his.holdings()  # positions, lots, cost bases, gains
    assert hers.cash() == his.cash()
    assert {h.symbol: h.quantity for h in hers.holdings()} == {"AAPL": 3, "NVDA": 6}
    accounts = await client.get("/v1/portfolio/accounts", headers=alice.headers)
    assert [a["name"] for a in accounts.json()["accounts"]] == ["Brokerage"]
    listed = await client.get("/v1/portfolio/imports", headers=alice.headers)
    assert [i["file_name"] for i in listed.json()["imports"]] == ["second.csv"]
    again = await client.delete(f"/v1/portfolio/imports/{first}", headers=alice.headers)
    assert again.status_code == 404 and again.json()["code"] == "import_not_found"


async def test_undoing_an_import_another_user_owns_is_a_404_and_it_stays_theirs(
    client: httpx.AsyncClient, owner_pool: asyncpg.Pool
) -> None:
    alice = await person(owner_pool, "undo-owner")
    mallory = await person(owner_pool, "undo-other")
    hers = await imported(client, alice, "first.csv", FIRST_FILE)

    refused = await client.delete(f"/v1/portfolio/imports/{hers}", headers=mallory.headers)

    assert refused.status_code == 404, refused.text
    assert refused.json() == {"code": "import_not_found", "message": f"no import {hers!r} of yours"}
    theirs = await client.get("/v1/portfolio/imports", headers=mallory.headers)
    assert theirs.json()["imports"] == [] and theirs.json()["total"] == 0
    mine = await client.get("/v1/portfolio/imports", headers=alice.headers)
    assert [i["id"] for i in mine.json()["imports"]] == [hers]


async def test_an_undo_that_would_leave_a_later_sale_without_its_shares_is_a_409(
    client: httpx.AsyncClient, owner_pool: asyncpg.Pool
) -> None:
    alice = await person(owner_pool, "undo-oversell")
    first = await imported(client, alice, "first.csv", FIRST_FILE)
    await imported(client, alice, "sale.csv", SALE_FILE)

    refused = await client.delete(f"/v1/portfolio/imports/{first}", headers=alice.headers)

    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "undo_would_oversell"
    assert "row 2 of sale.csv sells 5 MSFT" in body["message"]
    listed = await client.get("/v1/portfolio/imports", headers=alice.headers)
    assert listed.json()["total"] == 2


async def test_the_imports_are_listed_newest_first_a_page_at_a_time(
    client: httpx.AsyncClient, owner_pool: asyncpg.Pool
) -> None:
    alice = await person(owner_pool, "imports-list")
    first = await imported(client, alice, "first.csv", FIRST_FILE)
    second = await imported(client, alice, "second.csv", SECOND_FILE)

    page = await client.get("/v1/portfolio/imports", params={"limit": 1}, headers=alice.headers)
    rest = await client.get(
        "/v1/portfolio/imports", params={"limit": 1, "offset": 1}, headers=alice.headers
    )

    assert page.status_code == 200, page.text
    assert (page.json()["total"], page.json()["limit"], page.json()["offset"]) == (2, 1, 0)
    newest, oldest = page.json()["imports"][0], rest.json()["imports"][0]
    assert (newest["id"], oldest["id"]) == (second, first)
    assert newest == {
        "id": second,
        "file_name": "second.csv",
        "file_kind": "activity_csv",
        "accounts": ["Brokerage"],
        "rows": 4,
        "created_at": newest["created_at"],
        "status": "imported",
    }
    assert oldest["accounts"] == ["Brokerage", "Roth IRA"] and oldest["rows"] == 5


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}])
async def test_a_page_out_of_bounds_is_a_422(
    client: httpx.AsyncClient, params: dict[str, int]
) -> None:
    response = await client.get("/v1/portfolio/imports", params=params)

    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_request"


@pytest.mark.parametrize("import_id", ["not-an-import", "null", "0000000000000000000000000000000g"])
async def test_an_id_that_is_no_import_is_a_404(client: httpx.AsyncClient, import_id: str) -> None:
    response = await client.delete(f"/v1/portfolio/imports/{import_id}")

    assert response.status_code == 404, response.text
    assert response.json()["code"] == "import_not_found"
