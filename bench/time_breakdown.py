"""Where one question's time goes when it is asked alone: part by part, from the moments
the pipeline itself records, and the least a JetStream hop costs on this machine.

For each question the load generator notes when it sent the request and when the answer
was read (wall clock), and the answer's `request_id`. The pipeline has recorded the rest:

- `questions.created_at`: the start of the gateway's transaction that saves the question;
- `query_log.stages`: each stage's run, its start and how long its handler took (the
  validator's own run ends as it builds the record it writes).

Ten parts follow, each the time between two of these moments, so that for every question
they add up to the latency the client saw (and their means to the mean latency): the
client to the gateway's save; the save, the publish and the first hop; each stage's
handler and the hop after it; and from the validator's checks to the client reading the
answer (the write of the answer, its turn and its log, the reply on core NATS, the
gateway's response). A hop is from one handler's end to the next one's start: the
publish and its PubAck (after the broker's fsync), the delivery, and the decode.

All the clocks are this machine's one wall clock (the bench, the services, PostgreSQL).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from nats.js.api import StorageType, StreamConfig
from pydantic import SecretStr

from bench.percentiles import percentile
from shared import bus
from shared.subjects import Stage

# The stages in the order a question passes them.
STAGE_ORDER: tuple[Stage, ...] = (Stage.ROUTER, Stage.TOOLS, Stage.ANSWERER, Stage.VALIDATOR)

PARTS: tuple[str, ...] = (
    "client to the gateway's save",
    "save, publish, hop to the router",
    "router",
    "hop to the tools",
    "tools",
    "hop to the answerer",
    "answerer",
    "hop to the validator",
    "validator's checks",
    "write, reply, response to the client",
)

TIMELINE_SQL = """
SELECT q.request_id, q.created_at AS saved_at, l.stages
FROM questions q
JOIN query_log l ON l.request_id = q.request_id
WHERE q.request_id = ANY($1::text[])
"""


@dataclass(frozen=True)
class Asked:
    """One question as the load generator saw it: wall-clock seconds since the epoch."""

    request_id: str
    sent: float
    answered: float


def parts_of(asked: Asked, saved_at: datetime, stages: Sequence[dict[str, Any]]) -> list[float]:
    """The ten parts of one question's latency, in ms (they add up to its latency), or an
    empty list when the question did not pass each stage once on its first attempt (a
    repaired answer, a retried message): its parts would not be one question's path."""
    runs: dict[str, tuple[float, float]] = {}
    for run in stages:
        if run.get("attempt", 0) != 0:
            return []
        stage = run["stage"]
        if stage in runs:
            return []
        started = datetime.fromisoformat(run["started_at"]).timestamp()
        runs[stage] = (started, started + float(run["duration_ms"]) / 1000.0)
    if set(runs) != {stage.value for stage in STAGE_ORDER}:
        return []
    moments = [asked.sent, saved_at.timestamp()]
    for stage in STAGE_ORDER:
        moments.extend(runs[stage.value])
    moments.append(asked.answered)
    return [(later - earlier) * 1000.0 for earlier, later in itertools.pairwise(moments)]


def summarize(per_question: Sequence[list[float]]) -> dict[str, Any]:
    """Each part's mean and p50 over the questions, and the mean latency they add up to."""
    if not per_question:
        return {"questions": 0, "parts": [], "mean_total_ms": math.nan}
    count = len(per_question)
    totals = [sum(parts) for parts in per_question]
    mean_total = sum(totals) / count
    rows = []
    for index, name in enumerate(PARTS):
        values = [parts[index] for parts in per_question]
        mean = sum(values) / count
        rows.append(
            {
                "part": name,
                "mean_ms": round(mean, 3),
                "p50_ms": round(percentile(sorted(values), 50), 3),
                "share": round(mean / mean_total, 3) if mean_total > 0 else math.nan,
            }
        )
    return {
        "questions": count,
        "parts": rows,
        "mean_total_ms": round(mean_total, 3),
        "p50_total_ms": round(percentile(sorted(totals), 50), 3),
    }


async def time_breakdown(dsn: str, asked: Sequence[Asked]) -> dict[str, Any]:
    """The parts of the questions in `asked`, read from what the pipeline recorded (as the
    database's owner: the rows of every user)."""
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(TIMELINE_SQL, [a.request_id for a in asked])
    finally:
        await connection.close()
    recorded = {row["request_id"]: row for row in rows}
    per_question = []
    for question in asked:
        row = recorded.get(question.request_id)
        if row is None:
            continue
        parts = parts_of(question, row["saved_at"], json.loads(row["stages"]))
        if parts:
            per_question.append(parts)
    summary = summarize(per_question)
    summary["left_out"] = len(asked) - len(per_question)
    return summary


async def bare_hop(url: str, user: str, password: SecretStr, count: int = 300) -> dict[str, float]:
    """The least a hop costs here: nats-py publishes to a file-backed stream and waits for
    its PubAck (the broker fsyncs first with `sync_interval: always`), a push consumer on a
    connection of its own is handed the message and acks it. No finq code, no decode.

    ms per hop (p50, mean) over `count` hops, one at a time, after 30 unmeasured ones."""
    publisher = await bus.connect(url, "bench-hop-publisher", user, password)
    consumer = await bus.connect(url, "bench-hop-consumer", user, password)
    stream = f"BENCH_HOP_{uuid.uuid4().hex[:8].upper()}"
    subject = f"bench.hop.{stream.lower()}"
    js_pub, js_sub = publisher.jetstream(), consumer.jetstream()
    try:
        await js_pub.add_stream(
            StreamConfig(name=stream, subjects=[subject], storage=StorageType.FILE)
        )
        arrived: asyncio.Queue[float] = asyncio.Queue()

        async def on_message(msg: Any) -> None:
            arrived.put_nowait(time.perf_counter())
            await msg.ack()

        subscription = await js_sub.subscribe(subject, cb=on_message, manual_ack=True)
        payload = b"x" * 600  # about the size of a stage's envelope
        hops: list[float] = []
        for index in range(count + 30):
            started = time.perf_counter()
            await js_pub.publish(subject, payload)
            finished = await asyncio.wait_for(arrived.get(), 10.0)
            if index >= 30:
                hops.append((finished - started) * 1000.0)
        await subscription.unsubscribe()
        return {
            "p50_ms": round(percentile(sorted(hops), 50), 3),
            "mean_ms": round(sum(hops) / len(hops), 3),
            "hops": float(len(hops)),
        }
    finally:
        try:
            await js_pub.delete_stream(stream)
        finally:
            await consumer.close()
            await publisher.close()


def breakdown_lines(breakdown: dict[str, Any], hop: dict[str, float] | None) -> list[str]:
    """The breakdown as a Markdown table, with the bare hop's floor beneath it."""
    if not breakdown.get("questions"):
        return []
    lines = [
        "| part | mean ms | p50 ms | share |",
        "|---|---|---|---|",
    ]
    for row in breakdown["parts"]:
        lines.append(
            f"| {row['part']} | {row['mean_ms']:.2f} | {row['p50_ms']:.2f} | {row['share']:.0%} |"
        )
    lines.append(
        f"| **the whole question** | {breakdown['mean_total_ms']:.2f} | "
        f"{breakdown['p50_total_ms']:.2f} | 100% |"
    )
    if hop:
        lines += [
            "",
            f"A bare JetStream hop on this machine (nats-py publish with its PubAck after "
            f"the fsync, a push consumer's delivery and ack; no finq code): p50 "
            f"{hop['p50_ms']:.2f} ms, mean {hop['mean_ms']:.2f} ms over {hop['hops']:.0f} hops.",
        ]
    return lines
