"""nats-server lets each finq process do its own stage's part and nothing more: who may log
in, who may answer a gateway, who may ask a question, and that shared/nats_permissions.py
says what the server enforces. On a real nats-server of this module's own."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import re
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from pydantic import SecretStr

from services.control.commands.state_file import write_state
from services.control.servers import NatsServer, PostgresServer, free_port
from services.control.supervisor import ServiceProcess, Supervisor
from shared import bus, subjects
from shared.contracts.envelope import Envelope, new_deadline
from shared.contracts.failures import StageFailed
from shared.contracts.questions import QuestionAsked
from shared.nats_permissions import (
    OPERATOR,
    USERS,
    authorization_block,
    env_reference,
    may_publish,
    may_subscribe,
    permission_table,
)
from shared.runtime import failure_reporter
from shared.settings import FinqSettings
from shared.subjects import Stage

ROOT = Path(__file__).resolve().parents[2]
# How long something that should happen may take. Nothing here waits for what should not
# happen: a refused publish is dropped by the server before its error comes back.
DEADLINE_SECONDS = 5.0
GATEWAY_INSTANCE = "gateway-under-test"
# A subject no stage may publish to: its refusal marks the end of what was sent before it.
MARKER = f"{subjects.PREFIX}.test.marker"
REFUSED = re.compile(r'permissions violation for (publish|subscription) to "([^"]+)"')


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats-permissions") / "nats", free_port())
    server.start()
    yield server
    server.stop()


@dataclass
class Connected:
    """One connection as one NATS user, with the errors nats-py's callback reported."""

    user: str
    nc: NatsClient
    errors: asyncio.Queue[Exception]

    async def refusal(self) -> tuple[str, str]:
        """The server's next refusal of this client: ("publish" or "subscription", subject)."""
        error = await asyncio.wait_for(self.errors.get(), DEADLINE_SECONDS)
        found = REFUSED.search(str(error).lower())
        assert found, f"not a permissions violation: {error!r}"
        return found.group(1), found.group(2)

    async def refusals_so_far(self) -> set[tuple[str, str]]:
        """Every refusal of what this client sent until now. The server deals with one
        client's commands in order, so a marker publish no stage may make, sent last, is
        refused after everything sent before it. (A flush would not do: nats-py 2.16 writes
        its PING ahead of the commands still in its buffer.)"""
        await self.nc.publish(MARKER, b"")
        refused: set[tuple[str, str]] = set()
        while (refusal := await self.refusal()) != ("publish", MARKER):
            refused.add(refusal)
        return refused


ConnectAs = Callable[[str], Awaitable[Connected]]


@pytest.fixture
async def connect_as(server: NatsServer) -> AsyncIterator[ConnectAs]:
    opened: list[Connected] = []

    async def connect(user: str) -> Connected:
        errors: asyncio.Queue[Exception] = asyncio.Queue()
        nc = await bus.connect(
            server.url, f"test-{user}", *server.credentials(user), error_cb=errors.put
        )
        opened.append(Connected(str(user), nc, errors))
        return opened[-1]

    yield connect
    for connected in opened:
        await connected.nc.close()


async def listen(connected: Connected, subject: str) -> asyncio.Queue[Msg]:
    heard: asyncio.Queue[Msg] = asyncio.Queue()
    await connected.nc.subscribe(subject, cb=heard.put)
    # The subscription is in place at the server before anyone publishes.
    assert await connected.refusals_so_far() == set()
    return heard


async def fresh_streams(operator: Connected) -> None:
    """Empty stage streams and no consumers: for a test that consumes, and to clear away
    what a test published to them."""
    js = operator.nc.jetstream()
    await bus.ensure_streams(js)
    # Purged and stripped of consumers, not deleted: a stream made again right after its
    # deletion can fail ("error creating store for stream") while the server still removes
    # the old one's files.
    for stream in (*subjects.STAGE_STREAMS.values(), subjects.DEAD_LETTER_STREAM):
        await js.purge_stream(stream)
        for consumer in await js.consumers_info(stream):
            with contextlib.suppress(Exception):
                await js.delete_consumer(stream, consumer.name)


def question() -> Envelope[Any]:
    return Envelope[QuestionAsked](
        request_id="r-permissions",
        conversation_id="c1",
        user_id="u1",
        deadline=new_deadline(60),
        reply_to=subjects.reply_subject(GATEWAY_INSTANCE),
        payload=QuestionAsked(question="Apple revenue 2023"),
    )


async def quiet(_: Exception) -> None:
    """An error callback for connections expected to be refused."""


# --- logging in ------------------------------------------------------------------------


async def test_a_client_without_credentials_is_refused(server: NatsServer) -> None:
    with pytest.raises(bus.NatsRefused):
        await bus.connect(server.url, "anonymous", error_cb=quiet)


async def test_a_client_with_a_wrong_password_is_refused(server: NatsServer) -> None:
    password = server.passwords()[Stage.ROUTER]
    with pytest.raises(bus.NatsRefused) as refused:
        await bus.connect(
            server.url, "guessing", Stage.ROUTER, SecretStr(password + "x"), error_cb=quiet
        )
    assert password not in str(refused.value)


async def test_a_stage_cannot_log_in_as_another_stage_with_its_own_password(
    server: NatsServer,
) -> None:
    router_password = SecretStr(server.passwords()[Stage.ROUTER])
    with pytest.raises(bus.NatsRefused):
        await bus.connect(server.url, "posing", Stage.VALIDATOR, router_password, error_cb=quiet)


# --- answering and asking --------------------------------------------------------------


@pytest.mark.parametrize("forger", [Stage.ROUTER, Stage.TOOLS, Stage.ANSWERER, Stage.GATEWAY])
async def test_only_the_validator_can_answer_on_a_gateways_reply_subject(
    connect_as: ConnectAs, forger: Stage
) -> None:
    reply_subject = subjects.reply_subject(GATEWAY_INSTANCE)
    gateway = await connect_as(Stage.GATEWAY)
    heard = await listen(gateway, reply_subject)

    forging = await connect_as(forger)
    await forging.nc.publish(reply_subject, b"a forged answer")
    assert await forging.refusal() == ("publish", reply_subject)

    # The forgery was dropped before its error came back, so the validator's answer is the
    # first and only message the gateway hears.
    validator = await connect_as(Stage.VALIDATOR)
    await validator.nc.publish(reply_subject, b"the validated answer")
    first = await asyncio.wait_for(heard.get(), DEADLINE_SECONDS)
    assert first.data == b"the validated answer"
    assert heard.empty()
    assert await validator.refusals_so_far() == set()


@pytest.mark.parametrize("asker", [Stage.ROUTER, Stage.TOOLS, Stage.ANSWERER, Stage.VALIDATOR])
async def test_only_the_gateway_can_publish_a_question(connect_as: ConnectAs, asker: Stage) -> None:
    operator = await connect_as(OPERATOR)
    await bus.ensure_streams(operator.nc.jetstream())
    stream = subjects.STAGE_STREAMS[subjects.QUESTION_ASKED]
    before = (await operator.nc.jetstream().stream_info(stream)).state.last_seq

    asking = await connect_as(asker)
    await asking.nc.publish(subjects.QUESTION_ASKED, bus.encode(question()))
    assert await asking.refusal() == ("publish", subjects.QUESTION_ASKED)

    gateway = await connect_as(Stage.GATEWAY)
    stored = await gateway.nc.jetstream().publish(subjects.QUESTION_ASKED, bus.encode(question()))
    # The gateway's question is the next one stored: the refused one never was.
    assert (stored.stream, stored.seq) == (stream, before + 1)


async def test_a_stage_cannot_listen_to_another_stages_inbox_or_a_gateways_replies(
    connect_as: ConnectAs,
) -> None:
    router = await connect_as(Stage.ROUTER)
    others = (
        subjects.everything_under(subjects.inbox_prefix(Stage.VALIDATOR)),
        subjects.everything_under(subjects.INBOX_PREFIX),
        subjects.reply_subject(GATEWAY_INSTANCE),
    )
    for subject in others:
        await router.nc.subscribe(subject)
        assert await router.refusal() == ("subscription", subject.lower())
    # Nor push a message into another stage's pull subscription.
    validator_inbox = f"{subjects.inbox_prefix(Stage.VALIDATOR)}.pulled"
    await router.nc.publish(validator_inbox, b"a forged draft")
    assert await router.refusal() == ("publish", validator_inbox.lower())


@pytest.mark.parametrize("requester", subjects.EMBEDDING_REQUESTERS)
async def test_only_the_ingest_stage_answers_an_embedding_request_and_never_into_an_inbox(
    connect_as: ConnectAs, requester: Stage
) -> None:
    asking = await connect_as(requester)
    answers = await listen(asking, subjects.embedded_replies(requester, "i1"))
    ingest = await connect_as(Stage.INGEST)
    requests = await listen(ingest, subjects.EMBED)

    answer_to = subjects.embedded_subject(requester, "i1", "t1")
    await asking.nc.publish(subjects.EMBED, b"{}", reply=answer_to)
    assert (await asyncio.wait_for(requests.get(), DEADLINE_SECONDS)).reply == answer_to

    # No other stage can forge an answer, and the ingest stage cannot push into an inbox.
    for forger in (Stage.TOOLS if requester is Stage.ROUTER else Stage.ROUTER, Stage.ANSWERER):
        forging = await connect_as(forger)
        await forging.nc.publish(answer_to, b"forged vectors")
        assert await forging.refusal() == ("publish", answer_to)
    inbox = f"{subjects.inbox_prefix(requester)}.embedded"
    await ingest.nc.publish(inbox, b"vectors")
    assert await ingest.refusal() == ("publish", inbox.lower())

    await ingest.nc.publish(answer_to, b"the vectors")
    first = await asyncio.wait_for(answers.get(), DEADLINE_SECONDS)
    assert first.data == b"the vectors"
    assert answers.empty()


@pytest.mark.parametrize("asker", [Stage.GATEWAY, Stage.ANSWERER, Stage.VALIDATOR])
async def test_only_the_router_and_the_tools_may_ask_for_embeddings(
    connect_as: ConnectAs, asker: Stage
) -> None:
    asking = await connect_as(asker)
    await asking.nc.publish(subjects.EMBED, b"{}")
    assert await asking.refusal() == ("publish", subjects.EMBED)


async def test_a_stage_cannot_hear_another_stages_embedding_answers(
    connect_as: ConnectAs,
) -> None:
    tools = await connect_as(Stage.TOOLS)
    routers_answers = subjects.embedded_replies(Stage.ROUTER, "i1")
    await tools.nc.subscribe(routers_answers)
    assert await tools.refusal() == ("subscription", routers_answers.lower())
    # Nor take the ingest stage's requests from it.
    await tools.nc.subscribe(subjects.EMBED)
    assert await tools.refusal() == ("subscription", subjects.EMBED)


async def test_a_stage_that_gives_up_dead_letters_and_tells_the_gateway_on_its_failure_subject(
    connect_as: ConnectAs,
) -> None:
    operator = await connect_as(OPERATOR)
    await fresh_streams(operator)
    gateway = await connect_as(Stage.GATEWAY)
    failures = await listen(gateway, subjects.failure_subject(GATEWAY_INSTANCE))

    router = await connect_as(Stage.ROUTER)
    publisher = bus.Publisher(router.nc, router.nc.jetstream(), Stage.ROUTER)

    async def give_up(_: Envelope[Any]) -> bus.StageOutput:
        raise bus.PoisonMessage("no route for this question")

    consumer = bus.StageConsumer(
        nc=router.nc,
        js=router.nc.jetstream(),
        stage=Stage.ROUTER,
        handler=give_up,
        publisher=publisher,
        options=bus.ConsumerOptions(),
        on_poison=failure_reporter(Stage.ROUTER, publisher),
        payload_type=QuestionAsked,
    )
    consuming = asyncio.create_task(consumer.run())
    try:
        asking = bus.Publisher(gateway.nc, gateway.nc.jetstream(), Stage.GATEWAY)
        await asking.publish(subjects.QUESTION_ASKED, question())
        told = await asyncio.wait_for(failures.get(), DEADLINE_SECONDS)
    finally:
        consumer.stop()
        await asyncio.wait_for(consuming, DEADLINE_SECONDS)

    failed = Envelope[StageFailed].model_validate_json(told.data)
    assert failed.payload.stage == Stage.ROUTER
    assert "no route for this question" in failed.payload.message
    # Creating its consumer, pulling, dead-lettering, terminating: nothing was refused.
    assert await router.refusals_so_far() == set()
    letters = await bus.read_dead_letters(operator.nc.jetstream(), Stage.ROUTER)
    assert len(letters) == 1


async def test_a_stage_tells_its_own_events_only_and_only_the_gateway_hears_them(
    connect_as: ConnectAs,
) -> None:
    gateway = await connect_as(Stage.GATEWAY)
    heard = await listen(gateway, subjects.request_events_subject("r-events"))

    tools = await connect_as(Stage.TOOLS)
    # Posing as the validator, or listening in on what the router decided: both refused.
    posing = subjects.stage_event_subject("r-events", Stage.VALIDATOR)
    await tools.nc.publish(posing, b"a forged verdict")
    assert await tools.refusal() == ("publish", posing)
    listening = subjects.request_events_subject("r-events")
    await tools.nc.subscribe(listening)
    assert await tools.refusal() == ("subscription", listening)

    own = subjects.stage_event_subject("r-events", Stage.TOOLS)
    await tools.nc.publish(own, b"tools done")
    first = await asyncio.wait_for(heard.get(), DEADLINE_SECONDS)
    assert (first.subject, first.data) == (own, b"tools done")
    assert heard.empty()
    # Another request's events are not this subscription's.
    validator = await connect_as(Stage.VALIDATOR)
    await validator.nc.publish(subjects.stage_event_subject("r-other", Stage.VALIDATOR), b"x")
    await validator.nc.publish(subjects.stage_event_subject("r-events", Stage.VALIDATOR), b"ok")
    second = await asyncio.wait_for(heard.get(), DEADLINE_SECONDS)
    assert second.data == b"ok"
    assert await validator.refusals_so_far() == set()


# --- the table is what the server enforces ---------------------------------------------


def published_subjects() -> list[str]:
    """Everything some stage publishes to: stage subjects, replies, failures, dead letters,
    stage events, embedding requests and answers."""
    return [
        *subjects.STAGE_SUBJECTS,
        subjects.reply_subject(GATEWAY_INSTANCE),
        subjects.failure_subject(GATEWAY_INSTANCE),
        *(subjects.dead_letter_subject(consumer) for consumer in subjects.STAGE_INPUT),
        *(subjects.stage_event_subject("r-permissions", stage) for stage in Stage),
        subjects.EMBED,
        *(subjects.embedded_subject(s, "i1", "t1") for s in subjects.EMBEDDING_REQUESTERS),
    ]


@pytest.mark.parametrize("stage", list(Stage))
async def test_the_server_refuses_exactly_the_publishes_the_table_does_not_allow(
    connect_as: ConnectAs, stage: Stage
) -> None:
    operator = await connect_as(OPERATOR)
    await fresh_streams(operator)
    connected = await connect_as(stage)
    candidates = published_subjects()
    for subject in candidates:
        await connected.nc.publish(subject, b"{}")
    expected = {("publish", s.lower()) for s in candidates if not may_publish(stage, s)}
    assert await connected.refusals_so_far() == expected
    await fresh_streams(operator)


def subjects_named_in(stage: Stage) -> set[str]:
    """The stage subjects a stage's code names as `subjects.X`, its input aside: a stage
    names a stage subject other than its input only to send to it."""
    named: set[str] = set()
    for path in (ROOT / "services" / stage.value).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "subjects"
            ):
                value = getattr(subjects, node.attr, None)
                if value in subjects.STAGE_SUBJECTS and value != subjects.STAGE_INPUT.get(stage):
                    named.add(value)
    return named


@pytest.mark.parametrize("stage", list(Stage))
def test_each_stage_may_publish_the_stage_subjects_its_code_sends_to_and_no_other(
    stage: Stage,
) -> None:
    named = subjects_named_in(stage)
    assert named == set(subjects.STAGE_OUTPUTS[stage])
    for subject in subjects.STAGE_SUBJECTS:
        assert may_publish(stage, subject) == (subject in named), subject


def test_the_table_covers_every_subject_a_stage_publishes() -> None:
    reply = subjects.reply_subject(GATEWAY_INSTANCE)
    failure = subjects.failure_subject(GATEWAY_INSTANCE)
    for stage in Stage:
        allowed = permission_table()[stage].publish
        if stage in subjects.STAGE_INPUT:
            assert may_publish(stage, subjects.dead_letter_subject(stage))
            assert may_publish(stage, failure)
            assert may_publish(stage, subjects.pull_subject(stage))
            assert subjects.ack_subjects(stage) in allowed
        assert may_subscribe(stage, f"{subjects.inbox_prefix(stage)}.reply")
    # Who may do what that matters: answer, ask, hear a gateway's replies.
    assert {user for user in USERS if may_publish(user, reply)} == {Stage.VALIDATOR, OPERATOR}
    assert {user for user in USERS if may_publish(user, subjects.QUESTION_ASKED)} == {
        Stage.GATEWAY,
        OPERATOR,
    }
    for heard in (reply, failure):
        assert {user for user in USERS if may_subscribe(user, heard)} == {Stage.GATEWAY, OPERATOR}
    # Stage events: each stage that tells them under its own name only; the gateway hears them.
    for stage in Stage:
        event = subjects.stage_event_subject("r1", stage)
        tellers = {user for user in USERS if may_publish(user, event)}
        expected = {stage, OPERATOR} if stage in subjects.STAGE_EVENT_STAGES else {OPERATOR}
        assert tellers == expected, stage
        assert {user for user in USERS if may_subscribe(user, event)} == {Stage.GATEWAY, OPERATOR}
    # Embeddings: the router and the tools ask, the ingest stage answers on their subjects.
    assert {user for user in USERS if may_publish(user, subjects.EMBED)} == {
        Stage.ROUTER,
        Stage.TOOLS,
        OPERATOR,
    }
    assert {user for user in USERS if may_subscribe(user, subjects.EMBED)} == {
        Stage.INGEST,
        OPERATOR,
    }
    for requester in subjects.EMBEDDING_REQUESTERS:
        answer = subjects.embedded_subject(requester, "i1", "t1")
        assert {user for user in USERS if may_publish(user, answer)} == {Stage.INGEST, OPERATOR}
        assert {user for user in USERS if may_subscribe(user, answer)} == {requester, OPERATOR}
    # A failure notice from a stage reaches the gateway that waits for the request.
    assert subjects.failure_subject_for(reply) == failure
    assert set(permission_table()) == set(USERS)


def test_deploy_nats_conf_declares_the_same_users_with_passwords_from_the_environment() -> None:
    text = (ROOT / "deploy" / "nats.conf").read_text()
    assert authorization_block(env_reference) in text
    for user in USERS:
        assert f"password: {env_reference(user)}" in text


# --- where the passwords live ----------------------------------------------------------


async def test_passwords_are_made_once_kept_private_and_reused_after_a_restart(
    tmp_path: Path,
) -> None:
    server = NatsServer(tmp_path / "nats", free_port())
    server.start()
    server.stop()
    first = server.passwords()
    assert set(first) == set(USERS)
    assert len(set(first.values())) == len(USERS)
    for private in (server.credentials_path, tmp_path / "nats.conf"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    server.start()
    try:
        assert server.passwords() == first
        nc = await bus.connect(server.url, "after-restart", *server.credentials(OPERATOR))
        await nc.close()
    finally:
        server.stop()


def test_no_password_shows_in_a_repr_or_the_state_file(
    server: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = server.passwords()
    monkeypatch.setenv("FINQ_NATS_USER", Stage.ROUTER)
    monkeypatch.setenv("FINQ_NATS_PASSWORD", passwords[Stage.ROUTER])
    settings = FinqSettings()
    assert settings.nats_password is not None
    assert settings.nats_password.get_secret_value() == passwords[Stage.ROUTER]

    supervisor = Supervisor(
        tmp_path / "logs", {"FINQ_NATS_URL": server.url}, stage_env=server.credentials_env
    )
    router_env = supervisor.environment(Stage.ROUTER)
    assert router_env["FINQ_NATS_PASSWORD"] == passwords[Stage.ROUTER]
    supervisor.services.append(ServiceProcess(Stage.ROUTER, 0, tmp_path / "r.log", router_env))
    write_state(
        tmp_path, "http://127.0.0.1:1", PostgresServer(tmp_path / "pg", 1), server, supervisor
    )
    shown = [
        repr(server),
        repr(supervisor),
        repr(settings),
        str(settings),
        repr(server.credentials(OPERATOR)),
        (tmp_path / "state.json").read_text(),
        json.dumps(settings.model_dump(mode="json")),
    ]
    for text in shown:
        for password in passwords.values():
            assert password not in text
