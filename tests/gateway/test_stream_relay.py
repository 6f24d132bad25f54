"""The gateway's side of POST /v1/ask/stream without a broker: which events it relays, in
what order, how the stream ends, and that a client leaving mid-stream leaves nothing
behind (services/gateway/streaming.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from starlette.types import Message

from services.gateway.http_models import AskResponse, ErrorBody
from services.gateway.streaming import (
    KEEPALIVE_FRAME,
    EventStreamResponse,
    RequestEvents,
    StreamAccepted,
    answer_frames,
    decode_stage_event,
    sse_frame,
)
from shared import subjects
from shared.contracts.answers import Validation
from shared.contracts.events import RoutedSummary, StageEvent, ValidatedSummary
from shared.subjects import Stage

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ACCEPTED = StreamAccepted(request_id="r1", conversation_id="c1", trace_id="t" * 32)
ANSWERED = AskResponse(
    request_id="r1",
    conversation_id="c1",
    answer="Apple's revenue in fiscal 2023 was $383.3 billion.",
    citations=[],
    facts=[],
    needs_clarification=False,
    clarifying_question=None,
    validation=Validation(passed=True, severity="none"),
    trace_id="t" * 32,
)


def routed(request_id: str = "r1") -> StageEvent:
    summary = RoutedSummary(intent="metric_lookup", decided_by="rules", confidence=0.8)
    return StageEvent(
        request_id=request_id,
        stage=Stage.ROUTER,
        kind="routed",
        at=AT,
        elapsed_ms=1.0,
        summary=summary,
    )


def validated() -> StageEvent:
    summary = ValidatedSummary(passed=True, severity="none", attempts=1, repairs=0)
    return StageEvent(
        request_id="r1", stage=Stage.VALIDATOR, kind="validated", at=AT, summary=summary
    )


def told(events: RequestEvents, event: StageEvent) -> None:
    """As the subscription's callback would hand it over."""
    events.hear(
        subjects.stage_event_subject(event.request_id, event.stage),
        event.model_dump_json().encode(),
    )


def parse(frames: list[bytes]) -> list[tuple[str, Any]]:
    """(event, data) of each frame, comments left out, as an EventSource reads them."""
    parsed: list[tuple[str, Any]] = []
    for block in b"".join(frames).decode().split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        parsed.append((fields["event"], json.loads(fields["data"])))
    return parsed


async def collect(frames: Any) -> list[bytes]:
    return [frame async for frame in frames]


def answering(outcome: AskResponse | ErrorBody, asked_within: list[float] | None = None) -> Any:
    async def finish(within_seconds: float) -> AskResponse | ErrorBody:
        if asked_within is not None:
            asked_within.append(within_seconds)
        return outcome

    return finish


# --- frames and decoding --------------------------------------------------------------


def test_a_frame_is_the_event_name_and_one_line_of_data() -> None:
    data = json.dumps({"answer": "two\nlines"})
    assert sse_frame("answer", data) == b'event: answer\ndata: {"answer": "two\\nlines"}\n\n'


def test_an_event_is_relayed_only_from_its_own_stages_subject_about_its_request() -> None:
    event = routed()
    data = event.model_dump_json().encode()
    subject = subjects.stage_event_subject("r1", Stage.ROUTER)
    assert decode_stage_event(subject, data, "r1") == event
    # Another request's event, an event claiming another stage than its subject's, noise.
    assert decode_stage_event(subject, routed("r2").model_dump_json().encode(), "r1") is None
    validator_subject = subjects.stage_event_subject("r1", Stage.VALIDATOR)
    assert decode_stage_event(validator_subject, data, "r1") is None
    assert decode_stage_event(subject, b"{not json", "r1") is None


# --- the stream's order and end ---------------------------------------------------------


async def test_accepted_then_each_event_as_it_came_then_the_answer() -> None:
    events = RequestEvents("r1")
    told(events, routed())
    told(events, validated())
    events.answer_in()
    frames = await collect(answer_frames(ACCEPTED, events, answering(ANSWERED), 30.0))
    assert parse(frames) == [
        ("accepted", ACCEPTED.model_dump(mode="json")),
        ("routed", routed().model_dump(mode="json")),
        ("validated", validated().model_dump(mode="json")),
        ("answer", ANSWERED.model_dump(mode="json")),
    ]


async def test_an_event_heard_just_after_the_answer_is_still_relayed_before_it() -> None:
    events = RequestEvents("r1")
    events.answer_in()
    told(events, validated())
    frames = await collect(answer_frames(ACCEPTED, events, answering(ANSWERED), 30.0))
    assert [name for name, _ in parse(frames)] == ["accepted", "validated", "answer"]


async def test_a_failure_ends_the_stream_with_an_error_event() -> None:
    events = RequestEvents("r1")
    events.answer_in()
    failed = ErrorBody(code="stage_failed", message="the tools stage failed: gave up")
    frames = await collect(answer_frames(ACCEPTED, events, answering(failed), 30.0))
    assert parse(frames)[-1] == ("error", failed.model_dump())


async def test_no_answer_by_the_deadline_asks_for_it_once_more_with_no_time_left() -> None:
    events = RequestEvents("r1")
    late = ErrorBody(code="deadline_exceeded", message="no answer within 0.05 s")
    asked_within: list[float] = []
    frames = await collect(answer_frames(ACCEPTED, events, answering(late, asked_within), 0.05))
    assert [name for name, _ in parse(frames)] == ["accepted", "error"]
    assert KEEPALIVE_FRAME not in frames
    assert asked_within == [0.0]


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (asyncpg.exceptions.CannotConnectNowError("starting up"), "unavailable"),
        (RuntimeError("a bug"), "internal_error"),
    ],
)
async def test_an_error_while_finishing_is_an_error_event_not_a_broken_stream(
    error: Exception, code: str
) -> None:
    async def finish(within_seconds: float) -> AskResponse | ErrorBody:
        raise error

    events = RequestEvents("r1")
    events.answer_in()
    frames = await collect(answer_frames(ACCEPTED, events, finish, 30.0))
    name, data = parse(frames)[-1]
    assert (name, data["code"]) == ("error", code)


# --- a client that leaves -----------------------------------------------------------------


async def test_a_client_leaving_mid_stream_releases_everything_and_leaves_no_task() -> None:
    before = asyncio.all_tasks()
    events = RequestEvents("r1")
    released: list[str] = []
    held = contextlib.AsyncExitStack()
    held.callback(released.append, "admission")
    held.push_async_callback(events.close)
    # The answer never comes: the stream would wait 30 s for it.
    frames = answer_frames(ACCEPTED, events, answering(ANSWERED), 30.0)
    response = EventStreamResponse(frames, held)

    first_event_sent = asyncio.Event()
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            first_event_sent.set()

    async def receive() -> Message:
        await first_event_sent.wait()
        return {"type": "http.disconnect"}

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}}
    async with asyncio.timeout(5):
        await response(scope, receive, send)

    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert [name for name, _ in parse([m["body"] for m in sent[1:]])] == ["accepted"]
    assert released == ["admission"]
    assert frames.ag_frame is None, "the frames' generator is closed"
    assert asyncio.all_tasks() == before


async def test_closing_events_that_never_subscribed_does_nothing() -> None:
    events = RequestEvents("r1")
    assert not events.listening
    await events.close()
