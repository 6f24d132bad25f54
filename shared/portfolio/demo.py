"""The demo user's portfolio: a synthetic but plausible history from 2021-01-04 to 2023-04-14
(the last day finq's bundled prices hold), so that portfolio questions can be asked of a
fresh `finq up` (`finq ask --demo "how is my AAPL position doing?"`).

Three accounts (a brokerage account, a Roth IRA and a 401(k)); deposits, a withdrawal, a
transfer between accounts and fees; buys and sells of Apple, Microsoft, NVIDIA, Alphabet and
Amazon at the bundled close of their day (finq holds Microsoft's, NVIDIA's and Alphabet's
prices up to 2022-01-28, so their trades are before it); Apple's and Microsoft's quarterly
dividends on the shares held, at the per-share amounts and payment days of those years; and
quarterly interest on the brokerage account's cash.

The history is the same every time: quantities and the days within a week a trade falls on
come from a seeded random generator, prices from the `prices` table. It is written as an
activity CSV in the documented format (shared/portfolio/csv_format.py) and imported through
`import_activity`, so it passes the checks any user's file does; imported again, it is the
same file and nothing is stored.
"""

from __future__ import annotations

import csv
import io
import random
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Protocol

import asyncpg

from shared.db import acting_as
from shared.portfolio.activity import AccountKind, ActivityKind
from shared.portfolio.store import EarlierImport, ImportOutcome, file_sha256, import_activity

DEMO_USER = "demo"
DEMO_FILE_NAME = "finq-demo-history.csv"
FIRST_DAY = date(2021, 1, 4)
LAST_DAY = date(2023, 4, 14)
DEMO_SEED = 20210104
SYMBOLS = ("AAPL", "MSFT", "NVDA", "GOOGL", "AMZN")

BROKERAGE = "Brokerage"
ROTH_IRA = "Roth IRA"
K401 = "401(k)"
ACCOUNT_KINDS = {
    BROKERAGE: AccountKind.BROKERAGE,
    ROTH_IRA: AccountKind.ROTH_IRA,
    K401: AccountKind.K401,
}

# Dividends per share, by payment day.
DIVIDENDS: dict[str, tuple[tuple[date, Decimal], ...]] = {
    "AAPL": tuple(
        (date.fromisoformat(day), Decimal(amount))
        for day, amount in (
            ("2021-02-11", "0.205"),
            ("2021-05-13", "0.22"),
            ("2021-08-12", "0.22"),
            ("2021-11-11", "0.22"),
            ("2022-02-10", "0.22"),
            ("2022-05-12", "0.23"),
            ("2022-08-11", "0.23"),
            ("2022-11-10", "0.23"),
            ("2023-02-16", "0.23"),
        )
    ),
    "MSFT": tuple(
        (date.fromisoformat(day), Decimal(amount))
        for day, amount in (
            ("2021-03-11", "0.56"),
            ("2021-06-10", "0.56"),
            ("2021-09-09", "0.56"),
            ("2021-12-09", "0.62"),
            ("2022-03-10", "0.62"),
            ("2022-06-09", "0.62"),
            ("2022-09-08", "0.62"),
            ("2022-12-08", "0.68"),
            ("2023-03-09", "0.68"),
        )
    ),
}
# The brokerage account's cash earns this a year, as rates rose.
INTEREST_RATES = {2021: Decimal("0.0001"), 2022: Decimal("0.004"), 2023: Decimal("0.035")}
CENT = Decimal("0.01")

COLUMNS = (
    "date",
    "account",
    "account_type",
    "action",
    "symbol",
    "quantity",
    "price",
    "fees",
    "amount",
    "to_account",
    "to_account_type",
    "description",
)
# On one day: money comes in first, then trades, then what pays out or is charged.
_ORDER_IN_DAY = {
    ActivityKind.DEPOSIT: 0,
    ActivityKind.TRANSFER: 0,
    ActivityKind.BUY: 1,
    ActivityKind.SELL: 1,
    ActivityKind.DIVIDEND: 2,
    ActivityKind.INTEREST: 2,
    ActivityKind.WITHDRAWAL: 3,
    ActivityKind.FEE: 3,
}


class DemoUnavailable(RuntimeError):
    """The demo cannot be made: the bundled prices it trades at are not in the database."""


class Database(Protocol):
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


@dataclass(frozen=True)
class _Row:
    day: date
    account: str
    kind: ActivityKind
    symbol: str | None = None
    quantity: int | None = None
    price: Decimal | None = None
    fees: Decimal = Decimal(0)
    amount: Decimal | None = None  # cash rows; a trade's is quantity × price ± fees
    to_account: str | None = None
    description: str = ""

    @property
    def cash(self) -> Decimal:
        """The row's effect on its account's cash."""
        if self.quantity is not None and self.price is not None:
            gross = self.quantity * self.price
            return -(gross + self.fees) if self.kind is ActivityKind.BUY else gross - self.fees
        assert self.amount is not None
        inflow = self.kind in (ActivityKind.DEPOSIT, ActivityKind.DIVIDEND, ActivityKind.INTEREST)
        return self.amount if inflow else -self.amount


@dataclass
class _History:
    """The rows so far, with the closes and trading days to place and price them."""

    closes: dict[str, dict[date, Decimal]]
    rng: random.Random
    rows: list[_Row] = field(default_factory=list)

    def trading_day(self, target: date, symbol: str = "AAPL", later_by: int = 0) -> date:
        """The `later_by`-th trading day of `symbol` on or after `target`."""
        days = sorted(self.closes[symbol])
        index = bisect_left(days, target) + later_by
        if index >= len(days):
            raise DemoUnavailable(f"no {symbol} close on or after {target} in the prices")
        return days[index]

    def cash(self, kind: ActivityKind, target: date, account: str, amount: str, why: str) -> None:
        day = self.trading_day(target)
        self.rows.append(_Row(day, account, kind, amount=Decimal(amount), description=why))

    def trade(
        self,
        kind: ActivityKind,
        target: date,
        account: str,
        symbol: str,
        quantities: tuple[int, int],
        fees: str = "0",
        within_days: int = 4,
    ) -> None:
        """A trade of between quantities[0] and quantities[1] shares, on one of the
        `within_days` trading days from `target`, at that day's close."""
        day = self.trading_day(target, symbol, self.rng.randrange(within_days))
        quantity = self.rng.randint(*quantities)
        price = self.closes[symbol][day].quantize(CENT, ROUND_HALF_EVEN)
        self.rows.append(_Row(day, account, kind, symbol, quantity, price, Decimal(fees)))

    def held(self, account: str, symbol: str, day: date) -> int:
        shares = 0
        for row in self.rows:
            if row.account == account and row.symbol == symbol and row.day <= day:
                if row.kind is ActivityKind.BUY:
                    shares += row.quantity or 0
                elif row.kind is ActivityKind.SELL:
                    shares -= row.quantity or 0
        return shares

    def cash_of(self, account: str, day: date) -> Decimal:
        total = Decimal(0)
        for row in self.rows:
            if row.day > day:
                continue
            if row.account == account:
                total += row.cash
            elif row.to_account == account:
                total += -row.cash
        return total


async def load_closes(db: Database) -> dict[str, dict[date, Decimal]]:
    """The bundled closes of the demo's companies between its first and last day."""
    rows = await db.fetch(
        "SELECT symbol, day, close FROM prices WHERE symbol = ANY($1::text[]) "
        "AND day BETWEEN $2 AND $3 ORDER BY symbol, day",
        list(SYMBOLS),
        FIRST_DAY,
        LAST_DAY,
    )
    closes: dict[str, dict[date, Decimal]] = defaultdict(dict)
    for row in rows:
        # Through its shortest exact text: the close as the source file wrote it.
        closes[row["symbol"]][row["day"]] = Decimal(repr(row["close"]))
    missing = [s for s in SYMBOLS if FIRST_DAY not in closes.get(s, {})]
    if missing or LAST_DAY not in closes.get("AAPL", {}):
        raise DemoUnavailable(
            "the bundled prices are not loaded (finq ingest default): the demo trades at "
            f"the closes of {', '.join(SYMBOLS)} from {FIRST_DAY} to {LAST_DAY}"
        )
    return dict(closes)


def demo_history(closes: dict[str, dict[date, Decimal]]) -> bytes:
    """The demo's activity CSV, from the closes `load_closes` reads."""
    history = _History(closes, random.Random(DEMO_SEED))
    _opening(history)
    _monthly_saving(history)
    _later_trades(history)
    _transfers_and_fees(history)
    # Dividends and interest are paid on what the trades above left.
    _dividends(history)
    _interest(history)
    return _csv(history.rows)


def _opening(history: _History) -> None:
    buy = ActivityKind.BUY
    history.cash(ActivityKind.DEPOSIT, FIRST_DAY, BROKERAGE, "60000", "opening deposit")
    history.cash(ActivityKind.DEPOSIT, FIRST_DAY, ROTH_IRA, "6000", "2021 contribution")
    history.cash(
        ActivityKind.DEPOSIT, FIRST_DAY, K401, "25000", "rollover from a former employer's plan"
    )
    start = FIRST_DAY + timedelta(days=1)
    history.trade(buy, start, BROKERAGE, "AAPL", (40, 60))
    history.trade(buy, start, BROKERAGE, "MSFT", (20, 30))
    history.trade(buy, start, BROKERAGE, "NVDA", (20, 40))
    history.trade(buy, start, BROKERAGE, "GOOGL", (3, 6), fees="4.95")
    history.trade(buy, start, BROKERAGE, "AMZN", (30, 60))
    history.trade(buy, start, ROTH_IRA, "AAPL", (15, 25))
    history.trade(buy, start, ROTH_IRA, "MSFT", (8, 12))
    history.trade(buy, start, K401, "NVDA", (30, 50))
    history.trade(buy, start, K401, "AMZN", (40, 60))
    history.trade(buy, start, K401, "GOOGL", (1, 3))


def _monthly_saving(history: _History) -> None:
    """A deposit at the start of each month, and Apple shares bought with it."""
    year, month = 2021, 2
    while date(year, month, 1) <= LAST_DAY:
        target = date(year, month, 1)
        if history.trading_day(target) <= LAST_DAY:
            history.cash(ActivityKind.DEPOSIT, target, BROKERAGE, "1000", "monthly saving")
            history.trade(ActivityKind.BUY, target, BROKERAGE, "AAPL", (3, 6), within_days=1)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def _later_trades(history: _History) -> None:
    buy, sell = ActivityKind.BUY, ActivityKind.SELL
    history.trade(sell, date(2021, 11, 22), BROKERAGE, "NVDA", (10, 20))
    history.trade(sell, date(2022, 1, 18), BROKERAGE, "GOOGL", (1, 2))
    history.trade(buy, date(2022, 1, 21), BROKERAGE, "MSFT", (5, 10), fees="4.95")
    history.trade(sell, date(2022, 3, 28), K401, "AMZN", (15, 25))
    history.trade(buy, date(2022, 6, 13), K401, "AMZN", (25, 35))
    history.trade(sell, date(2022, 8, 15), BROKERAGE, "AAPL", (15, 25))
    history.trade(buy, date(2023, 1, 4), ROTH_IRA, "AMZN", (30, 40))


def _transfers_and_fees(history: _History) -> None:
    day = history.trading_day(date(2022, 1, 3))
    history.rows.append(
        _Row(
            day,
            BROKERAGE,
            ActivityKind.TRANSFER,
            amount=Decimal(6000),
            to_account=ROTH_IRA,
            description="2022 Roth IRA contribution",
        )
    )
    history.trade(ActivityKind.BUY, date(2022, 1, 4), ROTH_IRA, "AAPL", (15, 25))
    history.cash(ActivityKind.DEPOSIT, date(2023, 1, 3), ROTH_IRA, "6500", "2023 contribution")
    history.cash(ActivityKind.WITHDRAWAL, date(2022, 12, 15), BROKERAGE, "5000", "withdrawal")
    for target in (date(2021, 12, 31), date(2022, 12, 30)):
        history.cash(ActivityKind.FEE, target, K401, "60", "annual plan administration fee")


def _dividends(history: _History) -> None:
    paid: list[_Row] = []
    for symbol, payments in DIVIDENDS.items():
        for day, per_share in payments:
            for account in ACCOUNT_KINDS:
                shares = history.held(account, symbol, day)
                if shares > 0:
                    amount = (shares * per_share).quantize(CENT, ROUND_HALF_EVEN)
                    paid.append(
                        _Row(
                            day,
                            account,
                            ActivityKind.DIVIDEND,
                            symbol,
                            amount=amount,
                            description=f"{symbol} dividend, {per_share} a share",
                        )
                    )
    history.rows.extend(paid)


def _interest(history: _History) -> None:
    for year, quarter_ends in (
        (2021, ("03-31", "06-30", "09-30", "12-31")),
        (2022, ("03-31", "06-30", "09-30", "12-30")),
        (2023, ("03-31",)),
    ):
        for month_day in quarter_ends:
            day = history.trading_day(date.fromisoformat(f"{year}-{month_day}"))
            balance = history.cash_of(BROKERAGE, day)
            amount = (balance * INTEREST_RATES[year] / 4).quantize(CENT, ROUND_HALF_EVEN)
            if amount > 0:
                history.rows.append(
                    _Row(
                        day,
                        BROKERAGE,
                        ActivityKind.INTEREST,
                        amount=amount,
                        description="interest on cash",
                    )
                )


def _csv(rows: Sequence[_Row]) -> bytes:
    ordered = sorted(
        enumerate(rows), key=lambda entry: (entry[1].day, _ORDER_IN_DAY[entry[1].kind], entry[0])
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for _, row in ordered:
        writer.writerow(_cells(row))
    return out.getvalue().encode()


def _cells(row: _Row) -> Iterable[str]:
    return (
        row.day.isoformat(),
        row.account,
        ACCOUNT_KINDS[row.account].value,
        row.kind.value,
        row.symbol or "",
        str(row.quantity) if row.quantity is not None else "",
        str(row.price) if row.price is not None else "",
        str(row.fees) if row.fees else "",
        str(row.amount) if row.amount is not None else "",
        row.to_account or "",
        ACCOUNT_KINDS[row.to_account].value if row.to_account else "",
        row.description,
    )


async def import_demo_history(pool: asyncpg.Pool, user_id: str) -> ImportOutcome:
    """Import the demo history for `user_id` once. A user who holds a demo history already
    (one an earlier finq made from other bundled prices, say) is told so, as for the same
    file: a second history would count every trade twice."""
    data = demo_history(await load_closes(pool))
    earlier = await acting_as(pool, user_id).fetch(
        "SELECT id::text AS import_id, file_name, rows, imported_at FROM portfolio_imports "
        "WHERE user_id = finq_acting_user() AND file_name = $1 ORDER BY imported_at LIMIT 1",
        DEMO_FILE_NAME,
    )
    if earlier:
        return ImportOutcome(
            file_name=DEMO_FILE_NAME,
            sha256=file_sha256(data),
            duplicate_of=EarlierImport(**dict(earlier[0])),
        )
    return await import_activity(pool, user_id, DEMO_FILE_NAME, data)
