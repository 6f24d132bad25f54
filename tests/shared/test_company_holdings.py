"""What finq holds of each company (shared/company_holdings.py), read as the gateway reads it:
through the services' role, acting for one user. Companies come by name with their tickers,
CIK and fiscal year end; the fiscal years of their figures and the days of their prices;
public filings counted for everyone and an upload for its owner only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlsplit

import asyncpg
import pytest

from shared.company_holdings import (
    CompanyHoldings,
    DocumentsHeld,
    FiscalYearEnd,
    PricesHeld,
    fiscal_year_end,
    list_company_holdings,
)
from shared.db import acting_as, create_pool
from shared.identity import add_user
from tests.conftest import Servers


@dataclass
class Holdings:
    """A database of the test's own: the owner's connection, the services' pool, two users."""

    owner_dsn: str
    owner: asyncpg.Connection
    pool: asyncpg.Pool
    alice: str
    bob: str

    async def as_seen_by(self, user_id: str) -> dict[str, CompanyHoldings]:
        listed = await list_company_holdings(acting_as(self.pool, user_id))
        return {company.symbol: company for company in listed}


@pytest.fixture
async def holdings(servers: Servers, database: str) -> AsyncIterator[Holdings]:
    owner = await asyncpg.connect(database)
    name = urlsplit(database).path.lstrip("/")
    pool = await create_pool(servers.postgres.service_dsn_for(name), min_size=1, max_size=2)
    try:
        alice, _ = await add_user(owner, "alice")
        bob, _ = await add_user(owner, "bob")
        await owner.execute(
            "INSERT INTO metrics (id, label, category, unit, description) VALUES "
            "('revenue', 'Revenue', 'income_statement', 'USD', 'Sales'), "
            "('net_income', 'Net income', 'income_statement', 'USD', 'Profit')"
        )
        yield Holdings(database, owner, pool, alice.id, bob.id)
    finally:
        await pool.close()
        await owner.close()


async def add_company(
    owner: asyncpg.Connection,
    symbol: str,
    name: str,
    display_name: str,
    cik: str | None = None,
    fiscal_year_end: str | None = None,
    tickers: tuple[str, ...] = (),
) -> None:
    await owner.execute(
        "INSERT INTO companies (symbol, cik, name, display_name, fiscal_year_end, tickers) "
        "VALUES ($1, $2, $3, $4, $5, $6)",
        symbol,
        cik,
        name,
        display_name,
        fiscal_year_end,
        list(tickers),
    )


async def add_figure(
    owner: asyncpg.Connection, symbol: str, metric: str, year: int, quarter: int = 0
) -> None:
    await owner.execute(
        "INSERT INTO metric_values (symbol, metric, period_type, fiscal_year, fiscal_quarter, "
        "period_end, value, unit, provenance) VALUES ($1, $2, $3, $4, $5, $6, 1e9, 'USD', 'x')",
        symbol,
        metric,
        "quarterly" if quarter else "annual",
        year,
        quarter,
        date(year, 9, 30),
    )


async def add_price(owner: asyncpg.Connection, symbol: str, day: date) -> None:
    await owner.execute(
        "INSERT INTO prices (symbol, day, open, high, low, close, adj_close, volume, source) "
        "VALUES ($1, $2, 1, 1, 1, 1, 1, 100, 'test.csv')",
        symbol,
        day,
    )


async def add_document(
    owner: asyncpg.Connection, symbol: str, user_id: str | None, status: str = "ready"
) -> None:
    await owner.execute(
        "INSERT INTO documents (collection, title, doc_type, symbol, content_sha256, status, "
        "user_id) VALUES ($1, 'a document', 'txt', $2, md5(random()::text), $3, $4)",
        "filings" if user_id is None else "uploads",
        symbol,
        status,
        user_id,
    )


async def test_each_company_comes_by_name_with_its_identity_figures_and_prices(
    holdings: Holdings,
) -> None:
    owner = holdings.owner
    await add_company(owner, "TSLA", "Tesla, Inc.", "Tesla", "0001318605", "1231")
    await add_company(owner, "AAPL", "Apple Inc.", "Apple", "0000320193", "0926", ("AAPL",))
    await add_company(
        owner, "GOOGL", "ALPHABET INC.", "Alphabet", "0001652044", "1231", ("GOOGL", "GOOG")
    )
    for year in (2021, 2022, 2023):
        await add_figure(owner, "AAPL", "revenue", year)
        await add_figure(owner, "AAPL", "net_income", year)
    # A year begun but not finished: its quarters only.
    await add_figure(owner, "AAPL", "revenue", 2024, quarter=1)
    await add_price(owner, "AAPL", date(1980, 12, 12))
    await add_price(owner, "AAPL", date(2024, 1, 5))
    await add_price(owner, "AAPL", date(2025, 6, 30))

    listed = await list_company_holdings(acting_as(holdings.pool, holdings.alice))

    # By name as SEC writes it, whatever its case.
    assert [c.symbol for c in listed] == ["GOOGL", "AAPL", "TSLA"]
    apple = listed[1]
    assert (apple.name, apple.display_name, apple.cik) == ("Apple Inc.", "Apple", "0000320193")
    assert apple.tickers == ["AAPL"]
    assert apple.fiscal_year_end == FiscalYearEnd(month=9, day=26)
    assert apple.figures is not None
    assert (apple.figures.first_fiscal_year, apple.figures.last_fiscal_year) == (2021, 2024)
    assert apple.figures.fiscal_years == [2021, 2022, 2023, 2024]
    assert apple.figures.annual_fiscal_years == [2021, 2022, 2023]
    assert apple.figures.values == 7
    assert apple.prices == PricesHeld(first_day=date(1980, 12, 12), last_day=date(2025, 6, 30))
    assert listed[0].tickers == ["GOOGL", "GOOG"]
    tesla = listed[2]
    assert tesla.tickers == ["TSLA"]  # no tickers known: its symbol is its one ticker
    assert tesla.figures is None and tesla.prices is None
    assert tesla.documents == DocumentsHeld(filings=0, uploads=0) and tesla.edgar_filings == 0


async def test_a_company_held_with_prices_only_has_no_cik_fiscal_year_end_or_figures(
    holdings: Holdings,
) -> None:
    await add_company(holdings.owner, "AMZN", "Amazon", "Amazon")
    await add_price(holdings.owner, "AMZN", date(1997, 5, 15))

    (amazon,) = (await holdings.as_seen_by(holdings.alice)).values()

    assert amazon.cik is None and amazon.fiscal_year_end is None and amazon.figures is None
    assert amazon.prices == PricesHeld(first_day=date(1997, 5, 15), last_day=date(1997, 5, 15))


async def test_filings_count_for_everyone_and_an_upload_for_its_owner_only(
    holdings: Holdings,
) -> None:
    owner = holdings.owner
    await add_company(
        owner, "GOOGL", "ALPHABET INC.", "Alphabet", "0001652044", "1231", ("GOOGL", "GOOG")
    )
    await add_document(owner, "GOOGL", None)
    await add_document(owner, "GOOG", None)  # filed under the other share class's ticker
    await add_document(owner, "GOOGL", None, status="embedding")  # not searchable yet
    await add_document(owner, "GOOGL", holdings.alice)
    await add_document(owner, "GOOGL", holdings.alice, status="failed")
    await owner.execute(
        "INSERT INTO filings (accession, symbol, cik, form, filed, url) VALUES "
        "('0001652044-24-000022', 'GOOGL', '0001652044', '10-K', '2024-01-31', 'https://x')"
    )

    alice = (await holdings.as_seen_by(holdings.alice))["GOOGL"]
    bob = (await holdings.as_seen_by(holdings.bob))["GOOGL"]

    assert alice.documents == DocumentsHeld(filings=2, uploads=1)
    assert bob.documents == DocumentsHeld(filings=2, uploads=0)
    assert alice.edgar_filings == bob.edgar_filings == 1


async def test_the_owner_acting_for_a_user_counts_that_users_uploads_only(
    holdings: Holdings,
) -> None:
    """The operator's command connects as the owner, whom row-level security shows every
    row: the query itself keeps to the user it acts for."""
    await add_company(holdings.owner, "AAPL", "Apple Inc.", "Apple", "0000320193", "0926")
    await add_document(holdings.owner, "AAPL", holdings.alice)
    await add_document(holdings.owner, "AAPL", holdings.bob)
    owner_pool = await create_pool(holdings.owner_dsn, min_size=1, max_size=1)
    try:
        (apple,) = await list_company_holdings(acting_as(owner_pool, holdings.alice))
    finally:
        await owner_pool.close()
    assert apple.documents == DocumentsHeld(filings=0, uploads=1)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("0926", FiscalYearEnd(month=9, day=26)),
        ("0131", FiscalYearEnd(month=1, day=31)),
        ("0229", FiscalYearEnd(month=2, day=29)),
        (None, None),
        ("1332", None),
        ("0230", None),
        ("926", None),
        ("09-26", None),
    ],
)
def test_a_fiscal_year_end_is_read_as_sec_writes_it_or_not_at_all(
    written: str | None, read: FiscalYearEnd | None
) -> None:
    assert fiscal_year_end(written) == read
