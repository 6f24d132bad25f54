"""The JetStream delivery rules, against a real nats-server of this module's own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.js.errors import BadRequestError

from services.control.servers import NatsServer, free_port
from shared import bus, subjects
from shared.contracts.envelope import Envelope, new_deadline
from shared.contracts.questions import QuestionAsked, RouteDecided
from shared.nats_permissions import OPERATOR
from shared.subjects import Stage
from tests.helpers import wait_until


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(Path(tmp_path_factory.mktemp("bus")) / "nats", free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def nc(nats_server: NatsServer) -> AsyncIterator[NatsClient]:
    client = await bus.connect(nats_server.url, "bus-test", *nats_server.credentials(OPERATOR))
    js = client.jetstream()
    # Each test starts from empty streams and no consumers.
    for stream in (*subjects.STAGE_STREAMS.values(), subjects.DEAD_LETTER_STREAM):
        with contextlib.suppress(Exception):
            await js.delete_stream(stream)
    await bus.ensure_streams(js)
    yield client
    await client.close()


def question(request_id: str = "r1", text: str = "Apple revenue 2023") -> Envelope[Any]:
    return Envelope[QuestionAsked](
        request_id=request_id,
        conversation_id="c1",
        user_id="u1",
        deadline=new_deadline(60),
        payload=QuestionAsked(question=text),
    )


def route_for(envelope: Envelope[Any]) -> bus.Forward:
    route = RouteDecided(question=envelope.payload.question, intent="clarify")
    return bus.Forward(subjects.ROUTE_DECIDED, envelope.carry(route))


def router_consumer(
    nc: NatsClient, handler: bus.Handler, **options: Any
) -> tuple[bus.StageConsumer, list[tuple[Envelope[Any], str]]]:
    reported: list[tuple[Envelope[Any], str]] = []

    async def on_poison(envelope: Envelope[Any], reason: str) -> None:
        reported.append((envelope, reason))

    js = nc.jetstream()
    consumer = bus.StageConsumer(
        nc=nc,
        js=js,
        stage=Stage.ROUTER,
        handler=handler,
        publisher=bus.Publisher(nc, js, Stage.ROUTER),
        options=bus.ConsumerOptions(**{"nak_delay_seconds": 0.05, **options}),
        on_poison=on_poison,
        payload_type=QuestionAsked,
    )
    return consumer, reported


@contextlib.asynccontextmanager
async def running(consumer: bus.StageConsumer) -> AsyncIterator[None]:
    task = asyncio.ensure_future(consumer.run())
    try:
        yield
    finally:
        consumer.stop()
        await asyncio.wait_for(task, timeout=10)


async def stream_count(nc: NatsClient, subject: str) -> int:
    info = await nc.jetstream().stream_info(subjects.STAGE_STREAMS[subject])
    return info.state.messages


async def test_a_handled_message_is_forwarded_and_then_acked(nc: NatsClient) -> None:
    handled = asyncio.Event()

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        handled.set()
        return route_for(envelope)

    consumer, _ = router_consumer(nc, handler)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, question())
        await asyncio.wait_for(handled.wait(), 10)
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    assert await stream_count(nc, subjects.ROUTE_DECIDED) == 1
    # Limits retention keeps the acked message until it ages out; the consumer is past it.
    assert await stream_count(nc, subjects.QUESTION_ASKED) == 1


async def _acked(nc: NatsClient, stage: Stage) -> bool:
    info = await nc.jetstream().consumer_info(
        subjects.input_stream(stage), subjects.durable_name(stage)
    )
    return info.num_ack_pending == 0 and info.num_pending == 0


async def test_publishing_the_same_stage_attempt_twice_stores_one_message(
    nc: NatsClient,
) -> None:
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    envelope = question("same-request")
    await publisher.publish(subjects.QUESTION_ASKED, envelope)
    await publisher.publish(subjects.QUESTION_ASKED, envelope)
    assert await stream_count(nc, subjects.QUESTION_ASKED) == 1
    retry = envelope.model_copy(update={"attempt": 1})
    await publisher.publish(subjects.QUESTION_ASKED, retry)
    assert await stream_count(nc, subjects.QUESTION_ASKED) == 2


async def test_an_undecodable_message_is_dead_lettered_with_its_reason_and_not_retried(
    nc: NatsClient,
) -> None:
    calls = 0

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        nonlocal calls
        calls += 1
        return route_for(envelope)

    consumer, _ = router_consumer(nc, handler)
    async with running(consumer):
        await nc.jetstream().publish(subjects.QUESTION_ASKED, b'{"not": "an envelope"}')
        await wait_until(lambda: _dead_letters(nc, Stage.ROUTER, 1))
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    letters = await bus.read_dead_letters(nc.jetstream(), Stage.ROUTER)
    assert letters[0]["data"] == b'{"not": "an envelope"}'
    assert "undecodable" in letters[0]["headers"]["Finq-Dead-Reason"]
    assert letters[0]["headers"]["Finq-Original-Subject"] == subjects.QUESTION_ASKED
    assert calls == 0


async def _dead_letters(nc: NatsClient, stage: Stage, count: int) -> bool:
    return len(await bus.read_dead_letters(nc.jetstream(), stage)) >= count


async def test_a_handler_that_fails_its_work_is_tried_max_deliver_times_then_dead_lettered(
    nc: NatsClient,
) -> None:
    attempts: list[int] = []

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        attempts.append(1)
        raise ValueError("a bug meets this question")

    consumer, reported = router_consumer(nc, handler, max_deliver=3)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, question("doomed"))
        await wait_until(lambda: _dead_letters(nc, Stage.ROUTER, 1))
    assert len(attempts) == 3
    letters = await bus.read_dead_letters(nc.jetstream(), Stage.ROUTER)
    assert "failed 3 times" in letters[0]["headers"]["Finq-Dead-Reason"]
    assert "a bug meets this question" in letters[0]["headers"]["Finq-Dead-Reason"]
    # The waiting gateway is told, rather than left to time out.
    assert [envelope.request_id for envelope, _ in reported] == ["doomed"]


async def test_an_outage_is_waited_out_past_max_deliver_and_the_question_goes_on(
    nc: NatsClient,
) -> None:
    attempts = 0
    done = asyncio.Event()

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        nonlocal attempts
        attempts += 1
        if attempts <= 5:
            raise asyncpg.CannotConnectNowError("the database system is starting up")
        done.set()
        return route_for(envelope)

    consumer, reported = router_consumer(nc, handler, max_deliver=3, backoff_cap_seconds=0.2)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, question("patient"))
        await asyncio.wait_for(done.wait(), 20)
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    assert attempts == 6 and reported == []
    assert await stream_count(nc, subjects.ROUTE_DECIDED) == 1


async def test_an_outage_past_the_deadline_and_retry_budget_fails_with_the_reason(
    nc: NatsClient,
) -> None:
    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        raise ConnectionRefusedError("database down")

    consumer, reported = router_consumer(
        nc, handler, retry_budget_seconds=1.0, backoff_cap_seconds=0.3
    )
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    short = question("outlasted").model_copy(update={"deadline": new_deadline(1.0)})
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, short)
        await wait_until(lambda: _dead_letters(nc, Stage.ROUTER, 1), within=20)
    letters = await bus.read_dead_letters(nc.jetstream(), Stage.ROUTER)
    assert "deadline and retry budget passed" in letters[-1]["headers"]["Finq-Dead-Reason"]
    assert [envelope.request_id for envelope, _ in reported] == ["outlasted"]


async def test_a_handler_stuck_past_the_deadline_and_budget_is_cut_off(nc: NatsClient) -> None:
    never = asyncio.Event()

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        await never.wait()  # a query that never returns
        raise AssertionError("not reached")

    consumer, reported = router_consumer(
        nc, handler, retry_budget_seconds=0.5, ack_wait_seconds=1.0
    )
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    stuck = question("stuck").model_copy(update={"deadline": new_deadline(0.5)})
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, stuck)
        await wait_until(lambda: _dead_letters(nc, Stage.ROUTER, 1), within=20)
    assert [envelope.request_id for envelope, _ in reported] == ["stuck"]


async def test_a_transient_failure_is_retried_and_then_succeeds(nc: NatsClient) -> None:
    attempts = 0
    done = asyncio.Event()

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        nonlocal attempts
        attempts += 1
        if attempts < 2:
            raise bus.TransientError("blip")
        done.set()
        return route_for(envelope)

    consumer, reported = router_consumer(nc, handler)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, question("flaky"))
        await asyncio.wait_for(done.wait(), 10)
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    assert attempts == 2
    assert reported == []
    assert await stream_count(nc, subjects.ROUTE_DECIDED) == 1


async def test_long_work_is_kept_alive_instead_of_redelivered(nc: NatsClient) -> None:
    calls = 0
    release = asyncio.Event()

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        nonlocal calls
        calls += 1
        await release.wait()
        return route_for(envelope)

    consumer, _ = router_consumer(nc, handler, ack_wait_seconds=1.0)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, question("slow"))
        await wait_until(lambda: calls == 1)
        # Three ack waits pass while the handler works; in_progress() keeps it ours.
        with pytest.raises(TimeoutError):
            await wait_until(lambda: _redelivered(nc), within=3.0)
        release.set()
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    assert calls == 1


async def _redelivered(nc: NatsClient) -> bool:
    durable = subjects.durable_name(Stage.ROUTER)
    info = await nc.jetstream().consumer_info(subjects.input_stream(Stage.ROUTER), durable)
    return info.num_redelivered > 0


async def test_past_its_deadline_a_question_is_still_worked_on_within_the_retry_budget(
    nc: NatsClient,
) -> None:
    calls: list[str] = []

    async def handler(envelope: Envelope[Any]) -> bus.Forward:
        calls.append(envelope.request_id)
        return route_for(envelope)

    consumer, reported = router_consumer(nc, handler, retry_budget_seconds=60)
    publisher = bus.Publisher(nc, nc.jetstream(), Stage.GATEWAY)
    # Late (its answer is stored for the asker to read) but within the budget: worked on.
    late = question("late").model_copy(update={"deadline": new_deadline(-1)})
    # Past the deadline and the whole budget: failed with the reason, without work.
    gone = question("gone").model_copy(update={"deadline": new_deadline(-120)})
    async with running(consumer):
        await publisher.publish(subjects.QUESTION_ASKED, late)
        await publisher.publish(subjects.QUESTION_ASKED, gone)
        await wait_until(lambda: _acked(nc, Stage.ROUTER))
    assert calls == ["late"]
    assert await stream_count(nc, subjects.ROUTE_DECIDED) == 1
    assert [envelope.request_id for envelope, _ in reported] == ["gone"]


async def test_a_stream_of_an_older_layout_gives_way_to_the_stage_streams(
    tmp_path: Path,
) -> None:
    # Its own server: the streams of the module's server are in use by other tests.
    server = NatsServer(tmp_path / "nats", free_port())
    server.start()
    try:
        nc = await bus.connect(server.url, "legacy-test", *server.credentials(OPERATOR))
        try:
            js = nc.jetstream()
            await js.add_stream(name="FINQ_OLD", subjects=[f"{subjects.PREFIX}.>"])
            await bus.ensure_streams(js)
            names = {info.config.name for info in await js.streams_info()}
        finally:
            await nc.close()
    finally:
        server.stop()
    assert "FINQ_OLD" not in names
    assert set(subjects.STAGE_STREAMS.values()) <= names


async def test_a_stream_whose_store_cannot_be_made_at_first_is_made_when_asked_again(
    nc: NatsClient, nats_server: NatsServer
) -> None:
    # nats-server deletes an emptied account's streams directory in the background, so a
    # stream made right after the last one was deleted can fail to make its store once.
    # A file where the store's directory goes fails that step the same way; nats-server
    # clears what a failed creation left, so the next attempt succeeds.
    js = nc.jetstream()
    name = subjects.DEAD_LETTER_STREAM
    await js.delete_stream(name)
    (nats_server.data_dir / "jetstream" / "$G" / "streams" / name).write_text("no directory")
    failures_before = _store_failures(nats_server, name)
    await bus.ensure_streams(js)
    assert _store_failures(nats_server, name) == failures_before + 1
    assert (await js.stream_info(name)).config.subjects == [f"{subjects.DEAD_LETTER_PREFIX}.>"]


def _store_failures(server: NatsServer, stream: str) -> int:
    return server.log_path.read_text().count(f"Stream create failed for '$G > {stream}'")


class RefusingJetStream:
    """JetStream's stream creation answering with nats-server's refusals, in turn, then
    creating the stream: the cluster's answers while its peers are still learnt."""

    def __init__(self, *refusals: Exception) -> None:
        self.refusals = list(refusals)
        self.asked = 0

    async def add_stream(self, config: Any) -> None:
        self.asked += 1
        if self.refusals:
            raise self.refusals.pop(0)


def no_peers() -> Exception:
    return BadRequestError(
        code=400,
        err_code=bus.CLUSTER_NO_PEERS,
        description="no suitable peers for placement, peer offline",
    )


async def test_a_stream_waits_while_its_cluster_knows_too_few_peers_online() -> None:
    """A stage started with its three-node cluster under load met this refusal and crashed
    (a full run of the suite, 2026-11-28); the peers are known a moment later."""
    js = RefusingJetStream(no_peers(), no_peers(), no_peers())

    await bus._add_stream(js, bus.StreamConfig(name="S", subjects=["s"]))  # type: ignore[arg-type]

    assert js.asked == 4


async def test_any_other_refusal_of_a_stream_is_not_waited_out() -> None:
    js = RefusingJetStream(BadRequestError(code=400, err_code=10058, description="exists"))

    with pytest.raises(BadRequestError):
        await bus._add_stream(js, bus.StreamConfig(name="S", subjects=["s"]))  # type: ignore[arg-type]
    assert js.asked == 1


class UnansweringJetStream:
    """The real JetStream context, whose first consumer creations go unanswered (a
    replicated stream's leader busy or being elected on a loaded machine)."""

    def __init__(self, js: Any, unanswered: int) -> None:
        self.js = js
        self.unanswered = unanswered
        self.asked = 0

    async def add_consumer(self, stream: str, config: Any) -> Any:
        self.asked += 1
        if self.unanswered:
            self.unanswered -= 1
            raise nats.errors.TimeoutError
        return await self.js.add_consumer(stream, config)


async def test_a_consumer_creation_that_goes_unanswered_is_asked_again(nc: NatsClient) -> None:
    """A validator started with a three-node cluster under load crashed here (the suite,
    2026-11-29): nats-py's request timed out before the cluster answered."""
    js = UnansweringJetStream(nc.jetstream(), unanswered=2)

    durable = await bus.ensure_consumer(js, Stage.VALIDATOR, bus.ConsumerOptions())  # type: ignore[arg-type]

    assert js.asked == 3
    info = await nc.jetstream().consumer_info(subjects.input_stream(Stage.VALIDATOR), durable)
    assert info.config.durable_name == durable
