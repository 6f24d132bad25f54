"""The alias log on a real PostgreSQL: misses counted, fallback readings held per
conversation, learned when the conversation names the metric exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from services.router.main import keep_alias_log
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.envelope import Envelope
from shared.contracts.questions import QuestionAsked
from shared.metric_aliases import (
    confirm_exact_uses,
    list_alias_misses,
    load_learned_aliases,
    record_metric_phrases,
)
from shared.metric_resolver import MetricResolver, Resolution
from tests.helpers import CountingFetcher

DIRECTORY = CompanyDirectory((CompanyEntry("AAPL", "Apple", ("apple",)),))
TYPO = Resolution("gross margn", "gross_margin", 0.917, "fuzzy")


async def test_misses_and_fallback_readings_are_counted_in_one_round_trip(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        db = CountingFetcher(conn)
        await record_metric_phrases(db, "c1", "Apple gross margn and ceo pay", [TYPO], ["ceo pay"])
        assert db.round_trips == 1
        await record_metric_phrases(db, "c2", "gross margn again", [TYPO], [])
        misses = {miss.phrase: miss for miss in await list_alias_misses(conn)}
    finally:
        await conn.close()
    assert misses["gross margn"].count == 2
    assert misses["gross margn"].example == "gross margn again"
    assert (misses["gross margn"].resolved_to, misses["gross margn"].method) == (
        "gross_margin",
        "fuzzy",
    )
    assert misses["ceo pay"].count == 1
    assert misses["ceo pay"].resolved_to is None


async def test_exact_readings_are_not_logged(database: str) -> None:
    conn = await asyncpg.connect(database)
    try:
        exact = Resolution("revenue", "revenue", 1.0, "exact")
        await record_metric_phrases(conn, "c1", "Apple revenue", [exact], [])
        assert await list_alias_misses(conn) == []
    finally:
        await conn.close()


async def test_a_reading_is_learned_only_when_its_own_conversation_names_the_metric(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    try:
        await record_metric_phrases(conn, "c1", "Apple gross margn", [TYPO], [])
        # Another conversation naming gross margin confirms nothing of c1's.
        assert await confirm_exact_uses(conn, "c2", "r2", ["gross_margin"]) == {}
        # c1 naming another metric confirms nothing either.
        assert await confirm_exact_uses(conn, "c1", "r3", ["revenue"]) == {}
        assert await confirm_exact_uses(conn, "c1", "r4", ["gross_margin"]) == {
            "gross margn": "gross_margin"
        }
        assert await load_learned_aliases(conn) == {"gross margn": "gross_margin"}
        confirmed_by = await conn.fetchval("SELECT confirmed_by FROM learned_aliases")
        assert confirmed_by == "r4"
        # The pending reading is used up.
        assert await confirm_exact_uses(conn, "c1", "r5", ["gross_margin"]) == {}
    finally:
        await conn.close()


def envelope(question: str, conversation: str, request: str) -> Envelope[QuestionAsked]:
    return Envelope[QuestionAsked](
        request_id=request,
        conversation_id=conversation,
        user_id="u",
        deadline=datetime.now(UTC) + timedelta(seconds=30),
        payload=QuestionAsked(question=question),
    )


async def test_the_router_learns_a_confirmed_reading_and_resolves_it_exactly_after(
    database: str,
) -> None:
    conn = await asyncpg.connect(database)
    finder = metric_finder(DIRECTORY, MetricResolver.from_catalog())
    try:
        for question, request in [("Apple gross margn 2023", "r1"), ("Apple gross margin", "r2")]:
            route = route_question(question, DIRECTORY, finder)
            await keep_alias_log(conn, finder, envelope(question, "c1", request), route)
    finally:
        await conn.close()
    route = route_question("Apple gross margn 2022", DIRECTORY, finder)
    assert not any(metric.by_fallback for metric in route.understood.metrics)
    assert route.understood.named_metrics == ["gross_margin"]
