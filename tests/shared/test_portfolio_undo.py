"""A user's imports are listed, newest first, and one can be undone (shared/portfolio/store.py):
its rows go, with the accounts only it named, and what remains replays to exactly what
importing the other files alone gives. An undo that would leave a later sale without its
shares is refused and changes nothing; another user's import is not found; an undone file
can be imported again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import asyncpg
import pytest

from shared.db import acting_as, create_pool
from shared.identity import add_user
from shared.portfolio.ledger import Ledger
from shared.portfolio.store import (
    ImportNotFound,
    UndoRefused,
    import_activity,
    list_accounts,
    list_imports,
    load_activities,
    undo_import,
)
from tests.conftest import Servers

# Opens two accounts, buys in both, and is paid a dividend.
FIRST_FILE = b"""date,account,account_type,action,symbol,quantity,price,fees,amount,to_account
2023-01-03,Brokerage,brokerage,deposit,,,,,10000,
2023-01-04,Brokerage,,buy,AAPL,10,125.07,1.00,,
2023-01-05,Brokerage,,buy,MSFT,5,222.31,,,
2023-02-16,Brokerage,,dividend,AAPL,,,,2.30,
2023-04-03,Brokerage,,transfer,,,,,500,Roth IRA
2023-04-03,Roth IRA,roth_ira,buy,VTI,2,200.10,,,
"""
# Stands on its own (buys before it sells), in one of the first file's accounts, with rows
# on the same days as the first file's.
SECOND_FILE = b"""date,account,action,symbol,quantity,price,fees,amount
2023-01-04,Brokerage,deposit,,,,,5000
2023-01-04,Brokerage,buy,AAPL,3,126.00,0.50,
2023-03-01,Brokerage,buy,NVDA,8,230.00,,
2023-05-01,Brokerage,sell,NVDA,2,280.00,1.00,
"""
# Sells shares only the first file bought.
SALE_FILE = b"""date,account,action,symbol,quantity,price
2023-05-02,Brokerage,sell,MSFT,5,305.00
"""


@dataclass
class Portfolios:
    owner: asyncpg.Connection
    pool: asyncpg.Pool
    alice: str
    bob: str

    async def counts(self) -> dict[str, int]:
        tables = ("accounts", "portfolio_imports", "trades", "income", "transfers")
        return {t: await self.owner.fetchval(f"SELECT count(*) FROM {t}") for t in tables}

    async def imported(self, user_id: str, file_name: str, data: bytes) -> str:
        outcome = await import_activity(self.pool, user_id, file_name, data)
        assert outcome.errors == [] and outcome.import_id is not None, outcome
        return outcome.import_id


@pytest.fixture
async def portfolios(servers: Servers, database: str) -> AsyncIterator[Portfolios]:
    owner = await asyncpg.connect(database)
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=4)
    try:
        alice, _ = await add_user(owner, "alice")
        bob, _ = await add_user(owner, "bob")
        yield Portfolios(owner, pool, alice.id, bob.id)
    finally:
        await pool.close()
        await owner.close()


async def replayed(pool: asyncpg.Pool, user_id: str) -> Ledger:
    return Ledger.build(await load_activities(acting_as(pool, user_id)))


async def test_undoing_the_first_of_two_imports_leaves_what_the_second_alone_gives(
    portfolios: Portfolios,
) -> None:
    first = await portfolios.imported(portfolios.alice, "first.csv", FIRST_FILE)
    await portfolios.imported(portfolios.alice, "second.csv", SECOND_FILE)
    # The same second file, imported alone by someone else.
    await portfolios.imported(portfolios.bob, "second.csv", SECOND_FILE)

    undone = await undo_import(portfolios.pool, portfolios.alice, first)

    assert (undone.import_id, undone.file_name, undone.rows_removed) == (first, "first.csv", 6)
    # Brokerage is named by the second file too; Roth IRA by the first only.
    assert undone.accounts_removed == ["Roth IRA"]
    hers = await replayed(portfolios.pool, portfolios.alice)
    alone = await replayed(portfolios.pool, portfolios.bob)
    assert hers.holdings() == alone.holdings()  # positions, lots, cost bases, gains
    assert hers.cash() == alone.cash()
    assert hers.accounts() == alone.accounts()
    assert hers.activities == alone.activities
    assert {h.symbol: h.quantity for h in hers.holdings()} == {"AAPL": 3, "NVDA": 6}
    shown = [
        (a.name, a.kind) for a in await list_accounts(acting_as(portfolios.pool, portfolios.alice))
    ]
    theirs = [
        (a.name, a.kind) for a in await list_accounts(acting_as(portfolios.pool, portfolios.bob))
    ]
    assert shown == theirs


async def test_an_undo_that_would_leave_a_later_sale_without_its_shares_is_refused(
    portfolios: Portfolios,
) -> None:
    first = await portfolios.imported(portfolios.alice, "first.csv", FIRST_FILE)
    sale = await portfolios.imported(portfolios.alice, "sale.csv", SALE_FILE)
    before = await portfolios.counts()

    with pytest.raises(UndoRefused) as refused:
        await undo_import(portfolios.pool, portfolios.alice, first)

    assert refused.value.code == "undo_would_oversell"
    message = refused.value.message
    assert "undoing first.csv" in message and "row 2 of sale.csv sells 5 MSFT" in message
    assert "undo sale.csv first" in message
    assert await portfolios.counts() == before
    # In the order it asks, both go.
    await undo_import(portfolios.pool, portfolios.alice, sale)
    await undo_import(portfolios.pool, portfolios.alice, first)
    assert await portfolios.counts() == dict.fromkeys(before, 0)


async def test_another_users_import_is_not_found_and_stays_theirs(
    portfolios: Portfolios,
) -> None:
    hers = await portfolios.imported(portfolios.alice, "first.csv", FIRST_FILE)
    before = await portfolios.counts()

    for import_id in (hers, "00000000-0000-0000-0000-000000000000", "not-an-id"):
        with pytest.raises(ImportNotFound):
            await undo_import(portfolios.pool, portfolios.bob, import_id)

    assert await portfolios.counts() == before
    listed, total = await list_imports(acting_as(portfolios.pool, portfolios.bob), 10, 0)
    assert (listed, total) == ([], 0)


async def test_an_undone_file_can_be_imported_again(portfolios: Portfolios) -> None:
    first = await portfolios.imported(portfolios.alice, "first.csv", FIRST_FILE)
    await undo_import(portfolios.pool, portfolios.alice, first)
    with pytest.raises(ImportNotFound):
        await undo_import(portfolios.pool, portfolios.alice, first)  # once only

    again = await import_activity(portfolios.pool, portfolios.alice, "first.csv", FIRST_FILE)

    assert again.duplicate_of is None and again.import_id not in (None, first)
    assert again.accounts_created == ["Brokerage", "Roth IRA"]


async def test_imports_are_listed_newest_first_with_their_accounts_a_page_at_a_time(
    portfolios: Portfolios,
) -> None:
    first = await portfolios.imported(portfolios.alice, "first.csv", FIRST_FILE)
    second = await portfolios.imported(portfolios.alice, "second.csv", SECOND_FILE)
    scope = acting_as(portfolios.pool, portfolios.alice)

    page, total = await list_imports(scope, 1, 0)
    rest, _ = await list_imports(scope, 1, 1)

    assert total == 2 and [i.id for i in page + rest] == [second, first]
    newest, oldest = page[0], rest[0]
    assert (newest.file_name, newest.rows, newest.accounts) == ("second.csv", 4, ["Brokerage"])
    assert oldest.accounts == ["Brokerage", "Roth IRA"]
    assert (oldest.file_kind, oldest.status) == ("activity_csv", "imported")
    assert newest.created_at >= oldest.created_at
    assert await list_imports(scope, 10, 2) == ([], 2)
