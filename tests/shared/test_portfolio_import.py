"""A user's portfolio comes in as a CSV file of activity, all or nothing: a good file stores
its rows and makes its accounts; a file with any bad row (malformed, an unknown symbol, a
sale of more than is held, counting what earlier files hold) stores nothing and names each
row; the same file twice is recognized. Each user sees only their own accounts and rows,
in the database itself. An uploaded file is read in a child process with limits; over HTTP
the import answers 200, 422 with each row, 401, 411, 413 and 415. `finq portfolio` imports,
shows and makes the demo, whose history is the same every time and imports cleanly."""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import stat
import threading
import time
from collections.abc import AsyncIterator, Collection, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from services.control.cli import build_parser
from services.control.commands.ask import ask_headers
from services.control.settings import ControlSettings
from services.ingest.dataset import DEFAULT_DATASET_DIR, Dataset, load_dataset, read_dataset
from shared.db import ACT_AS_SQL, acting_as, create_pool
from shared.identity import add_user
from shared.portfolio.activity import AccountKind, ActivityKind, AssetClass
from shared.portfolio.csv_format import ParsedActivity, parse_activity_csv
from shared.portfolio.demo import (
    FIRST_DAY,
    LAST_DAY,
    demo_history,
    import_demo_history,
    load_closes,
)
from shared.portfolio.import_process import ActivityParseFailed, ImportLimits, parse_in_child
from shared.portfolio.ledger import Ledger
from shared.portfolio.store import (
    ImportOutcome,
    import_activity,
    list_accounts,
    load_activities,
    load_instruments,
)
from tests.conftest import RunningFinq, Servers, another_gateway
from tests.helpers import run_finq

PORTFOLIO_TABLES = ("accounts", "portfolio_imports", "trades", "income", "transfers")

HEADER = (
    b"date,account,account_type,action,symbol,quantity,price,fees,amount,to_account,description\n"
)
FIRST_FILE = (
    HEADER
    + b"""2023-01-03,Brokerage,brokerage,deposit,,,,,10000,,opening deposit
2023-01-04,Brokerage,,buy,AAPL,10,125.07,1.00,,,
2023-01-05,Brokerage,,buy,MSFT,5,222.31,,,,
2023-02-16,Brokerage,,dividend,AAPL,,,,2.30,,quarterly dividend
2023-03-31,Brokerage,,interest,,,,,4.12,,
2023-04-03,Brokerage,,transfer,,,,,500,Roth IRA,contribution
2023-04-03,Roth IRA,roth_ira,buy,VTI,2,200.10,,,,
2023-04-10,Brokerage,,fee,,,,,25,,advisory fee
2023-04-11,Brokerage,,withdrawal,,,,,1000,,
"""
)

# Sells shares the first file bought.
SECOND_FILE = b"""date,account,action,symbol,quantity,price
2023-05-01,Brokerage,sell,AAPL,4,165.00
2023-05-02,Brokerage,sell,MSFT,5,305.00
"""


@dataclass
class Portfolio:
    """A database of the test's own: the owner's connection, the services' pool (as the
    gateway connects), and two users."""

    owner_dsn: str
    owner: asyncpg.Connection
    pool: asyncpg.Pool
    alice: str
    bob: str


@pytest.fixture
async def portfolio(servers: Servers, database: str) -> AsyncIterator[Portfolio]:
    owner = await asyncpg.connect(database)
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=4)
    try:
        alice, _ = await add_user(owner, "alice")
        bob, _ = await add_user(owner, "bob")
        yield Portfolio(database, owner, pool, alice.id, bob.id)
    finally:
        await pool.close()
        await owner.close()


async def row_counts(owner: asyncpg.Connection) -> dict[str, int]:
    return {
        table: await owner.fetchval(f"SELECT count(*) FROM {table}") for table in PORTFOLIO_TABLES
    }


def problems(outcome: ImportOutcome) -> list[tuple[int, str | None]]:
    return [(error.row, error.field) for error in outcome.errors]


async def test_a_good_file_stores_its_rows_and_makes_its_accounts(portfolio: Portfolio) -> None:
    outcome = await import_activity(portfolio.pool, portfolio.alice, "first.csv", FIRST_FILE)
    assert outcome.errors == [] and outcome.duplicate_of is None
    assert outcome.import_id is not None and outcome.rows == 9
    assert outcome.accounts == outcome.accounts_created == ["Brokerage", "Roth IRA"]
    assert await row_counts(portfolio.owner) == {
        "accounts": 2,
        "portfolio_imports": 1,
        "trades": 3,
        "income": 2,
        "transfers": 4,
    }
    scope = acting_as(portfolio.pool, portfolio.alice)
    accounts = {account.name: account.kind for account in await list_accounts(scope)}
    assert accounts == {"Brokerage": AccountKind.BROKERAGE, "Roth IRA": AccountKind.ROTH_IRA}

    # Read back, each row is the Activity the file made, with its line in the file.
    loaded = await load_activities(scope)
    parsed = parse_activity_csv(FIRST_FILE, {"AAPL", "MSFT", "VTI"})
    assert sorted(loaded, key=lambda a: a.row) == sorted(parsed.activities, key=lambda a: a.row)
    buy = next(a for a in loaded if a.row == 3)
    assert (buy.kind, buy.quantity, buy.price, buy.fees) == (
        ActivityKind.BUY,
        Decimal(10),
        Decimal("125.07"),
        Decimal("1.00"),
    )
    assert buy.amount == Decimal("-1251.70")
    transfer = next(a for a in loaded if a.kind is ActivityKind.TRANSFER)
    assert (transfer.to_account, transfer.to_account_kind) == ("Roth IRA", AccountKind.ROTH_IRA)
    assert [a.trade_date for a in loaded] == sorted(a.trade_date for a in loaded)
    assert {a.row for a in await load_activities(scope, account="Roth IRA")} == {7, 8}
    assert {a.row for a in await load_activities(scope, until=date(2023, 1, 4))} == {2, 3}


@pytest.mark.parametrize(
    ("bad_row", "expected"),
    [
        ("2023-13-01,Brokerage,,buy,AAPL,1,100,,,,", (11, "date")),
        ("2023-04-12,Brokerage,,buy,AAPL,one,100,,,,", (11, "quantity")),
        ("2023-04-12,Brokerage,,buy,ZZZZ,1,100,,,,", (11, "symbol")),
        ("2023-04-12,Brokerage,,sell,AAPL,11,100,,,,", (11, "quantity")),
        ("2023-04-12,Brokerage,,sell,VTI,1,100,,,,", (11, "quantity")),
    ],
    ids=["malformed date", "malformed number", "unknown symbol", "oversold", "never held"],
)
async def test_a_file_with_one_bad_row_stores_nothing_and_names_the_row(
    portfolio: Portfolio, bad_row: str, expected: tuple[int, str]
) -> None:
    data = FIRST_FILE + bad_row.encode() + b"\n"
    outcome = await import_activity(portfolio.pool, portfolio.alice, "bad.csv", data)
    assert problems(outcome) == [expected], outcome.errors
    assert outcome.import_id is None and outcome.rows == 0
    assert set((await row_counts(portfolio.owner)).values()) == {0}


async def test_every_bad_row_is_named_at_once(portfolio: Portfolio) -> None:
    data = FIRST_FILE + b"2023-04-12,Brokerage,,buy,ZZZZ,1,100,,,,\nnot a date,,,,,,,,,,\n"
    outcome = await import_activity(portfolio.pool, portfolio.alice, "bad.csv", data)
    assert problems(outcome) == [(11, "symbol"), (12, "date"), (12, "account"), (12, "action")]
    assert "ZZZZ" in outcome.errors[0].message
    assert set((await row_counts(portfolio.owner)).values()) == {0}


async def test_an_oversold_row_says_how_many_were_held(portfolio: Portfolio) -> None:
    data = FIRST_FILE + b"2023-04-12,Brokerage,,sell,AAPL,12.50,100,,,,\n"
    outcome = await import_activity(portfolio.pool, portfolio.alice, "bad.csv", data)
    [error] = outcome.errors
    assert error.message == "sells 12.5 AAPL on 2023-04-12, but Brokerage holds only 10 then"


async def test_the_same_file_twice_is_recognized_and_stored_once(portfolio: Portfolio) -> None:
    first = await import_activity(portfolio.pool, portfolio.alice, "first.csv", FIRST_FILE)
    before = await row_counts(portfolio.owner)
    again = await import_activity(portfolio.pool, portfolio.alice, "renamed.csv", FIRST_FILE)
    assert again.import_id is None and again.errors == [] and again.rows == 0
    assert again.duplicate_of is not None
    assert again.duplicate_of.import_id == first.import_id
    assert again.duplicate_of.file_name == "first.csv" and again.duplicate_of.rows == 9
    assert again.sha256 == first.sha256
    assert await row_counts(portfolio.owner) == before
    # Another user's copy of the same file is theirs to import.
    bobs = await import_activity(portfolio.pool, portfolio.bob, "first.csv", FIRST_FILE)
    assert bobs.import_id is not None and bobs.duplicate_of is None


async def test_a_second_file_may_sell_what_the_first_bought(portfolio: Portfolio) -> None:
    assert (await import_activity(portfolio.pool, portfolio.alice, "1.csv", FIRST_FILE)).stored
    second = await import_activity(portfolio.pool, portfolio.alice, "2.csv", SECOND_FILE)
    assert second.errors == [] and second.rows == 2
    assert second.accounts == ["Brokerage"] and second.accounts_created == []
    # ...but not more than is left.
    third = b"date,account,action,symbol,quantity,price\n2023-06-01,Brokerage,sell,AAPL,7,170\n"
    outcome = await import_activity(portfolio.pool, portfolio.alice, "3.csv", third)
    [error] = outcome.errors
    assert (error.row, error.field) == (2, "quantity")
    assert "holds only 6" in error.message
    assert (await row_counts(portfolio.owner))["portfolio_imports"] == 2


async def test_a_sale_that_starves_an_earlier_files_sale_is_the_new_rows_error(
    portfolio: Portfolio,
) -> None:
    assert (await import_activity(portfolio.pool, portfolio.alice, "1.csv", FIRST_FILE)).stored
    assert (await import_activity(portfolio.pool, portfolio.alice, "2.csv", SECOND_FILE)).stored
    # MSFT: 5 bought on 2023-01-05, 5 sold on 2023-05-02 by the second file. Selling 1 in
    # between leaves 4 for that sale.
    between = b"date,account,action,symbol,quantity,price\n2023-03-01,Brokerage,sell,MSFT,1,250\n"
    outcome = await import_activity(portfolio.pool, portfolio.alice, "between.csv", between)
    [error] = outcome.errors
    assert (error.row, error.field) == (2, "quantity")
    assert "sale of 5 on 2023-05-02 imported before (row 3 of its file)" in error.message


async def test_an_account_keeps_the_kind_it_was_made_with(portfolio: Portfolio) -> None:
    assert (await import_activity(portfolio.pool, portfolio.alice, "1.csv", FIRST_FILE)).stored
    # No account type: read as brokerage; the Roth IRA stays a Roth IRA.
    later = b"date,account,action,amount\n2023-06-01,Roth IRA,deposit,100\n"
    assert (await import_activity(portfolio.pool, portfolio.alice, "later.csv", later)).stored
    scope = acting_as(portfolio.pool, portfolio.alice)
    kinds = {account.name: account.kind for account in await list_accounts(scope)}
    assert kinds["Roth IRA"] is AccountKind.ROTH_IRA
    rows = await load_activities(scope, account="Roth IRA")
    assert {a.account_kind for a in rows if a.account == "Roth IRA"} == {AccountKind.ROTH_IRA}
    assert {a.to_account_kind for a in rows if a.to_account == "Roth IRA"} == {AccountKind.ROTH_IRA}


async def test_two_users_see_only_their_own_accounts_and_rows(portfolio: Portfolio) -> None:
    bobs_file = b"date,account,action,symbol,quantity,price,amount\n" + (
        b"2023-02-01,Brokerage,deposit,,,,5000\n2023-02-02,Brokerage,buy,AAPL,3,150,\n"
    )
    assert (await import_activity(portfolio.pool, portfolio.alice, "a.csv", FIRST_FILE)).stored
    assert (await import_activity(portfolio.pool, portfolio.bob, "b.csv", bobs_file)).stored
    alice = acting_as(portfolio.pool, portfolio.alice)
    bob = acting_as(portfolio.pool, portfolio.bob)
    assert [a.name for a in await list_accounts(alice)] == ["Brokerage", "Roth IRA"]
    assert [a.name for a in await list_accounts(bob)] == ["Brokerage"]
    assert len(await load_activities(alice)) == 9
    bobs = await load_activities(bob)
    assert [(a.row, a.kind, a.quantity) for a in bobs] == [
        (2, ActivityKind.DEPOSIT, None),
        (3, ActivityKind.BUY, Decimal(3)),
    ]
    # Bob's sale of Alice's shares is an oversell: her AAPL is not his.
    sale = b"date,account,action,symbol,quantity,price\n2023-03-01,Brokerage,sell,AAPL,5,160\n"
    outcome = await import_activity(portfolio.pool, portfolio.bob, "sale.csv", sale)
    assert problems(outcome) == [(2, "quantity")]

    # The owner (the operator's commands) acting for a user is shown that user's only.
    owner_pool = await create_pool(portfolio.owner_dsn, min_size=1, max_size=2)
    try:
        as_bob = acting_as(owner_pool, portfolio.bob)
        assert [a.name for a in await list_accounts(as_bob)] == ["Brokerage"]
        assert len(await load_activities(as_bob)) == 2
    finally:
        await owner_pool.close()


async def test_the_services_role_sees_and_writes_no_portfolio_row_without_a_user(
    portfolio: Portfolio,
) -> None:
    assert (await import_activity(portfolio.pool, portfolio.alice, "a.csv", FIRST_FILE)).stored
    async with portfolio.pool.acquire() as conn:
        for table in PORTFOLIO_TABLES:
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
        with pytest.raises(asyncpg.PostgresError):
            await conn.execute("INSERT INTO accounts (name, kind) VALUES ('x', 'brokerage')")
        async with conn.transaction():
            await conn.execute(ACT_AS_SQL, portfolio.bob)
            for table in PORTFOLIO_TABLES:
                assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
            # Nor can Bob write a row in Alice's name.
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(
                    "INSERT INTO accounts (user_id, name, kind) VALUES ($1, 'x', 'brokerage')",
                    portfolio.alice,
                )
        # The reference list is everyone's to read and no one's to change but the owner's.
        instruments = await load_instruments(conn)
        assert instruments["AAPL"].asset_class is AssetClass.EQUITY
        assert instruments["BND"].asset_class is AssetClass.BOND
        assert instruments["BTC"].asset_class is AssetClass.CRYPTO
        assert await conn.execute("UPDATE instruments SET name = 'x'") == "UPDATE 0"
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(
                "INSERT INTO instruments (symbol, name, asset_class) VALUES ('X', 'x', 'other')"
            )


async def test_a_file_parses_in_a_child_as_it_does_in_process() -> None:
    symbols = {"AAPL": AssetClass.EQUITY, "MSFT": AssetClass.EQUITY, "VTI": AssetClass.ETF}
    in_child = await parse_in_child(FIRST_FILE, symbols)
    assert in_child == parse_activity_csv(FIRST_FILE, symbols)
    broken = await parse_in_child(FIRST_FILE + b"2023-13-01,Brokerage,,buy,AAPL,1,1,,,,\n", symbols)
    assert [(e.row, e.field) for e in broken.errors] == [(11, "date")]


# The CPU limit sits past the wall-clock one: a spinning reader meets the wall clock first
# however busy the machine (a child that gets little CPU would otherwise race the two).
TIGHT = ImportLimits(seconds=2.0, memory_bytes=512 * 1024 * 1024, cpu_seconds=4)


# Stand-ins for the reader meeting a hostile file; module-level so the child can import them.
def reader_that_hangs(data: bytes, known: Collection[str]) -> ParsedActivity:
    threading.Event().wait()  # blocks until the parent kills the child
    raise AssertionError("not reached")


def reader_that_spins(data: bytes, known: Collection[str]) -> ParsedActivity:
    while True:
        pass


def reader_that_balloons(data: bytes, known: Collection[str]) -> ParsedActivity:
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))


def reader_with_a_bug(data: bytes, known: Collection[str]) -> ParsedActivity:
    return {}["missing"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("reader", "code", "says"),
    [
        (reader_that_hangs, "parse_timeout", "longer than 2 s"),
        (reader_that_spins, "parse_timeout", "longer than 2 s"),
        (reader_that_balloons, "parse_limit", "more than 512 MB"),
        (reader_with_a_bug, "unreadable_file", "KeyError"),
    ],
)
async def test_a_hostile_file_fails_with_its_reason_and_the_child_is_gone(
    reader: object, code: str, says: str
) -> None:
    started = time.monotonic()
    with pytest.raises(ActivityParseFailed) as failed:
        await parse_in_child(b"date\n", {"AAPL"}, TIGHT, reader)  # type: ignore[arg-type]
    assert failed.value.code == code
    assert says in failed.value.message
    assert time.monotonic() - started < 10
    assert multiprocessing.active_children() == []


@dataclass(frozen=True)
class Keyed:
    """A gateway that requires keys, with a small import limit, and two users of its own."""

    url: str
    owner_dsn: str
    keys: dict[str, str]  # name → API key
    ids: dict[str, str]  # name → user id


IMPORT_LIMIT = 4096


@pytest.fixture(scope="module")
def keyed(finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    async def make_users() -> tuple[dict[str, str], dict[str, str]]:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            suffix = os.urandom(3).hex()
            made = {name: await add_user(conn, f"{name}-{suffix}") for name in ("ann", "ben")}
            return {n: key for n, (_, key) in made.items()}, {n: u.id for n, (u, _) in made.items()}
        finally:
            await conn.close()

    keys, ids = asyncio.run(make_users())
    settings = {
        "FINQ_AUTH": "required",
        "FINQ_GATEWAY_PORTFOLIO_IMPORT_MAX_BYTES": str(IMPORT_LIMIT),
    }
    with another_gateway(finq, tmp_path_factory, settings) as url:
        yield Keyed(url, finq.servers.postgres.dsn, keys, ids)


def as_user(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "text/csv"}


async def rows_of(owner_dsn: str, user_id: str) -> dict[str, int]:
    conn = await asyncpg.connect(owner_dsn)
    try:
        return {
            table: await conn.fetchval(f"SELECT count(*) FROM {table} WHERE user_id = $1", user_id)
            for table in PORTFOLIO_TABLES
        }
    finally:
        await conn.close()


async def test_over_http_a_file_imports_once_and_lists_its_accounts(keyed: Keyed) -> None:
    async with httpx.AsyncClient(base_url=keyed.url, timeout=60) as http:
        ann = as_user(keyed.keys["ann"])
        imported = await http.post(
            "/v1/portfolio/import",
            params={"file_name": "first.csv"},
            content=FIRST_FILE,
            headers=ann,
        )
        assert imported.status_code == 200, imported.text
        body = imported.json()
        assert body["rows"] == 9 and body["accounts"] == ["Brokerage", "Roth IRA"]
        assert body["errors"] == [] and body["duplicate_of"] is None and body["import_id"]

        again = await http.post("/v1/portfolio/import", content=FIRST_FILE, headers=ann)
        assert again.status_code == 200, again.text
        assert again.json()["duplicate_of"]["import_id"] == body["import_id"]
        assert again.json()["import_id"] is None

        listed = await http.get("/v1/portfolio/accounts", headers=ann)
        assert listed.status_code == 200, listed.text
        assert [(a["name"], a["kind"]) for a in listed.json()["accounts"]] == [
            ("Brokerage", "brokerage"),
            ("Roth IRA", "roth_ira"),
        ]
        bens = await http.get("/v1/portfolio/accounts", headers=as_user(keyed.keys["ben"]))
        assert bens.json() == {"accounts": []}
    assert (await rows_of(keyed.owner_dsn, keyed.ids["ann"]))["portfolio_imports"] == 1


async def test_over_http_bad_rows_are_a_422_naming_each_and_nothing_is_stored(
    keyed: Keyed,
) -> None:
    data = SECOND_FILE + b"2023-05-03,Brokerage,buy,ZZZZ,1,10\n2023-05-04,Brokerage,buy,AAPL,x,1\n"
    async with httpx.AsyncClient(base_url=keyed.url, timeout=60) as http:
        refused = await http.post(
            "/v1/portfolio/import", content=data, headers=as_user(keyed.keys["ben"])
        )
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "invalid_activity"
    assert body["message"] == "2 rows of activity.csv cannot be imported; nothing was stored"
    assert [(e["row"], e["field"]) for e in body["errors"]] == [(4, "symbol"), (5, "quantity")]
    # The sells of shares Ben never bought come next, once the rows read: none stored either.
    async with httpx.AsyncClient(base_url=keyed.url, timeout=60) as http:
        oversold = await http.post(
            "/v1/portfolio/import", content=SECOND_FILE, headers=as_user(keyed.keys["ben"])
        )
    assert oversold.status_code == 422, oversold.text
    assert [(e["row"], e["field"]) for e in oversold.json()["errors"]] == [(2, "quantity")]
    assert set((await rows_of(keyed.owner_dsn, keyed.ids["ben"])).values()) == {0}


async def test_over_http_the_import_refuses_no_key_a_big_file_and_a_file_not_csv(
    keyed: Keyed,
) -> None:
    big = HEADER + b"2023-01-03,Brokerage,brokerage,deposit,,,,,100,,x\n" * 100
    assert len(big) > IMPORT_LIMIT

    async def chunks() -> AsyncIterator[bytes]:
        yield FIRST_FILE

    async with httpx.AsyncClient(base_url=keyed.url, timeout=60) as http:
        for path in ("/v1/portfolio/import", "/v1/portfolio/accounts"):
            method = "POST" if path.endswith("import") else "GET"
            anonymous = await http.request(
                method, path, content=FIRST_FILE, headers={"Content-Type": "text/csv"}
            )
            assert anonymous.status_code == 401, (path, anonymous.text)
            assert anonymous.json()["code"] == "unauthorized"
        ben = as_user(keyed.keys["ben"])
        too_big = await http.post("/v1/portfolio/import", content=big, headers=ben)
        assert too_big.status_code == 413, too_big.text
        assert too_big.json()["code"] == "file_too_large"
        chunked = await http.post("/v1/portfolio/import", content=chunks(), headers=ben)
        assert chunked.status_code == 411, chunked.text
        not_csv = await http.post(
            "/v1/portfolio/import",
            content=FIRST_FILE,
            headers={**ben, "Content-Type": "application/json"},
        )
        assert not_csv.status_code == 415, not_csv.text
        assert not_csv.json()["code"] == "unsupported_media_type"
        empty = await http.post("/v1/portfolio/import", content=b"", headers=ben)
        assert (empty.status_code, empty.json()["code"]) == (422, "empty_file")
        named = await http.post(
            "/v1/portfolio/import",
            params={"file_name": "../x.csv"},
            content=FIRST_FILE,
            headers=ben,
        )
        assert (named.status_code, named.json()["code"]) == (422, "invalid_file_name")
    assert set((await rows_of(keyed.owner_dsn, keyed.ids["ben"])).values()) == {0}


@pytest.fixture
async def priced(database: str) -> str:
    """The test's database with the bundled companies and their closes of the demo's years."""
    dataset = read_dataset(DEFAULT_DATASET_DIR)
    prices = tuple(p for p in dataset.prices if p.day >= date(2020, 12, 1))
    conn = await asyncpg.connect(database)
    try:
        await load_dataset(conn, Dataset(dataset.companies, (), (), prices))
    finally:
        await conn.close()
    return database


async def test_the_demo_history_is_the_same_every_time_and_imports_cleanly(priced: str) -> None:
    pool = await create_pool(priced, min_size=1, max_size=2)
    try:
        closes = await load_closes(pool)
        data = demo_history(closes)
        assert demo_history(await load_closes(pool)) == data
        parsed = parse_activity_csv(data, set(await load_instruments(pool)))
        assert parsed.errors == ()
        activities = parsed.activities
        assert {a.trade_date for a in activities} <= {
            FIRST_DAY + timedelta(days=n) for n in range((LAST_DAY - FIRST_DAY).days + 1)
        }
        assert {(a.account, a.account_kind) for a in activities} == {
            ("Brokerage", AccountKind.BROKERAGE),
            ("Roth IRA", AccountKind.ROTH_IRA),
            ("401(k)", AccountKind.K401),
        }
        kinds = {a.kind for a in activities}
        assert kinds == set(ActivityKind), kinds
        assert {a.symbol for a in activities if a.kind is ActivityKind.DIVIDEND} == {"AAPL", "MSFT"}
        for trade in (a for a in activities if a.quantity is not None):
            assert trade.symbol is not None
            assert trade.price == closes[trade.symbol][trade.trade_date].quantize(Decimal("0.01"))
        # No account is ever overdrawn: its cash at the end of every day is 0 or more.
        for day in sorted({a.trade_date for a in activities}):
            for balance in Ledger.build(activities, as_of=day).cash():
                assert balance.total >= 0, (balance, day)

        user, _ = await add_user(pool, "demo-test")
        first = await import_demo_history(pool, user.id)
        assert first.errors == [] and first.rows == len(activities)
        assert first.sha256 == hashlib.sha256(data).hexdigest()
        again = await import_demo_history(pool, user.id)
        assert again.duplicate_of is not None and again.duplicate_of.import_id == first.import_id
        assert again.sha256 == first.sha256
    finally:
        await pool.close()


IMPORT = ("portfolio", "import", "--user")


async def test_finq_portfolio_imports_shows_and_makes_the_demo(priced: str, tmp_path: Path) -> None:
    code, out, err = await run_finq("users", "add", "alice", database=priced)
    assert code == 0, err
    good = tmp_path / "first.csv"
    good.write_bytes(FIRST_FILE)
    code, out, err = await run_finq(
        "portfolio", "import", "--user", "alice", str(good), database=priced
    )
    assert code == 0, err
    assert out.startswith("imported 9 rows of first.csv for alice into 2 accounts (2 new): ")
    code, out, err = await run_finq(
        "portfolio", "import", "--user", "alice", str(good), database=priced
    )
    assert code == 0 and "first.csv: already imported on " in out, (out, err)

    bad = tmp_path / "bad.csv"
    bad.write_bytes(SECOND_FILE + b"2023-05-03,Brokerage,sell,ZZZZ,1,10\n")
    code, out, err = await run_finq(
        "portfolio", "import", "--user", "alice", str(bad), database=priced
    )
    assert code == 2, (out, err)
    assert err.splitlines()[0] == (
        "row 4, field symbol: unknown symbol 'ZZZZ': finq holds no instrument of that name"
    )
    code, _, err = await run_finq(
        "portfolio", "import", "--user", "nobody", str(good), database=priced
    )
    assert code == 2 and "no user named 'nobody'" in err

    code, out, err = await run_finq("portfolio", "show", "--user", "alice", database=priced)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Brokerage (brokerage, USD)"
    assert lines[1].split()[:3] == ["AAPL", "10", "shares"]
    assert "at the 2023-04-14 close" in lines[1]
    assert any(line.split()[:1] == ["cash"] for line in lines)
    assert "Roth IRA (roth_ira, USD)" in lines

    home = tmp_path / "home"
    code, out, err = await run_finq("portfolio", "demo", database=priced, FINQ_HOME=str(home))
    assert code == 0, err
    key_file = home / "demo.key"
    assert "made the demo user" in out and "imported the demo history" in out
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    code, out, err = await run_finq("portfolio", "demo", database=priced, FINQ_HOME=str(home))
    assert code == 0 and out.startswith("the demo history is held"), (out, err)

    # `finq ask --demo` asks with that key; --key with another.
    settings = ControlSettings(home=home)
    demo = build_parser().parse_args(["ask", "--demo", "how is my AAPL position doing?"])
    assert ask_headers(demo, settings) == {
        "Authorization": f"Bearer {key_file.read_text().strip()}"
    }
    keyed = build_parser().parse_args(["ask", "--key", "finq_x", "q"])
    assert ask_headers(keyed, settings) == {"Authorization": "Bearer finq_x"}
    assert ask_headers(build_parser().parse_args(["ask", "q"]), settings) == {}
