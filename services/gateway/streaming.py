"""POST /v1/ask/stream: the making of an answer as Server-Sent Events.

The stream is `accepted` (request_id, conversation_id, trace_id), then each stage's event
as it arrives (the event's name is its kind: routed, tools_done, drafted, validated,
failed; its data the `StageEvent`), then `answer`, whose data is exactly the body POST
/v1/ask answers for the request, or `error` with `{code, message}` and the codes /v1/ask
uses (`stage_failed`, `deadline_exceeded`, `unavailable`, ...). A comment line keeps an
idle stream open through proxies.

With a model writing the answer, `draft_text` events come between `tools_done` and
`drafted`: the model's text as it is written (`summary.seq`, `summary.text`; one
attempt's texts in seq order are its draft so far, and a draft sent back to be written
again starts over with the next `attempt`). A draft is a preview only: the `answer` is the
validated text, which may differ.

The gateway subscribes to the request's event subject before it publishes the question, so
no stage's event comes before the subscription. The response owns what the request holds
(the subscription, the wait for its answer, its admission slot, its span) and lets go of
all of it when the stream ends, however it ends: answered, failed, or the client gone.
No task of its own runs beside the stream. The question goes on without its client: the
validator stores its answer as it does every answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import get_args

import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import BaseModel, ValidationError
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from services.gateway.http_models import AskResponse, ErrorBody
from shared import subjects
from shared.contracts.events import StageEvent, StageEventKind
from shared.outages import is_transient

log = structlog.get_logger("finq.gateway")

ACCEPTED = "accepted"
ANSWER = "answer"
ERROR = "error"
# An idle stream gets a comment this often: proxies and load balancers close connections
# that carry nothing for a while (a minute is common), and clients ignore comments.
KEEPALIVE_SECONDS = 15.0
KEEPALIVE_FRAME = b": keep-alive\n\n"
MEDIA_TYPE = "text/event-stream"


class StreamAccepted(BaseModel):
    """The first event: the question is saved and on its way."""

    request_id: str
    conversation_id: str
    trace_id: str | None


# What the wait for the answer ends in, given the seconds it may still take: the body
# /v1/ask would answer, or the error it would answer with.
FinishAnswer = Callable[[float], Awaitable[AskResponse | ErrorBody]]

# Every event the stream sends: its names and the model of its data (for the OpenAPI
# schema, services/gateway/openapi.py).
STREAM_EVENTS: tuple[tuple[tuple[str, ...], type[BaseModel]], ...] = (
    ((ACCEPTED,), StreamAccepted),
    (get_args(StageEventKind), StageEvent),
    ((ANSWER,), AskResponse),
    ((ERROR,), ErrorBody),
)


def sse_frame(event: str, data: str) -> bytes:
    """One server-sent event; `data` is one line of JSON (JSON escapes line breaks)."""
    return f"event: {event}\ndata: {data}\n\n".encode()


def stage_event_frame(event: StageEvent) -> bytes:
    return sse_frame(event.kind, event.model_dump_json())


def outcome_frame(outcome: AskResponse | ErrorBody) -> bytes:
    if isinstance(outcome, ErrorBody):
        return sse_frame(ERROR, outcome.model_dump_json())
    return sse_frame(ANSWER, outcome.model_dump_json())


def unexpected_outcome(error: Exception) -> ErrorBody:
    """What /v1/ask answers for an error no handler took (services/gateway/failures.py)."""
    if is_transient(error):
        log.warning("dependency unavailable while streaming", error=repr(error))
        return ErrorBody(
            code="unavailable",
            message="finq's database or message bus is not reachable just now; try again",
        )
    log.exception("unexpected error while streaming", error=repr(error))
    return ErrorBody(code="internal_error", message="finq hit an unexpected error; see its logs")


def decode_stage_event(subject: str, data: bytes, request_id: str) -> StageEvent | None:
    """The event a message carries, when it is about `request_id` and was told by the
    stage its subject names (nats-server lets a stage publish under its own name only, so
    the subject, not the body, says who told it); None for anything else."""
    try:
        event = StageEvent.model_validate_json(data)
    except ValidationError:
        log.warning("undecodable stage event", subject=subject)
        return None
    if event.request_id != request_id or subject != subjects.stage_event_subject(
        request_id, event.stage
    ):
        log.warning("a stage event on a subject not its own", subject=subject)
        return None
    return event


@dataclass
class RequestEvents:
    """One request's stage events in the order they arrived, ended by the word that the
    request's answer (or failure notice) is in."""

    request_id: str
    # None: the answer is in. Both kinds go through one queue, so an event heard before
    # the answer is always relayed before it.
    _arrived: asyncio.Queue[StageEvent | None] = field(default_factory=asyncio.Queue)
    _subscription: Subscription | None = None

    @classmethod
    async def subscribe(cls, nc: NatsClient, request_id: str) -> RequestEvents:
        """Listening to the request's events from now on (the SUB reaches the server before
        anything this connection publishes later)."""
        events = cls(request_id)

        async def heard(msg: Msg) -> None:
            events.hear(msg.subject, msg.data)

        events._subscription = await nc.subscribe(
            subjects.request_events_subject(request_id), cb=heard
        )
        return events

    def hear(self, subject: str, data: bytes) -> None:
        event = decode_stage_event(subject, data, self.request_id)
        if event is not None:
            self._arrived.put_nowait(event)

    def answer_in(self, _: object = None) -> None:
        """The answer arrived (a done-callback of the wait for it)."""
        self._arrived.put_nowait(None)

    async def next(self) -> StageEvent | None:
        """The next event, or None once the answer is in."""
        return await self._arrived.get()

    def heard_so_far(self) -> list[StageEvent]:
        """The events already arrived and not yet taken."""
        heard: list[StageEvent] = []
        while not self._arrived.empty():
            event = self._arrived.get_nowait()
            if event is not None:
                heard.append(event)
        return heard

    @property
    def listening(self) -> bool:
        return self._subscription is not None

    async def close(self) -> None:
        """Stop listening: the server forgets the interest and nats-py stops the
        subscription's task (both before the first await inside unsubscribe)."""
        subscription, self._subscription = self._subscription, None
        if subscription is None:
            return
        try:
            await subscription.unsubscribe()
        except Exception as error:
            # The connection is closed or draining: its subscriptions went with it.
            log.debug("stage events unsubscribed with the connection", error=repr(error))


async def answer_frames(
    accepted: StreamAccepted,
    events: RequestEvents,
    finish: FinishAnswer,
    deadline_seconds: float,
) -> AsyncGenerator[bytes, None]:
    """The stream's frames, from `accepted` to the answer or the error."""
    ended = False
    try:
        yield sse_frame(ACCEPTED, accepted.model_dump_json())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_seconds
        while (left := deadline - loop.time()) > 0:
            try:
                async with asyncio.timeout(min(left, KEEPALIVE_SECONDS)):
                    event = await events.next()
            except TimeoutError:
                if left > KEEPALIVE_SECONDS:
                    yield KEEPALIVE_FRAME
                continue
            if event is None:
                break
            yield stage_event_frame(event)
        for event in events.heard_so_far():
            yield stage_event_frame(event)
        try:
            outcome = await finish(max(0.0, deadline - loop.time()))
        except Exception as error:
            outcome = unexpected_outcome(error)
        yield outcome_frame(outcome)
        ended = True
    finally:
        if not ended:
            # The client left (or the server is stopping); the question is answered anyway.
            log.info("stream closed before its answer", request_id=accepted.request_id)


class EventStreamResponse(StreamingResponse):
    """A stream of server-sent events that lets go of what its request holds (`held`)
    when it ends, however it ends.

    Starlette cancels the stream when the client disconnects; the frames' generator may
    then sit at a `yield` until it is garbage collected, so it is closed here at once."""

    media_type = MEDIA_TYPE

    def __init__(
        self, frames: AsyncGenerator[bytes, None], held: contextlib.AsyncExitStack
    ) -> None:
        # no-cache: nothing between may keep the stream; X-Accel-Buffering: nginx passes
        # each event on as it comes instead of buffering the response.
        super().__init__(frames, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self._frames = frames
        self._held = held

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                await self._frames.aclose()
            finally:
                await self._held.aclose()
