"""Two users' portfolios through the five processes: each imports a file of activity over
HTTP with their own key, asks in plain language, and gets checked answers with exact
figures from their own rows and the closes finq holds; neither ever sees the other's
accounts, holdings or cash, however the question names them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import asyncpg
import httpx
import pytest

from shared.identity import add_user
from tests.conftest import RunningFinq

pytestmark = pytest.mark.e2e

ALICE_FILE = """date,account,account_type,action,symbol,quantity,price,fees,amount,to_account
2023-01-03,Brokerage,brokerage,deposit,,,,,10000,
2023-01-03,Brokerage,brokerage,buy,AAPL,10,100,1,,
2023-02-01,Brokerage,brokerage,buy,AAPL,10,120,1,,
2023-03-01,Brokerage,brokerage,sell,AAPL,5,150,1,,
2023-03-10,Brokerage,brokerage,dividend,AAPL,,,,3.45,
2023-03-15,Brokerage,brokerage,transfer,,,,,500,Roth IRA
2023-03-15,Roth IRA,roth_ira,deposit,,,,,1000,
2023-04-14,Brokerage,brokerage,buy,AAPL,1,165,0,,
"""
# By hand (see also tests/answerer/test_portfolio_answers.py):
# - AAPL: 10 @ 100 + 1 and 10 @ 120 + 1 bought (2,202.00 for 20, 110.10 a share); 5 sold
#   @ 150 - 1 = 749.00: realized 198.50 at average cost, 248.50 by FIFO; 1 more bought on
#   2023-04-14 @ 165: 16 shares, average cost (1,651.50 + 165) / 16 = 113.53125, basis
#   1,816.50 (FIFO 1,701.50 + 165 = 1,866.50).
# - Brokerage cash: 10,000 - 1,001 - 1,201 + 749 + 3.45 - 500 - 165 = 7,885.45, of which the
#   165.00 of the 2023-04-14 buy settles the next business day (2023-04-17): unsettled.
# - The whole portfolio from 2023-03-01 to 2023-04-14: one outside flow (the Roth IRA's
#   1,000 deposit on 2023-03-15; the 500 between the two accounts is not a flow):
#   V0 = 15 x C(03-01) + 8,547.00; V1 = 15 x C(03-15) + 8,550.45 (the dividend);
#   V2 = 16 x C(04-14) + 9,385.45 (cash after the 1,000 deposit and the 165 buy);
#   TWR = V1 / V0 x V2 / (V1 + 1,000) - 1, gain = V2 - V0 - 1,000.
BOB_FILE = """date,account,account_type,action,symbol,quantity,price,fees,amount
2022-06-01,Brokerage,brokerage,deposit,,,,,3000
2022-06-01,Brokerage,brokerage,buy,AAPL,7,150,0,
2022-06-02,Kids,brokerage,deposit,,,,,50
"""


@dataclass
class Person:
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
async def two_investors(finq: RunningFinq) -> AsyncIterator[tuple[Person, Person]]:
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        suffix = uuid.uuid4().hex[:8]
        people = []
        for name in ("alice", "bob"):
            _, key = await add_user(owner, f"{name}-{suffix}")
            people.append(Person(name, key))
    finally:
        await owner.close()
    yield people[0], people[1]


async def closes_on(finq: RunningFinq, *days: date) -> list[Decimal]:
    owner = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        rows = await owner.fetch(
            "SELECT day, close FROM prices WHERE symbol = 'AAPL' AND day = ANY($1::date[])",
            list(days),
        )
    finally:
        await owner.close()
    by_day = {row["day"]: Decimal(str(row["close"])) for row in rows}
    return [by_day[day] for day in days]


async def ask(
    client: httpx.AsyncClient, person: Person, question: str, conversation: str | None = None
) -> dict[str, Any]:
    response = await client.post(
        "/v1/ask",
        json={"question": question, "conversation_id": conversation},
        headers=person.headers,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["validation"]["passed"], (question, body["answer"], body["validation"])
    return body


async def test_two_users_each_get_exact_figures_of_their_own_portfolio_only(
    finq: RunningFinq, client: httpx.AsyncClient, two_investors: tuple[Person, Person]
) -> None:
    alice, bob = two_investors
    for person, text in ((alice, ALICE_FILE), (bob, BOB_FILE)):
        imported = await client.post(
            "/v1/portfolio/import",
            params={"file_name": f"{person.name}.csv"},
            content=text.encode(),
            headers={**person.headers, "Content-Type": "text/csv"},
        )
        assert imported.status_code == 200, imported.text
    # The same file again is recognized: nothing is counted twice.
    again = await client.post(
        "/v1/portfolio/import",
        params={"file_name": "alice.csv"},
        content=ALICE_FILE.encode(),
        headers={**alice.headers, "Content-Type": "text/csv"},
    )
    assert again.json()["duplicate_of"] is not None

    position = await ask(client, alice, "How is my AAPL position doing?")
    assert position["route"]["intent"] == "portfolio_position"
    text = position["answer"]
    assert "you hold 16 shares of Apple (AAPL), bought for $1,816.50" in text
    assert "$113.53 a share; $1,866.50 by FIFO lots" in text
    assert "realized $198.50 (average cost; $248.50 by FIFO lots)" in text

    cash = await ask(client, alice, "how much cash do I have?")
    assert cash["route"]["intent"] == "portfolio_cash"
    assert (
        "Brokerage holds $7,885.45 in cash on 2023-04-14: $8,050.45 settled and -$165.00 not "
        "yet settled" in cash["answer"]
    )
    assert "Roth IRA holds $1,500.00 in cash" in cash["answer"]

    c0, c1, c2 = await closes_on(finq, date(2023, 3, 1), date(2023, 3, 15), date(2023, 4, 14))
    v0, v1, v2 = (
        15 * c0 + Decimal("8547"),
        15 * c1 + Decimal("8550.45"),
        16 * c2 + Decimal("9385.45"),
    )
    twr = v1 / v0 * v2 / (v1 + 1000) - 1
    gain = v2 - v0 - 1000
    performance = await ask(client, alice, "How did my portfolio do since March 1, 2023?")
    assert performance["route"]["intent"] == "portfolio_performance"
    assert f"returned {twr * 100:.1f}% (time-weighted" in performance["answer"]
    assert f"of {abs(gain):,.2f}, deposits and withdrawals not counted" in performance[
        "answer"
    ].replace("$", "")

    # Bob: his own seven shares, his own accounts; Alice's account names find nothing.
    bob_position = await ask(client, bob, "how many AAPL shares do I own")
    assert "you hold 7 shares of Apple (AAPL)" in bob_position["answer"]
    assert "16 shares" not in bob_position["answer"]
    roth = await ask(
        client, bob, "how much cash is in my Roth IRA?", bob_position["conversation_id"]
    )
    assert "no account called" in roth["answer"] and "Brokerage or Kids" in roth["answer"]
    assert "1,500" not in roth["answer"]
    follow_up = await ask(client, bob, "and in my brokerage?", roth["conversation_id"])
    assert "Brokerage holds $1,950.00 in cash" in follow_up["answer"]
    for question in ("What did I buy this year?", "What is my portfolio worth?"):
        body = await ask(client, bob, question)
        assert "Roth IRA" not in body["answer"] and "16 shares" not in body["answer"]


async def test_a_join_of_holdings_and_company_figures_is_answered_from_the_dataset(
    client: httpx.AsyncClient, two_investors: tuple[Person, Person]
) -> None:
    alice, _ = two_investors
    imported = await client.post(
        "/v1/portfolio/import",
        params={"file_name": "alice.csv"},
        content=ALICE_FILE.encode(),
        headers={**alice.headers, "Content-Type": "text/csv"},
    )
    assert imported.status_code == 200, imported.text
    body = await ask(
        client, alice, "What share of my portfolio is in companies with a net margin above 20%?"
    )
    assert body["route"]["intent"] == "portfolio_screen"
    # Apple is the only holding, and its net margin is above 20% in every fiscal year held.
    assert "Of your holdings, Apple (AAPL) meets that." in body["answer"]
    assert "They make up 100.0% of your holdings' value" in body["answer"]
