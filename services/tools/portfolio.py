"""The user's own portfolio as tool results: every figure derived from their activity rows
(shared/portfolio/ledger.py) and the closes finq holds, as facts the validator checks like
any filing figure, each citing the rows or prices it came from.

The tools read only the rows of the user the envelope names: the database shows a
transaction acting for that user nothing else (row-level security), so no argument and no
code path here can reach another user's accounts.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, TypeVar

import asyncpg

from services.tools.tool_deps import Runner, ToolDeps
from shared.contracts.tool_results import Fact, Source, ToolError, ToolResult
from shared.db import acting_as
from shared.metric_catalog import METRICS_BY_ID
from shared.portfolio.activity import Activity, ActivityKind, Instrument
from shared.portfolio.ledger import (
    Holding,
    Ledger,
    holding_performance,
    time_weighted_return,
    value_on,
)
from shared.portfolio.store import load_activities, load_instruments
from shared.tools import (
    GET_ACCOUNT_VALUE,
    GET_CASH_BALANCE,
    GET_PORTFOLIO_ACTIVITY,
    GET_PORTFOLIO_PERFORMANCE,
    GET_POSITIONS,
    RANK_HOLDINGS,
    SCREEN_HOLDINGS,
    GetAccountValueArgs,
    GetCashBalanceArgs,
    GetPortfolioActivityArgs,
    GetPortfolioPerformanceArgs,
    GetPositionsArgs,
    PortfolioArgs,
    RankHoldingsArgs,
    ScreenHoldingsArgs,
    SearchHoldingsDocumentsArgs,
    ToolArguments,
)
from shared.value_formatting import format_per_share

ArgsT = TypeVar("ArgsT", bound=ToolArguments)

# The symbol of a figure of the whole portfolio or of one account: not a company, so a
# sentence naming a company is never backed by it (the validator ties figures to names).
PORTFOLIO = "PORTFOLIO"
PORTFOLIO_NAME = "your portfolio"
NO_PORTFOLIO = (
    "you have no portfolio activity in finq yet; import your broker's activity CSV with "
    "POST /v1/portfolio/import or `finq portfolio import`"
)
PER_SHARE = "USD/share"
# A close this many days older than the day valued is said to be stale in the answer.
STALE_AFTER_DAYS = 4

CLOSES_SQL = """
SELECT symbol, day, close FROM prices
WHERE symbol = ANY($1::text[]) AND day >= $2 AND day <= $3
ORDER BY symbol, day
"""
LAST_PRICE_DAY_SQL = "SELECT max(day) FROM prices WHERE symbol = ANY($1::text[])"
ANY_PRICE_DAY_SQL = "SELECT max(day) FROM prices"
COMPANY_NAMES_SQL = "SELECT symbol, display_name FROM companies WHERE symbol = ANY($1::text[])"
FIGURES_SQL = """
SELECT symbol, fiscal_year, value, period_end, form, accession, filed
FROM metric_values
WHERE symbol = ANY($1::text[]) AND metric = $2 AND period_type = 'annual'
ORDER BY symbol, fiscal_year
"""


def _float(value: Decimal) -> float:
    return float(value)


@dataclass
class Closes:
    """The closes finq holds for the symbols of one portfolio, looked up by day."""

    by_symbol: dict[str, list[tuple[date, Decimal]]]

    def __call__(self, symbol: str, day: date) -> tuple[date, Decimal] | None:
        series = self.by_symbol.get(symbol)
        if not series:
            return None
        # The latest close on or before `day`: a binary search over the days held.
        low, high = 0, len(series)
        while low < high:
            middle = (low + high) // 2
            if series[middle][0] <= day:
                low = middle + 1
            else:
                high = middle
        return series[low - 1] if low else None


@dataclass
class Book:
    """One user's activity and what a tool needs around it."""

    activities: list[Activity]
    instruments: dict[str, Instrument]
    closes: Closes
    companies: dict[str, str]
    last_price_day: date | None
    accounts: list[str]

    def name_of(self, symbol: str) -> str:
        return self.companies.get(symbol) or (
            self.instruments[symbol].name if symbol in self.instruments else symbol
        )


async def open_book(pool: asyncpg.Pool, user_id: str) -> Book:
    """The user's activity (their rows only: the transaction acts for them) and the closes
    of every symbol they ever held."""
    async with acting_as(pool, user_id).acquire() as conn:
        activities = await load_activities(conn)
        instruments = await load_instruments(conn)
        symbols = sorted({a.symbol for a in activities if a.symbol})
        by_symbol: dict[str, list[tuple[date, Decimal]]] = {}
        last_day: date | None = None
        companies: dict[str, str] = {}
        if symbols:
            first = min(a.trade_date for a in activities) - timedelta(days=10)
            last_day = await conn.fetchval(LAST_PRICE_DAY_SQL, symbols)
            for row in await conn.fetch(CLOSES_SQL, symbols, first, last_day or date.max):
                by_symbol.setdefault(row["symbol"], []).append(
                    (row["day"], Decimal(str(row["close"])))
                )
            companies = {
                row["symbol"]: row["display_name"]
                for row in await conn.fetch(COMPANY_NAMES_SQL, symbols)
            }
        else:
            # Nothing held yet: "today" is still finq's last day of prices, not the clock's.
            last_day = await conn.fetchval(ANY_PRICE_DAY_SQL)
    accounts = list(dict.fromkeys(a.account for a in activities))
    accounts += [a.to_account for a in activities if a.to_account and a.to_account not in accounts]
    return Book(activities, instruments, Closes(by_symbol), companies, last_day, accounts)


# --- accounts named in words ------------------------------------------------------------

_ACCOUNT_FILLER = re.compile(r"\b(?:my|the|account|accounts|acct)\b|[^a-z0-9 ]", re.IGNORECASE)
_KIND_WORDS = {
    "roth ira": "roth_ira",
    "roth": "roth_ira",
    "ira": "ira",
    "traditional ira": "ira",
    "401k": "401k",
    "401 k": "401k",
    "brokerage": "brokerage",
    "taxable": "brokerage",
    "cash management": "cash_management",
}


def _plain(text: str) -> str:
    return " ".join(_ACCOUNT_FILLER.sub(" ", text.lower()).split())


class AccountNotFound(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def match_account(phrase: str, book: Book) -> str:
    """The one account of the user's that `phrase` names: by name, else by kind ("IRA" is
    a traditional IRA, never the Roth). None fits, or several: AccountNotFound, whose
    message lists the user's accounts (a question to ask back when several fit)."""
    wanted = _plain(phrase)
    kinds = {a.account: a.account_kind.value for a in book.activities}
    kinds.update(
        {
            a.to_account: a.to_account_kind.value
            for a in book.activities
            if a.to_account and a.to_account_kind
        }
    )
    by_name = [name for name in book.accounts if _plain(name) == wanted]
    if len(by_name) == 1:
        return by_name[0]
    kind = _KIND_WORDS.get(wanted)
    fitting = [name for name in book.accounts if kind is not None and kinds.get(name) == kind]
    if not fitting:
        fitting = [name for name in book.accounts if wanted and wanted in _plain(name)]
    if len(fitting) == 1:
        return fitting[0]
    listed = " or ".join(book.accounts)
    if not fitting:
        raise AccountNotFound(
            "unknown_account",
            f"you have no account called “{phrase}”; yours are {listed}"
            if book.accounts
            else "you have no accounts in finq yet: import your activity first",
        )
    raise AccountNotFound("ambiguous_account", f"Which account: {' or '.join(fitting)}?")


# --- facts -------------------------------------------------------------------------------


@dataclass
class Facts:
    """The facts and sources of one tool result, built up as it is computed."""

    facts: list[Fact]
    sources: dict[str, Source]

    def source(self, source_id: str, label: str, filed: date | None = None) -> str:
        self.sources.setdefault(source_id, Source(source_id=source_id, label=label, filed=filed))
        return source_id

    def add(
        self,
        symbol: str,
        company: str,
        metric: str,
        label: str,
        value: Decimal | float,
        unit: str,
        day: date,
        source_id: str,
        start: date | None = None,
    ) -> None:
        self.facts.append(
            Fact(
                symbol=symbol,
                company=company,
                metric=metric,
                metric_label=label,
                period=f"{start}..{day}" if start else day.isoformat(),
                period_type="range" if start else "daily",
                fiscal_year=day.year,
                period_start=start,
                period_end=day,
                value=float(value),
                unit=unit,
                source_id=source_id,
            )
        )


def _rows_text(rows: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in list(rows)[:12])
    more = f" and {len(rows) - 12} more" if len(rows) > 12 else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


def _activity_source(facts: Facts, holding: Holding) -> str:
    return facts.source(
        f"portfolio:trades:{holding.account}:{holding.symbol}",
        f"your {holding.symbol} trades in {holding.account} (your imported activity, "
        f"{_rows_text(holding.rows)})",
    )


def _price_source(facts: Facts, book: Book, symbol: str, day: date) -> str:
    return facts.source(
        f"prices:{symbol}:{day}",
        f"{book.name_of(symbol)} ({symbol}) close on {day}, from the daily prices finq holds",
    )


def _valuation_day(args: PortfolioArgs, book: Book) -> date:
    """The day figures are valued on: the one asked, else the last close finq holds."""
    return args.as_of or book.last_price_day or date.today()


# --- the tools -----------------------------------------------------------------------------


def _holding_facts(
    facts: Facts, book: Book, holding: Holding, day: date, since: date | None = None
) -> list[str]:
    """The facts of one holding valued on `day`; returns notes (a stale or missing close).
    Each label ends " in <account>": the answer groups a holding's facts by it. With
    `since`, the holding's realized gains and dividends are those from `since` to `day`."""
    symbol, name, where = holding.symbol, book.name_of(holding.symbol), holding.account
    # (metric, label, value, unit), from the rows of the holding's trades.
    from_rows: list[tuple[str, str, Decimal, str]] = [
        ("shares_held", f"shares of {symbol} held", holding.quantity, "shares")
    ]
    # Over a span: (metric, label, value, unit), each a fact of the span's days.
    over_span: list[tuple[str, str, Decimal, str]] = []
    if holding.quantity:
        from_rows += [
            ("average_cost", f"average cost per {symbol} share", holding.average_cost, PER_SHARE),
            (
                "cost_basis",
                f"cost basis (average cost) of {symbol}",
                holding.cost_basis_average,
                "USD",
            ),
            (
                "cost_basis_fifo",
                f"cost basis (FIFO lots) of {symbol}",
                holding.cost_basis_fifo,
                "USD",
            ),
        ]
    earned = over_span if since is not None else from_rows
    if holding.realized_average or holding.realized_fifo:
        earned += [
            (
                "realized_gain",
                f"realized gain (average cost) on {symbol}",
                holding.realized_average,
                "USD",
            ),
            (
                "realized_gain_fifo",
                f"realized gain (FIFO) on {symbol}",
                holding.realized_fifo,
                "USD",
            ),
        ]
    if holding.dividends:
        earned.append(
            ("dividends_received", f"dividends received on {symbol}", holding.dividends, "USD")
        )
    rows = _activity_source(facts, holding)
    for metric, label, value, unit in from_rows:
        facts.add(symbol, name, metric, f"{label} in {where}", value, unit, day, rows)
    for metric, label, value, unit in over_span:
        facts.add(symbol, name, metric, f"{label} in {where}", value, unit, day, rows, since)
    if not holding.quantity:
        return []
    close = book.closes(symbol, day)
    if close is None:
        return [f"finq holds no price for {symbol}, so its value is not known"]
    close_day, price = close
    prices = _price_source(facts, book, symbol, close_day)
    facts.add(symbol, name, "last_close", f"{symbol} close", price, PER_SHARE, close_day, prices)
    value = holding.quantity * price
    gain = value - holding.cost_basis_average
    at_close: list[tuple[str, str, Decimal, str]] = [
        ("market_value", f"market value of {symbol}", value, "USD"),
        ("unrealized_gain", f"unrealized gain on {symbol}", gain, "USD"),
    ]
    if holding.cost_basis_average:
        at_close.append(
            (
                "unrealized_return",
                f"return on {symbol} since purchase",
                gain / holding.cost_basis_average * 100,
                "%",
            )
        )
    for metric, label, amount, unit in at_close:
        facts.add(symbol, name, metric, f"{label} in {where}", amount, unit, close_day, prices)
    if (day - close_day).days > STALE_AFTER_DAYS:
        return [f"the latest {symbol} close finq holds is from {close_day}, before {day}"]
    return []


def _result(
    tool: str, args: ToolArguments, facts: Facts, missing: list[str] | None = None
) -> ToolResult:
    return ToolResult(
        tool=tool,
        arguments=args,
        facts=facts.facts,
        sources=list(facts.sources.values()),
        missing=missing or [],
    )


def _account_filter(args: PortfolioArgs, book: Book) -> str | None:
    return match_account(args.account, book) if args.account else None


def _since(holdings: list[Holding], book: Book, start: date) -> list[Holding]:
    """The holdings with their realized gains and dividends counted from `start` only: what
    the ledger holds on their day less what it held the day before `start`."""
    before = {
        (h.account, h.symbol): h
        for h in Ledger.build(book.activities, as_of=start - timedelta(days=1)).holdings(
            open_only=False
        )
    }
    counted = []
    for holding in holdings:
        earlier = before.get((holding.account, holding.symbol))
        if earlier is not None:
            holding = replace(
                holding,
                realized_average=holding.realized_average - earlier.realized_average,
                realized_fifo=holding.realized_fifo - earlier.realized_fifo,
                dividends=holding.dividends - earlier.dividends,
            )
        counted.append(holding)
    return counted


def _realized_totals(
    facts: Facts, holdings: list[Holding], args: GetPositionsArgs, account: str | None, day: date
) -> list[str]:
    """The realized gains of all the holdings' sales (from `args.start`, when given), by
    average cost and by FIFO lots; a note when none of them was sold."""
    sold = [h for h in holdings if h.realized_average or h.realized_fifo]
    where = f" in {account}" if account else ""
    if not sold:
        what = " or ".join(args.symbols) if args.symbols else "nothing"
        return [
            f"you sold {'no ' if args.symbols else ''}{what}{where}"
            + (" in that span" if args.start else "")
        ]
    name = account or PORTFOLIO_NAME
    source = facts.source(
        f"portfolio:realized:{name}:{args.start or 'first'}:{day}",
        f"your sales{where} from your imported activity ("
        + "; ".join(f"{h.symbol} {_rows_text(h.rows)}" for h in sold)
        + ")",
    )
    totals = (
        ("realized_gain_total", "realized gain (average cost)", [h.realized_average for h in sold]),
        ("realized_gain_fifo_total", "realized gain (FIFO)", [h.realized_fifo for h in sold]),
    )
    for metric, label, values in totals:
        total = sum(values, Decimal(0))
        label = f"{label} of your sales{where}"
        facts.add(PORTFOLIO, name, metric, label, total, "USD", day, source, args.start)
    return []


async def get_positions(book: Book, args: GetPositionsArgs) -> ToolResult:
    day = _valuation_day(args, book)
    account = _account_filter(args, book)
    ledger = Ledger.build(book.activities, as_of=day)
    holdings = ledger.holdings(account=account, open_only=not args.include_closed)
    if args.start is not None:
        holdings = _since(holdings, book, args.start)
    if args.symbols:
        holdings = [h for h in holdings if h.symbol in args.symbols]
    if args.asset_class:
        holdings = [
            h
            for h in holdings
            if h.symbol in book.instruments
            and book.instruments[h.symbol].asset_class == args.asset_class
        ]
    facts = Facts([], {})
    missing: list[str] = []
    for holding in holdings:
        missing.extend(_holding_facts(facts, book, holding, day, args.start))
    if args.include_closed:
        missing.extend(_realized_totals(facts, holdings, args, account, day))
    held = {h.symbol for h in holdings}
    where = f" in {account}" if account else ""
    missing.extend(
        f"you hold no {symbol}{where}" for symbol in (args.symbols or []) if symbol not in held
    )
    if not holdings and not args.symbols:
        missing.append(f"you hold no positions{where}")
    return _result(GET_POSITIONS, args, facts, missing)


def _cash_facts(
    facts: Facts, book: Book, ledger: Ledger, account: str | None, day: date
) -> Decimal:
    total = Decimal(0)
    for balance in ledger.cash(account=account):
        source = facts.source(
            f"portfolio:cash:{balance.account}",
            f"cash of {balance.account} from your imported activity up to {day}",
        )
        for metric, label, value in (
            ("cash_settled", f"settled cash in {balance.account}", balance.settled),
            ("cash_unsettled", f"unsettled cash in {balance.account}", balance.unsettled),
            ("cash_total", f"cash in {balance.account}", balance.total),
        ):
            facts.add(PORTFOLIO, balance.account, metric, label, value, "USD", day, source)
        total += balance.total
    return total


async def get_cash_balance(book: Book, args: GetCashBalanceArgs) -> ToolResult:
    day = _valuation_day(args, book)
    account = _account_filter(args, book)
    ledger = Ledger.build(book.activities, as_of=day)
    facts = Facts([], {})
    total = _cash_facts(facts, book, ledger, account, day)
    if account is None and len(ledger.cash()) > 1:
        source = facts.source("portfolio:cash", f"cash of all your accounts up to {day}")
        facts.add(
            PORTFOLIO,
            PORTFOLIO_NAME,
            "cash_all",
            "cash in all your accounts",
            total,
            "USD",
            day,
            source,
        )
    return _result(GET_CASH_BALANCE, args, facts)


async def get_account_value(book: Book, args: GetAccountValueArgs) -> ToolResult:
    day = _valuation_day(args, book)
    account = _account_filter(args, book)
    accounts = [account] if account else book.accounts
    facts = Facts([], {})
    missing: list[str] = []
    total = Decimal(0)
    for name in accounts:
        valuation = value_on(book.activities, day, book.closes, accounts=[name])
        source = facts.source(
            f"portfolio:value:{name}:{day}",
            f"{name}: your holdings at the closes finq holds on or before {day}, plus cash",
        )
        missing.extend(stale_closes(book, facts, valuation.stale))
        missing.extend(
            f"finq holds no price for {symbol}; it is left out of {name}'s value"
            for symbol in valuation.unpriced
        )
        facts.add(
            PORTFOLIO,
            name,
            "holdings_value",
            f"value of the holdings in {name}",
            valuation.holdings_value,
            "USD",
            day,
            source,
        )
        facts.add(
            PORTFOLIO, name, "cash_total", f"cash in {name}", valuation.cash, "USD", day, source
        )
        facts.add(
            PORTFOLIO,
            name,
            "account_value",
            f"value of {name}",
            valuation.total,
            "USD",
            day,
            source,
        )
        total += valuation.total
    if len(accounts) > 1:
        source = facts.source(f"portfolio:value:{day}", f"all your accounts valued on {day}")
        facts.add(
            PORTFOLIO,
            PORTFOLIO_NAME,
            "portfolio_value",
            "value of all your accounts",
            total,
            "USD",
            day,
            source,
        )
    return _result(GET_ACCOUNT_VALUE, args, facts, list(dict.fromkeys(missing)))


def _span(args: Any, book: Book) -> tuple[date, date]:
    end = args.end or book.last_price_day or date.today()
    first = min((a.trade_date for a in book.activities), default=end)
    return max(args.start or first, first), end


async def get_portfolio_activity(book: Book, args: GetPortfolioActivityArgs) -> ToolResult:
    account = _account_filter(args, book)
    start = args.start or date.min
    end = args.end or date.max
    kinds = {ActivityKind(kind) for kind in args.kinds} if args.kinds else None
    rows = [
        a
        for a in book.activities
        if start <= a.trade_date <= end
        and (kinds is None or a.kind in kinds)
        and (args.symbol is None or a.symbol == args.symbol)
        and (account is None or account in (a.account, a.to_account))
    ]
    rows.sort(key=lambda a: (a.trade_date, a.row), reverse=True)
    facts = Facts([], {})
    for activity in rows[: args.limit]:
        source = facts.source(
            f"portfolio:row:{activity.trade_date}:{activity.row}:{activity.kind.value}",
            f"your imported activity, row {activity.row}: {activity.kind.value} on "
            f"{activity.trade_date} in {activity.account}",
        )
        symbol = activity.symbol or PORTFOLIO
        name = book.name_of(activity.symbol) if activity.symbol else activity.account
        day = activity.trade_date
        what = f"{activity.kind.value} on {day}"
        if activity.quantity is not None:
            facts.add(
                symbol,
                name,
                f"{activity.kind.value}_quantity",
                f"shares in the {what}",
                activity.quantity,
                "shares",
                day,
                source,
            )
        if activity.price is not None:
            facts.add(
                symbol,
                name,
                f"{activity.kind.value}_price",
                f"price per share in the {what}",
                activity.price,
                PER_SHARE,
                day,
                source,
            )
        if activity.fees:
            facts.add(
                symbol,
                name,
                f"{activity.kind.value}_fees",
                f"fees of the {what}",
                activity.fees,
                "USD",
                day,
                source,
            )
        facts.add(
            symbol,
            name,
            f"{activity.kind.value}_amount",
            # Each kind moves cash one way (a buy pays, a sale brings): the size is the fact.
            f"cash paid or received in the {what}",
            abs(activity.amount),
            "USD",
            day,
            source,
        )
    missing = []
    if not rows:
        missing.append("no activity of yours matches that")
    elif len(rows) > args.limit:
        missing.append(f"{len(rows) - args.limit} older rows are not shown")
    # Totals per kind: "how much did I deposit this year".
    totals: dict[ActivityKind, Decimal] = {}
    for activity in rows:
        totals[activity.kind] = totals.get(activity.kind, Decimal(0)) + activity.amount
    if rows:
        first_day, last_day = min(a.trade_date for a in rows), max(a.trade_date for a in rows)
        source = facts.source(
            "portfolio:activity", f"your imported activity from {first_day} to {last_day}"
        )
        for kind, amount in totals.items():
            facts.add(
                PORTFOLIO,
                PORTFOLIO_NAME,
                f"{kind.value}_total",
                f"total cash of your {kind.value} rows",
                abs(amount),
                "USD",
                last_day,
                source,
                start=first_day,
            )
    return _result(GET_PORTFOLIO_ACTIVITY, args, facts, missing)


async def get_portfolio_performance(book: Book, args: GetPortfolioPerformanceArgs) -> ToolResult:
    account = _account_filter(args, book)
    start, end = _span(args, book)
    accounts = [account] if account else None
    result = time_weighted_return(book.activities, book.closes, start, end, accounts=accounts)
    name = account or PORTFOLIO_NAME
    facts = Facts([], {})
    source = facts.source(
        f"portfolio:performance:{name}:{start}:{end}",
        f"{name}: {result.method}, from your imported activity and the closes finq holds, "
        f"{start} to {end}",
    )
    facts.add(
        PORTFOLIO,
        name,
        "time_weighted_return",
        f"time-weighted return of {name}",
        result.return_pct * 100,
        "%",
        end,
        source,
        start=start,
    )
    facts.add(
        PORTFOLIO, name, "gain", f"gain of {name}", result.gain, "USD", end, source, start=start
    )
    facts.add(
        PORTFOLIO,
        name,
        "start_value",
        f"value of {name} at the start",
        result.start_value,
        "USD",
        start,
        source,
    )
    facts.add(
        PORTFOLIO,
        name,
        "end_value",
        f"value of {name} at the end",
        result.end_value,
        "USD",
        end,
        source,
    )
    facts.add(
        PORTFOLIO,
        name,
        "net_deposits",
        f"net deposits into {name}",
        result.net_flows,
        "USD",
        end,
        source,
        start=start,
    )
    missing = stale_closes(book, facts, value_on(book.activities, end, book.closes, accounts).stale)
    if book.last_price_day and end > book.last_price_day:
        missing.append(
            f"finq's prices end on {book.last_price_day}; later days are valued at that close"
        )
    return _result(GET_PORTFOLIO_PERFORMANCE, args, facts, missing)


def stale_closes(book: Book, facts: Facts, stale: Sequence[tuple[str, date]]) -> list[str]:
    """Notes for holdings valued at a close older than the day asked (finq's prices of a
    company may end before its other data), each with the close used as a fact of its own,
    so the day and price the note shows are checked like any other figure."""
    notes = []
    for symbol, day in stale:
        close = book.closes(symbol, day)
        if close is None:
            continue
        source = _price_source(facts, book, symbol, close[0])
        facts.add(
            symbol,
            book.name_of(symbol),
            "last_close",
            f"{symbol} close",
            close[1],
            PER_SHARE,
            close[0],
            source,
        )
        # Not "($308.26)": an amount in brackets reads as a negative one.
        notes.append(
            f"the latest {symbol} close finq holds is from {close[0]}, at "
            f"{format_per_share(float(close[1]))}, and it is valued at that close"
        )
    return notes


async def rank_holdings(book: Book, args: RankHoldingsArgs) -> ToolResult:
    if args.by in ("value", "weight"):
        return rank_holdings_by_size(book, args)
    account = _account_filter(args, book)
    start, end = _span(args, book)
    accounts = [account] if account else None
    ranked = holding_performance(book.activities, book.closes, start, end, accounts=accounts)
    # Only holdings whose gain (or return) is known are ranked; the rest are named below.
    measured = [p for p in ranked if (p.gain if args.by == "usd" else p.return_pct) is not None]
    unknown = [p.symbol for p in ranked if p not in measured]
    measured.sort(
        key=lambda p: (p.gain if args.by == "usd" else p.return_pct) or Decimal(0),
        reverse=args.order == "best",
    )
    ranked = measured
    facts = Facts([], {})
    for performance in ranked[: args.limit]:
        symbol = performance.symbol
        name = book.name_of(symbol)
        source = facts.source(
            f"portfolio:performance:{symbol}:{start}:{end}",
            f"your {symbol} trades and dividends with the closes finq holds, {start} to {end}",
        )
        facts.add(
            symbol,
            name,
            "holding_gain",
            f"gain on {symbol}",
            performance.gain or Decimal(0),
            "USD",
            end,
            source,
            start=start,
        )
        if performance.return_pct is not None:
            facts.add(
                symbol,
                name,
                "holding_return",
                f"return on {symbol}",
                performance.return_pct * 100,
                "%",
                end,
                source,
                start=start,
            )
    missing = [] if ranked else ["you held nothing in that span"]
    missing.extend(f"finq holds no close for {symbol} to measure it by" for symbol in unknown)
    for performance in ranked[: args.limit]:
        close = book.closes(performance.symbol, end)
        if close is not None and (end - close[0]).days > STALE_AFTER_DAYS:
            missing.extend(stale_closes(book, facts, [(performance.symbol, close[0])]))
    return _result(RANK_HOLDINGS, args, facts, missing)


def rank_holdings_by_size(book: Book, args: RankHoldingsArgs) -> ToolResult:
    """The holdings on one day (the span's last: `end`, else the last close held) by market
    value, summed over the accounts (or the one asked), each with its weight: its share of
    all the holdings' value. Holdings with no close are named, not ranked."""
    day = args.end or _valuation_day(args, book)
    account = _account_filter(args, book)
    values = holding_values(book, day, account)
    held = {h.symbol for h in Ledger.build(book.activities, as_of=day).holdings(account=account)}
    ranked = sorted(values, key=lambda symbol: (values[symbol], symbol))
    if args.order == "best":
        ranked.reverse()
    total = sum(values.values(), Decimal(0))
    facts = Facts([], {})
    missing: list[str] = []
    for symbol in ranked[: args.limit]:
        name = book.name_of(symbol)
        source = facts.source(
            f"portfolio:value:{symbol}:{day}",
            f"your {symbol} shares at the close finq holds on or before {day}",
        )
        value = values[symbol]
        label = f"market value of your {symbol}"
        facts.add(symbol, name, "holding_value", label, value, "USD", day, source)
        if total:
            label = f"{symbol}'s share of your holdings' value"
            facts.add(symbol, name, "holding_weight", label, value / total * 100, "%", day, source)
        close = book.closes(symbol, day)
        if close is not None and (day - close[0]).days > STALE_AFTER_DAYS:
            missing.extend(stale_closes(book, facts, [(symbol, close[0])]))
    if total:
        source = facts.source(
            f"portfolio:value:{day}", f"your holdings at the closes finq holds on or before {day}"
        )
        label = "value of your holdings"
        facts.add(PORTFOLIO, PORTFOLIO_NAME, "holdings_value", label, total, "USD", day, source)
    missing.extend(
        f"finq holds no price for {symbol}, so it is not ranked"
        for symbol in sorted(held - set(values))
    )
    if not held:
        missing.append("you held nothing" + (f" in {account}" if account else "") + " then")
    return _result(RANK_HOLDINGS, args, facts, missing)


def holding_values(book: Book, day: date, account: str | None) -> dict[str, Decimal]:
    """What each symbol held on `day` is worth at the latest close on or before it, summed
    over the accounts (or the one asked); symbols without a close are left out."""
    values: dict[str, Decimal] = {}
    for holding in Ledger.build(book.activities, as_of=day).holdings(account=account):
        close = book.closes(holding.symbol, day)
        if close is not None:
            values[holding.symbol] = (
                values.get(holding.symbol, Decimal(0)) + holding.quantity * close[1]
            )
    return values


async def screen_holdings(
    book: Book, args: ScreenHoldingsArgs, db: asyncpg.Connection | asyncpg.Pool
) -> ToolResult:
    """Holdings whose company figure meets the condition, and their share of the holdings'
    value: the portfolio side from the ledger, the company side from the figures finq holds."""
    day = _valuation_day(args, book)
    values = holding_values(book, day, _account_filter(args, book))
    metric = METRICS_BY_ID[args.metric]
    rows = await db.fetch(FIGURES_SQL, sorted(values), args.metric)
    by_symbol: dict[str, dict[int, Any]] = {}
    for row in rows:
        by_symbol.setdefault(row["symbol"], {})[row["fiscal_year"]] = row
    facts = Facts([], {})
    missing: list[str] = []
    total = sum(values.values(), Decimal(0))
    matched = Decimal(0)
    for symbol, value in sorted(values.items()):
        name = book.name_of(symbol)
        years = by_symbol.get(symbol, {})
        year = args.fiscal_year or (max(years) if years else None)
        if year is None or year not in years:
            missing.append(
                f"{name}'s {metric.label.lower()} for "
                + (f"fiscal {year}" if year else "any fiscal year")
            )
            continue
        figure = years[year]
        source_id = facts.source(
            f"xbrl:{symbol}:{args.metric}:FY{year}",
            f"{name} {figure['form'] or ''} {figure['accession'] or ''}".strip(),
            figure["filed"],
        )
        facts.facts.append(
            Fact(
                symbol=symbol,
                company=name,
                metric=args.metric,
                metric_label=metric.label,
                period=f"FY{year}",
                fiscal_year=year,
                period_end=figure["period_end"],
                value=float(figure["value"]),
                unit=metric.unit,
                source_id=source_id,
            )
        )
        shown = float(figure["value"])
        if args.condition in ("falling", "rising"):
            before = years.get(year - 1)
            if before is None:
                missing.append(f"{name}'s {metric.label.lower()} for fiscal {year - 1}")
                continue
            facts.facts.append(
                Fact(
                    symbol=symbol,
                    company=name,
                    metric=args.metric,
                    metric_label=metric.label,
                    period=f"FY{year - 1}",
                    fiscal_year=year - 1,
                    period_end=before["period_end"],
                    value=float(before["value"]),
                    unit=metric.unit,
                    source_id=source_id,
                )
            )
            meets = (
                shown < float(before["value"])
                if args.condition == "falling"
                else shown > float(before["value"])
            )
        else:
            assert args.threshold is not None
            meets = shown > args.threshold if args.condition == "above" else shown < args.threshold
        prices = facts.source(
            f"portfolio:value:{symbol}:{day}",
            f"your {symbol} shares at the close finq holds on or before {day}",
        )
        facts.add(
            symbol,
            name,
            "market_value",
            f"market value of your {symbol}",
            value,
            "USD",
            day,
            prices,
        )
        if meets:
            matched += value
            facts.add(
                symbol,
                name,
                "screen_match",
                f"{symbol} meets the condition",
                1,
                "count",
                day,
                prices,
            )
    if total:
        source = facts.source(
            f"portfolio:value:{day}", f"your holdings at the closes finq holds on or before {day}"
        )
        facts.add(
            PORTFOLIO,
            PORTFOLIO_NAME,
            "holdings_value",
            "value of your holdings",
            total,
            "USD",
            day,
            source,
        )
        facts.add(
            PORTFOLIO,
            PORTFOLIO_NAME,
            "screen_value",
            "value of the holdings that meet it",
            matched,
            "USD",
            day,
            source,
        )
        facts.add(
            PORTFOLIO,
            PORTFOLIO_NAME,
            "screen_share",
            "share of your holdings' value that meets it",
            matched / total * 100,
            "%",
            day,
            source,
        )
    else:
        missing.append("you hold no priced positions")
    return _result(SCREEN_HOLDINGS, args, facts, missing)


@dataclass
class UserBook:
    """One user's book, read the first time a tool of the route asks for it: a route with
    several portfolio calls (a value and the positions behind it) reads the rows once."""

    pool: asyncpg.Pool
    user_id: str
    _book: Book | None = None

    async def get(self) -> Book:
        if self._book is None:
            self._book = await open_book(self.pool, self.user_id)
        return self._book


BookTool = Callable[[Book, ArgsT], Awaitable[ToolResult]]


def on_users_book(tool: str, read: BookTool[ArgsT]) -> Runner:
    """A portfolio tool as a runner: the user's book (the envelope's user, stamped by the
    gateway) read once per route, and the refusals every portfolio tool shares."""

    async def run(args: ArgsT, deps: ToolDeps) -> ToolResult:
        book = await deps.user_book.get()
        if not book.activities:
            return ToolResult(
                tool=tool,
                arguments=args,
                error=ToolError(code="no_portfolio", message=NO_PORTFOLIO),
            )
        try:
            return await read(book, args)
        except AccountNotFound as problem:
            return ToolResult(
                tool=tool,
                arguments=args,
                error=ToolError(code=problem.code, message=problem.message),
            )

    return run


run_get_positions = on_users_book(GET_POSITIONS, get_positions)
run_get_portfolio_activity = on_users_book(GET_PORTFOLIO_ACTIVITY, get_portfolio_activity)
run_get_portfolio_performance = on_users_book(GET_PORTFOLIO_PERFORMANCE, get_portfolio_performance)
run_rank_holdings = on_users_book(RANK_HOLDINGS, rank_holdings)
run_get_account_value = on_users_book(GET_ACCOUNT_VALUE, get_account_value)
run_get_cash_balance = on_users_book(GET_CASH_BALANCE, get_cash_balance)


async def run_screen_holdings(args: ScreenHoldingsArgs, deps: ToolDeps) -> ToolResult:
    async def screen(book: Book, screened: ScreenHoldingsArgs) -> ToolResult:
        return await screen_holdings(book, screened, deps.user_book.pool)

    return await on_users_book(SCREEN_HOLDINGS, screen)(args, deps)


async def largest_holdings(
    user_book: UserBook, args: SearchHoldingsDocumentsArgs
) -> tuple[list[str], list[Fact], list[Source]]:
    """The user's `args.largest` holdings by value (all accounts unless one is named), with
    the facts of their values: which companies' filings to read, and why those."""
    book = await user_book.get()
    day = _valuation_day(args, book)
    values = holding_values(book, day, _account_filter(args, book))
    largest = sorted(values, key=lambda symbol: values[symbol], reverse=True)[: args.largest]
    facts = Facts([], {})
    for symbol in largest:
        source = facts.source(
            f"portfolio:value:{symbol}:{day}",
            f"your {symbol} shares at the close finq holds on or before {day}",
        )
        facts.add(
            symbol,
            book.name_of(symbol),
            "market_value",
            f"market value of your {symbol}",
            values[symbol],
            "USD",
            day,
            source,
        )
    return largest, facts.facts, list(facts.sources.values())
