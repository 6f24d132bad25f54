"""Stage events: what each stage decided about a request, told as it happens.

After a stage's handler produces its result, the stage publishes a `StageEvent` (the kind,
a short typed summary, when, and how long the work took) on core NATS, on the request's
own subject (`subjects.stage_event_subject`). The gateway relays them to a client that
streams the making of its answer (POST /v1/ask/stream).

Events are best-effort progress, outside the streams: the answer itself travels and is
stored as before whether anyone listens or not. So telling one never fails or slows the
stage's work: it is built and published after the result exists, a publish is only
buffered (never awaited to the wire), an error is logged and swallowed, and nothing is
sent while the connection is down (stale progress is worth less than the buffer it takes).

The event is sent before the stage forwards its result: the next stage's event is then
always behind it on the wire, so a client sees the stages in order.

While a model writes an answer, the answerer also tells its text as it arrives
(`DraftTextTeller`: `draft_text` events, pieces gathered to at most one event per
DRAFT_TEXT_INTERVAL_SECONDS), on the same subject and connection as its `drafted` event,
and all of them before it: a client has the whole draft by the time it hears `drafted`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from nats.aio.client import Client as NatsClient
from pydantic import BaseModel

from shared import subjects
from shared.bus import Handler, StageOutput
from shared.contracts.answers import AnswerDrafted, AnswerValidated, ToolsCompleted
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.events import (
    DraftedSummary,
    DraftTextSummary,
    FailedSummary,
    RoutedSummary,
    StageEvent,
    StageEventSummary,
    ToolRun,
    ToolsDoneSummary,
    ValidatedSummary,
)
from shared.contracts.failures import StageFailed
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import ToolResult
from shared.subjects import Stage

log = structlog.get_logger("finq.stage_events")


def routed(route: RouteDecided) -> RoutedSummary:
    return RoutedSummary(
        intent=route.intent,
        decided_by=route.decided_by,
        confidence=route.confidence,
        tool_calls=route.tool_calls,
    )


def tool_run(result: ToolResult) -> ToolRun:
    return ToolRun(
        tool=result.tool,
        arguments=result.arguments,
        facts=len(result.facts),
        passages=len(result.passages),
        error_code=result.error.code if result.error is not None else None,
    )


def tools_done(completed: ToolsCompleted) -> ToolsDoneSummary:
    return ToolsDoneSummary(tools=[tool_run(result) for result in completed.results])


def drafted(draft: AnswerDrafted) -> DraftedSummary:
    return DraftedSummary(mode=draft.generation.mode, needs_clarification=draft.needs_clarification)


def validated(answer: AnswerValidated) -> ValidatedSummary:
    check = answer.validation
    return ValidatedSummary(
        passed=check.passed,
        severity=check.severity,
        attempts=check.attempts,
        repairs=len(check.repairs),
    )


def summary_of(stage: Stage, payload: BaseModel) -> StageEventSummary | None:
    """What `stage` decided, when `payload` is its result of record; None for a result that
    is no step of its own (the validator sending a draft back to be written again: the
    stages that redo it tell their own events)."""
    match stage, payload:
        case Stage.ROUTER, RouteDecided():
            return routed(payload)
        case Stage.TOOLS, ToolsCompleted():
            return tools_done(payload)
        case Stage.ANSWERER, AnswerDrafted():
            return drafted(payload)
        case Stage.VALIDATOR, AnswerValidated():
            return validated(payload)
    return None


def stage_event(
    stage: Stage,
    envelope: Envelope[Any],
    elapsed_ms: float | None,
    at: datetime | None = None,
) -> StageEvent | None:
    """The event of `stage`'s result `envelope` (None when it tells none)."""
    summary = summary_of(stage, envelope.payload)
    if summary is None:
        return None
    return event_of(stage, envelope, summary, elapsed_ms, at)


def failure_event(
    stage: Stage, envelope: Envelope[Any], failed: StageFailed, at: datetime | None = None
) -> StageEvent:
    """The event of `stage` giving up on the request of `envelope`."""
    summary = FailedSummary(code=failed.code, message=failed.message)
    return event_of(stage, envelope, summary, None, at)


def event_of(
    stage: Stage,
    envelope: Envelope[Any],
    summary: StageEventSummary,
    elapsed_ms: float | None,
    at: datetime | None,
) -> StageEvent:
    return StageEvent(
        request_id=envelope.request_id,
        stage=stage,
        kind=summary.kind,
        attempt=envelope.attempt,
        at=at or utc_now(),
        elapsed_ms=None if elapsed_ms is None else round(max(0.0, elapsed_ms), 3),
        summary=summary,
    )


@dataclass
class StageEventPublisher:
    """Publishes one stage's events, best effort (see the module)."""

    nc: NatsClient
    stage: Stage

    async def publish(self, event: StageEvent) -> None:
        if not self.nc.is_connected:
            return
        try:
            subject = subjects.stage_event_subject(event.request_id, self.stage)
            # nats-py buffers the message for its flusher task; nothing here waits on the wire.
            await self.nc.publish(subject, event.model_dump_json().encode())
        except Exception as error:
            log.warning("stage event not published", kind=event.kind, error=repr(error))

    async def tell_result(self, output: StageOutput, elapsed_ms: float) -> None:
        try:
            event = stage_event(self.stage, output.envelope, elapsed_ms)
        except Exception as error:  # a summary that does not build is no reason to fail
            log.warning("stage event not built", error=repr(error))
            return
        if event is not None:
            await self.publish(event)

    async def tell_failure(self, envelope: Envelope[Any], failed: StageFailed) -> None:
        try:
            event = failure_event(self.stage, envelope, failed)
        except Exception as error:
            log.warning("stage event not built", error=repr(error))
            return
        await self.publish(event)


def telling_stage_events(handler: Handler, events: StageEventPublisher) -> Handler:
    """`handler`, with the event of each result it produces published before the result
    goes on (a handler that raises tells nothing: the message is retried or given up on,
    and giving up is told by the failure reporter). Only for a watched request."""

    async def handle(envelope: Envelope[Any]) -> StageOutput:
        if not envelope.watched:
            return await handler(envelope)
        started = time.perf_counter()
        output = await handler(envelope)
        await events.tell_result(output, (time.perf_counter() - started) * 1000)
        return output

    return handle


# A model writes a few tokens every 10-30 ms; gathering them to one event per 50 ms keeps
# the text visibly growing for a reader at a fraction of the messages.
DRAFT_TEXT_INTERVAL_SECONDS = 0.05


@dataclass
class DraftTextTeller:
    """Tells one attempt's draft text as a model writes it: `wrote` each piece as it
    arrives, `finished` once the model is done (it sends what is still gathered). Best
    effort like every stage event: a piece not sent only leaves a client's preview short."""

    events: StageEventPublisher
    request_id: str
    attempt: int
    interval_seconds: float = DRAFT_TEXT_INTERVAL_SECONDS
    _gathered: list[str] = field(default_factory=list)
    _seq: int = 0
    _last_sent: float = float("-inf")

    async def wrote(self, text: str) -> None:
        if not text:
            return
        self._gathered.append(text)
        if time.monotonic() - self._last_sent >= self.interval_seconds:
            await self._send()

    async def finished(self) -> None:
        if self._gathered:
            await self._send()

    async def _send(self) -> None:
        text = "".join(self._gathered)
        self._gathered.clear()
        self._last_sent = time.monotonic()
        try:
            event = StageEvent(
                request_id=self.request_id,
                stage=self.events.stage,
                kind="draft_text",
                attempt=self.attempt,
                at=utc_now(),
                summary=DraftTextSummary(seq=self._seq, text=text),
            )
        except Exception as error:  # a piece that does not build is no reason to fail
            log.warning("draft text not built", error=repr(error))
            return
        self._seq += 1
        await self.events.publish(event)
