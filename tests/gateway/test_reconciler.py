"""The reconciler publishes again what PostgreSQL holds and the bus lost: a question saved
but never published (a gateway that died between the two) is answered all the same, once,
and only one gateway reconciles a round."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import asyncpg

from services.gateway.conversations import START_CONVERSATION_SQL
from services.gateway.reconciler import RECONCILER_LOCK_KEY, Reconciler
from services.gateway.uploads import Uploads
from shared import bus
from shared.contracts.base import utc_now
from shared.db import create_pool
from shared.nats_permissions import OPERATOR
from shared.subjects import Stage
from tests.conftest import Servers, own_pipeline
from tests.helpers import wait_until

QUESTION = "What was NVIDIA's revenue in fiscal 2024?"


async def save_question_without_publishing(dsn: str, user: str = "local") -> str:
    """What a gateway writes before it publishes, as if it died right after."""
    request_id = uuid.uuid4().hex
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            START_CONVERSATION_SQL,
            request_id,
            uuid.uuid4().hex,
            user,
            QUESTION,
            None,
            utc_now() + timedelta(seconds=60),
            QUESTION,
        )
    finally:
        await conn.close()
    return request_id


async def test_a_question_saved_but_never_published_is_answered_once(
    servers: Servers, tmp_path: Path
) -> None:
    settings = {
        "FINQ_GATEWAY_RECONCILE_EVERY_SECONDS": "0.5",
        "FINQ_GATEWAY_RECONCILE_GRACE_SECONDS": "1",
    }
    async with own_pipeline(servers, tmp_path, "t_reconciler", settings) as client:
        dsn = servers.postgres.dsn_for("t_reconciler")
        request_id = await save_question_without_publishing(dsn)
        owner = await asyncpg.connect(dsn)
        try:

            async def answered() -> bool:
                return bool(
                    await owner.fetchval(
                        "SELECT count(*) FROM answers WHERE request_id = $1", request_id
                    )
                )

            await wait_until(answered, within=60, every=0.2)
            log = (await client.get(f"/v1/requests/{request_id}")).json()
            # Rounds every half second published it again while it was being answered
            # (the stream dropped those as duplicates); the answer and its turn are one each.
            answers = await owner.fetchval(
                "SELECT count(*) FROM answers WHERE request_id = $1", request_id
            )
            turns = await owner.fetchval(
                "SELECT count(*) FROM messages WHERE request_id = $1 AND role = 'assistant'",
                request_id,
            )
        finally:
            await owner.close()
    assert log["question"] == QUESTION and log["validation"]["passed"]
    assert (answers, turns) == (1, 1)


async def test_only_the_gateway_holding_the_lock_reconciles_a_round(
    servers: Servers, database: str
) -> None:
    pool = await create_pool(database, min_size=1, max_size=3)
    nc = await bus.connect(servers.nats.url, "reconciler-test", *servers.nats.credentials(OPERATOR))
    try:
        publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
        reconciler = Reconciler(pool, publisher, Uploads(pool, publisher, 1024))
        other_gateway = await asyncpg.connect(database)
        try:
            await other_gateway.execute("SELECT pg_advisory_lock($1)", RECONCILER_LOCK_KEY)
            assert await reconciler.round() is None
            await other_gateway.execute("SELECT pg_advisory_unlock($1)", RECONCILER_LOCK_KEY)
            assert await reconciler.round() == (0, 0)
        finally:
            await other_gateway.close()
    finally:
        await nc.close()
        await pool.close()
