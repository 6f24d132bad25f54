"""`finq companies [--user NAME] [--json]`: what finq holds of each company
(shared/company_holdings.py), the list GET /v1/companies answers, as a table of plain
aligned text, one company a line.

The uploads counted are one user's: the named user's, else the local user's (whom the web
app and `finq ask` act for without a key). The command connects as the database's owner
and acts for that user (services/control/commands/named_users.py).

Plain text, not a table library: the project does not depend on one (rich is not among
its dependencies), and aligned columns are what a terminal or a pipe to `grep` needs."""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import sys
from collections.abc import Sequence

from services.control.commands import Subparsers
from services.control.commands.named_users import UnknownUser, owner_pool, user_id_of
from services.control.settings import ControlSettings
from shared.company_holdings import CompanyHoldings, list_company_holdings
from shared.identity import LOCAL_USER

HEADERS = (
    "COMPANY",
    "TICKERS",
    "CIK",
    "FY ENDS",
    "FISCAL YEARS",
    "PRICES",
    "FILINGS",
    "UPLOADS",
)
# Columns of counts read best aligned to the right, as numbers are.
NUMERIC = frozenset({"FILINGS", "UPLOADS"})
NONE = "-"
# Exit code: a user named that does not exist, as `finq portfolio` says it.
REFUSED = 2


def register(subparsers: Subparsers) -> None:
    companies = subparsers.add_parser(
        "companies",
        help="the companies finq can answer for, and what it holds of each",
        description="Each company finq holds, by name: tickers, CIK, the end of its fiscal "
        "year, the fiscal years of its figures, the days of its prices, and its documents "
        "(public filings, and the user's own uploads).",
    )
    companies.add_argument(
        "--user",
        metavar="NAME",
        default=None,
        help="count this user's uploads (default: the local user's)",
    )
    companies.add_argument("--json", action="store_true", help="print the list as JSON")
    companies.set_defaults(handler=command_companies)


def command_companies(args: argparse.Namespace, settings: ControlSettings) -> int:
    try:
        companies = asyncio.run(read_companies(settings.operator_dsn, args.user))
    except UnknownUser as error:
        print(f"finq companies: {error}", file=sys.stderr)
        return REFUSED
    if args.json:
        print(json.dumps([c.model_dump(mode="json") for c in companies], indent=2))
    else:
        print(company_table(companies))
    return 0


async def read_companies(dsn: str, user: str | None) -> list[CompanyHoldings]:
    """The companies as `user` (by name; None: the local user) is shown them."""
    from shared.db import acting_as

    pool = await owner_pool(dsn)
    try:
        user_id = await user_id_of(pool, user) if user is not None else LOCAL_USER
        return await list_company_holdings(acting_as(pool, user_id))
    finally:
        await pool.close()


def company_row(company: CompanyHoldings) -> tuple[str, ...]:
    """One company's cells, in the order of HEADERS."""
    end = company.fiscal_year_end
    figures = company.figures
    prices = company.prices
    # The name people say, and SEC's beside it when it differs ("Apple (Apple Inc.)").
    name = company.display_name
    if company.name != company.display_name:
        name = f"{name} ({company.name})"
    if figures is None:
        years = NONE
    elif figures.first_fiscal_year == figures.last_fiscal_year:
        years = f"FY{figures.first_fiscal_year} (1)"
    else:
        span = f"FY{figures.first_fiscal_year}-FY{figures.last_fiscal_year}"
        years = f"{span} ({len(figures.fiscal_years)})"
    return (
        name,
        ",".join(company.tickers),
        company.cik or NONE,
        f"{calendar.month_abbr[end.month]} {end.day}" if end else NONE,
        years,
        f"{prices.first_day} to {prices.last_day}" if prices else NONE,
        str(company.documents.filings),
        str(company.documents.uploads),
    )


def company_table(companies: Sequence[CompanyHoldings]) -> str:
    """The companies as aligned columns under a header line; a sentence when there are none."""
    if not companies:
        return "no companies held yet: `finq ingest default` loads the bundled ones"
    rows = [HEADERS, *(company_row(company) for company in companies)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADERS))]
    lines = [
        "  ".join(
            cell.rjust(width) if header in NUMERIC else cell.ljust(width)
            for cell, width, header in zip(row, widths, HEADERS, strict=True)
        ).rstrip()
        for row in rows
    ]
    return "\n".join(lines)
