"""What finq holds for each company it can answer for: its names, tickers and CIK, the end
of its fiscal year, the fiscal years of its figures, the days of its prices, and how many
documents there are to search (public filings, and the acting user's own uploads).

One query, read while acting for one user (`shared.db.acting_as`): row-level security shows
that user's uploads and no one else's, and the query says `user_id = finq_acting_user()` as
well, because the owner (the operator's `finq companies`) is shown every user's rows.
The gateway's GET /v1/companies and the `finq companies` command both call
`list_company_holdings`.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Protocol

from pydantic import BaseModel, Field


class Database(Protocol):
    """A pool or connection acting for a user (`shared.db.acting_as`)."""

    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


class FiscalYearEnd(BaseModel):
    """The day a company's fiscal year ends, as SEC writes it (`0926`): the latest fiscal
    year's end. A company whose year ends on a weekday ("the last Saturday of September")
    ends it on a slightly different day in other years."""

    month: int = Field(ge=1, le=12)
    day: int = Field(ge=1, le=31)


class FiguresHeld(BaseModel):
    """The fiscal years finq holds reported figures (XBRL metric values) of."""

    first_fiscal_year: int
    last_fiscal_year: int
    fiscal_years: list[int] = Field(description="Every fiscal year with a figure, in order")
    annual_fiscal_years: list[int] = Field(
        description="Those with a figure of the whole fiscal year (a 10-K's); a year begun "
        "but not finished has quarters only"
    )
    values: int = Field(description="How many figures (metric, period) are held", ge=1)


class PricesHeld(BaseModel):
    """The days of the daily prices held."""

    first_day: date
    last_day: date


class DocumentsHeld(BaseModel):
    """Documents about the company that finq has read and can search."""

    filings: int = Field(ge=0, description="Public filings, the same for everyone")
    uploads: int = Field(ge=0, description="The caller's own uploads naming the company")


class CompanyHoldings(BaseModel):
    symbol: str = Field(description="The primary ticker, which finq files the company under")
    name: str = Field(description="As SEC writes it: 'Apple Inc.'")
    display_name: str = Field(description="As people say it: 'Apple'")
    tickers: list[str] = Field(description="Every share class's ticker, the primary first")
    cik: str | None = Field(description="SEC's Central Index Key; null: held with prices only")
    fiscal_year_end: FiscalYearEnd | None
    figures: FiguresHeld | None = Field(description="Null: no reported figures held")
    prices: PricesHeld | None = Field(description="Null: no daily prices held")
    documents: DocumentsHeld
    edgar_filings: int = Field(
        ge=0, description="Filings in finq's EDGAR index (form, date, link), read or not"
    )


# The figures are read in one pass over metric_values, grouped down to a row per company
# and fiscal year before the years are gathered (an aggregate per company would scan the
# table once for each); the price range is two index probes per company, not a scan of
# every day. Documents count once read (`ready`): what is still being read cannot be
# searched yet, and what failed never will be.
_HOLDINGS_SQL = """
WITH years AS (
    SELECT symbol, fiscal_year, bool_or(period_type = 'annual') AS annual,
           count(*) AS value_count
    FROM metric_values GROUP BY symbol, fiscal_year
), figures AS (
    SELECT symbol, array_agg(fiscal_year ORDER BY fiscal_year) AS fiscal_years,
           array_agg(fiscal_year ORDER BY fiscal_year) FILTER (WHERE annual)
               AS annual_fiscal_years,
           sum(value_count)::bigint AS value_count
    FROM years GROUP BY symbol
), edgar AS (
    SELECT symbol, count(*) AS filings FROM filings GROUP BY symbol
)
SELECT c.symbol, c.name, c.display_name, c.tickers, c.cik, c.fiscal_year_end,
       figures.fiscal_years, figures.annual_fiscal_years, figures.value_count,
       (SELECT min(p.day) FROM prices p WHERE p.symbol = c.symbol) AS first_day,
       (SELECT max(p.day) FROM prices p WHERE p.symbol = c.symbol) AS last_day,
       documents.filings, documents.uploads,
       coalesce(edgar.filings, 0) AS edgar_filings
FROM companies c
LEFT JOIN figures ON figures.symbol = c.symbol
LEFT JOIN edgar ON edgar.symbol = c.symbol
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.user_id IS NULL) AS filings,
           count(*) FILTER (WHERE d.user_id = finq_acting_user()) AS uploads
    FROM documents d
    WHERE d.status = 'ready'
      AND (d.symbol = c.symbol OR d.symbol = ANY(c.tickers))
      AND (d.user_id IS NULL OR d.user_id = finq_acting_user())
) documents
ORDER BY lower(c.name), c.symbol
"""


async def list_company_holdings(db: Database) -> list[CompanyHoldings]:
    """Every company finq holds, by name, with what it holds of each (see the module)."""
    return [_holdings(row) for row in await db.fetch(_HOLDINGS_SQL)]


def _holdings(row: Any) -> CompanyHoldings:
    fiscal_years: list[int] = list(row["fiscal_years"] or [])
    figures = (
        FiguresHeld(
            first_fiscal_year=fiscal_years[0],
            last_fiscal_year=fiscal_years[-1],
            fiscal_years=fiscal_years,
            annual_fiscal_years=list(row["annual_fiscal_years"] or []),
            values=row["value_count"],
        )
        if fiscal_years
        else None
    )
    prices = (
        PricesHeld(first_day=row["first_day"], last_day=row["last_day"])
        if row["first_day"] is not None
        else None
    )
    symbol: str = row["symbol"]
    # A company loaded by an ingest that knew no tickers (prices alone) keeps the empty
    # default: its symbol is then its one ticker.
    tickers = [symbol, *(t for t in row["tickers"] if t != symbol)]
    return CompanyHoldings(
        symbol=symbol,
        name=row["name"],
        display_name=row["display_name"],
        tickers=tickers,
        cik=row["cik"],
        fiscal_year_end=fiscal_year_end(row["fiscal_year_end"]),
        figures=figures,
        prices=prices,
        documents=DocumentsHeld(filings=row["filings"], uploads=row["uploads"]),
        edgar_filings=row["edgar_filings"],
    )


def fiscal_year_end(sec_month_day: str | None) -> FiscalYearEnd | None:
    """SEC's `MMDD` ("0926") as a month and a day; None when absent or not a day of a year
    (the data is SEC's, and a malformed value must not fail the whole list)."""
    if sec_month_day is None or len(sec_month_day) != 4 or not sec_month_day.isdigit():
        return None
    month, day = int(sec_month_day[:2]), int(sec_month_day[2:])
    # 2024 is a leap year: 0229 is a day some fiscal years end on.
    try:
        date(2024, month, day)
    except ValueError:
        return None
    return FiscalYearEnd(month=month, day=day)
