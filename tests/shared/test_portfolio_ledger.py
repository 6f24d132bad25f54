"""The ledger (shared/portfolio/ledger.py): positions, cost basis, realized gains, cash and
performance derived from one small activity file, every figure worked out by hand below.
Pure arithmetic: no database, no services."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from shared.portfolio.activity import AccountKind, Activity
from shared.portfolio.csv_format import parse_activity_csv
from shared.portfolio.ledger import (
    HOLDING_PERFORMANCE_METHOD,
    TIME_WEIGHTED_RETURN_METHOD,
    CashBalance,
    HoldingPerformance,
    Ledger,
    Lot,
    OversoldError,
    SubPeriod,
    Valuation,
    holding_performance,
    time_weighted_return,
    value_on,
)

# Line numbers (the header is line 1) on the right.
SCENARIO_CSV = """\
date,account,account_type,action,symbol,quantity,price,fees,amount,to_account,description
2024-01-02,Brokerage,brokerage,deposit,,,,,10000,,
2024-01-02,Roth IRA,Roth IRA,deposit,,,,,5000,,
2024-01-03,Brokerage,,buy,AAPL,10,150,5,,,
2024-01-10,Brokerage,,buy,AAPL,10,170,5,,,
2024-01-12,Roth IRA,,buy,AAPL,5,160,0,,,
2024-02-01,Brokerage,,sell,AAPL,15,180,5,,,
2024-02-09,Brokerage,,dividend,AAPL,,,,1.20,,
2024-02-15,Brokerage,,fee,,,,,25,,account fee
2024-02-20,Brokerage,,transfer,,,,,2000,Roth IRA,
2024-02-22,Roth IRA,,buy,MSFT,4,400,0,,,
2024-03-01,Brokerage,,deposit,,,,,3000,,mid-period deposit
"""
#  2 deposit   Brokerage +10000
#  3 deposit   Roth IRA  +5000
#  4 buy       Brokerage 10 AAPL @ 150 + 5 fees  = -1505, Wed; settles Thu 01-04
#  5 buy       Brokerage 10 AAPL @ 170 + 5 fees  = -1705, settles 01-11
#  6 buy       Roth IRA   5 AAPL @ 160           =  -800, Fri; settles Mon 01-15
#  7 sell      Brokerage 15 AAPL @ 180 - 5 fees  = +2695, Thu; settles Fri 02-02
#  8 dividend  Brokerage AAPL (5 shares × 0.24)  =    +1.20
#  9 fee       Brokerage                         =   -25
# 10 transfer  Brokerage -> Roth IRA              = -2000 / +2000
# 11 buy       Roth IRA   4 MSFT @ 400           = -1600, settles 02-23
# 12 deposit   Brokerage                         = +3000
#
# Brokerage AAPL, average cost: bought 20 for 1505 + 1705 = 3210, 160.50 a share. The sell of
# 15 takes 15 × 160.50 = 2407.50 of it: realized 2695 - 2407.50 = 287.50; left 5 shares,
# cost 3210 - 2407.50 = 802.50, still 160.50 a share.
# FIFO: the sell takes all of lot 4 (10 shares, 1505) and 5 of lot 5's 10 (1705 × 5/10 =
# 852.50): realized 2695 - (1505 + 852.50) = 337.50; left 5 shares of lot 5 costing 852.50.
#
# Cash at the end: Brokerage 10000 - 1505 - 1705 + 2695 + 1.20 - 25 - 2000 + 3000 = 10461.20;
# Roth IRA 5000 - 800 + 2000 - 1600 = 4600.
SCENARIO = parse_activity_csv(SCENARIO_CSV.encode(), {"AAPL", "MSFT"})

# Closes chosen so that the time-weighted return comes out round (worked out below).
CLOSES: dict[str, dict[date, Decimal]] = {
    "AAPL": {
        date(2024, 1, 31): Decimal("160.40"),
        date(2024, 2, 29): Decimal("170"),
        date(2024, 3, 1): Decimal("174.88"),
        date(2024, 3, 8): Decimal("195.33"),
    },
    "MSFT": {
        date(2024, 2, 22): Decimal("400"),
        date(2024, 3, 1): Decimal("410"),
        date(2024, 3, 8): Decimal("405"),
    },
}


def closes(symbol: str, day: date) -> tuple[date, Decimal] | None:
    """The latest close on or before `day`, as a price store answers."""
    held = [close_day for close_day in CLOSES.get(symbol, {}) if close_day <= day]
    if not held:
        return None
    latest = max(held)
    return latest, CLOSES[symbol][latest]


def activities() -> tuple[Activity, ...]:
    assert SCENARIO.errors == ()
    return SCENARIO.activities


def csv_activities(text: str) -> tuple[Activity, ...]:
    parsed = parse_activity_csv(text.encode(), {"AAPL", "MSFT"})
    assert parsed.errors == ()
    return parsed.activities


# --- positions and cost basis ------------------------------------------------------------


def test_quantity_average_cost_and_fifo_cost_basis_follow_the_trades() -> None:
    ledger = Ledger.build(activities())
    brokerage, roth = ledger.holdings(symbol="aapl")
    assert (brokerage.account, brokerage.quantity) == ("Brokerage", Decimal(5))
    assert brokerage.average_cost == Decimal("160.50")
    assert brokerage.cost_basis_average == Decimal("802.50")
    assert brokerage.cost_basis_fifo == Decimal("852.50")
    assert brokerage.lots == (
        Lot("Brokerage", "AAPL", date(2024, 1, 10), Decimal(5), Decimal("852.50"), row=5),
    )
    assert brokerage.first_bought == date(2024, 1, 3)
    assert brokerage.rows == (4, 5, 7, 8)
    assert (roth.account, roth.quantity, roth.average_cost) == (
        "Roth IRA",
        Decimal(5),
        Decimal(160),
    )
    assert roth.cost_basis_average == roth.cost_basis_fifo == Decimal(800)


def test_realized_gain_differs_between_average_cost_and_fifo() -> None:
    (brokerage,) = Ledger.build(activities()).holdings(account="Brokerage")
    assert brokerage.realized_average == Decimal("287.50")
    assert brokerage.realized_fifo == Decimal("337.50")
    assert brokerage.dividends == Decimal("1.20")


def test_holdings_are_listed_by_account_then_symbol() -> None:
    ledger = Ledger.build(activities())
    assert [(holding.account, holding.symbol) for holding in ledger.holdings()] == [
        ("Brokerage", "AAPL"),
        ("Roth IRA", "AAPL"),
        ("Roth IRA", "MSFT"),
    ]


def test_unrealized_gain_is_the_value_at_a_close_less_either_cost_basis() -> None:
    ledger = Ledger.build(activities(), as_of=date(2024, 3, 8))
    brokerage, roth_aapl, roth_msft = ledger.holdings()
    close = CLOSES["AAPL"][date(2024, 3, 8)]
    # 5 × 195.33 = 976.65, less 802.50 (average) or 852.50 (FIFO).
    assert brokerage.quantity * close - brokerage.cost_basis_average == Decimal("174.15")
    assert brokerage.quantity * close - brokerage.cost_basis_fifo == Decimal("124.15")
    # 976.65 - 800; MSFT 4 × 405 - 1600.
    assert roth_aapl.quantity * close - roth_aapl.cost_basis_average == Decimal("176.65")
    assert roth_msft.quantity * Decimal(405) - roth_msft.cost_basis_average == Decimal(20)


def test_a_holding_sold_to_zero_is_kept_with_its_realized_gain() -> None:
    # Bought 10 for 10 × 100 + 1 = 1001 (100.10 a share); sold for 10 × 120 - 1 = 1199:
    # realized 198 either way.
    ledger = Ledger.build(
        csv_activities(
            "date,account,action,symbol,quantity,price,fees\n"
            "2024-01-02,Brokerage,buy,AAPL,10,100,1\n"
            "2024-01-05,Brokerage,sell,AAPL,10,120,1\n"
        )
    )
    assert ledger.holdings() == []
    (closed,) = ledger.holdings(open_only=False)
    assert closed.quantity == 0
    assert closed.realized_average == closed.realized_fifo == Decimal(198)
    assert closed.average_cost == Decimal("100.10")
    assert closed.cost_basis_average == closed.cost_basis_fifo == 0
    assert closed.lots == ()


def test_a_sell_of_more_than_the_account_holds_raises_naming_its_row() -> None:
    # 20 AAPL in all, but only 15 of them in Brokerage.
    rows = csv_activities(
        "date,account,action,symbol,quantity,price\n"
        "2024-01-02,Brokerage,buy,AAPL,15,100\n"
        "2024-01-02,Roth IRA,buy,AAPL,5,100\n"
        "2024-01-05,Brokerage,sell,AAPL,20,110\n"
    )
    with pytest.raises(OversoldError) as raised:
        Ledger.build(rows)
    assert str(raised.value) == "row 4: sells 20 AAPL in Brokerage, which holds 15 then"
    assert (raised.value.row, raised.value.account, raised.value.symbol) == (
        4,
        "Brokerage",
        "AAPL",
    )
    assert (raised.value.held, raised.value.asked) == (Decimal(15), Decimal(20))
    # Before that sell, the rows replay.
    assert (
        Ledger.build(rows, as_of=date(2024, 1, 4)).holdings(account="Brokerage")[0].quantity == 15
    )


def test_rows_after_as_of_are_ignored() -> None:
    ledger = Ledger.build(activities(), as_of=date(2024, 1, 31))
    assert ledger.as_of == date(2024, 1, 31)
    assert [activity.row for activity in ledger.activities] == [2, 3, 4, 5, 6]
    brokerage, roth = ledger.holdings()
    # Before the sell: 20 shares, both lots whole, nothing realized.
    assert (brokerage.quantity, brokerage.cost_basis_fifo) == (Decimal(20), Decimal(3210))
    assert brokerage.realized_average == brokerage.realized_fifo == 0
    assert roth.quantity == 5
    assert [balance.total for balance in ledger.cash()] == [Decimal(6790), Decimal(4200)]


def test_accounts_are_listed_with_their_types() -> None:
    assert Ledger.build(activities()).accounts() == [
        ("Brokerage", AccountKind.BROKERAGE),
        ("Roth IRA", AccountKind.ROTH_IRA),
    ]


# --- cash --------------------------------------------------------------------------------


def test_cash_from_a_sell_is_unsettled_between_its_trade_and_settlement_dates() -> None:
    # On 2024-02-01 the sell's 2695 is traded but settles 02-02; the buys have settled:
    # 10000 - 1505 - 1705 = 6790.
    ledger = Ledger.build(activities(), as_of=date(2024, 2, 1))
    assert ledger.cash("Brokerage") == [
        CashBalance("Brokerage", Decimal(6790), Decimal(2695), Decimal(9485))
    ]
    settled_next_day = Ledger.build(activities(), as_of=date(2024, 2, 2))
    assert settled_next_day.cash("Brokerage") == [
        CashBalance("Brokerage", Decimal(9485), Decimal(0), Decimal(9485))
    ]


def test_a_buy_over_a_weekend_stays_unsettled_until_monday() -> None:
    # Row 6 trades Friday 01-12 and settles Monday 01-15: on the Sunday 5000 is settled and
    # -800 is not.
    ledger = Ledger.build(activities(), as_of=date(2024, 1, 14))
    assert ledger.cash("Roth IRA") == [
        CashBalance("Roth IRA", Decimal(5000), Decimal(-800), Decimal(4200))
    ]


def test_a_transfer_takes_cash_from_one_account_and_gives_it_to_the_other() -> None:
    before = Ledger.build(activities(), as_of=date(2024, 2, 19))
    after = Ledger.build(activities(), as_of=date(2024, 2, 20))
    # Brokerage before: 10000 - 1505 - 1705 + 2695 + 1.20 - 25 = 9461.20.
    assert [balance.total for balance in before.cash()] == [Decimal("9461.20"), Decimal(4200)]
    assert [balance.total for balance in after.cash()] == [Decimal("7461.20"), Decimal(6200)]
    assert [balance.unsettled for balance in after.cash()] == [0, 0]
    assert [balance.total for balance in Ledger.build(activities()).cash()] == [
        Decimal("10461.20"),
        Decimal(4600),
    ]


def test_external_flows_count_transfers_only_across_the_accounts_asked() -> None:
    ledger = Ledger.build(activities())
    start, end = date(2024, 1, 31), date(2024, 3, 8)
    assert ledger.net_external_flows(start, end) == Decimal(3000)
    # Brokerage: -2000 to the Roth IRA, +3000 deposited; the Roth IRA: +2000 from Brokerage.
    assert ledger.net_external_flows(start, end, ["Brokerage"]) == Decimal(1000)
    assert ledger.net_external_flows(start, end, ["Roth IRA"]) == Decimal(2000)
    # A flow on the start day is in the start value, not in the timeframe.
    assert ledger.net_external_flows(date(2024, 1, 2), end) == Decimal(3000)
    assert ledger.net_external_flows(date(2024, 1, 1), end) == Decimal(18000)


# --- value and performance ---------------------------------------------------------------


def test_the_value_on_a_day_is_holdings_at_its_close_plus_cash() -> None:
    # 10 AAPL × 195.33 = 1953.30 and 4 MSFT × 405 = 1620; cash 10461.20 + 4600.
    assert value_on(activities(), date(2024, 3, 8), closes) == Valuation(
        day=date(2024, 3, 8),
        holdings_value=Decimal("3573.30"),
        cash=Decimal("15061.20"),
        total=Decimal("18634.50"),
        stale=(),
        unpriced=(),
    )
    # The Roth IRA alone: 5 × 195.33 + 1620 + 4600.
    assert value_on(activities(), date(2024, 3, 8), closes, ["Roth IRA"]).total == Decimal(
        "7196.65"
    )


def test_a_close_from_before_the_day_is_stale_and_a_symbol_without_one_is_unpriced() -> None:
    saturday = value_on(activities(), date(2024, 3, 9), closes)
    assert saturday.total == Decimal("18634.50")
    assert saturday.stale == (("AAPL", date(2024, 3, 8)), ("MSFT", date(2024, 3, 8)))

    def aapl_only(symbol: str, day: date) -> tuple[date, Decimal] | None:
        return closes(symbol, day) if symbol == "AAPL" else None

    without_msft = value_on(activities(), date(2024, 3, 8), aapl_only)
    assert without_msft.unpriced == ("MSFT",)
    assert without_msft.holdings_value == Decimal("1953.30")


def test_time_weighted_return_chains_the_subperiods_around_a_mid_period_deposit() -> None:
    # 01-31 close: 25 AAPL × 160.40 = 4010, cash 6790 + 4200: 15000.
    # 03-01 close: 10 AAPL × 174.88 = 1748.80, 4 MSFT × 410 = 1640, cash 10461.20 + 4600:
    #   18450, of which the 3000 deposited that day comes at the end of it: 15450 before it.
    #   r1 = 15450 / 15000 - 1 = 0.03 (the sell, the dividend and the fee are inside it).
    # 03-08 close: 18634.50 (above). r2 = 18634.50 / 18450 - 1 = 0.01.
    # TWR = 1.03 × 1.01 - 1 = 0.0403; gain = 18634.50 - 15000 - 3000 = 634.50.
    twr = time_weighted_return(activities(), closes, date(2024, 1, 31), date(2024, 3, 8))
    assert twr.return_pct == Decimal("0.0403")
    assert twr.gain == Decimal("634.50")
    assert (twr.start_value, twr.end_value, twr.net_flows) == (
        Decimal(15000),
        Decimal("18634.50"),
        Decimal(3000),
    )
    assert twr.subperiods == (
        SubPeriod(
            date(2024, 1, 31),
            date(2024, 3, 1),
            start_value=Decimal(15000),
            end_value=Decimal(15450),
            flow_at_end=Decimal(3000),
            return_pct=Decimal("0.03"),
        ),
        SubPeriod(
            date(2024, 3, 1),
            date(2024, 3, 8),
            start_value=Decimal(18450),
            end_value=Decimal("18634.50"),
            flow_at_end=Decimal(0),
            return_pct=Decimal("0.01"),
        ),
    )
    assert twr.method == TIME_WEIGHTED_RETURN_METHOD
    assert twr.unpriced == ()


def test_a_deposit_is_never_counted_as_gain_and_a_start_with_nothing_invested_is_skipped() -> None:
    # 01-01: nothing yet. The 15000 deposited on 01-02 ends the first sub-period (worth 0 at
    # its start: skipped). From 15000 at the 01-02 close to 15000 at the 01-31 close: the 25
    # AAPL bought for 3210 + 800 are worth 4010.
    twr = time_weighted_return(activities(), closes, date(2024, 1, 1), date(2024, 1, 31))
    assert twr.net_flows == Decimal(15000)
    assert twr.gain == 0
    assert twr.return_pct == 0
    first, second = twr.subperiods
    assert (first.start_value, first.end_value, first.return_pct) == (0, 0, None)
    assert (second.start_value, second.end_value, second.return_pct) == (
        Decimal(15000),
        Decimal(15000),
        Decimal(0),
    )


def test_time_weighted_return_of_one_account_counts_a_transfer_into_it_as_a_flow() -> None:
    # Roth IRA, 01-31: 5 × 160.40 + 4200 = 5002. The 2000 from Brokerage on 02-20 is a flow:
    # at that close (AAPL still at 160.40) 7002, 5002 before it: r1 = 0.
    # 03-08: 7196.65 (above): r2 = 7196.65 / 7002 - 1; gain 7196.65 - 5002 - 2000 = 194.65.
    twr = time_weighted_return(
        activities(), closes, date(2024, 1, 31), date(2024, 3, 8), accounts=["Roth IRA"]
    )
    assert twr.net_flows == Decimal(2000)
    assert twr.gain == Decimal("194.65")
    assert [subperiod.return_pct for subperiod in twr.subperiods] == [
        Decimal(0),
        Decimal("7196.65") / Decimal(7002) - 1,
    ]
    assert twr.return_pct == Decimal("7196.65") / Decimal(7002) - 1


def test_holding_performance_ranks_symbols_by_gain_over_the_timeframe() -> None:
    # AAPL: 25 × 160.40 = 4010 at the start; sold 15 for 2695, dividend 1.20; 10 × 195.33 =
    # 1953.30 at the end: gain 1953.30 + 2695 + 1.20 - 4010 = 639.50, of 4010.
    # MSFT: none at the start, bought for 1600, 4 × 405 = 1620 at the end: gain 20, of 1600.
    aapl, msft = holding_performance(activities(), closes, date(2024, 1, 31), date(2024, 3, 8))
    assert aapl == HoldingPerformance(
        symbol="AAPL",
        quantity_start=Decimal(25),
        quantity_end=Decimal(10),
        start_value=Decimal("4010"),
        end_value=Decimal("1953.30"),
        purchases=Decimal(0),
        sales=Decimal(2695),
        dividends=Decimal("1.20"),
        gain=Decimal("639.50"),
        return_pct=Decimal("639.50") / Decimal(4010),
    )
    assert (msft.symbol, msft.start_value, msft.purchases, msft.end_value) == (
        "MSFT",
        Decimal(0),
        Decimal(1600),
        Decimal(1620),
    )
    assert (msft.gain, msft.return_pct) == (Decimal(20), Decimal("0.0125"))
    assert "purchases" in HOLDING_PERFORMANCE_METHOD


def test_holding_performance_of_one_account_leaves_the_others_out() -> None:
    # Brokerage AAPL: 20 × 160.40 = 3208 at the start, sold for 2695, dividend 1.20, 5 ×
    # 195.33 = 976.65 at the end: gain 976.65 + 2695 + 1.20 - 3208 = 464.85.
    (aapl,) = holding_performance(
        activities(), closes, date(2024, 1, 31), date(2024, 3, 8), accounts=["Brokerage"]
    )
    assert (aapl.symbol, aapl.gain) == ("AAPL", Decimal("464.85"))


def test_a_holding_without_a_close_has_no_gain_and_ranks_last() -> None:
    def aapl_only(symbol: str, day: date) -> tuple[date, Decimal] | None:
        return closes(symbol, day) if symbol == "AAPL" else None

    aapl, msft = holding_performance(activities(), aapl_only, date(2024, 1, 31), date(2024, 3, 8))
    assert aapl.gain == Decimal("639.50")
    assert (msft.symbol, msft.end_value, msft.gain, msft.return_pct) == ("MSFT", None, None, None)
