"""Conversations: each question and answer is a turn, the router gets the last turns, and
the two read endpoints show a user their conversations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest

from services.gateway.conversations import (
    CONTINUE_CONVERSATION_SQL,
    START_CONVERSATION_SQL,
    conversation_title,
    load_history,
)
from services.validator.finalizing import record_answer
from shared.contracts.answers import AnswerValidated, Validation
from shared.contracts.questions import RouteSummary
from shared.contracts.tool_results import ToolCall
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import understanding

DEADLINE = datetime.now(UTC) + timedelta(days=1)
APPLE_REVENUE = GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"])


def answered(text: str, intent: str, year: int = 2023) -> AnswerValidated:
    return AnswerValidated(
        answer=text,
        validation=Validation(passed=True, severity="none"),
        route=RouteSummary(
            intent=intent,  # type: ignore[arg-type]
            tool_calls=[ToolCall.of(APPLE_REVENUE)],
            understood=understanding(
                {"AAPL": "Apple"}, ["revenue"], periods={"fiscal_years": [year]}
            ),
        ),
    )


async def ask_and_answer(
    conn: asyncpg.Connection, request_id: str, question: str, reply: AnswerValidated | None
) -> None:
    if request_id == "r1":
        await conn.execute(
            START_CONVERSATION_SQL, "r1", "c1", "local", question, None, DEADLINE, "t"
        )
    else:
        found = await conn.fetchval(
            CONTINUE_CONVERSATION_SQL, request_id, "c1", "local", question, None, DEADLINE
        )
        assert found == 1
    if reply is not None:
        await record_answer(conn, request_id, "c1", 0, reply)


async def test_history_holds_the_earlier_turns_oldest_first_with_their_routes(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        await ask_and_answer(
            conn, "r1", "Apple revenue 2023", answered("$383.3 billion", "metric_lookup", 2023)
        )
        await ask_and_answer(
            conn, "r2", "And the year before?", answered("$394.3 billion", "metric_lookup", 2022)
        )
        await ask_and_answer(conn, "r3", "what about 2021?", None)
        history = await load_history(conn, "c1", "r3", turns=6)
        last_one = await load_history(conn, "c1", "r3", turns=1)
        # A size cap keeps the latest turns that fit, never a cut turn.
        sized = await load_history(
            conn, "c1", "r3", turns=6, max_chars=len(history[-1].question) + len(history[-1].answer)
        )
        assert [turn.question for turn in sized] == ["And the year before?"]
        assert await load_history(conn, "c1", "r3", turns=6, max_chars=5) == []
    finally:
        await conn.close()
    assert [turn.question for turn in history] == ["Apple revenue 2023", "And the year before?"]
    assert [turn.answer for turn in history] == ["$383.3 billion", "$394.3 billion"]
    assert [turn.understood.periods.fiscal_years for turn in history if turn.understood] == [
        [2023],
        [2022],
    ]
    assert history[0].understood is not None
    assert history[0].understood.symbols == ["AAPL"]
    assert history[0].intent == "metric_lookup"
    assert history[0].tool_calls[0].tool == "get_financial_metrics"
    assert [turn.question for turn in last_one] == ["And the year before?"]


async def test_a_redelivered_validator_writes_the_answer_turn_once(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        reply = answered("$383.3 billion", "metric_lookup")
        await ask_and_answer(conn, "r1", "Apple revenue 2023", reply)
        await record_answer(conn, "r1", "c1", 1, reply)
        roles = await conn.fetch(
            "SELECT role FROM messages WHERE conversation_id = 'c1' ORDER BY id"
        )
    finally:
        await conn.close()
    assert [row["role"] for row in roles] == ["user", "assistant"]


async def test_another_users_conversation_cannot_be_continued(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        await ask_and_answer(conn, "r1", "Apple revenue 2023", None)
        found = await conn.fetchval(
            CONTINUE_CONVERSATION_SQL, "r9", "c1", "someone-else", "hi", None, DEADLINE
        )
        written = await conn.fetchval("SELECT count(*) FROM questions WHERE request_id = 'r9'")
    finally:
        await conn.close()
    assert (found, written) == (0, 0)


def test_a_long_first_question_becomes_a_title_cut_at_a_word() -> None:
    title = conversation_title("How did " + "Apple's revenue and margins " * 6 + "change?")
    assert len(title) <= 80 and title.endswith("…")
    assert not title[:-1].endswith(("Appl", "margi"))
    assert conversation_title("  Apple   revenue 2023 ") == "Apple revenue 2023"


e2e = pytest.mark.e2e


@e2e
async def test_a_conversation_continues_and_reads_back_in_order(
    client: httpx.AsyncClient,
) -> None:
    first = (await client.post("/v1/ask", json={"question": "Apple revenue FY2023"})).json()
    conversation_id = first["conversation_id"]
    second = await client.post(
        "/v1/ask", json={"question": "And the year before?", "conversation_id": conversation_id}
    )
    assert second.status_code == 200
    assert second.json()["conversation_id"] == conversation_id

    detail = await client.get(f"/v1/conversations/{conversation_id}")
    assert detail.status_code == 200
    body = detail.json()
    assert body["title"] == "Apple revenue FY2023"
    assert [(m["role"], m["content"][:20]) for m in body["messages"]][:3] == [
        ("user", "Apple revenue FY2023"),
        ("assistant", first["answer"][:20]),
        ("user", "And the year before?"),
    ]
    assert [m["intent"] for m in body["messages"]] == [
        None,
        "metric_lookup",
        None,
        "metric_lookup",
    ]

    listed = (await client.get("/v1/conversations", params={"limit": 100})).json()
    summary = next(c for c in listed["conversations"] if c["id"] == conversation_id)
    assert summary["message_count"] == 4


@e2e
async def test_an_unknown_conversation_is_a_404_json_error(client: httpx.AsyncClient) -> None:
    asked = await client.post(
        "/v1/ask", json={"question": "Apple revenue 2023", "conversation_id": "no-such-thing"}
    )
    read = await client.get("/v1/conversations/no-such-thing")
    for response in (asked, read):
        assert response.status_code == 404
        assert response.json()["code"] == "conversation_not_found"


@e2e
@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}, {"limit": "x"}])
async def test_bad_paging_is_a_422_json_error(client: httpx.AsyncClient, params: dict) -> None:
    response = await client.get("/v1/conversations", params=params)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_request"


@e2e
async def test_conversations_are_listed_newest_first_a_page_at_a_time(
    client: httpx.AsyncClient,
) -> None:
    for question in ("Tesla revenue 2022", "NVIDIA revenue 2024"):
        await client.post("/v1/ask", json={"question": question})
    page = (await client.get("/v1/conversations", params={"limit": 2})).json()
    assert [c["title"] for c in page["conversations"]] == [
        "NVIDIA revenue 2024",
        "Tesla revenue 2022",
    ]
    second = (await client.get("/v1/conversations", params={"limit": 1, "offset": 1})).json()
    assert second["conversations"][0]["title"] == "Tesla revenue 2022"


@e2e
async def test_a_reopened_conversation_shows_each_answer_as_it_was_first_shown(
    client: httpx.AsyncClient,
) -> None:
    """Its sources, chart, validation, suggestions and route come back with the text."""
    asked = (
        await client.post(
            "/v1/ask", json={"question": "How did Apple's revenue change over the last 5 years?"}
        )
    ).json()
    assert asked["chart"] and asked["citations"]
    detail = (await client.get(f"/v1/conversations/{asked['conversation_id']}")).json()
    question, answer = detail["messages"]
    assert question["answer"] is None
    shown = answer["answer"]
    for field in (
        "request_id",
        "conversation_id",
        "answer",
        "citations",
        "facts",
        "validation",
        "trace_id",
        "route",
        "chart",
        "suggestions",
    ):
        assert shown[field] == asked[field], field
