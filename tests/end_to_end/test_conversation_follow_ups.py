"""Follow-ups through the live pipeline: each turn of one conversation inherits what it
leaves out from the turn before, and a short reply completes a clarifying question."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.e2e


class Conversation:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.conversation_id: str | None = None

    async def ask(self, question: str) -> dict:
        response = await self.client.post(
            "/v1/ask", json={"question": question, "conversation_id": self.conversation_id}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        if self.conversation_id is not None:
            assert body["conversation_id"] == self.conversation_id
        self.conversation_id = body["conversation_id"]
        return body


def call(body: dict) -> dict:
    [tool_call] = body["route"]["tool_calls"]
    return tool_call["arguments"]


async def test_each_follow_up_form_inherits_what_it_leaves_out(client: httpx.AsyncClient) -> None:
    conversation = Conversation(client)
    first = await conversation.ask("What was Apple's revenue in fiscal 2023?")
    assert "$383.3 billion" in first["answer"]

    year_before = await conversation.ask("And the year before?")
    assert year_before["route"]["decided_by"] == "conversation"
    assert call(year_before)["fiscal_years"] == [2022]
    assert "$394.3 billion" in year_before["answer"]

    other_year = await conversation.ask("what about 2021?")
    assert "$365.8 billion" in other_year["answer"]

    other_company = await conversation.ask("And NVIDIA?")
    assert call(other_company)["symbols"] == ["NVDA"]
    assert "$16.7 billion" in other_company["answer"]

    other_metric = await conversation.ask("and its net income?")
    assert call(other_metric)["metrics"] == ["net_income"]
    assert "$4.3 billion" in other_metric["answer"]
    for body in (year_before, other_year, other_company, other_metric):
        assert body["validation"]["passed"], body["validation"]


async def test_a_short_reply_completes_a_clarifying_question(client: httpx.AsyncClient) -> None:
    conversation = Conversation(client)
    asked = await conversation.ask("What was revenue in 2023?")
    assert asked["needs_clarification"] is True
    assert asked["clarifying_question"].startswith("Which company's revenue")

    completed = await conversation.ask("Apple")
    assert completed["needs_clarification"] is False
    assert completed["route"]["intent"] == "metric_lookup"
    assert "$383.3 billion" in completed["answer"]
    assert completed["validation"]["passed"], completed["validation"]


async def test_the_same_words_in_a_new_conversation_do_not_inherit(
    client: httpx.AsyncClient,
) -> None:
    await Conversation(client).ask("What was Apple's revenue in fiscal 2023?")
    fresh = await Conversation(client).ask("And the year before?")
    assert fresh["route"]["tool_calls"] == []
    assert fresh["route"]["intent"] in {"clarify", "out_of_scope"}
