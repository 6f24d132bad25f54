"""The operators' API (GET /v1/admin/..., POST /v1/admin/dead-letters/{seq}/replay) on the
session's pipeline: an operator sees every user's failed, unanswerable and slowest
questions, the metric names the catalog did not know and the dead letters, and replays a
dead-lettered question until it is answered; anyone else gets 403, and the database itself
refuses them every user's rows."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import asyncpg
import httpx
import pytest
from nats.aio.client import Client as NatsClient

from shared import bus
from shared.contracts.base import utc_now
from shared.db import acting_as
from shared.identity import add_user
from shared.nats_permissions import OPERATOR
from tests.conftest import RunningFinq
from tests.dead_letters_made import dead_lettered_poison, dead_lettered_question
from tests.helpers import wait_until

ADMIN_READS = (
    "/v1/admin/questions?kind=failed",
    "/v1/admin/questions?kind=unanswerable",
    "/v1/admin/questions?kind=slowest",
    "/v1/admin/metric-misses",
    "/v1/admin/dead-letters",
)


@pytest.fixture
async def user(finq: RunningFinq) -> tuple[str, str, str]:
    """A keyed user who is not an operator: (id, name, key)."""
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        made, key = await add_user(conn, f"plain-{uuid.uuid4().hex[:8]}")
    finally:
        await conn.close()
    return made.id, made.name, key


@pytest.fixture
async def operator_nats(finq: RunningFinq) -> AsyncIterator[NatsClient]:
    nats = finq.servers.nats
    nc = await bus.connect(nats.url, "admin-test", *nats.credentials(OPERATOR))
    yield nc
    await nc.close()


async def test_someone_who_is_not_an_operator_gets_403_from_every_admin_route(
    client: httpx.AsyncClient, user: tuple[str, str, str]
) -> None:
    _, _, key = user
    as_user = {"Authorization": f"Bearer {key}"}
    for path in ADMIN_READS:
        response = await client.get(path, headers=as_user)
        assert response.status_code == 403, path
        assert response.json()["code"] == "forbidden"
    response = await client.post("/v1/admin/dead-letters/1/replay", headers=as_user)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


async def test_the_database_refuses_every_users_questions_to_a_non_operator(
    finq: RunningFinq, user: tuple[str, str, str]
) -> None:
    """Whatever the gateway's code does: the services' role acting for a plain user."""
    user_id, _, _ = user
    pool = await asyncpg.create_pool(finq.servers.postgres.service_dsn, min_size=1, max_size=1)
    try:
        scope = acting_as(pool, user_id)
        assert await scope.fetchval("SELECT finq_acting_user_is_operator()") is False
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await scope.fetch(
                "SELECT * FROM finq_operator_questions('failed', now() - interval '1 day', 10)"
            )
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await scope.fetch("SELECT * FROM finq_operator_question('anything')")
        assert await acting_as(pool, "local").fetchval("SELECT finq_acting_user_is_operator()")
    finally:
        await pool.close()


async def test_an_operator_sees_another_users_unanswerable_failed_and_slowest_questions(
    finq: RunningFinq, client: httpx.AsyncClient, user: tuple[str, str, str]
) -> None:
    user_id, name, key = user
    as_user = {"Authorization": f"Bearer {key}"}
    out_of_scope = f"What will the weather be in Paris tomorrow? ({uuid.uuid4().hex[:6]})"
    asked = await client.post("/v1/ask", json={"question": out_of_scope}, headers=as_user)
    assert asked.status_code == 200, asked.text
    assert asked.json()["route"]["intent"] == "out_of_scope"
    # A validation that failed: template answers pass, so the row is written as the
    # validator writes a model's answer that did not.
    failed_id = uuid.uuid4().hex
    issue = {"kind": "number", "text": "999", "message": "999 is in no fact", "severity": "high"}
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        await conn.execute(
            "INSERT INTO query_log (request_id, conversation_id, user_id, question, intent, "
            "validation, attempts, total_ms) VALUES ($1, $2, $3, $4, 'metric_lookup', $5, 3, "
            "987654.0)",
            failed_id,
            uuid.uuid4().hex,
            user_id,
            "What was Apple's revenue in 2023?",
            json.dumps({"passed": False, "severity": "high", "issues": [issue]}),
        )
    finally:
        await conn.close()

    unanswerable = (await client.get("/v1/admin/questions?kind=unanswerable")).json()
    mine = [q for q in unanswerable["questions"] if q["question"] == out_of_scope]
    assert len(mine) == 1
    assert mine[0]["user"] == name and mine[0]["intent"] == "out_of_scope"
    assert mine[0]["request_id"] == asked.json()["request_id"]

    failed = (await client.get("/v1/admin/questions?kind=failed&days=1")).json()
    row = next(q for q in failed["questions"] if q["request_id"] == failed_id)
    assert row["passed"] is False and row["user"] == name
    assert row["issues"][0]["message"] == "999 is in no fact"
    assert all(q["passed"] is False for q in failed["questions"])

    slowest = (await client.get("/v1/admin/questions?kind=slowest&limit=500")).json()
    times = [q["total_ms"] for q in slowest["questions"]]
    assert times == sorted(times, reverse=True)
    assert slowest["questions"][0]["request_id"] == failed_id  # 988 s: slower than any asked

    refused = await client.get("/v1/admin/questions?kind=everything")
    assert refused.status_code == 422


async def test_metric_names_the_catalog_did_not_know_are_listed_most_asked_first(
    finq: RunningFinq, client: httpx.AsyncClient
) -> None:
    tag = uuid.uuid4().hex[:6]
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        for phrase, count in ((f"zorbic yield {tag}", 3), (f"flumox ratio {tag}", 40)):
            await conn.execute(
                "INSERT INTO alias_misses (phrase, example, count) VALUES ($1, $2, $3)",
                phrase,
                phrase.title(),
                count,
            )
    finally:
        await conn.close()
    misses = (await client.get("/v1/admin/metric-misses?limit=500")).json()["misses"]
    ours = [m["example"] for m in misses if m["phrase"].endswith(tag)]
    assert ours == [f"Flumox Ratio {tag}".title(), f"Zorbic Yield {tag}".title()]
    counts = [m["count"] for m in misses]
    assert counts == sorted(counts, reverse=True)


async def test_a_dead_lettered_question_is_replayed_by_an_operator_and_answered_once(
    finq: RunningFinq,
    client: httpx.AsyncClient,
    user: tuple[str, str, str],
    operator_nats: NatsClient,
) -> None:
    user_id, _, _ = user
    letter = await dead_lettered_question(
        operator_nats, finq.servers.postgres.dsn, user_id, "What was Apple revenue in fiscal 2023?"
    )
    listed = (await client.get("/v1/admin/dead-letters?limit=500")).json()["dead_letters"]
    shown = next(d for d in listed if d["seq"] == letter.seq)
    assert shown["request_id"] == letter.request_id and shown["stage"] == "router"
    assert "deadline" in shown["reason"]

    replayed = await client.post(f"/v1/admin/dead-letters/{letter.seq}/replay")
    assert replayed.status_code == 202, replayed.text
    assert replayed.json()["request_id"] == letter.request_id
    assert replayed.json()["deadline"] > utc_now().isoformat()

    answers: list[asyncpg.Record] = []

    async def answered() -> bool:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            answers[:] = await conn.fetch(
                "SELECT answer, user_id FROM answers WHERE request_id = $1", letter.request_id
            )
        finally:
            await conn.close()
        return bool(answers)

    await wait_until(answered, within=60, every=0.2)
    assert "383.3 billion" in answers[0]["answer"]
    assert answers[0]["user_id"] == user_id  # answered as its own user, not the operator
    listed = (await client.get("/v1/admin/dead-letters?limit=500")).json()["dead_letters"]
    assert letter.seq not in {d["seq"] for d in listed}
    again = await client.post(f"/v1/admin/dead-letters/{letter.seq}/replay")
    assert again.status_code == 404
    assert again.json()["code"] == "dead_letter_not_found"


async def test_a_dead_letter_that_holds_no_saved_question_is_kept_and_explained(
    client: httpx.AsyncClient, operator_nats: NatsClient
) -> None:
    letter = await dead_lettered_poison(operator_nats)
    refused = await client.post(f"/v1/admin/dead-letters/{letter.seq}/replay")
    assert refused.status_code == 409
    assert refused.json()["code"] == "not_replayable"
    assert f"finq dead replay {letter.seq}" in refused.json()["message"]
    listed = (await client.get("/v1/admin/dead-letters?limit=500")).json()["dead_letters"]
    assert letter.seq in {d["seq"] for d in listed}


async def test_questions_older_than_the_days_asked_for_are_left_out(
    finq: RunningFinq, client: httpx.AsyncClient, user: tuple[str, str, str]
) -> None:
    user_id, _, _ = user
    old_id = uuid.uuid4().hex
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        await conn.execute(
            "INSERT INTO query_log (request_id, conversation_id, user_id, question, validation, "
            "attempts, created_at) VALUES ($1, $2, $3, 'old', $4, 1, $5)",
            old_id,
            uuid.uuid4().hex,
            user_id,
            json.dumps({"passed": False, "severity": "high", "issues": []}),
            utc_now() - timedelta(days=3),
        )
    finally:
        await conn.close()
    one_day = (await client.get("/v1/admin/questions?kind=failed&days=1&limit=500")).json()
    week = (await client.get("/v1/admin/questions?kind=failed&days=7&limit=500")).json()
    assert old_id not in {q["request_id"] for q in one_day["questions"]}
    assert old_id in {q["request_id"] for q in week["questions"]}
