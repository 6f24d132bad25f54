"""Portfolio questions from the tools to the checked answer, on the real database: a user's
own activity (imported as they would import it), the closes finq holds, the portfolio
tools acting for that user only, the drafter, and the validator, which must pass every
figure. The figures are worked out by hand below."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import asyncpg
import pytest

from services.answerer.drafting import draft_answer
from services.tools.runner import run_route
from services.validator.checking import check_answer
from services.validator.numbers import extract_numbers
from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import ToolCall
from shared.contracts.understanding import PortfolioReading, Understood
from shared.identity import add_user
from shared.portfolio.store import import_activity
from shared.tools import (
    GetAccountValueArgs,
    GetCashBalanceArgs,
    GetPortfolioActivityArgs,
    GetPortfolioPerformanceArgs,
    GetPositionsArgs,
    RankHoldingsArgs,
    ToolArguments,
)
from tests.conftest import Servers

# AAPL's close on 2023-04-14 as the bundled prices hold it, and MSFT's.
AAPL_CLOSE = Decimal("165.2100067138672")
DAY = date(2023, 4, 14)

ACTIVITY = """date,account,account_type,action,symbol,quantity,price,fees,amount,to_account
2023-01-03,Brokerage,brokerage,deposit,,,,,5000,
2023-01-03,Brokerage,brokerage,buy,AAPL,10,100,1,,
2023-02-01,Brokerage,brokerage,buy,AAPL,10,120,1,,
2023-03-01,Brokerage,brokerage,sell,AAPL,5,150,1,,
2023-03-10,Brokerage,brokerage,dividend,AAPL,,,,3.45,
2023-03-15,Brokerage,brokerage,transfer,,,,,500,Roth IRA
2023-03-15,Roth IRA,roth_ira,deposit,,,,,1000,
"""
# By hand:
# - AAPL bought 10 @ 100 + 1 fee = 1,001.00 and 10 @ 120 + 1 = 1,201.00: 20 shares for
#   2,202.00, an average of 110.10 a share.
# - Sold 5 @ 150 less 1 fee: proceeds 749.00. Average cost: 749.00 - 5 x 110.10 = 198.50
#   realized, basis left 15 x 110.10 = 1,651.50. FIFO: the 5 come from the first lot
#   (1,001.00 / 2 = 500.50): realized 248.50, basis left 500.50 + 1,201.00 = 1,701.50.
# - Value on 2023-04-14: 15 x 165.2100067138672 = 2,478.15; unrealized (average cost)
#   2,478.15 - 1,651.50 = 826.65, 50.1% of 1,651.50.
# - Brokerage cash: 5,000 - 1,001 - 1,201 + 749 + 3.45 - 500 = 3,050.45; Roth IRA: 1,500.
#   Brokerage is worth 2,478.15 + 3,050.45 = 5,528.60; both accounts 7,028.60.


@dataclass
class Investor:
    pool: asyncpg.Pool
    user_id: str


@pytest.fixture
async def investor(servers: Servers) -> AsyncIterator[Investor]:
    owner = await asyncpg.connect(servers.postgres.dsn)
    try:
        user, _ = await add_user(owner, f"investor-{uuid.uuid4().hex[:10]}")
    finally:
        await owner.close()
    pool = await asyncpg.create_pool(servers.postgres.service_dsn, min_size=1, max_size=2)
    assert pool is not None
    try:
        outcome = await import_activity(pool, user.id, "activity.csv", ACTIVITY.encode())
        assert outcome.errors == [] and outcome.rows == 7, outcome
        yield Investor(pool, user.id)
    finally:
        await pool.close()


async def answer(investor: Investor, intent: str, arguments: ToolArguments) -> str:
    route = RouteDecided(
        question="(asked)",
        intent=intent,
        tool_calls=[ToolCall.of(arguments)],
    )
    completed = await run_route(investor.pool, route, None, investor.user_id)
    drafted = draft_answer(ToolsCompleted(route=route, results=completed.results))
    validation = check_answer(
        drafted.answer,
        drafted.facts,
        drafted.citations,
        [source for result in completed.results for source in result.sources],
    )
    assert validation.passed, (drafted.answer, validation.issues)
    return drafted.answer


async def test_a_position_is_told_with_its_cost_basis_both_ways_and_its_gain(
    investor: Investor,
) -> None:
    text = await answer(investor, "portfolio_position", GetPositionsArgs(symbols=["AAPL"]))
    assert "you hold 15 shares of Apple (AAPL)" in text
    assert "bought for $1,651.50" in text and "$110.10 a share" in text
    assert "$1,701.50 by FIFO lots" in text
    assert "At the 2023-04-14 close of $165.21 they are worth $2,478.15" in text
    assert "unrealized gain of $826.65 (50.1% since purchase)" in text
    assert "realized $198.50 (average cost; $248.50 by FIFO lots)" in text
    assert "$3.45 in dividends" in text


async def test_cash_and_account_values_come_from_the_activity(investor: Investor) -> None:
    cash = await answer(investor, "portfolio_cash", GetCashBalanceArgs())
    assert "Brokerage holds $3,050.45 in cash" in cash
    assert "Roth IRA holds $1,500.00 in cash" in cash
    assert "Across your accounts that is $4,550.45" in cash
    values = await answer(investor, "portfolio_overview", GetAccountValueArgs())
    assert "All your accounts were worth $7,028.60 on 2023-04-14" in values
    assert "Brokerage was worth $5,528.60" in values


async def test_an_account_named_by_its_kind_is_found_and_one_that_is_not_held_is_said(
    investor: Investor,
) -> None:
    roth = await answer(investor, "portfolio_cash", GetCashBalanceArgs(account="roth"))
    assert "Roth IRA holds $1,500.00" in roth and "Brokerage" not in roth
    missing = await answer(investor, "portfolio_cash", GetCashBalanceArgs(account="401k"))
    assert "no account called “401k”" in missing and "Brokerage or Roth IRA" in missing


async def test_activity_in_a_span_lists_each_row_with_its_figures(investor: Investor) -> None:
    text = await answer(
        investor,
        "portfolio_activity",
        GetPortfolioActivityArgs(
            start=date(2023, 2, 1), end=date(2023, 3, 1), kinds=["buy", "sell"]
        ),
    )
    assert "On 2023-03-01 you sold 5 shares of Apple (AAPL) at $150.00 a share" in text
    assert "On 2023-02-01 you bought 10 shares of Apple (AAPL) at $120.00 a share" in text
    assert "2023-01-03" not in text


async def test_another_user_sees_none_of_it(servers: Servers, investor: Investor) -> None:
    owner = await asyncpg.connect(servers.postgres.dsn)
    try:
        stranger, _ = await add_user(owner, f"stranger-{uuid.uuid4().hex[:10]}")
    finally:
        await owner.close()
    other = Investor(investor.pool, stranger.id)
    text = await answer(other, "portfolio_position", GetPositionsArgs(symbols=["AAPL"]))
    assert text.startswith("You have no portfolio activity in finq yet") and "$" not in text
    brokerage = await answer(other, "portfolio_cash", GetCashBalanceArgs(account="Brokerage"))
    assert brokerage.startswith("You have no portfolio activity in finq yet")


# --- rankings by size and weight, realized gains alone, an index compared with -------------

# Three holdings bought in one brokerage account in 2021, and a sale of each: one at a loss.
THREE_HOLDINGS = """date,account,account_type,action,symbol,quantity,price,fees,amount,to_account
2021-03-01,Brokerage,brokerage,deposit,,,,,20000,
2021-03-01,Brokerage,brokerage,buy,AAPL,10,120,0,,
2021-03-01,Brokerage,brokerage,buy,MSFT,20,230,0,,
2021-03-01,Brokerage,brokerage,buy,AMZN,30,150,0,,
2021-06-01,Brokerage,brokerage,sell,MSFT,5,250,0,,
2021-09-01,Brokerage,brokerage,sell,AAPL,4,150,0,,
2021-09-01,Brokerage,brokerage,sell,AMZN,10,140,0,,
"""
# By hand, on 2021-12-31 (closes: AAPL 177.57000732421875, MSFT 336.320007, AMZN
# 166.7169952392578):
# - held: AAPL 6 = 1,065.42; MSFT 15 = 5,044.80; AMZN 20 = 3,334.34; together 9,444.56.
# - weights: MSFT 53.4%, AMZN 35.3%, AAPL 11.3%.
# - realized (one lot each, so FIFO agrees): MSFT 5 x (250 - 230) = 100.00 in June; AAPL
#   4 x (150 - 120) = 120.00 and AMZN 10 x (140 - 150) = -100.00 in September; 120.00 in all.
YEAR_END_2021 = date(2021, 12, 31)


@pytest.fixture
async def three_holdings(servers: Servers) -> AsyncIterator[Investor]:
    owner = await asyncpg.connect(servers.postgres.dsn)
    try:
        user, _ = await add_user(owner, f"three-{uuid.uuid4().hex[:10]}")
    finally:
        await owner.close()
    pool = await asyncpg.create_pool(servers.postgres.service_dsn, min_size=1, max_size=2)
    assert pool is not None
    try:
        outcome = await import_activity(pool, user.id, "three.csv", THREE_HOLDINGS.encode())
        assert outcome.errors == [] and outcome.rows == 7, outcome
        yield Investor(pool, user.id)
    finally:
        await pool.close()


async def answer_reading(
    investor: Investor, intent: str, arguments: ToolArguments, reading: PortfolioReading
) -> str:
    """The checked answer of one call, on a route that carries what the router read."""
    route = RouteDecided(
        question="(asked)",
        intent=intent,
        tool_calls=[ToolCall.of(arguments)],
        understood=Understood(portfolio=reading),
    )
    completed = await run_route(investor.pool, route, None, investor.user_id)
    drafted = draft_answer(ToolsCompleted(route=route, results=completed.results))
    validation = check_answer(
        drafted.answer,
        drafted.facts,
        drafted.citations,
        [source for result in completed.results for source in result.sources],
    )
    assert validation.passed, (drafted.answer, validation.issues)
    return drafted.answer


async def test_holdings_ranked_by_market_value_come_largest_first_with_their_weights(
    three_holdings: Investor,
) -> None:
    text = await answer(
        three_holdings, "portfolio_ranking", RankHoldingsArgs(by="value", end=YEAR_END_2021)
    )
    assert "Your holdings by market value on 2021-12-31, largest first:" in text
    microsoft, amazon, apple = (
        text.index("Microsoft (MSFT): $5,044.80, 53.4% of your holdings' value"),
        text.index("Amazon (AMZN): $3,334.34, 35.3%"),
        text.index("Apple (AAPL): $1,065.42, 11.3%"),
    )
    assert microsoft < amazon < apple
    assert "All your holdings were worth $9,444.56 on 2021-12-31" in text


async def test_the_smallest_holding_by_weight_is_the_one_named(three_holdings: Investor) -> None:
    arguments = RankHoldingsArgs(by="weight", order="worst", limit=1, end=YEAR_END_2021)
    text = await answer(three_holdings, "portfolio_ranking", arguments)
    assert "lightest first" in text
    assert "Apple (AAPL): 11.3%, worth $1,065.42" in text
    assert "MSFT" not in text and "AMZN" not in text


async def test_realized_gains_asked_alone_are_each_sale_and_their_total(
    three_holdings: Investor,
) -> None:
    text = await answer_reading(
        three_holdings,
        "portfolio_position",
        GetPositionsArgs(include_closed=True),
        PortfolioReading(realized=True, include_closed=True),
    )
    assert "Your sales of Microsoft (MSFT) in Brokerage realized a gain of $100.00" in text
    assert "Apple (AAPL) in Brokerage realized a gain of $120.00" in text
    assert "Amazon (AMZN) in Brokerage realized a loss of $100.00" in text
    assert "In all, your sales realized a gain of $120.00" in text
    # The realized figure alone: no share counts, cost bases or values of what is still held.
    assert "shares" not in text and "worth" not in text


async def test_realized_gains_over_a_span_count_only_the_sales_in_it(
    three_holdings: Investor,
) -> None:
    june = GetPositionsArgs(include_closed=True, start=date(2021, 6, 1), as_of=date(2021, 6, 30))
    text = await answer_reading(
        three_holdings, "portfolio_position", june, PortfolioReading(realized=True)
    )
    assert "Microsoft (MSFT) in Brokerage from 2021-06-01 to 2021-06-30 realized a gain" in text
    assert "$100.00" in text and "AAPL" not in text and "AMZN" not in text
    before = GetPositionsArgs(include_closed=True, start=date(2021, 4, 1), as_of=date(2021, 5, 31))
    nothing = await answer_reading(
        three_holdings, "portfolio_position", before, PortfolioReading(realized=True)
    )
    assert "Note: you sold nothing in that span." in nothing and "$" not in nothing


async def test_an_index_the_question_compares_with_is_said_not_to_be_compared(
    three_holdings: Investor,
) -> None:
    arguments = GetPortfolioPerformanceArgs(start=date(2021, 3, 1), end=YEAR_END_2021)
    reading = PortfolioReading(benchmark="the S&P 500")
    text = await answer_reading(three_holdings, "portfolio_performance", arguments, reading)
    assert "From 2021-03-01 to 2021-12-31 your portfolio returned" in text
    assert "finq holds no prices for the S&P 500, so I could not compare" in text


async def test_holdings_ranked_by_loss_put_the_one_that_fell_first(
    three_holdings: Investor,
) -> None:
    # From the 2021-09-01 close to the 2021-12-31 close, nothing bought or sold in between:
    # AMZN 20 x (166.72 - 173.95) = -144.66 (-4.2%); AAPL 6 x (177.57 - 152.51) = 150.36
    # (16.4%); MSFT 15 x (336.32 - 301.83) = 517.35 (11.4%).
    arguments = RankHoldingsArgs(order="worst", start=date(2021, 9, 1), end=YEAR_END_2021)
    text = await answer(three_holdings, "portfolio_ranking", arguments)
    assert "Your worst holdings by percent from 2021-09-01 to 2021-12-31, worst first" in text
    amazon, microsoft, apple = (
        text.index("Amazon (AMZN): -$144.66, -4.2%"),
        text.index("Microsoft (MSFT): $517.35, 11.4%"),
        text.index("Apple (AAPL): $150.36, 16.4%"),
    )
    assert amazon < microsoft < apple


def test_an_account_named_like_a_tax_code_section_is_no_figure() -> None:
    # The demo's own "401(k)" account: its name is read as a name, never as the figure 401.
    shown = extract_numbers("In 401(k) you hold 3 shares; your 403(b) holds $1,234.56.")
    assert [number.text for number in shown] == ["3", "$1,234.56"]
