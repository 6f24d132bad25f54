"""Everything finq says about a portfolio, derived from its activity rows: positions, cost
basis (average and FIFO), realized gains, cash (settled and not), value on a day, and
performance over a timeframe. Nothing here is stored; it is replayed from the rows.

Rows are replayed in (trade date, row) order. A trade's cost and proceeds are quantity ×
price with fees added to the cost and taken from the proceeds; cash follows each row's
`amount` (the broker's figure), so the two may differ by the cent a broker rounds.

Money is exact `Decimal` arithmetic: ratios (an average cost, a return) are divided at
Decimal's 28 significant digits and nothing is rounded here; callers format.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from itertools import pairwise

from shared.portfolio.activity import EXTERNAL_FLOWS, AccountKind, Activity, ActivityKind

# The latest close held for a symbol on or before a day, with the day it is from.
Closes = Callable[[str, date], tuple[date, Decimal] | None]

TIME_WEIGHTED_RETURN_METHOD = (
    "time-weighted return, chained over the sub-periods between deposits and withdrawals, "
    "each valued at the day's close; a deposit or withdrawal counts at the end of its day"
)
HOLDING_PERFORMANCE_METHOD = (
    "gain over the timeframe: value at its end plus sale proceeds and dividends within it, "
    "minus value at its start and purchases within it (each valued at the day's close); "
    "percent of the value at the start plus purchases"
)

ZERO = Decimal(0)


class OversoldError(ValueError):
    """A sell of more shares than the account held on that date."""

    def __init__(self, row: int, account: str, symbol: str, held: Decimal, asked: Decimal) -> None:
        super().__init__(
            f"row {row}: sells {_plain(asked)} {symbol} in {account}, "
            f"which holds {_plain(held)} then"
        )
        self.row = row
        self.account = account
        self.symbol = symbol
        self.held = held
        self.asked = asked


@dataclass(frozen=True)
class Lot:
    """What remains of one buy: its shares not yet sold, and their share of its cost."""

    account: str
    symbol: str
    acquired: date
    quantity: Decimal
    cost: Decimal  # price × quantity + fees, prorated to the shares remaining
    row: int


@dataclass(frozen=True)
class Holding:
    account: str
    symbol: str
    quantity: Decimal
    # Per share: cost of the shares bought over their number. A sell leaves it unchanged; once
    # sold to zero it is the average the last shares had.
    average_cost: Decimal
    cost_basis_average: Decimal
    cost_basis_fifo: Decimal  # the remaining lots' cost
    lots: tuple[Lot, ...]  # oldest first
    realized_average: Decimal  # proceeds net of fees minus shares sold × average cost
    realized_fifo: Decimal  # proceeds net of fees minus the cost of the lots sold, oldest first
    dividends: Decimal
    first_bought: date | None  # None: dividends without a buy in the rows (an older position)
    rows: tuple[int, ...]  # the buys, sells and dividends it comes from


@dataclass(frozen=True)
class CashBalance:
    account: str
    settled: Decimal  # rows settled on or before the ledger's day
    unsettled: Decimal  # rows traded on or before it that settle after it
    total: Decimal


@dataclass(frozen=True)
class Valuation:
    day: date
    holdings_value: Decimal  # priced holdings only
    cash: Decimal  # settled and unsettled
    total: Decimal
    stale: tuple[tuple[str, date], ...]  # symbols valued at a close from before `day`
    unpriced: tuple[str, ...]  # symbols held with no close at all: left out of the value


@dataclass(frozen=True)
class SubPeriod:
    start: date
    end: date
    start_value: Decimal  # at the start day's close, after its flow
    end_value: Decimal  # at the end day's close, before its flow
    flow_at_end: Decimal  # deposits less withdrawals at the end of the end day
    return_pct: Decimal | None  # None: nothing invested at its start, so no return to measure


@dataclass(frozen=True)
class TimeWeightedReturn:
    start: date
    end: date
    return_pct: Decimal  # 0.0523 for 5.23%; 0 when nothing was invested in the timeframe
    gain: Decimal  # end_value - start_value - net_flows
    start_value: Decimal
    end_value: Decimal
    net_flows: Decimal  # deposits less withdrawals after the start day, up to the end day
    subperiods: tuple[SubPeriod, ...]
    method: str
    unpriced: tuple[str, ...]  # held on some day without a close: the values leave them out


@dataclass(frozen=True)
class HoldingPerformance:
    symbol: str
    quantity_start: Decimal
    quantity_end: Decimal
    start_value: Decimal | None  # None: held then, but no close on or before that day
    end_value: Decimal | None
    purchases: Decimal  # cost of buys within the timeframe, fees included
    sales: Decimal  # proceeds of sells within the timeframe, net of fees
    dividends: Decimal
    gain: Decimal | None  # None when a value is unknown
    return_pct: Decimal | None  # None also when nothing was invested (start value + purchases)


@dataclass
class _Position:
    """One symbol in one account while the rows are replayed."""

    quantity: Decimal = ZERO
    cost: Decimal = ZERO  # under average cost
    average_cost: Decimal = ZERO
    lots: list[Lot] = field(default_factory=list)
    realized_average: Decimal = ZERO
    realized_fifo: Decimal = ZERO
    dividends: Decimal = ZERO
    first_bought: date | None = None
    rows: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _CashLeg:
    amount: Decimal
    trade_date: date
    settlement_date: date


@dataclass
class _Book:
    """The state of every account after the rows applied so far."""

    positions: dict[tuple[str, str], _Position] = field(default_factory=dict)
    cash_legs: dict[str, list[_CashLeg]] = field(default_factory=lambda: defaultdict(list))
    cash_totals: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    account_kinds: dict[str, AccountKind] = field(default_factory=dict)

    def apply(self, activity: Activity) -> None:
        self.account_kinds.setdefault(activity.account, activity.account_kind)
        self._move_cash(activity.account, activity.amount, activity)
        if activity.kind == ActivityKind.TRANSFER and activity.to_account is not None:
            self.account_kinds.setdefault(
                activity.to_account, activity.to_account_kind or AccountKind.BROKERAGE
            )
            self._move_cash(activity.to_account, abs(activity.amount), activity)
        if activity.symbol is None:
            return
        if activity.kind == ActivityKind.BUY:
            self._buy(activity)
        elif activity.kind == ActivityKind.SELL:
            self._sell(activity)
        elif activity.kind == ActivityKind.DIVIDEND:
            position = self._position(activity)
            position.dividends += activity.amount
            position.rows.append(activity.row)

    def _move_cash(self, account: str, amount: Decimal, activity: Activity) -> None:
        self.cash_legs[account].append(
            _CashLeg(amount, activity.trade_date, activity.settlement_date)
        )
        self.cash_totals[account] += amount

    def _position(self, activity: Activity) -> _Position:
        assert activity.symbol is not None
        return self.positions.setdefault((activity.account, activity.symbol), _Position())

    def _buy(self, activity: Activity) -> None:
        assert activity.symbol is not None
        quantity, cost = _trade_shares(activity)
        position = self._position(activity)
        position.quantity += quantity
        position.cost += cost
        position.average_cost = position.cost / position.quantity
        position.lots.append(
            Lot(
                activity.account, activity.symbol, activity.trade_date, quantity, cost, activity.row
            )
        )
        if position.first_bought is None:
            position.first_bought = activity.trade_date
        position.rows.append(activity.row)

    def _sell(self, activity: Activity) -> None:
        assert activity.symbol is not None
        quantity, proceeds = _trade_shares(activity)
        position = self._position(activity)
        if quantity > position.quantity:
            raise OversoldError(
                activity.row, activity.account, activity.symbol, position.quantity, quantity
            )
        # Prorated rather than quantity × average_cost, so selling every share leaves exactly 0.
        cost_sold = position.cost * quantity / position.quantity
        position.realized_average += proceeds - cost_sold
        position.cost -= cost_sold
        position.quantity -= quantity

        lots_cost = ZERO
        to_take = quantity
        while to_take > 0:
            lot = position.lots[0]
            if lot.quantity <= to_take:
                position.lots.pop(0)
                lots_cost += lot.cost
                to_take -= lot.quantity
            else:
                cost_taken = lot.cost * to_take / lot.quantity
                position.lots[0] = replace(
                    lot, quantity=lot.quantity - to_take, cost=lot.cost - cost_taken
                )
                lots_cost += cost_taken
                to_take = ZERO
        position.realized_fifo += proceeds - lots_cost
        position.rows.append(activity.row)

    def holdings(self) -> list[Holding]:
        return [
            Holding(
                account=account,
                symbol=symbol,
                quantity=position.quantity,
                average_cost=position.average_cost,
                cost_basis_average=position.cost,
                cost_basis_fifo=sum((lot.cost for lot in position.lots), ZERO),
                lots=tuple(position.lots),
                realized_average=position.realized_average,
                realized_fifo=position.realized_fifo,
                dividends=position.dividends,
                first_bought=position.first_bought,
                rows=tuple(position.rows),
            )
            for (account, symbol), position in sorted(self.positions.items())
        ]

    def cash(self, as_of: date) -> list[CashBalance]:
        balances: list[CashBalance] = []
        for account in sorted(self.account_kinds):
            legs = self.cash_legs.get(account, [])
            settled = sum((leg.amount for leg in legs if leg.settlement_date <= as_of), ZERO)
            unsettled = sum(
                (leg.amount for leg in legs if leg.trade_date <= as_of < leg.settlement_date),
                ZERO,
            )
            balances.append(CashBalance(account, settled, unsettled, settled + unsettled))
        return balances

    def quantities(self, accounts: frozenset[str] | None) -> dict[str, Decimal]:
        """Shares held of each symbol, over the accounts asked (None: all)."""
        held: dict[str, Decimal] = defaultdict(Decimal)
        for (account, symbol), position in self.positions.items():
            if position.quantity > 0 and (accounts is None or account in accounts):
                held[symbol] += position.quantity
        return held

    def value(self, day: date, closes: Closes, accounts: frozenset[str] | None) -> Valuation:
        holdings_value = ZERO
        stale: list[tuple[str, date]] = []
        unpriced: list[str] = []
        for symbol, quantity in sorted(self.quantities(accounts).items()):
            close = closes(symbol, day)
            if close is None:
                unpriced.append(symbol)
                continue
            close_day, price = close
            holdings_value += quantity * price
            if close_day < day:
                stale.append((symbol, close_day))
        cash = sum(
            (
                total
                for account, total in self.cash_totals.items()
                if accounts is None or account in accounts
            ),
            ZERO,
        )
        return Valuation(
            day, holdings_value, cash, holdings_value + cash, tuple(stale), tuple(unpriced)
        )


class Ledger:
    """The accounts as of one day, replayed from the activity rows up to that day."""

    def __init__(
        self,
        as_of: date | None,
        activities: tuple[Activity, ...],
        holdings: tuple[Holding, ...],
        cash: tuple[CashBalance, ...],
        accounts: tuple[tuple[str, AccountKind], ...],
    ) -> None:
        self.as_of = as_of
        self.activities = activities  # the rows replayed, in replay order
        self._holdings = holdings
        self._cash = cash
        self._accounts = accounts

    @classmethod
    def build(cls, activities: Iterable[Activity], as_of: date | None = None) -> Ledger:
        """Replay the rows traded on or before `as_of` (default: the last trade date); a sell
        of more than is held raises OversoldError naming its row."""
        ordered = _in_replay_order(activities)
        if as_of is None and ordered:
            as_of = ordered[-1].trade_date
        replayed = tuple(
            activity for activity in ordered if as_of is not None and activity.trade_date <= as_of
        )
        book = _Book()
        for activity in replayed:
            book.apply(activity)
        return cls(
            as_of,
            replayed,
            tuple(book.holdings()),
            tuple(book.cash(as_of)) if as_of is not None else (),
            tuple(sorted(book.account_kinds.items())),
        )

    def holdings(
        self, account: str | None = None, symbol: str | None = None, open_only: bool = True
    ) -> list[Holding]:
        """By account, then symbol; `open_only=False` adds holdings sold to zero."""
        return [
            holding
            for holding in self._holdings
            if (account is None or holding.account == account)
            and (symbol is None or holding.symbol == symbol.upper())
            and (holding.quantity > 0 or not open_only)
        ]

    def cash(self, account: str | None = None) -> list[CashBalance]:
        return [balance for balance in self._cash if account is None or balance.account == account]

    def accounts(self) -> list[tuple[str, AccountKind]]:
        return list(self._accounts)

    def net_external_flows(
        self, start: date, end: date, accounts: Collection[str] | None = None
    ) -> Decimal:
        """Deposits less withdrawals traded after `start` up to and including `end` (a flow
        counts at the end of its day, so the start day's belongs to the value at its close).
        For some accounts only, transfers between them and the others count too."""
        subset = frozenset(accounts) if accounts is not None else None
        return sum(
            (
                _external_flow(activity, subset)
                for activity in self.activities
                if start < activity.trade_date <= end
            ),
            ZERO,
        )


def value_on(
    activities: Iterable[Activity],
    day: date,
    closes: Closes,
    accounts: Collection[str] | None = None,
) -> Valuation:
    """Holdings at the day's close (or the latest before it) plus cash, settled or not."""
    subset = frozenset(accounts) if accounts is not None else None
    for _, book in _replay(activities, [day]):
        return book.value(day, closes, subset)
    raise AssertionError("_replay yields once per day asked")


def time_weighted_return(
    activities: Iterable[Activity],
    closes: Closes,
    start: date,
    end: date,
    accounts: Collection[str] | None = None,
) -> TimeWeightedReturn:
    """The return from the close of `start` to the close of `end`, with deposits and
    withdrawals taken out: each sub-period between flows returns V_end / V_start - 1, and
    the timeframe returns the product of (1 + r) less 1."""
    if end < start:
        raise ValueError(f"the timeframe ends ({end}) before it starts ({start})")
    rows = list(activities)
    subset = frozenset(accounts) if accounts is not None else None
    flows: dict[date, Decimal] = defaultdict(Decimal)
    for activity in rows:
        if start < activity.trade_date <= end:
            flows[activity.trade_date] += _external_flow(activity, subset)
    flow_days = sorted(day for day, flow in flows.items() if flow != 0 and day < end)
    boundaries = [start, *flow_days, *([end] if end > start else [])]
    values = {day: book.value(day, closes, subset) for day, book in _replay(rows, boundaries)}

    subperiods: list[SubPeriod] = []
    growth = Decimal(1)
    for begin, finish in pairwise(boundaries):
        start_value = values[begin].total
        flow_at_end = flows.get(finish, ZERO)
        end_value = values[finish].total - flow_at_end
        return_pct: Decimal | None = None
        # Nothing invested (or an overdrawn account): a ratio to it would mean nothing.
        if start_value > 0:
            ratio = end_value / start_value
            growth *= ratio
            return_pct = ratio - 1
        subperiods.append(SubPeriod(begin, finish, start_value, end_value, flow_at_end, return_pct))

    net_flows = sum(flows.values(), ZERO)
    start_value = values[start].total
    end_value = values[end].total
    return TimeWeightedReturn(
        start=start,
        end=end,
        return_pct=growth - 1,
        gain=end_value - start_value - net_flows,
        start_value=start_value,
        end_value=end_value,
        net_flows=net_flows,
        subperiods=tuple(subperiods),
        method=TIME_WEIGHTED_RETURN_METHOD,
        unpriced=tuple(sorted({symbol for value in values.values() for symbol in value.unpriced})),
    )


def holding_performance(
    activities: Iterable[Activity],
    closes: Closes,
    start: date,
    end: date,
    accounts: Collection[str] | None = None,
) -> list[HoldingPerformance]:
    """Each symbol held or traded in the timeframe (after the close of `start`, up to the
    close of `end`), over the accounts asked, largest gain first (unknown gains last).
    See HOLDING_PERFORMANCE_METHOD."""
    if end < start:
        raise ValueError(f"the timeframe ends ({end}) before it starts ({start})")
    rows = list(activities)
    subset = frozenset(accounts) if accounts is not None else None
    held = {day: book.quantities(subset) for day, book in _replay(rows, [start, end])}
    purchases: dict[str, Decimal] = defaultdict(Decimal)
    sales: dict[str, Decimal] = defaultdict(Decimal)
    dividends: dict[str, Decimal] = defaultdict(Decimal)
    for activity in rows:
        if (
            activity.symbol is None
            or not start < activity.trade_date <= end
            or (subset is not None and activity.account not in subset)
        ):
            continue
        if activity.kind == ActivityKind.BUY:
            purchases[activity.symbol] += _trade_shares(activity)[1]
        elif activity.kind == ActivityKind.SELL:
            sales[activity.symbol] += _trade_shares(activity)[1]
        elif activity.kind == ActivityKind.DIVIDEND:
            dividends[activity.symbol] += activity.amount

    def valued(symbol: str, day: date) -> Decimal | None:
        quantity = held[day].get(symbol, ZERO)
        if quantity == 0:
            return ZERO
        close = closes(symbol, day)
        return None if close is None else quantity * close[1]

    performances: list[HoldingPerformance] = []
    for symbol in sorted({*held[start], *held[end], *purchases, *sales, *dividends}):
        start_value = valued(symbol, start)
        end_value = valued(symbol, end)
        invested = None if start_value is None else start_value + purchases[symbol]
        gain = (
            None
            if end_value is None or invested is None
            else end_value + sales[symbol] + dividends[symbol] - invested
        )
        performances.append(
            HoldingPerformance(
                symbol=symbol,
                quantity_start=held[start].get(symbol, ZERO),
                quantity_end=held[end].get(symbol, ZERO),
                start_value=start_value,
                end_value=end_value,
                purchases=purchases[symbol],
                sales=sales[symbol],
                dividends=dividends[symbol],
                gain=gain,
                return_pct=(
                    gain / invested
                    if gain is not None and invested is not None and invested > 0
                    else None
                ),
            )
        )
    performances.sort(key=lambda p: (p.gain is None, -(p.gain or ZERO), p.symbol))
    return performances


def _in_replay_order(activities: Iterable[Activity]) -> list[Activity]:
    return sorted(activities, key=lambda activity: (activity.trade_date, activity.row))


def _replay(activities: Iterable[Activity], days: Iterable[date]) -> Iterator[tuple[date, _Book]]:
    """The book at the close of each day asked, earliest first, from one pass over the rows.
    The same book is yielded each time, moved on: read it before asking for the next."""
    ordered = _in_replay_order(activities)
    book = _Book()
    applied = 0
    for day in sorted(set(days)):
        while applied < len(ordered) and ordered[applied].trade_date <= day:
            book.apply(ordered[applied])
            applied += 1
        yield day, book


def _trade_shares(activity: Activity) -> tuple[Decimal, Decimal]:
    """A buy's or sell's quantity, and its cost (buy, fees added) or proceeds (sell, fees
    taken off)."""
    if activity.quantity is None or activity.price is None:
        raise ValueError(f"row {activity.row}: a {activity.kind.value} needs quantity and price")
    gross = activity.quantity * activity.price
    if activity.kind == ActivityKind.BUY:
        return activity.quantity, gross + activity.fees
    return activity.quantity, gross - activity.fees


def _external_flow(activity: Activity, accounts: frozenset[str] | None) -> Decimal:
    """Money the row brings into the accounts asked (None: all) from outside them, or takes
    out: deposits and withdrawals, and for some accounts, transfers with the others."""
    if activity.kind in EXTERNAL_FLOWS:
        return activity.amount if accounts is None or activity.account in accounts else ZERO
    if activity.kind == ActivityKind.TRANSFER and accounts is not None:
        gives = activity.account in accounts
        takes = activity.to_account in accounts
        if gives and not takes:
            return -abs(activity.amount)
        if takes and not gives:
            return abs(activity.amount)
    return ZERO


def _plain(value: Decimal) -> str:
    """20, 15.5: a quantity as a person writes it."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
