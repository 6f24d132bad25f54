"""`finq dead list` and `finq dead replay`, end to end: messages dead-lettered by the real
stages of a pipeline of this module's own, listed and replayed through the `finq` command
as an operator of `finq up` would (the broker and its credentials found in the home
folder, or given in FINQ_NATS_*)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from shared import bus, subjects
from shared.contracts.answers import AnswerValidated
from shared.contracts.envelope import Envelope
from shared.dead_letters import DeadLetter, list_dead_letters
from shared.identity import LOCAL_USER
from shared.nats_permissions import OPERATOR
from shared.subjects import Stage
from tests.dead_letters_made import dead_lettered_question
from tests.helpers import run_finq, wait_until
from tests.watched_finq import WatchedFinq, watched_finq


@pytest.fixture(scope="module")
async def pipeline(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WatchedFinq]:
    async with watched_finq(tmp_path_factory.mktemp("dead-letters") / "home") as running:
        yield running


@pytest.fixture
async def operator(pipeline: WatchedFinq) -> AsyncIterator[NatsClient]:
    nats = pipeline.nats
    nc = await bus.connect(nats.url, "dead-letter-test", *nats.credentials(OPERATOR))
    yield nc
    await nc.close()


async def finq_dead(pipeline: WatchedFinq, *args: str, **env: str) -> tuple[int, str, str]:
    """`finq dead …` as the operator of that `finq up`: its home folder is all it is told."""
    return await run_finq("dead", *args, database="unused", FINQ_HOME=str(pipeline.home), **env)


async def letters_of(nc: NatsClient, request_id: str) -> list[DeadLetter]:
    return [
        letter
        for letter in await list_dead_letters(nc.jetstream())
        if letter.request_id == request_id
    ]


async def dead_lettered(nc: NatsClient, request_id: str, after: int = 0) -> DeadLetter:
    """The dead letter of `request_id` with an id past `after`, once a stage wrote it."""
    found: list[DeadLetter] = []

    async def written() -> bool:
        found[:] = [letter for letter in await letters_of(nc, request_id) if letter.seq > after]
        return bool(found)

    await wait_until(written, within=30, every=0.1)
    return found[0]


async def test_a_poison_message_is_listed_and_replayed_as_it_is_dead_lettered_again(
    pipeline: WatchedFinq, operator: NatsClient
) -> None:
    request_id = f"poison-{uuid.uuid4().hex[:8]}"
    poison = json.dumps({"request_id": request_id, "payload": "no question here"}).encode()
    original_id = subjects.message_id(request_id, Stage.GATEWAY, 0)
    await operator.jetstream().publish(
        subjects.QUESTION_ASKED, poison, headers={bus.MSG_ID_HEADER: original_id}
    )
    letter = await dead_lettered(operator, request_id)

    code, out, err = await finq_dead(pipeline, "list", "--json")
    assert code == 0, out + err
    listed = {entry["seq"]: entry for entry in json.loads(out)}[letter.seq]
    assert listed["stage"] == "router"
    assert listed["request_id"] == request_id
    assert listed["subject"] == subjects.QUESTION_ASKED
    assert listed["reason"].startswith("undecodable message")
    assert listed["original_msg_id"] == original_id
    assert listed["dead_at"] is not None
    code, out, err = await finq_dead(pipeline, "list", "--stage", "router")
    assert code == 0, out + err
    row = next(line for line in out.splitlines() if request_id in line)
    assert row.split()[:3] == [str(letter.seq), "router", request_id]
    assert "undecodable message" in row

    # Replayed as it is (no code was fixed), it is dead-lettered again: anew, under a new
    # id, and with a message id of its own (the original's would be dropped as a duplicate).
    code, out, err = await finq_dead(pipeline, "replay", str(letter.seq))
    assert code == 0, out + err
    assert f"replayed dead letter {letter.seq} onto {subjects.QUESTION_ASKED}" in out
    again = await dead_lettered(operator, request_id, after=letter.seq)
    assert again.original_msg_id == f"{original_id}:replay-{letter.seq}"
    assert again.reason.startswith("undecodable message")
    assert [entry.seq for entry in await letters_of(operator, request_id)] == [again.seq]

    code, _, err = await finq_dead(pipeline, "replay", str(letter.seq))
    assert code == 1 and f"no dead letter {letter.seq}" in err


async def test_a_question_dead_lettered_past_its_deadline_is_answered_once_replayed(
    pipeline: WatchedFinq, operator: NatsClient
) -> None:
    # Saved by a gateway long ago, and held up by an outage past its deadline plus the
    # retry budget (300 s): the router gives it up at once.
    replies: asyncio.Queue[Msg] = asyncio.Queue()
    reply_subject = subjects.reply_subject(f"dead-letter-test-{uuid.uuid4().hex[:8]}")
    await operator.subscribe(reply_subject, cb=replies.put)
    letter = await dead_lettered_question(
        operator,
        pipeline.postgres.dsn,
        LOCAL_USER,
        "What was Apple revenue in fiscal 2023?",
        reply_to=reply_subject,
    )
    request_id = letter.request_id
    assert letter.reason == "the request's deadline and retry budget passed before it was done"

    # Given as FINQ_NATS_* this time, as on a machine whose broker `finq up` did not start.
    credentials = pipeline.nats.credentials_env(OPERATOR)
    code, out, err = await finq_dead(
        pipeline, "replay", str(letter.seq), FINQ_NATS_URL=pipeline.nats.url, **credentials
    )
    assert code == 0, out + err
    assert "its deadline had passed" in out

    reply = await asyncio.wait_for(replies.get(), timeout=60)
    answered: Envelope[Any] = Envelope[AnswerValidated].model_validate_json(reply.data)
    assert answered.request_id == request_id
    assert "383.3 billion" in answered.payload.answer, answered.payload.answer
    assert answered.payload.validation.passed
    conn = await asyncpg.connect(pipeline.postgres.dsn)
    try:
        stored = await conn.fetchval("SELECT answer FROM answers WHERE request_id = $1", request_id)
    finally:
        await conn.close()
    assert stored == answered.payload.answer
    assert await letters_of(operator, request_id) == []


async def test_finq_dead_says_when_it_cannot_reach_nats(tmp_path: Path) -> None:
    code, out, err = await run_finq(
        "dead",
        "list",
        "--timeout",
        "1",
        database="unused",
        FINQ_HOME=str(tmp_path),
        FINQ_NATS_URL="nats://127.0.0.1:9",
    )
    assert code == 2, out + err
    assert "cannot reach NATS at nats://127.0.0.1:9" in err
