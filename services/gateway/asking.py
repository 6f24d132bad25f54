"""Asking at the gateway: a question is saved with its turn (acting for its user), then
published; its answer (or a stage's failure) arrives on this gateway's reply subject and is
awaited apart, so a stream can relay the stages' events meanwhile. POST /v1/ask and POST
/v1/ask/stream (routes/ask.py) are made of these."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import structlog

from services.gateway.conversations import (
    CONTINUE_CONVERSATION_SQL,
    START_CONVERSATION_SQL,
    conversation_title,
    load_history,
)
from services.gateway.dependencies import ApiError, GatewayDeps
from services.gateway.http_models import AskRequest, AskResponse, ErrorBody
from services.gateway.inputs import question_problem
from shared import subjects
from shared.contracts.answers import AnswerValidated
from shared.contracts.envelope import Envelope, new_deadline
from shared.contracts.failures import StageFailed
from shared.contracts.questions import ConversationTurn, QuestionAsked
from shared.db import acting_as
from shared.outages import is_transient
from shared.telemetry import current_trace_id

ANSWER_BODY_SQL = "SELECT body FROM answers WHERE request_id = $1"

log = structlog.get_logger("finq.gateway")


@dataclass
class AskedQuestion:
    """A question saved and published, and the future its answer or failure arrives on."""

    envelope: Envelope[QuestionAsked]
    trace_id: str | None
    answer: asyncio.Future[Envelope[Any]]


def checked_question(body: AskRequest) -> str:
    """The question as asked, or the 422 that names what is wrong with it."""
    if problem := question_problem(body.question):
        raise ApiError(422, *problem)
    return body.question.strip()


async def ask_question(
    deps: GatewayDeps, question: str, conversation_id: str | None, user_id: str
) -> AskResponse:
    asked = await submit_question(deps, uuid.uuid4().hex, question, conversation_id, user_id)
    return await wait_for_answer(deps, asked, deps.settings.gateway_deadline_seconds)


async def submit_question(
    deps: GatewayDeps,
    request_id: str,
    question: str,
    conversation_id: str | None,
    user_id: str,
    watched: bool = False,
) -> AskedQuestion:
    """Save the question and its turn, then publish it; its answer is awaited apart
    (wait_for_answer), so a stream can relay the stages' events meanwhile (`watched`: the
    stages tell them)."""
    trace_id = current_trace_id()
    structlog.contextvars.bind_contextvars(
        request_id=request_id, stage=subjects.Stage.GATEWAY.value, trace_id=trace_id
    )
    deadline = new_deadline(deps.settings.gateway_deadline_seconds)
    history: list[ConversationTurn] = []
    # The question (and its turn) is durable before anything else can happen to it.
    new_conversation = conversation_id is None
    conversation_id = conversation_id or uuid.uuid4().hex
    row = (request_id, conversation_id, user_id, question, trace_id, deadline)
    # One transaction acting for the user: row-level security shows no other user's
    # conversation to continue, and the question, its turn and the history read agree.
    async with acting_as(deps.pool, user_id).acquire() as db:
        if new_conversation:
            await db.execute(START_CONVERSATION_SQL, *row, conversation_title(question))
        else:
            found = await db.fetchval(CONTINUE_CONVERSATION_SQL, *row)
            if not found:
                raise ApiError(
                    404, "conversation_not_found", f"no conversation {conversation_id!r} of yours"
                )
            history = await load_history(
                db,
                conversation_id,
                request_id,
                deps.settings.gateway_history_turns,
                deps.settings.gateway_history_max_chars,
            )
    envelope = Envelope[QuestionAsked](
        request_id=request_id,
        conversation_id=conversation_id,
        user_id=user_id,
        deadline=deadline,
        reply_to=deps.reply_subject,
        watched=watched,
        payload=QuestionAsked(
            question=question, history=history, first_in_conversation=new_conversation
        ),
    )
    waiting = deps.pending.expect(request_id)
    try:
        await deps.publisher.publish(subjects.QUESTION_ASKED, envelope)
    except Exception as error:
        if not is_transient(error):
            deps.pending.forget(request_id)
            raise
        # No acknowledgement is no proof the question was not queued: the client sends
        # what it buffered once the broker is back (the fault suite saw such questions
        # answered after a 503 told their askers to try again). It stays saved, the
        # reconciler publishes it again with the same id, and the wait goes on.
        log.warning("the question was not acknowledged; the reconciler will publish it")
    return AskedQuestion(envelope, trace_id, waiting)


async def answer_or_error(
    deps: GatewayDeps, asked: AskedQuestion, within_seconds: float
) -> AskResponse | ErrorBody:
    """wait_for_answer, with the refusal /v1/ask would answer as the body a stream ends with."""
    try:
        return await wait_for_answer(deps, asked, within_seconds)
    except ApiError as error:
        return ErrorBody(code=error.code, message=error.message)


async def wait_for_answer(
    deps: GatewayDeps, asked: AskedQuestion, within_seconds: float
) -> AskResponse:
    """The answer to a submitted question, waited for `within_seconds` at most (then read
    from the answers table, else a 504); a stage's failure is a 502."""
    envelope, trace_id = asked.envelope, asked.trace_id
    request_id, user_id = envelope.request_id, envelope.user_id
    try:
        reply = await asyncio.wait_for(asked.answer, timeout=within_seconds)
    except TimeoutError:
        # The reply may have been missed (a reconnect); the answer row is the durable copy.
        # The question is saved: an outage now is no reason for a 503 (it would tell the
        # asker to ask again, and the question is answered once the outage ends).
        try:
            body = await acting_as(deps.pool, user_id).fetchval(ANSWER_BODY_SQL, request_id)
        except Exception as error:
            if not is_transient(error):
                raise
            body = None
        if body is None:
            raise ApiError(
                504,
                "deadline_exceeded",
                f"no answer within {deps.settings.gateway_deadline_seconds:g} s; "
                f"request {request_id} may still be answered later",
            ) from None
        reply = envelope.carry(AnswerValidated.model_validate_json(body))
    finally:
        deps.pending.forget(request_id)
    payload = reply.payload
    if isinstance(payload, StageFailed):
        raise ApiError(502, payload.code, f"the {payload.stage} stage failed: {payload.message}")
    return AskResponse.of(request_id, envelope.conversation_id, trace_id, payload)
