"""What a new user meets after `make run`: the demo portfolio, asked ten kinds of questions
through the five processes, each routed to its portfolio intent and answered with figures
the validator passed; and a user without a portfolio is told how to bring one."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import RunningFinq
from tests.helpers import user_with_demo_portfolio

pytestmark = pytest.mark.e2e

# (question, intent); a None question continues the conversation before it.
TEN_KINDS: tuple[tuple[str, str, bool], ...] = (
    ("How is my AAPL position doing?", "portfolio_position", False),
    ("What is my portfolio worth?", "portfolio_overview", False),
    ("How much cash is in my Roth IRA?", "portfolio_cash", False),
    ("and in my brokerage?", "portfolio_cash", True),
    ("What did I buy in 2022?", "portfolio_activity", False),
    ("my dividends last year", "portfolio_activity", False),
    ("How did my portfolio do in 2022?", "portfolio_performance", False),
    ("Which of my holdings did worst in 2022?", "portfolio_ranking", False),
    ("list my positions in my 401k", "portfolio_overview", False),
    ("Which of my holdings had falling revenue last fiscal year?", "portfolio_screen", False),
)


async def test_the_demo_portfolio_answers_ten_kinds_of_questions_with_checked_figures(
    finq: RunningFinq, client: httpx.AsyncClient
) -> None:
    key = await user_with_demo_portfolio(finq.servers.postgres.dsn)

    headers = {"Authorization": f"Bearer {key}"}
    conversation: str | None = None
    for question, intent, follows in TEN_KINDS:
        response = await client.post(
            "/v1/ask",
            json={"question": question, "conversation_id": conversation if follows else None},
            headers=headers,
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        conversation = body["conversation_id"]
        said = f"{question!r} -> {body['answer']}"
        assert body["route"]["intent"] == intent, said
        assert body["validation"]["passed"], (said, body["validation"]["issues"])
        assert body["facts"] and "$" in body["answer"], (said, body["validation"]["repairs"])
        assert not body["needs_clarification"], said
