"""The HTTP API: POST /v1/ask, health and readiness; OpenAPI docs at /docs."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import asyncpg
import structlog
from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from opentelemetry.trace import SpanKind
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.gateway.conversations import (
    CONTINUE_CONVERSATION_SQL,
    START_CONVERSATION_SQL,
    conversation_title,
    list_conversations,
    load_history,
    read_conversation,
)
from services.gateway.failures import UnexpectedErrors
from services.gateway.limits import BodyLimit, RateLimiter
from services.gateway.request_log import read_request_log
from services.gateway.settings import GatewaySettings
from services.gateway.uploads import UploadRejected, Uploads, accept_upload, read_document
from services.gateway.waiting import PendingAnswers
from shared import bus, subjects
from shared.contracts import (
    MAX_QUESTION_CHARS,
    AnswerValidated,
    AskRequest,
    AskResponse,
    ConversationDetail,
    ConversationList,
    ConversationTurn,
    Envelope,
    ErrorBody,
    QuestionAsked,
    RequestLog,
    StageFailed,
    new_deadline,
)
from shared.db import acting_as, create_pool
from shared.identity import LOCAL_USER, user_for_key
from shared.logs import configure_logging
from shared.telemetry import current_trace_id, extract_context, setup_telemetry, tracer

# What multipart framing adds to an upload's own bytes.
MULTIPART_SLACK_BYTES = 64 * 1024
# Answers arrive on the reply subject (only the validator may publish there) and failure
# notices on the failure subject (any consuming stage may): each subject decodes as its own
# kind only, so a stage that may fail a request can never pass a message off as its answer.
AnswerEnvelope = Envelope[AnswerValidated]
FailureEnvelope = Envelope[StageFailed]

ANSWER_BODY_SQL = "SELECT body FROM answers WHERE request_id = $1"
# Every user's questions: a SECURITY DEFINER function (shared/migrations/013), since the
# gateway's role sees only the rows of the user a transaction acts for.
UNANSWERED_SQL = "SELECT * FROM finq_unanswered_questions()"

log = structlog.get_logger("finq.gateway")


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


@dataclass
class GatewayDeps:
    settings: GatewaySettings
    nc: NatsClient
    publisher: bus.Publisher
    pool: asyncpg.Pool
    pending: PendingAnswers
    reply_subject: str
    uploads: Uploads


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"code": code, "message": message})


def create_app(settings: GatewaySettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging("gateway", settings.log_level)
        provider = setup_telemetry("finq-gateway")
        nc = await bus.connect(
            settings.nats_url, "finq-gateway", settings.nats_user, settings.nats_password
        )
        pool = await create_pool(settings.database_url, settings.db_pool_min, settings.db_pool_max)
        try:
            js = nc.jetstream()
            await bus.ensure_streams(js)
            pending = PendingAnswers()
            instance = settings.gateway_instance or uuid.uuid4().hex
            reply_subject = subjects.reply_subject(instance)

            def delivering(envelope_type: type[Envelope[Any]]) -> Callable[[Msg], Awaitable[None]]:
                async def on_message(msg: Msg) -> None:
                    try:
                        envelope = envelope_type.model_validate_json(msg.data)
                    except ValidationError:
                        log.error("undecodable reply", subject=msg.subject)
                        return
                    pending.deliver(envelope)

                return on_message

            await nc.subscribe(reply_subject, cb=delivering(AnswerEnvelope))
            await nc.subscribe(subjects.failure_subject(instance), cb=delivering(FailureEnvelope))
            publisher = bus.Publisher(nc, js, subjects.Stage.GATEWAY)
            uploads = Uploads(
                pool, publisher, settings.document_upload_max_bytes, settings.document_upload_dir
            )
            app.state.deps = GatewayDeps(
                settings=settings,
                nc=nc,
                publisher=publisher,
                pool=pool,
                pending=pending,
                reply_subject=reply_subject,
                uploads=uploads,
            )
            republished = await republish_unanswered(
                pool, publisher, settings.gateway_history_turns
            )
            if republished:
                log.info("republished unanswered questions", count=republished)
            queued = await uploads.republish_unfinished()
            if queued:
                log.info("queued stored uploads not yet read", count=queued)
            yield
        finally:
            with contextlib.suppress(Exception):
                await nc.drain()
            await pool.close()
            provider.shutdown()

    app = FastAPI(
        title="finq",
        summary="Grounded financial question answering",
        version="1",
        lifespan=lifespan,
    )
    app.state.rate_limiter = RateLimiter(
        settings.gateway_rate_per_minute, settings.gateway_rate_burst
    )

    def body_limit(path: str) -> tuple[int, str]:
        if path == "/v1/documents":
            return settings.document_upload_max_bytes + MULTIPART_SLACK_BYTES, "document_too_large"
        return settings.gateway_json_max_bytes, "body_too_large"

    app.add_middleware(BodyLimit, limit_for=body_limit)
    # Outermost of ours: whatever fails inside (the body limit included) is a JSON answer.
    app.add_middleware(UnexpectedErrors)

    @app.exception_handler(ApiError)
    async def on_api_error(_: Request, error: ApiError) -> JSONResponse:
        response = error_response(error.status, error.code, error.message)
        response.headers.update(error.headers)
        if error.status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="finq"'
        return response

    @app.exception_handler(RequestValidationError)
    async def on_invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}"
            for e in error.errors()[:5]
        )
        return error_response(422, "invalid_request", problems or "the request body is invalid")

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return error_response(error.status_code, code, str(error.detail))

    @app.exception_handler(Exception)
    async def on_unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error", error=repr(error))
        return error_response(500, "internal_error", "finq hit an unexpected error; see its logs")

    register_routes(app)
    return app


async def get_deps(request: Request) -> GatewayDeps:
    deps: GatewayDeps = request.app.state.deps
    return deps


Deps = Annotated[GatewayDeps, Depends(get_deps)]


async def get_caller(request: Request, deps: Deps) -> str:
    """Who is asking: the owner of the request's API key (`Authorization: Bearer <key>`).
    Without a key, the local user when FINQ_AUTH=local and a 401 when it is `required`; a
    key that is unknown or revoked is a 401 either way. Nothing else sets identity."""
    header = request.headers.get("authorization")
    if header is None:
        if deps.settings.auth == "local":
            return LOCAL_USER
        raise ApiError(
            401, "unauthorized", "this finq requires an API key: Authorization: Bearer <key>"
        )
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "send the API key as Authorization: Bearer <key>")
    user = await user_for_key(deps.pool, key.strip())
    if user is None:
        raise ApiError(401, "unauthorized", "the API key is not valid (unknown or revoked)")
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.take(user)
    if wait:
        raise ApiError(
            429,
            "rate_limited",
            f"too many requests: {limiter.per_minute:g} a minute are allowed",
            {"Retry-After": limiter.retry_after(wait)},
        )
    return user


Caller = Annotated[str, Depends(get_caller)]
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (401, 404, 413, 422, 429, 502, 503, 504)
}


def register_routes(app: FastAPI) -> None:
    @app.post("/v1/ask", response_model=AskResponse, responses=ERROR_RESPONSES)
    async def ask(body: AskRequest, deps: Deps, caller: Caller, request: Request) -> Response:
        question = body.question.strip()
        if not question:
            raise ApiError(422, "empty_question", "the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise ApiError(
                422,
                "question_too_long",
                f"the question has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}",
            )
        with tracer().start_as_current_span(
            "POST /v1/ask",
            context=extract_context(request.headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "http.route": "/v1/ask"},
        ):
            answer = await ask_question(deps, question, body.conversation_id, caller)
        # Already validated field by field; serialize once instead of re-validating.
        return Response(answer.model_dump_json(), media_type="application/json")

    @app.get("/v1/conversations", response_model=ConversationList, responses=ERROR_RESPONSES)
    async def conversations(
        deps: Deps,
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> ConversationList:
        listed = await list_conversations(acting_as(deps.pool, caller), caller, limit, offset)
        return ConversationList(conversations=listed, limit=limit, offset=offset)

    @app.get(
        "/v1/conversations/{conversation_id}",
        response_model=ConversationDetail,
        responses={status: {"model": ErrorBody} for status in (401, 404, 429)},
    )
    async def conversation(conversation_id: str, deps: Deps, caller: Caller) -> ConversationDetail:
        found = await read_conversation(acting_as(deps.pool, caller), conversation_id, caller)
        if found is None:
            raise ApiError(
                404, "conversation_not_found", f"no conversation {conversation_id!r} of yours"
            )
        return found

    @app.get(
        "/v1/requests/{request_id}",
        response_model=RequestLog,
        responses={status: {"model": ErrorBody} for status in (401, 404, 429)},
    )
    async def request_log(request_id: str, deps: Deps, caller: Caller) -> RequestLog:
        found = await read_request_log(acting_as(deps.pool, caller), request_id, caller)
        if found is None:
            raise ApiError(404, "request_not_found", f"no logged request {request_id!r} of yours")
        return found

    @app.post(
        "/v1/documents",
        status_code=202,
        responses={status: {"model": ErrorBody} for status in (200, 401, 413, 415, 422, 429, 503)},
    )
    async def upload_document(
        deps: Deps,
        caller: Caller,
        request: Request,
        file: Annotated[UploadFile, File(description="PDF, EDGAR HTML, DOCX, TXT or MD")],
        symbol: Annotated[str | None, Form(pattern=r"^[A-Za-z][A-Za-z.\-]{0,9}$")] = None,
        form: Annotated[str | None, Form(max_length=20)] = None,
        fiscal_year: Annotated[int | None, Form(ge=1900, le=2100)] = None,
        fiscal_quarter: Annotated[int | None, Form(ge=1, le=4)] = None,
        title: Annotated[str | None, Form(max_length=300)] = None,
    ) -> JSONResponse:
        """Upload a document to search. Returns its job (202, or 200 when the same file is
        already held); GET /v1/documents/{id} reports progress."""
        limit = deps.settings.document_upload_max_bytes
        declared = request.headers.get("content-length", "")
        # Multipart framing adds a little; anything far past the limit is refused unread.
        if declared.isdigit() and int(declared) > limit + MULTIPART_SLACK_BYTES:
            raise ApiError(413, "document_too_large", f"the upload is over {limit:,} bytes")

        async def body() -> AsyncIterator[bytes]:
            while chunk := await file.read(1024 * 1024):
                yield chunk

        overrides = {
            "symbol": symbol.upper() if symbol else None,
            "form": form.upper() if form else None,
            "fiscal_year": fiscal_year,
            "fiscal_quarter": fiscal_quarter,
            "title": title,
        }
        try:
            document, queued = await accept_upload(
                deps.uploads,
                file_name=file.filename or "upload",
                content_type=file.content_type,
                chunks=body(),
                user_id=caller,
                overrides={k: v for k, v in overrides.items() if v is not None},
            )
        except UploadRejected as rejected:
            raise ApiError(rejected.status, rejected.code, rejected.message) from None
        return JSONResponse(document, status_code=202 if queued else 200)

    @app.get(
        "/v1/documents/{document_id}",
        responses={status: {"model": ErrorBody} for status in (401, 404, 429)},
    )
    async def document(document_id: str, deps: Deps, caller: Caller) -> JSONResponse:
        """A document and its ingest job: status (pending, parsing, embedding, ready,
        failed), progress from 0 to 1, error, pages, tables and chunks."""
        found = await read_document(acting_as(deps.pool, caller), document_id, caller)
        if found is None:
            raise ApiError(404, "document_not_found", f"no document {document_id!r} of yours")
        return JSONResponse(found)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"model": ErrorBody}})
    async def readyz(deps: Deps) -> JSONResponse:
        problems: list[str] = []
        if not deps.nc.is_connected:
            problems.append("NATS is not connected")
        try:
            await asyncio.wait_for(deps.pool.fetchval("SELECT 1"), timeout=2.0)
        except Exception:
            # Which dependency is down, never its error text (it can name hosts and users).
            problems.append("PostgreSQL is not reachable")
        if not problems:
            idle = await bus.stages_not_consuming(deps.nc.jetstream())
            if idle:
                # A stage still loading its models would let the first questions time out.
                problems.append(f"stages not consuming yet: {', '.join(idle)}")
        if problems:
            return error_response(503, "not_ready", "; ".join(problems))
        return JSONResponse(
            {"status": "ready", "nats": "ok", "postgres": "ok", "stages": "consuming"}
        )


async def republish_unanswered(pool: asyncpg.Pool, publisher: bus.Publisher, turns: int = 0) -> int:
    """Publish again every question still in its deadline with no answer row.

    The same Nats-Msg-Id is used, so a question the stream already holds is
    dropped as a duplicate; one lost before it reached the stream (a crash
    between the insert and the publish) goes on now.
    """
    rows = await pool.fetch(UNANSWERED_SQL)
    for row in rows:
        history = await load_history(
            acting_as(pool, row["user_id"]), row["conversation_id"], row["request_id"], turns
        )
        envelope = Envelope[QuestionAsked](
            request_id=row["request_id"],
            conversation_id=row["conversation_id"],
            user_id=row["user_id"],
            deadline=row["deadline"],
            created_at=row["created_at"],
            payload=QuestionAsked(question=row["question"], history=history),
        )
        await publisher.publish(subjects.QUESTION_ASKED, envelope)
    return len(rows)


async def ask_question(
    deps: GatewayDeps, question: str, conversation_id: str | None, user_id: str
) -> AskResponse:
    request_id = uuid.uuid4().hex
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
        payload=QuestionAsked(question=question, history=history),
    )
    waiting = deps.pending.expect(request_id)
    try:
        await deps.publisher.publish(subjects.QUESTION_ASKED, envelope)
        reply = await asyncio.wait_for(waiting, timeout=deps.settings.gateway_deadline_seconds)
    except TimeoutError:
        # The reply may have been missed (a reconnect); the answer row is the durable copy.
        body = await acting_as(deps.pool, user_id).fetchval(ANSWER_BODY_SQL, request_id)
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
    return AskResponse.model_construct(
        request_id=request_id,
        conversation_id=envelope.conversation_id,
        answer=payload.answer,
        citations=payload.citations,
        facts=payload.facts,
        needs_clarification=payload.needs_clarification,
        clarifying_question=payload.clarifying_question,
        validation=payload.validation,
        trace_id=trace_id,
        route=payload.route,
        chart=payload.chart,
        suggestions=payload.suggestions,
        generation=payload.generation,
    )
