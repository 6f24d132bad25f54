"""Dead letters made the way the stages make them, for the tests of the admin page and API:
a saved question held up past its deadline and retry budget, which the router gives up on
at once, and a message no stage can read."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import asyncpg
from nats.aio.client import Client as NatsClient

from services.gateway.conversations import START_CONVERSATION_SQL
from shared import bus, subjects
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.questions import QuestionAsked
from shared.dead_letters import DeadLetter, list_dead_letters
from shared.subjects import Stage
from tests.helpers import wait_until


async def dead_letter_of(nc: NatsClient, request_id: str) -> DeadLetter:
    """The dead letter of `request_id`, once a stage has written it."""
    found: list[DeadLetter] = []

    async def written() -> bool:
        found[:] = [
            letter
            for letter in await list_dead_letters(nc.jetstream(), limit=1000)
            if letter.request_id == request_id
        ]
        return bool(found)

    await wait_until(written, within=30, every=0.1)
    return found[0]


async def dead_lettered_question(
    operator: NatsClient,
    owner_dsn: str,
    user_id: str,
    question: str,
    reply_to: str | None = None,
) -> DeadLetter:
    """`question`, saved for `user_id` ten minutes ago with a 30 s deadline (an outage held
    it up), published to the router, which dead-letters it (`reply_to`: where the gateway
    that asked it waits, for a test to hear the answer a replay brings)."""
    request_id, conversation_id = uuid.uuid4().hex, uuid.uuid4().hex
    asked_at = utc_now() - timedelta(seconds=600)
    deadline = asked_at + timedelta(seconds=30)
    conn = await asyncpg.connect(owner_dsn)
    try:
        await conn.execute(
            START_CONVERSATION_SQL,
            request_id,
            conversation_id,
            user_id,
            question,
            None,
            deadline,
            question,
        )
    finally:
        await conn.close()
    envelope = Envelope[QuestionAsked](
        request_id=request_id,
        conversation_id=conversation_id,
        user_id=user_id,
        deadline=deadline,
        created_at=asked_at,
        reply_to=reply_to,
        payload=QuestionAsked(question=question),
    )
    await bus.Publisher(operator, operator.jetstream(), Stage.GATEWAY).publish(
        subjects.QUESTION_ASKED, envelope
    )
    return await dead_letter_of(operator, request_id)


async def dead_lettered_poison(operator: NatsClient) -> DeadLetter:
    """A message that names a request but holds no question: dead-lettered unread."""
    request_id = f"poison-{uuid.uuid4().hex[:8]}"
    poison = json.dumps({"request_id": request_id, "payload": "no question here"}).encode()
    await operator.jetstream().publish(
        subjects.QUESTION_ASKED,
        poison,
        headers={bus.MSG_ID_HEADER: subjects.message_id(request_id, Stage.GATEWAY, 0)},
    )
    return await dead_letter_of(operator, request_id)
