"""What finq holds for a company, said when a question asks for something it does not hold."""

from __future__ import annotations

from typing import Any

from services.tools.sql import Fetcher
from shared.english import possessive

# Only on the no-data path, so it is a second trip only when an answer is already "no".
HOLDINGS_SQL = """
SELECT c.symbol, c.display_name,
       (SELECT min(fiscal_year) FROM metric_values v
         WHERE v.symbol = c.symbol AND v.period_type = 'annual') AS first_year,
       (SELECT max(fiscal_year) FROM metric_values v
         WHERE v.symbol = c.symbol AND v.period_type = 'annual') AS last_year,
       (SELECT min(day) FROM prices p WHERE p.symbol = c.symbol) AS first_day,
       (SELECT max(day) FROM prices p WHERE p.symbol = c.symbol) AS last_day,
       (SELECT min(filed) FROM filings f WHERE f.symbol = c.symbol) AS first_filed,
       (SELECT max(filed) FROM filings f WHERE f.symbol = c.symbol) AS last_filed
FROM companies c
WHERE c.symbol = ANY($1::text[])
"""


def describe_row(row: Any) -> str:
    held: list[str] = []
    if row["first_year"] is not None:
        held.append(f"financial figures for fiscal {row['first_year']} to {row['last_year']}")
    if row["first_day"] is not None:
        held.append(f"daily prices from {row['first_day']} to {row['last_day']}")
    if row["first_filed"] is not None:
        held.append(f"its SEC filings index, filed {row['first_filed']} to {row['last_filed']}")
    if not held:
        return f"finq holds nothing else for {row['display_name']} ({row['symbol']})"
    return f"finq holds {possessive(row['display_name'])} " + ", ".join(held)


async def describe_holdings(db: Fetcher, symbols: list[str]) -> dict[str, tuple[str, str]]:
    """symbol → (display name, a sentence fragment saying what is held for it)."""
    rows = await db.fetch(HOLDINGS_SQL, symbols)
    return {row["symbol"]: (row["display_name"], describe_row(row)) for row in rows}
