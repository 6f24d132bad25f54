"""Metric names as users type them, through the live pipeline: typos, paraphrases, growth,
comparisons, the metric list, unknown names, and aliases learned from a conversation."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from tests.conftest import RunningFinq
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e


async def ask(client: httpx.AsyncClient, question: str, conversation_id: str | None = None) -> dict:
    payload: dict[str, str] = {"question": question}
    if conversation_id is not None:
        payload["conversation_id"] = conversation_id
    response = await client.post("/v1/ask", json=payload)
    assert response.status_code == 200, response.text
    return response.json()


RESOLVED_QUESTIONS = [
    # (question, what the answer must say)
    # A slip is put right before the question is read, and the answer says so.
    (
        "What was Apple's reveune in fiscal 2023?",
        ["I read 'reveune' as 'revenue'", "$383.3 billion"],
    ),
    ("Apple opearting margin FY2023", ["I read 'opearting' as 'operating'", "29.8%"]),
    # A misspelt name the speller leaves (too short to guess) is read by fuzzy match.
    ("Apple grss margin FY2023", ["I read 'grss margin' as gross margin", "44.1%"]),
    (
        "How much money did NVIDIA spend on research in fiscal 2024?",
        ["research and development expense", "$8.7 billion"],
    ),
    ("What was Apple's P/E ratio in fiscal 2022?", ["Apple's P/E ratio in fiscal 2022"]),
    ("How much did Apple's revenue grow in fiscal 2023?", ["revenue growth", "-2.8%"]),
    (
        "Who had more revenue in fiscal 2023, Apple or Alphabet?",
        [
            "$383.3 billion",
            "$307.4 billion",
            "Apple's revenue was higher than Alphabet's: $383.3 billion against $307.4 billion",
            "Their fiscal periods end on different dates",
        ],
    ),
    ("Which valuation metrics can I ask about?", ["P/E ratio", "Enterprise value"]),
]


@pytest.mark.parametrize(("question", "expected"), RESOLVED_QUESTIONS)
async def test_metric_phrasings_are_resolved_answered_and_validated(
    client: httpx.AsyncClient, question: str, expected: list[str]
) -> None:
    body = await ask(client, question)
    for text in expected:
        assert text in body["answer"], body["answer"]
    assert not body["needs_clarification"], body["answer"]
    assert body["validation"]["passed"], body["validation"]


async def test_a_figure_the_catalog_does_not_name_is_searched_in_the_filings(
    client: httpx.AsyncClient,
) -> None:
    body = await ask(client, "What was Apple's ceo salary in 2023?")
    assert body["route"]["intent"] == "document_search"
    assert body["answer"].startswith("finq holds no figure called 'ceo salary' for Apple")
    assert body["facts"] == []
    assert body["validation"]["passed"], body["validation"]


async def test_a_fallback_reading_confirmed_in_its_conversation_becomes_a_learned_alias(
    client: httpx.AsyncClient, finq: RunningFinq
) -> None:
    # A slip no other test types, so its rows are this test's own; too short a word for the
    # speller to guess, so the fuzzy fallback reads it.
    phrase = "net incm"
    first = await ask(client, f"Apple {phrase} FY2023")
    conversation = first["conversation_id"]
    assert "I read 'net incm' as net income" in first["answer"]
    db = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        miss = await db.fetchrow("SELECT * FROM alias_misses WHERE phrase = $1", phrase)
        assert miss is not None
        assert (miss["resolved_to"], miss["method"], miss["count"]) == ("net_income", "fuzzy", 1)
        assert miss["example"] == f"Apple {phrase} FY2023"

        # The user goes on with the exact name: the reading was right.
        await ask(client, "And Apple net income FY2022?", conversation)

        async def learned() -> bool:
            row = await db.fetchrow("SELECT metric FROM learned_aliases WHERE phrase = $1", phrase)
            return row is not None and row["metric"] == "net_income"

        await wait_until(learned)
        # From now on the phrase resolves as a learned alias: no reading note, no new miss.
        later = await ask(client, f"Apple {phrase} FY2022")
        assert "I read" not in later["answer"], later["answer"]
        assert "$99.8 billion" in later["answer"]
        count = await db.fetchval("SELECT count FROM alias_misses WHERE phrase = $1", phrase)
        assert count == 1
    finally:
        await db.close()


async def test_a_missed_phrase_is_counted_with_its_question(
    client: httpx.AsyncClient, finq: RunningFinq
) -> None:
    for _ in range(2):
        await ask(client, "Apple lobbying spend 2023")
    db = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        row = await db.fetchrow(
            "SELECT count, resolved_to, method FROM alias_misses WHERE phrase = 'lobbying spend'"
        )
    finally:
        await db.close()
    assert row is not None
    assert (row["count"], row["resolved_to"], row["method"]) == (2, None, None)
