"""`get_recent_filings`: a company's SEC filings, newest first, in one SQL round-trip.

A filing is not a figure, so the result has no facts: each filing is a Source
(what the answer lists and cites), with its fiscal period where it has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.tools.holdings import describe_holdings
from services.tools.sql import Fetcher
from services.tools.tool_deps import ToolDeps
from shared.contracts.tool_results import Source, ToolResult
from shared.tools import GET_RECENT_FILINGS, GetRecentFilingsArgs

# The filings asked for, plus one summary row per form the company has, so that
# "nothing matches" can say what is there, in the same trip. The LEFT JOIN from
# the company tells "no such company" (no row) from "no filings" (one row, kind NULL).
RECENT_FILINGS_SQL = """
WITH chosen AS (
    SELECT accession, form, filed, report_date, fiscal_year, fiscal_quarter, description, url
    FROM filings
    WHERE symbol = $1
      AND ($2::text[] IS NULL OR form = ANY($2::text[]))
      AND ($3::int IS NULL OR fiscal_year = $3)
    ORDER BY filed DESC, accession DESC
    LIMIT $4
), held AS (
    SELECT form,
           count(*) AS filings,
           count(*) FILTER (WHERE $3::int IS NULL OR fiscal_year = $3) AS matching,
           min(fiscal_year) AS first_year, max(fiscal_year) AS latest_year,
           min(filed) AS first_filed, max(filed) AS latest_filed
    FROM filings
    WHERE symbol = $1
    GROUP BY form
), found AS (
    SELECT 'filing' AS kind, accession, form, filed, report_date, fiscal_year, fiscal_quarter,
           description, url, NULL::bigint AS filings, NULL::bigint AS matching,
           NULL::int AS first_year, NULL::int AS latest_year,
           NULL::date AS first_filed, NULL::date AS latest_filed
    FROM chosen
    UNION ALL
    SELECT 'held', NULL, form, NULL, NULL, NULL, NULL, NULL, NULL,
           filings, matching, first_year, latest_year, first_filed, latest_filed
    FROM held
)
SELECT c.display_name, found.*
FROM companies c
LEFT JOIN found ON true
WHERE c.symbol = $1
"""


def _period(row: Any) -> str:
    if row["fiscal_year"] is None or row["fiscal_quarter"] is None:
        return ""
    if row["fiscal_quarter"] == 0:
        return f" for fiscal {row['fiscal_year']}"
    return f" for Q{row['fiscal_quarter']} of fiscal {row['fiscal_year']}"


def _says_more_than_the_form(description: str | None, form: str) -> bool:
    # "10-K", "FORM 10-K" and "FORM DEF14A" only repeat the form; "Item 2.02 Results of
    # Operations..." or "AMENDMENT NO. 1 TO FORM 10-K" tell the reader something.
    if not description:
        return False
    squeezed = description.upper().replace(" ", "").removeprefix("FORM")
    return squeezed != form.replace(" ", "")


def filing_label(company: str, row: Any) -> str:
    """ "Apple 10-K for fiscal 2023, filed 2023-11-03, accession 0000320193-23-000106"."""
    what = f"{company} {row['form']}{_period(row)}"
    if not _period(row) and _says_more_than_the_form(row["description"], row["form"]):
        what += f" ({row['description']})"
    return f"{what}, filed {row['filed'].isoformat()}, accession {row['accession']}"


def source_for_filing(company: str, row: Any) -> Source:
    periodic = row["fiscal_quarter"] is not None
    return Source(
        source_id=f"filing:{row['accession']}",
        label=filing_label(company, row),
        form=row["form"],
        accession=row["accession"],
        filed=row["filed"],
        url=row["url"],
        fiscal_year=row["fiscal_year"],
        fiscal_quarter=row["fiscal_quarter"],
        # An 8-K's report date is the date of the event, not the end of a period.
        period_end=row["report_date"] if periodic else None,
    )


def _held_summary(held: Sequence[Any]) -> str:
    """ "10-K for fiscal 2015 to 2025 (11); 8-K filed 2015-03-13 to 2026-02-24 (106); ..."."""
    parts = []
    for row in sorted(held, key=lambda r: (-r["filings"], r["form"])):
        if row["first_year"] is not None:
            span = f"for fiscal {row['first_year']} to {row['latest_year']}"
        else:
            span = f"filed {row['first_filed'].isoformat()} to {row['latest_filed'].isoformat()}"
        # No counts: a bare number in an answer must be a checked figure.
        parts.append(f"{row['form']} {span}")
    return "; ".join(parts)


def _missing(
    args: GetRecentFilingsArgs, company: str, held: Sequence[Any], returned: int
) -> list[str]:
    year = f" for fiscal {args.fiscal_year}" if args.fiscal_year is not None else ""
    if not held:
        return [f"{company}'s filings (finq holds none for {args.symbol})"]
    summary = f"held for {company}: {_held_summary(held)}"
    if args.forms is None:
        return [] if returned else [f"{company}'s filings{year} ({summary})"]
    by_form = {row["form"]: row for row in held}
    missing = []
    for form in args.forms:
        row = by_form.get(form)
        if row is None:
            missing.append(f"{company}'s {form} filings (finq holds none; {summary})")
        elif row["matching"] == 0:
            # Only a fiscal year can leave a held form without a match.
            why = (
                f"{form} filings have no fiscal year; ask without one"
                if row["first_year"] is None
                else summary
            )
            missing.append(f"{company}'s {form}{year} ({why})")
    return missing


async def get_recent_filings(db: Fetcher, args: GetRecentFilingsArgs) -> ToolResult:
    rows = await db.fetch(RECENT_FILINGS_SQL, args.symbol, args.forms, args.fiscal_year, args.limit)
    if not rows:
        return ToolResult(
            tool=GET_RECENT_FILINGS,
            arguments=args,
            missing=[f"filings of {args.symbol} (finq knows no company with that ticker)"],
        )
    company = rows[0]["display_name"]
    filings = sorted(
        (row for row in rows if row["kind"] == "filing"),
        key=lambda row: (row["filed"], row["accession"]),
        reverse=True,
    )
    held = [row for row in rows if row["kind"] == "held"]
    if not held:
        holdings = await describe_holdings(db, [args.symbol])
        _, what = holdings.get(args.symbol, (company, f"finq holds none for {args.symbol}"))
        return ToolResult(
            tool=GET_RECENT_FILINGS, arguments=args, missing=[f"{company}'s filings ({what})"]
        )
    return ToolResult(
        tool=GET_RECENT_FILINGS,
        arguments=args,
        sources=[source_for_filing(company, row) for row in filings],
        missing=_missing(args, company, held, len(filings)),
    )


async def run(args: GetRecentFilingsArgs, deps: ToolDeps) -> ToolResult:
    return await get_recent_filings(deps.db, args)
