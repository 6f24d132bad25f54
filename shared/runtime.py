"""How a consuming stage process lives: connect once, consume, drain on SIGTERM, close.

Every stage's `main.py` hands this its settings, its input payload type and a
builder that turns the connected clients into the stage's handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from pydantic import BaseModel

from shared import bus, subjects
from shared.contracts.envelope import Envelope
from shared.contracts.failures import StageFailed
from shared.db import create_pool
from shared.logs import configure_logging
from shared.metrics import MetricsServer, serve_metrics
from shared.settings import StageSettings
from shared.stage_events import StageEventPublisher, telling_stage_events
from shared.telemetry import setup_telemetry


@dataclass
class StageClients:
    nc: NatsClient
    js: JetStreamContext
    publisher: bus.Publisher
    pool: asyncpg.Pool | None
    settings: StageSettings
    # What a handler builder opens beyond these (an LLM client) is closed here at shutdown.
    cleanup: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)


HandlerBuilder = Callable[[StageClients], Awaitable[bus.Handler]]


def consumer_options(settings: StageSettings) -> bus.ConsumerOptions:
    return bus.ConsumerOptions(
        pull_batch=settings.pull_batch,
        max_in_flight=settings.max_in_flight,
        ack_wait_seconds=settings.ack_wait_seconds,
        max_deliver=settings.max_deliver,
        nak_delay_seconds=settings.nak_delay_seconds,
        retry_budget_seconds=settings.retry_budget_seconds,
        backoff_cap_seconds=settings.backoff_cap_seconds,
    )


def failure_reporter(
    stage: subjects.Stage,
    publisher: bus.Publisher,
    events: StageEventPublisher | None = None,
) -> bus.PoisonReporter:
    """Tell the waiting gateway at once that its request died here, instead of a silent 504
    (and a client streaming it, with a `failed` event just before)."""

    async def report(envelope: Envelope[Any], reason: str) -> None:
        failed = StageFailed(stage=stage, code="stage_failed", message=reason[:500])
        if events is not None and envelope.watched:
            await events.tell_failure(envelope, failed)
        await publisher.report_failure(envelope.carry(failed))

    return report


def stage_metrics_server(
    settings: StageSettings, log: structlog.stdlib.BoundLogger
) -> MetricsServer | None:
    """This process's /metrics, when FINQ_<STAGE>_METRICS_PORT (or FINQ_METRICS_PORT) is
    set. A port that cannot be bound is logged and the stage runs on without metrics:
    answering questions matters more than being scraped."""
    try:
        server = serve_metrics(settings.metrics_host, settings.metrics_port)
    except OSError as error:
        log.error("cannot serve metrics", port=settings.metrics_port, error=str(error))
        return None
    if server is not None:
        log.info("serving metrics", host=settings.metrics_host, port=server.port)
    return server


async def serve_stage(
    stage: subjects.Stage,
    settings: StageSettings,
    payload_type: type[BaseModel],
    build_handler: HandlerBuilder,
    needs_database: bool,
    poison_reporter: Callable[[StageClients], bus.PoisonReporter] | None = None,
) -> None:
    """Consume `stage`'s input until SIGTERM. A message given up on is reported by
    `poison_reporter` (by default: the waiting gateway is told the request failed)."""
    log = configure_logging(stage.value, settings.log_level)
    provider = setup_telemetry(f"finq-{stage.value}")
    # Told of a reconnect once the consumer exists (it asks the broker for work again).
    on_reconnect: list[Callable[[], None]] = []

    async def reconnected() -> None:
        log.info("reconnected to NATS")
        for listener in on_reconnect:
            listener()

    nc = await bus.connect(
        settings.nats_url,
        f"finq-{stage.value}",
        settings.nats_user,
        settings.nats_password,
        reconnected_cb=reconnected,
    )
    pool: asyncpg.Pool | None = None
    cleanup = contextlib.AsyncExitStack()
    try:
        metrics = stage_metrics_server(settings, log)
        if metrics is not None:
            # Closed with the rest at shutdown; its thread is joined, never left behind.
            cleanup.push_async_callback(asyncio.to_thread, metrics.close)
        js = nc.jetstream()
        await bus.ensure_streams(js, settings.stream_max_bytes, settings.stream_replicas)
        if needs_database:
            pool = await create_pool(
                settings.database_url, settings.db_pool_min, settings.db_pool_max
            )
        publisher = bus.Publisher(nc, js, stage, settings.publish_patience_seconds)
        clients = StageClients(nc, js, publisher, pool, settings, cleanup)
        handler = await build_handler(clients)
        events: StageEventPublisher | None = None
        if stage in subjects.STAGE_EVENT_STAGES:
            # One place for every stage: each result's event is told before it goes on.
            events = StageEventPublisher(nc, stage)
            handler = telling_stage_events(handler, events)
        consumer = bus.StageConsumer(
            nc=nc,
            js=js,
            stage=stage,
            handler=handler,
            publisher=publisher,
            options=consumer_options(settings),
            on_poison=(
                poison_reporter(clients)
                if poison_reporter is not None
                else failure_reporter(stage, publisher, events)
            ),
            payload_type=payload_type,
        )
        on_reconnect.append(consumer.reconnected)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, consumer.stop)
        log.info("consuming", subject=subjects.STAGE_INPUT[stage])
        await consumer.run()
        log.info("drained")
    finally:
        with contextlib.suppress(Exception):
            await nc.drain()
        await cleanup.aclose()
        if pool is not None:
            await pool.close()
        provider.shutdown()


def run(coro: Awaitable[None]) -> None:
    """Run a stage's main coroutine on uvloop (less CPU per message than the default loop)."""
    import uvloop

    uvloop.run(coro)  # type: ignore[arg-type]
    structlog.get_logger().debug("exited")
