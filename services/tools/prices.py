"""`get_prices`: a company's daily closes over a window, summarised, in one SQL round-trip.

The facts are the summary: first and last close, the change between them, the highest
and lowest close with their days, and how many trading days the window holds. The closes
are the source file's Close: split-adjusted as of its download, not adjusted for
dividends (its Adj Close, held beside it, is).
"""

from __future__ import annotations

from datetime import date, timedelta

from services.tools.holdings import describe_holdings
from services.tools.sql import Fetcher
from services.tools.tool_deps import ToolDeps
from shared.contracts.tool_results import Fact, Source, ToolResult
from shared.tools import GET_PRICES, GetPricesArgs

# The window when no start is given: this many trading days up to the end (or the last day held).
DEFAULT_TRADING_DAYS = 30

# The closes in the window, each row also carrying the company's name and the first and last
# day held, so that an empty or partly covered window is explained from the same trip. The
# span row always exists (an aggregate), so even an unknown symbol returns one row.
PRICES_SQL = """
WITH span AS (
    SELECT min(day) AS first_held, max(day) AS last_held FROM prices WHERE symbol = $1
),
chosen AS (
    SELECT day, close, source FROM prices
    WHERE symbol = $1
      AND ($2::date IS NULL OR day >= $2::date)
      AND ($3::date IS NULL OR day <= $3::date)
    ORDER BY day DESC
    LIMIT CASE WHEN $2::date IS NULL THEN $4::int END  -- LIMIT NULL: no limit
)
SELECT c.display_name, s.first_held, s.last_held, ch.day, ch.close, ch.source
FROM span s
LEFT JOIN companies c ON c.symbol = $1
LEFT JOIN chosen ch ON true
ORDER BY ch.day
"""

PER_SHARE = "USD/share"
CLOSE_NOTE = "not dividend-adjusted"
LABELS: dict[str, str] = {
    "close_first": f"first closing price ({CLOSE_NOTE})",
    "close_last": f"last closing price ({CLOSE_NOTE})",
    "close_change_pct": f"change in closing price ({CLOSE_NOTE})",
    "close_high": f"highest closing price ({CLOSE_NOTE})",
    "close_low": f"lowest closing price ({CLOSE_NOTE})",
    "trading_days": "trading days with a close",
}


def _has_weekday(first: date, last: date) -> bool:
    """Whether a trading day could fall in [first, last]; a weekend alone is no gap."""
    if last < first:
        return False
    # Any three consecutive days include a weekday.
    return (last - first).days >= 2 or first.weekday() < 5 or last.weekday() < 5


def _window(start: date | None, end: date | None) -> str:
    if start is not None and end is not None:
        return f"from {start} to {end}"
    if start is not None:
        return f"from {start}"
    return f"up to {end}" if end is not None else "(the latest held)"


def _uncovered(args: GetPricesArgs, company: str, first_held: date, last_held: date) -> list[str]:
    """The parts of the asked window outside the days held, said with the days held."""
    gaps: list[tuple[date, date]] = []
    if args.start is not None:
        gaps.append((args.start, first_held - timedelta(days=1)))
    if args.end is not None:
        gaps.append((last_held + timedelta(days=1), args.end))
    return [
        f"{company}'s closing prices from {gap_start} to {gap_end} "
        f"(held: {first_held} to {last_held})"
        for gap_start, gap_end in gaps
        if _has_weekday(gap_start, gap_end)
    ]


async def get_prices(db: Fetcher, args: GetPricesArgs) -> ToolResult:
    rows = await db.fetch(PRICES_SQL, args.symbol, args.start, args.end, DEFAULT_TRADING_DAYS)
    head = rows[0]
    company: str = head["display_name"] or args.symbol
    series = [row for row in rows if row["day"] is not None]
    first_held, last_held = head["first_held"], head["last_held"]
    if first_held is None:
        holdings = await describe_holdings(db, [args.symbol])
        _, what = holdings.get(args.symbol, (company, f"finq holds no prices for {args.symbol}"))
        return ToolResult(
            tool=GET_PRICES, arguments=args, missing=[f"{company}'s daily prices ({what})"]
        )
    if not series:
        return ToolResult(
            tool=GET_PRICES,
            arguments=args,
            missing=[
                f"{company}'s closing prices {_window(args.start, args.end)} "
                f"(held: {first_held} to {last_held})"
            ],
        )

    first, last = series[0], series[-1]
    # max/min keep the first of equal closes: the earliest day it was reached.
    high = max(series, key=lambda row: row["close"])
    low = min(series, key=lambda row: row["close"])
    start_day, end_day = first["day"], last["day"]
    files = sorted({row["source"] for row in series})
    source = Source(
        source_id=f"prices:{args.symbol}:{start_day}:{end_day}",
        label=(
            f"{company} ({args.symbol}) daily prices {start_day} to {end_day}, "
            f"{', '.join(files)}: closes as the file gives them, split-adjusted as of its "
            f"download but not adjusted for dividends; its Adj Close, which also adjusts for "
            f"dividends, is held too"
        ),
    )

    def fact(metric: str, value: float, unit: str, period_start: date, period_end: date) -> Fact:
        single = period_start == period_end
        return Fact(
            symbol=args.symbol,
            company=company,
            metric=metric,
            metric_label=LABELS[metric],
            period=period_end.isoformat() if single else f"{period_start}..{period_end}",
            period_type="daily" if single else "range",
            fiscal_year=period_end.year,
            period_start=period_start,
            period_end=period_end,
            value=value,
            unit=unit,
            source_id=source.source_id,
        )

    facts = [
        fact("close_first", first["close"], PER_SHARE, start_day, start_day),
        fact("close_last", last["close"], PER_SHARE, end_day, end_day),
    ]
    if len(series) > 1:
        facts += [
            fact(
                "close_change_pct",
                (last["close"] / first["close"] - 1) * 100,
                "%",
                start_day,
                end_day,
            ),
            fact("close_high", high["close"], PER_SHARE, high["day"], high["day"]),
            fact("close_low", low["close"], PER_SHARE, low["day"], low["day"]),
        ]
    facts.append(fact("trading_days", float(len(series)), "days", start_day, end_day))
    return ToolResult(
        tool=GET_PRICES,
        arguments=args,
        facts=facts,
        sources=[source],
        missing=_uncovered(args, company, first_held, last_held),
    )


async def run(args: GetPricesArgs, deps: ToolDeps) -> ToolResult:
    return await get_prices(deps.db, args)
