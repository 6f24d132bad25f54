"""`finq companies` prints what finq holds of each company as aligned plain-text columns
(services/control/commands/companies.py): a header, then one company a line; a dash for what
is not held; a sentence when nothing is. The uploads counted are the named user's (else the
local user's); a user that does not exist is refused."""

from __future__ import annotations

import json
from datetime import date

import asyncpg

from services.control.commands.companies import company_table
from shared.company_holdings import (
    CompanyHoldings,
    DocumentsHeld,
    FiguresHeld,
    FiscalYearEnd,
    PricesHeld,
)
from shared.identity import add_user
from tests.helpers import run_finq

APPLE = CompanyHoldings(
    symbol="AAPL",
    name="Apple Inc.",
    display_name="Apple",
    tickers=["AAPL"],
    cik="0000320193",
    fiscal_year_end=FiscalYearEnd(month=9, day=26),
    figures=FiguresHeld(
        first_fiscal_year=2007,
        last_fiscal_year=2026,
        fiscal_years=list(range(2007, 2027)),
        annual_fiscal_years=list(range(2007, 2026)),
        values=12000,
    ),
    prices=PricesHeld(first_day=date(1980, 12, 12), last_day=date(2025, 6, 30)),
    documents=DocumentsHeld(filings=12, uploads=1),
    edgar_filings=300,
)
AMAZON = CompanyHoldings(
    symbol="AMZN",
    name="Amazon",
    display_name="Amazon",
    tickers=["AMZN"],
    cik=None,
    fiscal_year_end=None,
    figures=None,
    prices=PricesHeld(first_day=date(1997, 5, 15), last_day=date(2025, 6, 30)),
    documents=DocumentsHeld(filings=0, uploads=0),
    edgar_filings=0,
)


def test_each_company_is_a_line_of_aligned_columns_under_the_header() -> None:
    lines = company_table([AMAZON, APPLE]).splitlines()

    assert lines[0].split() == [
        "COMPANY",
        "TICKERS",
        "CIK",
        "FY",
        "ENDS",
        "FISCAL",
        "YEARS",
        "PRICES",
        "FILINGS",
        "UPLOADS",
    ]
    amazon, apple = lines[1], lines[2]
    assert amazon.startswith("Amazon ") and apple.startswith("Apple (Apple Inc.) ")
    assert "0000320193" in apple and "Sep 26" in apple and "FY2007-FY2026 (20)" in apple
    assert "1980-12-12 to 2025-06-30" in apple
    assert apple.split()[-2:] == ["12", "1"]
    # What is not held is a dash, in its column.
    cells = amazon.split()
    assert cells[:5] == ["Amazon", "AMZN", "-", "-", "-"]
    # Every column starts where its header does.
    for header in ("TICKERS", "CIK", "FY ENDS", "PRICES"):
        column = lines[0].index(header)
        assert amazon[column - 1] == apple[column - 1] == " "
        assert amazon[column] != " " and apple[column] != " "
    # Counts align on their right edge.
    assert len(amazon) == len(apple) == len(lines[0])


def test_no_company_held_is_said_in_a_sentence() -> None:
    assert company_table([]).startswith("no companies held yet")


async def test_finq_companies_counts_the_named_users_uploads_else_the_local_users(
    database: str,
) -> None:
    owner = await asyncpg.connect(database)
    try:
        alice, _ = await add_user(owner, "alice")
        await owner.execute(
            "INSERT INTO companies (symbol, cik, name, display_name, fiscal_year_end, tickers) "
            "VALUES ('AAPL', '0000320193', 'Apple Inc.', 'Apple', '0926', '{AAPL}')"
        )
        await owner.execute(
            "INSERT INTO documents (collection, title, doc_type, symbol, content_sha256, "
            "status, user_id) VALUES ('uploads', 'notes', 'txt', 'AAPL', 'a1', 'ready', $1)",
            alice.id,
        )
    finally:
        await owner.close()

    code, out, err = await run_finq("companies", "--user", "alice", database=database)
    assert code == 0, err
    header, apple = out.splitlines()
    assert header.split()[0] == "COMPANY" and apple.startswith("Apple (Apple Inc.) ")
    assert apple.split()[-2:] == ["0", "1"]  # no filing, one upload of hers

    code, out, err = await run_finq("companies", "--json", database=database)
    assert code == 0, err
    (listed,) = json.loads(out)
    assert listed["symbol"] == "AAPL" and listed["documents"] == {"filings": 0, "uploads": 0}
    assert listed["fiscal_year_end"] == {"month": 9, "day": 26}

    code, _, err = await run_finq("companies", "--user", "nobody", database=database)
    assert code == 2 and "no user named 'nobody'" in err
