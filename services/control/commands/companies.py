"""`finq companies`: what finq holds of each company (shared/company_holdings.py) as a table
of plain aligned text, one company a line, in the order GET /v1/companies gives them.

Plain text, not a table library: the project does not depend on one (rich is not among
its dependencies), and aligned columns are what a terminal or a pipe to `column`/`grep`
needs."""

from __future__ import annotations

import calendar
from collections.abc import Sequence

from shared.company_holdings import CompanyHoldings

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
