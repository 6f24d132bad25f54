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
from shared.contracts import RouteDecided, ToolCall, ToolsCompleted
from shared.identity import add_user
from shared.portfolio.store import import_activity
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


async def answer(investor: Investor, intent: str, tool: str, **arguments: object) -> str:
    route = RouteDecided(
        question="(asked)",
        intent=intent,
        tool_calls=[ToolCall(tool=tool, arguments=arguments)],
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
    text = await answer(investor, "portfolio_position", "get_positions", symbols=["AAPL"])
    assert "you hold 15 shares of Apple (AAPL)" in text
    assert "bought for $1,651.50" in text and "$110.10 a share" in text
    assert "$1,701.50 by FIFO lots" in text
    assert "At the 2023-04-14 close of $165.21 they are worth $2,478.15" in text
    assert "unrealized gain of $826.65 (50.1% since purchase)" in text
    assert "realized $198.50 (average cost; $248.50 by FIFO lots)" in text
    assert "$3.45 in dividends" in text


async def test_cash_and_account_values_come_from_the_activity(investor: Investor) -> None:
    cash = await answer(investor, "portfolio_cash", "get_cash_balance")
    assert "Brokerage holds $3,050.45 in cash" in cash
    assert "Roth IRA holds $1,500.00 in cash" in cash
    assert "Across your accounts that is $4,550.45" in cash
    values = await answer(investor, "portfolio_overview", "get_account_value")
    assert "All your accounts were worth $7,028.60 on 2023-04-14" in values
    assert "Brokerage was worth $5,528.60" in values


async def test_an_account_named_by_its_kind_is_found_and_one_that_is_not_held_is_said(
    investor: Investor,
) -> None:
    roth = await answer(investor, "portfolio_cash", "get_cash_balance", account="roth")
    assert "Roth IRA holds $1,500.00" in roth and "Brokerage" not in roth
    missing = await answer(investor, "portfolio_cash", "get_cash_balance", account="401k")
    assert "no account called “401k”" in missing and "Brokerage or Roth IRA" in missing


async def test_activity_in_a_span_lists_each_row_with_its_figures(investor: Investor) -> None:
    text = await answer(
        investor,
        "portfolio_activity",
        "get_portfolio_activity",
        start="2023-02-01",
        end="2023-03-01",
        kinds=["buy", "sell"],
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
    text = await answer(other, "portfolio_position", "get_positions", symbols=["AAPL"])
    assert text.startswith("You have no portfolio activity in finq yet") and "$" not in text
    brokerage = await answer(other, "portfolio_cash", "get_cash_balance", account="Brokerage")
    assert brokerage.startswith("You have no portfolio activity in finq yet")
