"""The HTTP API: the app, its lifespan (the clients every route shares), its middleware and
error handlers, and the routers it serves (services/gateway/routes/, one per group of
paths); OpenAPI docs at /docs."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from nats.aio.msg import Msg
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from services.gateway.dependencies import ApiError, GatewayDeps, error_response
from services.gateway.failures import RETRY_AFTER_SECONDS, UnexpectedErrors
from services.gateway.limits import Admission, AdmissionGate, BodyLimit, RateLimiter
from services.gateway.openapi import finq_openapi
from services.gateway.reconciler import Reconciler
from services.gateway.request_metrics import add_request_metrics
from services.gateway.routes import (
    admin,
    ask,
    companies,
    conversations,
    documents,
    health,
    me,
    metrics,
    portfolio,
    portfolio_imports,
    requests,
    traces,
)
from services.gateway.routes.ask import ASK_PATH, ASK_STREAM_PATH
from services.gateway.routes.documents import DOCUMENTS_PATH, MULTIPART_SLACK_BYTES
from services.gateway.routes.portfolio import PORTFOLIO_IMPORT_PATH
from services.gateway.settings import GatewaySettings
from services.gateway.uploads import Uploads
from services.gateway.waiting import PendingAnswers
from services.gateway.web import mount_web
from shared import bus, subjects
from shared.contracts.answers import AnswerValidated
from shared.contracts.envelope import Envelope
from shared.contracts.failures import StageFailed
from shared.db import create_pool
from shared.logs import configure_logging
from shared.telemetry import setup_telemetry

# Answers arrive on the reply subject (only the validator may publish there) and failure
# notices on the failure subject (any consuming stage may): each subject decodes as its own
# kind only, so a stage that may fail a request can never pass a message off as its answer.
AnswerEnvelope = Envelope[AnswerValidated]
FailureEnvelope = Envelope[StageFailed]

# The routes the app serves, in the order the OpenAPI schema lists them.
ROUTERS: tuple[APIRouter, ...] = (
    ask.router,
    conversations.router,
    requests.router,
    traces.router,
    admin.router,
    documents.router,
    me.router,
    portfolio.router,
    portfolio_imports.router,
    companies.router,
    metrics.router,
    health.router,
)
# The framework's refusals (an unknown path or method, a body it could not parse), named.
HTTP_ERROR_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}

log = structlog.get_logger("finq.gateway")


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
        if path == DOCUMENTS_PATH:
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
        paths=frozenset({ASK_PATH, ASK_STREAM_PATH}),
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
    async def on_http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = HTTP_ERROR_CODES.get(error.status_code, "http_error")
        response = error_response(error.status_code, code, str(error.detail))
        # The framework's own headers: Allow on a 405 names the methods the route takes...
        response.headers.update(error.headers or {})
        if error.status_code == 405:
            # ...the first route at the path only: name every route's (GET and DELETE of
            # one resource are two routes).
            response.headers["Allow"] = ", ".join(allowed_methods(app, request.scope))
        return response

    @app.exception_handler(Exception)
    async def on_unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error", error=repr(error))
        return error_response(500, "internal_error", "finq hit an unexpected error; see its logs")

    for router in ROUTERS:
        app.include_router(router)
    # The web app at / and /static/..., outside the OpenAPI schema.
    mount_web(app)
    keys_required = settings.auth == "required"
    app.openapi = lambda: finq_openapi(app, keys_required=keys_required)  # type: ignore[method-assign]
    return app


def every_route(app: FastAPI) -> Iterator[BaseRoute]:
    """The app's routes, its routers' included: an included router stands in `app.routes`
    as one entry without a path of its own."""
    for route in app.routes:
        router = getattr(route, "original_router", None)
        yield from router.routes if router is not None else [route]


def served_paths(app: FastAPI) -> set[str]:
    """Every path `app` serves."""
    return {path for route in every_route(app) if (path := getattr(route, "path", None))}


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """The methods the routes at the request's path take, in order."""
    methods: set[str] = set()
    for route in every_route(app):
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


def admission_of(scope: Scope) -> Admission | None:
    """The gateway's admission, once its lifespan has made it."""
    deps: GatewayDeps | None = getattr(scope["app"].state, "deps", None)
    return deps.admission if deps is not None else None
