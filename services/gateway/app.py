"""The HTTP API: POST /v1/ask, health and readiness; OpenAPI docs at /docs."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import asyncpg
import structlog
from fastapi import Depends, FastAPI, File, Form, Path, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from opentelemetry.trace import SpanKind, use_span
from pydantic import Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from services.gateway.admin import (
    DeadLetters,
    MetricMisses,
    NotAnOperator,
    NotReplayable,
    OperatorQuestions,
    QuestionKind,
    ReplayedQuestion,
    dead_letters,
    metric_misses,
    operator_questions,
    replay_question,
)
from services.gateway.catalog import CategoryName, MetricCatalog, metric_catalog
from services.gateway.conversations import (
    CONTINUE_CONVERSATION_SQL,
    START_CONVERSATION_SQL,
    conversation_title,
    list_conversations,
    load_history,
    read_conversation,
)
from services.gateway.failures import RETRY_AFTER_SECONDS, UnexpectedErrors
from services.gateway.inputs import file_name_problem, question_problem
from services.gateway.limits import Admission, AdmissionGate, BodyLimit, RateLimiter
from services.gateway.openapi import error_responses, finq_openapi
from services.gateway.reconciler import Reconciler
from services.gateway.request_log import read_request_log
from services.gateway.request_metrics import add_request_metrics
from services.gateway.settings import GatewaySettings
from services.gateway.streaming import (
    EventStreamResponse,
    RequestEvents,
    StreamAccepted,
    answer_frames,
)
from services.gateway.traces import Trace, read_trace
from services.gateway.uploads import UploadRejected, Uploads, accept_upload, read_document
from services.gateway.waiting import PendingAnswers
from services.gateway.web import mount_web
from shared import bus, subjects
from shared.contracts import (
    LINE_PATTERN,
    AnswerValidated,
    AskRequest,
    AskResponse,
    ConversationDetail,
    ConversationList,
    ConversationTurn,
    DocumentJob,
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
from shared.outages import is_transient
from shared.portfolio.import_process import ActivityParseFailed, parse_in_child
from shared.portfolio.store import (
    AccountList,
    ImportOutcome,
    RowProblem,
    import_activity,
    list_accounts,
)
from shared.telemetry import current_trace_id, extract_context, setup_telemetry, tracer

# What multipart framing adds to an upload's own bytes.
MULTIPART_SLACK_BYTES = 64 * 1024
# Answers arrive on the reply subject (only the validator may publish there) and failure
# notices on the failure subject (any consuming stage may): each subject decodes as its own
# kind only, so a stage that may fail a request can never pass a message off as its answer.
AnswerEnvelope = Envelope[AnswerValidated]
FailureEnvelope = Envelope[StageFailed]

ANSWER_BODY_SQL = "SELECT body FROM answers WHERE request_id = $1"

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
    admission: Admission


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
            await bus.ensure_streams(js, settings.stream_max_bytes, settings.stream_replicas)
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
            publisher = bus.Publisher(
                nc, js, subjects.Stage.GATEWAY, settings.publish_patience_seconds
            )
            admission = Admission(
                settings.gateway_max_in_flight, settings.gateway_max_loop_lag_ms / 1000.0
            )
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
                admission=admission,
            )
            reconciler = Reconciler(
                pool,
                publisher,
                uploads,
                history_turns=settings.gateway_history_turns,
                grace_seconds=settings.gateway_reconcile_grace_seconds,
                every_seconds=settings.gateway_reconcile_every_seconds,
                retry_budget_seconds=settings.retry_budget_seconds,
            )
            # At start, everything a stopped gateway left saved and unpublished goes on.
            await reconciler.round(grace_seconds=0)
            stopping = asyncio.Event()
            reconciling = asyncio.create_task(reconciler.run(stopping), name="reconciler")
            timing = asyncio.create_task(admission.loop_lag.watch(stopping), name="loop-lag")
            try:
                yield
            finally:
                stopping.set()
                await reconciling
                await timing
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
        if path == PORTFOLIO_IMPORT_PATH:
            return settings.gateway_portfolio_import_max_bytes, "file_too_large"
        return settings.gateway_json_max_bytes, "body_too_large"

    app.add_middleware(BodyLimit, limit_for=body_limit)
    # Outermost of ours: whatever fails inside (the body limit included) is a JSON answer.
    app.add_middleware(UnexpectedErrors)
    # ...but a question past the in-flight limit is refused before all of it, cheaply.
    app.add_middleware(
        AdmissionGate,
        admission_of=admission_of,
        paths=frozenset({"/v1/ask", ASK_STREAM_PATH}),
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )
    # ...counted and timed around all of it, with the status the client got; and /metrics.
    add_request_metrics(app)

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
        code = HTTP_ERROR_CODES.get(error.status_code, "http_error")
        response = error_response(error.status_code, code, str(error.detail))
        # The framework's own headers: Allow on a 405 names the methods the route takes.
        response.headers.update(error.headers or {})
        return response

    @app.exception_handler(Exception)
    async def on_unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error", error=repr(error))
        return error_response(500, "internal_error", "finq hit an unexpected error; see its logs")

    register_routes(app)
    # The web app at / and /static/..., outside the OpenAPI schema.
    mount_web(app)
    keys_required = settings.auth == "required"
    app.openapi = lambda: finq_openapi(app, keys_required=keys_required)  # type: ignore[method-assign]
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
# The framework's refusals (an unknown path or method, a body it could not parse), named.
HTTP_ERROR_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}
# An id in a path: at most as long as any id finq makes or takes, on one line.
PathId = Annotated[str, Path(min_length=1, max_length=100, pattern=LINE_PATTERN)]
# A W3C trace id, as answers carry it: 32 lower-case hex digits.
TraceId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
# The fields upload_document reads (its parameters): each may come once.
UPLOAD_FIELDS = ("file", "symbol", "form", "fiscal_year", "fiscal_quarter", "title")
UPLOAD_DESCRIPTION = (
    "PDF, EDGAR HTML, DOCX, TXT or MD, at most FINQ_DOCUMENT_UPLOAD_MAX_BYTES: its type is the "
    "part's Content-Type when that is a type finq reads, else its name's suffix; the name is "
    "the file's own (no folders, no control characters, at most 255 characters)"
)
PORTFOLIO_IMPORT_PATH = "/v1/portfolio/import"
ASK_STREAM_PATH = "/v1/ask/stream"
ASK_STREAM_DESCRIPTION = (
    "Server-sent events: `accepted`, the stages' events (`routed`, `tools_done`, `drafted`, "
    "`validated`, `failed`), then `answer` (the body of POST /v1/ask) or `error` "
    "(`{code, message}`); each event's data is one line of JSON. With a model writing the "
    "answer, `draft_text` events come before `drafted`: the model's text as it is written "
    "(`summary.seq` from 0 and `summary.text` per `attempt`; joined in order, the draft so "
    "far), a preview only: `answer` carries the validated text, which may differ"
)
# What an activity file may be sent as: CSV is text, and some clients name it only that.
CSV_TYPES = frozenset({"text/csv", "application/csv", "text/plain"})
PORTFOLIO_IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The CSV file itself, as the body (see shared/portfolio/csv_format.py "
        "for its columns), at most FINQ_GATEWAY_PORTFOLIO_IMPORT_MAX_BYTES",
        "content": {"text/csv": {"schema": {"type": "string", "minLength": 1}}},
    }
}


class InvalidActivity(ErrorBody):
    """422 from POST /v1/portfolio/import: every row that cannot be imported (nothing was
    stored). Other refusals with 422 carry no rows."""

    errors: list[RowProblem] = Field(default_factory=list)


def register_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/ask",
        response_model=AskResponse,
        responses=error_responses(400, 401, 404, 413, 422, 429, 502, 503, 504),
    )
    async def ask(body: AskRequest, deps: Deps, caller: Caller, request: Request) -> Response:
        question = checked_question(body)
        with tracer().start_as_current_span(
            "POST /v1/ask",
            context=extract_context(request.headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "http.route": "/v1/ask"},
        ):
            # Its place among the questions in flight was taken by AdmissionGate.
            answer = await ask_question(deps, question, body.conversation_id, caller)
        # Already validated field by field; serialize once instead of re-validating.
        return Response(answer.model_dump_json(), media_type="application/json")

    @app.post(
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

    @app.get(
        "/v1/conversations",
        response_model=ConversationList,
        responses=error_responses(401, 422, 429, 503),
    )
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
        responses=error_responses(401, 404, 422, 429, 503),
    )
    async def conversation(
        conversation_id: PathId, deps: Deps, caller: Caller
    ) -> ConversationDetail:
        found = await read_conversation(acting_as(deps.pool, caller), conversation_id, caller)
        if found is None:
            raise ApiError(
                404, "conversation_not_found", f"no conversation {conversation_id!r} of yours"
            )
        return found

    @app.get(
        "/v1/requests/{request_id}",
        response_model=RequestLog,
        responses=error_responses(401, 404, 422, 429, 503),
    )
    async def request_log(request_id: PathId, deps: Deps, caller: Caller) -> RequestLog:
        found = await read_request_log(acting_as(deps.pool, caller), request_id, caller)
        if found is None:
            raise ApiError(404, "request_not_found", f"no logged request {request_id!r} of yours")
        return found

    @app.get(
        "/v1/traces/{trace_id}",
        response_model=Trace,
        responses=error_responses(401, 404, 422, 429, 503),
    )
    async def trace(trace_id: TraceId, deps: Deps, caller: Caller) -> Trace:
        """One trace's questions (the caller's own), stage by stage: each stage's start,
        duration, decision and errors, and how the question was routed, in plain words
        (the trace id is an answer's `trace_id`)."""
        found = await read_trace(
            acting_as(deps.pool, caller), trace_id, caller, deps.settings.jaeger_url
        )
        if found is None:
            raise ApiError(404, "trace_not_found", f"no trace {trace_id!r} of yours")
        return found

    @app.get(
        "/v1/admin/questions",
        response_model=OperatorQuestions,
        responses=error_responses(401, 403, 422, 429, 503),
    )
    async def admin_questions(
        deps: Deps,
        caller: Caller,
        kind: QuestionKind,
        days: Annotated[int, Query(ge=1, le=366)] = 7,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> OperatorQuestions:
        """Operators only: every user's questions of one kind over the last `days`:
        `failed` (validation did not pass), `unanswerable` (out of scope, or no data for
        what was asked), `slowest` (by the time from receipt to answer)."""
        with operator_only():
            return await operator_questions(acting_as(deps.pool, caller), kind, days, limit)

    @app.get(
        "/v1/admin/metric-misses",
        response_model=MetricMisses,
        responses=error_responses(401, 403, 422, 429, 503),
    )
    async def admin_metric_misses(
        deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=500)] = 50
    ) -> MetricMisses:
        """Operators only: the metric phrases the catalog did not know, most asked first."""
        with operator_only():
            return await metric_misses(acting_as(deps.pool, caller), limit)

    @app.get(
        "/v1/admin/dead-letters",
        response_model=DeadLetters,
        responses=error_responses(401, 403, 422, 429, 503),
    )
    async def admin_dead_letters(
        deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=500)] = 100
    ) -> DeadLetters:
        """Operators only: the dead letters, newest first (as `finq dead list`)."""
        with operator_only():
            return await dead_letters(acting_as(deps.pool, caller), deps.nc.jetstream(), limit)

    @app.post(
        "/v1/admin/dead-letters/{seq}/replay",
        status_code=202,
        response_model=ReplayedQuestion,
        responses=error_responses(401, 403, 404, 409, 422, 429, 503),
    )
    async def admin_replay(
        seq: Annotated[int, Path(ge=1, le=2**63 - 1)], deps: Deps, caller: Caller
    ) -> ReplayedQuestion:
        """Operators only: ask a dead letter's question again (from the start of the
        pipeline, as its user, with a fresh deadline), then remove the dead letter. The
        answer appears in the user's conversation."""
        with operator_only():
            try:
                return await replay_question(
                    acting_as(deps.pool, caller),
                    deps.pool,
                    deps.nc.jetstream(),
                    deps.publisher,
                    seq,
                    deps.settings.gateway_deadline_seconds,
                    deps.settings.gateway_history_turns,
                )
            except LookupError as error:
                raise ApiError(404, "dead_letter_not_found", str(error)) from None
            except NotReplayable as refusal:
                raise ApiError(409, refusal.code, refusal.message) from None

    @app.post(
        "/v1/documents",
        status_code=202,
        response_model=DocumentJob,
        responses={
            200: {"model": DocumentJob, "description": "The same file is held already"},
            **error_responses(400, 401, 413, 415, 422, 429, 503),
        },
    )
    async def upload_document(
        deps: Deps,
        caller: Caller,
        request: Request,
        file: Annotated[UploadFile, File(description=UPLOAD_DESCRIPTION)],
        symbol: Annotated[str | None, Form(pattern=r"^[A-Za-z][A-Za-z.\-]{0,9}$")] = None,
        form: Annotated[str | None, Form(max_length=20, pattern=LINE_PATTERN)] = None,
        fiscal_year: Annotated[int | None, Form(ge=1900, le=2100)] = None,
        fiscal_quarter: Annotated[int | None, Form(ge=1, le=4)] = None,
        title: Annotated[str | None, Form(max_length=300, pattern=LINE_PATTERN)] = None,
    ) -> JSONResponse:
        """Upload a document to search. Returns its job (202, or 200 when the same file is
        already held); GET /v1/documents/{id} reports progress."""
        # Each field read here once, the file included: a second part of the same name
        # would otherwise replace the first unseen (other fields are ignored, as the schema
        # allows). The form is parsed already; this reads it from memory.
        parts = await request.form()
        if repeated := [name for name in UPLOAD_FIELDS if len(parts.getlist(name)) > 1]:
            raise ApiError(
                422, "repeated_field", f"send each field once; sent more than once: {repeated}"
            )
        if problem := file_name_problem(file.filename or ""):
            raise ApiError(422, "invalid_file_name", problem)
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
        response_model=DocumentJob,
        responses=error_responses(401, 404, 422, 429, 503),
    )
    async def document(document_id: PathId, deps: Deps, caller: Caller) -> JSONResponse:
        """A document and its ingest job: status (pending, parsing, embedding, ready,
        failed), progress from 0 to 1, error, pages, tables and chunks."""
        found = await read_document(acting_as(deps.pool, caller), document_id, caller)
        if found is None:
            raise ApiError(404, "document_not_found", f"no document {document_id!r} of yours")
        return JSONResponse(found)

    @app.post(
        PORTFOLIO_IMPORT_PATH,
        response_model=ImportOutcome,
        responses={
            **error_responses(400, 401, 413, 415, 429, 503),
            411: {"model": ErrorBody, "description": "The body came without Content-Length"},
            422: {"model": InvalidActivity, "description": "Rows that cannot be imported"},
        },
        openapi_extra=PORTFOLIO_IMPORT_BODY,
    )
    async def import_portfolio(
        deps: Deps,
        caller: Caller,
        request: Request,
        file_name: Annotated[
            str, Query(min_length=1, max_length=255, pattern=LINE_PATTERN)
        ] = "activity.csv",
    ) -> Response:
        """Import a CSV file of activity (trades, income, transfers) into the caller's
        accounts, all or nothing: 200 with what was stored, or with `duplicate_of` when the
        same file was imported before (nothing stored); 422 `invalid_activity` naming every
        row that cannot be imported (nothing stored). The file is read in a child process
        with limits on time and memory."""
        declared = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if declared not in CSV_TYPES:
            raise ApiError(
                415,
                "unsupported_media_type",
                f"send the CSV file as the body, with Content-Type text/csv (not {declared!r})",
            )
        if problem := file_name_problem(file_name):
            raise ApiError(422, "invalid_file_name", problem)
        # A length past the limit is refused unread (BodyLimit). A body sent in chunks is
        # refused too: past the limit, BodyLimit ends it early and answers 413, and a CSV cut
        # short reads as a whole file, which would be stored.
        if not request.headers.get("content-length", "").isdigit():
            raise ApiError(
                411, "length_required", "send the file with its Content-Length, not in chunks"
            )
        data = await request.body()
        if not data:
            raise ApiError(422, "empty_file", "the file is empty: a header row is required")
        try:
            outcome = await import_activity(deps.pool, caller, file_name, data, parse_in_child)
        except ActivityParseFailed as failed:
            raise ApiError(422, failed.code, failed.message) from None
        if outcome.errors:
            rows = len({error.row for error in outcome.errors})
            refusal = InvalidActivity(
                code="invalid_activity",
                message=f"{rows} row{'s' if rows > 1 else ''} of {file_name} cannot be "
                "imported; nothing was stored",
                errors=outcome.errors,
            )
            return Response(
                refusal.model_dump_json(), status_code=422, media_type="application/json"
            )
        return Response(outcome.model_dump_json(), media_type="application/json")

    @app.get(
        "/v1/portfolio/accounts",
        response_model=AccountList,
        responses=error_responses(401, 429, 503),
    )
    async def portfolio_accounts(deps: Deps, caller: Caller) -> AccountList:
        """The caller's accounts, by name."""
        return AccountList(accounts=await list_accounts(acting_as(deps.pool, caller)))

    @app.get(
        "/v1/metrics/catalog",
        response_model=MetricCatalog,
        responses=error_responses(401, 422, 429, 503),
    )
    async def metrics_catalog(
        caller: Caller,
        q: Annotated[
            str,
            Query(
                max_length=100,
                pattern=LINE_PATTERN,
                description="Words every listed metric's id, label, aliases, description "
                "or formula holds (none: every metric)",
            ),
        ] = "",
        category: CategoryName | None = None,
    ) -> MetricCatalog:
        """The metrics finq can be asked about, read-only: id, label, category, unit,
        description, the names users type, and the formula of a derived metric."""
        del caller  # the same for everyone; the key is still checked and rate-limited
        return metric_catalog(q, category)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        responses={503: {"model": ErrorBody, "description": "A dependency is not ready"}},
    )
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


@dataclass
class AskedQuestion:
    """A question saved and published, and the future its answer or failure arrives on."""

    envelope: Envelope[QuestionAsked]
    trace_id: str | None
    answer: asyncio.Future[Envelope[Any]]


@contextlib.contextmanager
def operator_only() -> Iterator[None]:
    """A caller who is not an operator gets 403, whichever admin read refused them."""
    try:
        yield
    except (NotAnOperator, asyncpg.InsufficientPrivilegeError):
        raise ApiError(
            403, "forbidden", "this is for finq's operators (finq users add NAME --operator)"
        ) from None


def checked_question(body: AskRequest) -> str:
    """The question as asked, or the 422 that names what is wrong with it."""
    if problem := question_problem(body.question):
        raise ApiError(422, *problem)
    return body.question.strip()


def admission_of(scope: Scope) -> Admission | None:
    """The gateway's admission, once its lifespan has made it."""
    deps: GatewayDeps | None = getattr(scope["app"].state, "deps", None)
    return deps.admission if deps is not None else None


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
