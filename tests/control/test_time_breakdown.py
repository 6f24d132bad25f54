"""bench/time_breakdown.py: one question's latency split into parts from what the pipeline
records, the parts adding up to what the client saw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bench.pipeline import KeepAliveConnection
from bench.time_breakdown import PARTS, Asked, bare_hop, parts_of, summarize, time_breakdown
from shared.nats_permissions import OPERATOR

START = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)


def run(stage: str, after_ms: float, duration_ms: float, attempt: int = 0) -> dict[str, object]:
    started = START + timedelta(milliseconds=after_ms)
    return {
        "stage": stage,
        "attempt": attempt,
        "started_at": started.isoformat(),
        "duration_ms": duration_ms,
    }


ONE_PASS = [
    run("router", 2.0, 0.5),
    run("tools", 3.5, 0.8),
    run("answerer", 5.3, 0.2),
    run("validator", 6.5, 0.3),
]


def test_a_question_that_passed_each_stage_once_splits_into_parts_that_add_up_to_its_latency():
    asked = Asked("r1", sent=START.timestamp() - 0.0004, answered=START.timestamp() + 0.0081)

    parts = parts_of(asked, START, ONE_PASS)

    assert len(parts) == len(PARTS)
    expected = [0.4, 2.0, 0.5, 1.0, 0.8, 1.0, 0.2, 1.0, 0.3, 1.3]
    assert parts == pytest.approx(expected, abs=1e-3)
    assert sum(parts) == pytest.approx(8.5, abs=1e-3)


def test_a_repaired_or_redelivered_question_is_left_out_rather_than_misread():
    asked = Asked("r1", sent=START.timestamp(), answered=START.timestamp() + 0.02)
    repaired = [*ONE_PASS, run("answerer", 7.0, 0.2, attempt=1), run("validator", 8.0, 0.3, 1)]
    twice = [*ONE_PASS, run("tools", 4.0, 0.8)]

    assert parts_of(asked, START, repaired) == []
    assert parts_of(asked, START, twice) == []
    assert parts_of(asked, START, ONE_PASS[:3]) == []


def test_the_parts_means_add_up_to_the_mean_latency():
    questions = [[1.0] * len(PARTS), [3.0] * len(PARTS)]

    summary = summarize(questions)

    assert summary["questions"] == 2
    assert summary["mean_total_ms"] == pytest.approx(2.0 * len(PARTS))
    assert sum(row["mean_ms"] for row in summary["parts"]) == pytest.approx(
        summary["mean_total_ms"]
    )
    assert sum(row["share"] for row in summary["parts"]) == pytest.approx(1.0, abs=0.01)


async def test_questions_asked_through_the_pipeline_split_into_parts_the_client_timed(finq):
    asked: list[Asked] = []
    connection = KeepAliveConnection(finq.url, asked)
    try:
        for question in ("Apple revenue 2023", "NVDA net income FY2024", "Tesla revenue 2022"):
            assert await connection.ask(question) is None
    finally:
        await connection.aclose()

    summary = await time_breakdown(finq.servers.postgres.dsn, asked)

    assert summary["questions"] == 3
    assert summary["left_out"] == 0
    latencies = [(a.answered - a.sent) * 1000.0 for a in asked]
    assert summary["mean_total_ms"] == pytest.approx(sum(latencies) / 3, abs=0.01)
    for row in summary["parts"]:
        # Each part lies between two moments in order: none runs backwards.
        assert row["mean_ms"] >= 0, row


async def test_a_bare_hop_is_measured_on_the_broker_it_is_given(servers):
    hop = await bare_hop(servers.nats.url, *servers.nats.credentials(OPERATOR), count=20)

    assert hop["hops"] == 20
    assert 0 < hop["p50_ms"] < 1000
