"""POST /v1/ask and POST /v1/ask/stream: a question, answered whole or watched stage by
stage as server-sent events."""

from __future__ import annotations

import contextlib
import functools
import uuid

from fastapi import APIRouter, Request
from fastapi.responses import Response
from opentelemetry.trace import SpanKind, use_span

from services.gateway.asking import (
    answer_or_error,
    ask_question,
    checked_question,
    submit_question,
)
from services.gateway.dependencies import Caller, Deps
from services.gateway.http_models import AskRequest, AskResponse
from services.gateway.openapi import error_responses
from services.gateway.streaming import (
    EventStreamResponse,
    RequestEvents,
    StreamAccepted,
    answer_frames,
)
from shared.telemetry import extract_context, tracer

ASK_PATH = "/v1/ask"
ASK_STREAM_PATH = "/v1/ask/stream"
ASK_STREAM_DESCRIPTION = (
    "Server-sent events: `accepted`, the stages' events (`routed`, `tools_done`, `drafted`, "
    "`validated`, `failed`), then `answer` (the body of POST /v1/ask) or `error` "
    "(`{code, message}`); each event's data is one line of JSON. With a model writing the "
    "answer, `draft_text` events come before `drafted`: the model's text as it is written "
    "(`summary.seq` from 0 and `summary.text` per `attempt`; joined in order, the draft so "
    "far), a preview only: `answer` carries the validated text, which may differ"
)

router = APIRouter()


@router.post(
    ASK_PATH,
    response_model=AskResponse,
    responses=error_responses(400, 401, 404, 413, 422, 429, 502, 503, 504),
)
async def ask(body: AskRequest, deps: Deps, caller: Caller, request: Request) -> Response:
    question = checked_question(body)
    with tracer().start_as_current_span(
        f"POST {ASK_PATH}",
        context=extract_context(request.headers),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": "POST", "http.route": ASK_PATH},
    ):
        # Its place among the questions in flight was taken by AdmissionGate.
        answer = await ask_question(deps, question, body.conversation_id, caller)
    # Already validated field by field; serialize once instead of re-validating.
    return Response(answer.model_dump_json(), media_type="application/json")


@router.post(
    ASK_STREAM_PATH,
    status_code=200,
    response_class=EventStreamResponse,
    response_description=ASK_STREAM_DESCRIPTION,
    responses=error_responses(400, 401, 404, 413, 422, 429, 503),
)
async def ask_stream(
    body: AskRequest, deps: Deps, caller: Caller, request: Request
) -> EventStreamResponse:
    """Ask as with POST /v1/ask and watch the answer being made, as server-sent events:
    `accepted`, then one event per stage as it finishes (`routed`, `tools_done`,
    `drafted`, `validated`; `failed` when a stage gives up), then `answer` with the body
    /v1/ask would answer, or `error` with its code (`stage_failed`, `deadline_exceeded`,
    ...). When a model writes the answer, `draft_text` events carry its text as it is
    written, before `drafted`: a preview the validated `answer` replaces. Refusals
    before the question is accepted are the usual JSON errors."""
    question = checked_question(body)
    # What the request holds until its stream ends; the response takes it over below.
    async with contextlib.AsyncExitStack() as held:
        span = tracer().start_span(
            f"POST {ASK_STREAM_PATH}",
            context=extract_context(request.headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "http.route": ASK_STREAM_PATH},
        )
        held.callback(span.end)
        with use_span(span):
            # Its place among the questions in flight is held by AdmissionGate until the
            # stream ends.
            request_id = uuid.uuid4().hex
            # Listening before the question is published: no event can come first.
            events = await RequestEvents.subscribe(deps.nc, request_id)
            held.push_async_callback(events.close)
            held.callback(deps.pending.forget, request_id)
            asked = await submit_question(
                deps, request_id, question, body.conversation_id, caller, watched=True
            )
        asked.answer.add_done_callback(events.answer_in)
        accepted = StreamAccepted(
            request_id=request_id,
            conversation_id=asked.envelope.conversation_id,
            trace_id=asked.trace_id,
        )
        finish = functools.partial(answer_or_error, deps, asked)
        frames = answer_frames(accepted, events, finish, deps.settings.gateway_deadline_seconds)
        return EventStreamResponse(frames, held.pop_all())
