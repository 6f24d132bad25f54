"""finq's JetStream bus: the stream, the per-stage durable pull consumers, and publishing.

Delivery rules (DESIGN.md): a message is acked only after its stage's work and
the publish of its output are done; transient failures are nak'ed with a delay;
long work sends in_progress(); after `max_deliver` tries, or at once for a
message that cannot be decoded, the message is copied to the dead-letter
stream with the reason and terminated. Every publish carries
`Nats-Msg-Id = request_id:stage:attempt`, so a redelivered stage that publishes
again is dropped by the stream's duplicate window instead of emitting twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import nats
import orjson
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError, ServerError
from pydantic import BaseModel, SecretStr, ValidationError

from shared import subjects
from shared.contracts.base import utc_now
from shared.contracts.envelope import Envelope
from shared.contracts.events import StageRun
from shared.metrics import DEAD_LETTERS, STAGE_HANDLING_SECONDS, STAGE_MESSAGES
from shared.outages import TransientError as TransientError
from shared.outages import is_transient
from shared.telemetry import current_trace_id, inject_headers, process_span, send_span

log = structlog.get_logger("finq.bus")

MSG_ID_HEADER = "Nats-Msg-Id"
# How nats-server words a refused login (nats-py passes it on in the error's text).
AUTHORIZATION_VIOLATION = "authorization violation"
# JetStream's error code for "subjects overlap with an existing stream".
SUBJECTS_OVERLAP = 10065
# nats-server's answer when it could not make a stream's store on disk (JSStreamCreateErrF).
STREAM_STORE_FAILED = 10049
# How long a stream's creation is retried while its store cannot be made: nats-server
# removes an emptied account's `streams` directory in a goroutine after deleting its last
# stream, so a stream created at that moment fails to make its directory (ENOENT) and
# succeeds when asked again. Past this budget the failure is real (disk, permissions).
STREAM_STORE_RETRY_SECONDS = 2.0
# nats-server's answer when a replicated stream cannot be placed because too few of the
# cluster's peers are known to be online (JSClusterNoPeersErrF). Nodes that have just
# started learn of each other within seconds, after /healthz already answers 200: a stage
# started with its cluster (the first `finq up`, a test's pipeline) met it and crashed at
# once. Past this budget a peer is really missing.
CLUSTER_NO_PEERS = 10005
PLACEMENT_RETRY_SECONDS = 30.0
# How long a stage's consumer creation is asked again when the JetStream API does not
# answer in time: a replicated stream's leader may be busy or being elected (a cluster of
# three on a loaded machine took longer than nats-py's 5 s, and the stage crashed at start).
CONSUMER_RETRY_SECONDS = 60.0
# Streams finq has ever created start with this; others are never deleted.
LEGACY_STREAM_PREFIX = "FINQ"
# Repeated publishes of one Nats-Msg-Id within this window are dropped by the server.
DUPLICATE_WINDOW_SECONDS = 300.0
DEAD_LETTER_MAX_AGE_SECONDS = 14 * 24 * 3600.0
# Longer than any request's deadline; past it a stage message is of no use to anyone.
STAGE_MESSAGE_MAX_AGE_SECONDS = 24 * 3600.0
# What one stage stream may hold on disk (FINQ_STREAM_MAX_BYTES), and the dead letters.
STAGE_STREAM_MAX_BYTES = 1024**3
DEAD_LETTER_MAX_BYTES = 256 * 1024**2


# Why a message was dead-lettered, as finq_dead_letters_total counts it.
DeadLetterKind = Literal["undecodable", "deadline_passed", "retries_exhausted", "poison"]


class PoisonMessage(Exception):
    """A message no retry can fix: it goes to the dead-letter subject and is terminated."""


async def report_nats_error(error: Exception) -> None:
    """nats-py's asynchronous errors (a publish the server refused for want of permission,
    a lost connection) in the process's own JSON log rather than a bare traceback."""
    log.error("nats error", error=str(error) or repr(error))


class NatsRefused(ConnectionError):
    """nats-server refused the credentials: retrying with the same ones cannot help."""


async def connect(
    url: str,
    name: str,
    user: str | None = None,
    password: SecretStr | None = None,
    error_cb: Callable[[Exception], Awaitable[None]] = report_nats_error,
    reconnected_cb: Callable[[], Awaitable[None]] | None = None,
) -> NatsClient:
    """Connect as `user` (a stage's NATS user or the operator; none: no credentials) to
    `url`: one server, or the comma-separated URLs of a cluster's nodes (the client moves
    to another node when its own dies).

    An unreachable server is retried until it answers (it may start after us), but refused
    credentials raise NatsRefused at once, so a misconfigured process exits with the reason
    instead of retrying for ever."""
    credentials: dict[str, str] = {}
    if user:
        credentials = {
            "user": user,
            "password": password.get_secret_value() if password else "",
            # Each user may subscribe only below its own inbox prefix
            # (shared/nats_permissions.py): replies and pulled messages arrive there.
            "inbox_prefix": subjects.inbox_prefix(user),
        }
    refused = asyncio.Event()

    async def on_error(error: Exception) -> None:
        if AUTHORIZATION_VIOLATION in str(error).lower():
            refused.set()
        await error_cb(error)

    servers = server_urls(url)
    client = NatsClient()
    connecting = asyncio.ensure_future(
        client.connect(
            servers if len(servers) > 1 else url,
            name=name,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            # Publishes made while reconnecting are buffered instead of failing.
            pending_size=64 * 1024 * 1024,
            error_cb=on_error,
            **({"reconnected_cb": reconnected_cb} if reconnected_cb is not None else {}),
            **credentials,  # type: ignore[arg-type]
        )
    )
    waiting = asyncio.ensure_future(refused.wait())
    try:
        await asyncio.wait({connecting, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if not connecting.done():
        connecting.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await connecting
        await client.close()
        raise NatsRefused(f"nats-server at {url} refused the credentials of user {user!r}")
    connecting.result()
    return client


def server_urls(url: str) -> list[str]:
    """The servers a FINQ_NATS_URL names: one URL, or several separated by commas."""
    return [part.strip() for part in url.split(",") if part.strip()]


async def ensure_streams(
    js: JetStreamContext, max_bytes: int = STAGE_STREAM_MAX_BYTES, replicas: int = 1
) -> None:
    """Create (or bring up to date) the stage streams and the dead-letter stream, each kept
    on `replicas` nodes of a NATS cluster (FINQ_STREAM_REPLICAS; 1 on a single broker).
    The consumers inherit the replication of their stream.

    Each stage stream holds at most `max_bytes` and, when full, drops its oldest messages
    (discard "old"): with limits retention a stream is mostly messages acked long ago, and
    refusing new ones instead ("new") would stop finq once a day's traffic filled it. A
    message dropped before it was worked on (a backlog larger than the stream) is not a
    lost question: the question is in PostgreSQL, and the reconciler publishes it again.
    The dead-letter stream keeps its newest letters the same way."""
    configs = [
        StreamConfig(
            name=stream,
            subjects=[subject],
            # Limits retention: an ack updates the consumer's state instead of
            # deleting (and fsyncing the deletion of) the message; messages age out.
            retention=RetentionPolicy.LIMITS,
            max_age=STAGE_MESSAGE_MAX_AGE_SECONDS,
            max_bytes=max_bytes,
            discard=DiscardPolicy.OLD,
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_SECONDS,
            num_replicas=replicas,
        )
        for subject, stream in subjects.STAGE_STREAMS.items()
    ]
    configs.append(
        StreamConfig(
            name=subjects.DEAD_LETTER_STREAM,
            subjects=[f"{subjects.DEAD_LETTER_PREFIX}.>"],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=DEAD_LETTER_MAX_AGE_SECONDS,
            max_bytes=DEAD_LETTER_MAX_BYTES,
            discard=DiscardPolicy.OLD,
            num_replicas=replicas,
        )
    )
    for config in configs:
        try:
            await _add_stream(js, config)
        except BadRequestError as error:
            if error.err_code != SUBJECTS_OVERLAP:
                await js.update_stream(config)
                continue
            await _retire_overlapping_streams(js, config)
            await _add_stream(js, config)


# The failures of a stream's creation that pass by themselves, and how long each is waited
# out before it counts as real.
_PASSING_FAILURES = {
    STREAM_STORE_FAILED: (STREAM_STORE_RETRY_SECONDS, "could not make a stream's store"),
    CLUSTER_NO_PEERS: (PLACEMENT_RETRY_SECONDS, "does not yet know enough peers online"),
}


async def _add_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Add a stream, asking again while nats-server fails in a way that passes
    (STREAM_STORE_RETRY_SECONDS and PLACEMENT_RETRY_SECONDS say why)."""
    started = time.monotonic()
    delay = 0.02
    while True:
        try:
            await js.add_stream(config)
            return
        except (ServerError, BadRequestError) as error:
            budget, what = _PASSING_FAILURES.get(error.err_code or 0, (0.0, ""))
            if time.monotonic() - started >= budget:
                raise
            log.warning(
                f"nats-server {what}; asking again",
                stream=config.name,
                description=error.description,
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.25)


async def _retire_overlapping_streams(js: JetStreamContext, config: StreamConfig) -> None:
    """Delete the streams of an older finq layout (one shared stream over `finq.v1.>`) that
    hold this stream's subjects. What they still held is not lost: every question is in
    PostgreSQL and a gateway republishes the unanswered ones at start."""
    for subject in config.subjects or []:
        try:
            name = await js.find_stream_name_by_subject(subject)
        except NotFoundError:
            continue
        if name != config.name and name.startswith(LEGACY_STREAM_PREFIX):
            log.warning("deleting a stream of an older layout", stream=name, subject=subject)
            await js.delete_stream(name)


async def stages_not_consuming(js: JetStreamContext) -> list[str]:
    """The consuming stages with no replica asking for work: no durable consumer yet, or no
    pull request waiting and nothing in flight. A replica builds its handler (loads its
    models) before it pulls, so a stage that pulls is ready to answer."""
    idle: list[str] = []
    for stage in subjects.STAGE_INPUT:
        try:
            info = await js.consumer_info(
                subjects.input_stream(stage), subjects.durable_name(stage), timeout=2.0
            )
        except (NotFoundError, TimeoutError, nats.errors.Error):
            idle.append(stage.value)
            continue
        if not (info.num_waiting or info.num_ack_pending):
            idle.append(stage.value)
    return idle


def encode(envelope: Envelope[Any]) -> bytes:
    return envelope.model_dump_json().encode()


@dataclass
class Publisher:
    """Sends envelopes: to the stream (acknowledged, de-duplicated) or on core NATS (replies)."""

    nc: NatsClient
    js: JetStreamContext
    stage: subjects.Stage
    # How long a publish the broker could not take just now (no stream leader while a
    # cluster elects one, a connection lost on the way) is tried again before its error is
    # raised (FinqSettings.publish_patience_seconds); 0: raised at once.
    retry_seconds: float = 0.0

    async def publish(self, subject: str, envelope: Envelope[Any]) -> None:
        body = encode(envelope)
        msg_id = subjects.message_id(
            envelope.request_id, self.stage, envelope.attempt, envelope.fresh_start
        )
        with send_span(subject, msg_id, len(body)):
            headers = inject_headers({MSG_ID_HEADER: msg_id})
            await self._publish_patiently(subject, body, headers)

    async def _publish_patiently(self, subject: str, body: bytes, headers: dict[str, str]) -> None:
        """Every try carries the same Nats-Msg-Id: a publish the stream stored though its
        acknowledgement was lost (the node died before replying) is dropped as a duplicate
        when tried again, so patience never publishes twice."""
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.1
        while True:
            try:
                await self.js.publish(subject, body, headers=headers)
                return
            except Exception as error:
                if not is_transient(error) or time.monotonic() + delay > deadline:
                    raise
                log.warning("publish tried again", subject=subject, error=repr(error))
            await asyncio.sleep(delay)
            delay = min(1.0, delay * 2)

    async def reply(self, envelope: Envelope[Any]) -> None:
        """Send the final word for a request to the gateway instance that waits for it."""
        if not envelope.reply_to:
            return
        await self._send_core(envelope.reply_to, envelope)

    async def report_failure(self, envelope: Envelope[Any]) -> None:
        """Tell the waiting gateway instance that its request failed, on its failure subject:
        the reply subject carries answers from the validator only."""
        subject = subjects.failure_subject_for(envelope.reply_to or "")
        if subject is not None:
            await self._send_core(subject, envelope)

    async def _send_core(self, subject: str, envelope: Envelope[Any]) -> None:
        body = encode(envelope)
        with send_span(subject, None, len(body)):
            await self.nc.publish(subject, body, headers=inject_headers({}))


@dataclass(frozen=True)
class Forward:
    """A stage's output: the next hop's subject and envelope."""

    subject: str
    envelope: Envelope[Any]


@dataclass(frozen=True)
class Reply:
    """A stage's final output, sent straight back to the waiting gateway."""

    envelope: Envelope[Any]


@dataclass(frozen=True)
class Done:
    """A stage's work on the message ends here, with nothing to send (the ingest stage's
    outcome is the document's row)."""

    envelope: Envelope[Any]


StageOutput = Forward | Reply | Done
Handler = Callable[[Envelope[Any]], Awaitable[StageOutput]]
PoisonReporter = Callable[[Envelope[Any], str], Awaitable[None]]


@dataclass
class ConsumerOptions:
    pull_batch: int = 32
    max_in_flight: int = 64
    ack_wait_seconds: float = 30.0
    # A failure that is not a dependency's outage is tried this often, then dead-lettered.
    max_deliver: int = 5
    nak_delay_seconds: float = 0.5
    # A dependency's outage (shared/outages.py) is waited out, with exponential backoff and
    # jitter from nak_delay_seconds up to backoff_cap_seconds, until the request's deadline
    # plus this budget has passed; then the message is dead-lettered with the reason. The
    # same bound caps how long one handler may run and be kept alive.
    retry_budget_seconds: float = 300.0
    backoff_cap_seconds: float = 30.0
    # Pull requests expire and are renewed; the idle heartbeat tells a lost
    # request (broker restart) from a quiet stream.
    pull_expires_seconds: float = 30.0
    idle_heartbeat_seconds: float = 5.0


async def ensure_consumer(
    js: JetStreamContext, stage: subjects.Stage, options: ConsumerOptions
) -> str:
    durable = subjects.durable_name(stage)
    config = ConsumerConfig(
        durable_name=durable,
        filter_subject=subjects.STAGE_INPUT[stage],
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=options.ack_wait_seconds,
        # Unbounded here: the consumer bounds retries itself, by count for failures of the
        # work and by time (deadline plus retry budget) for outages and crash loops.
        max_deliver=-1,
        max_ack_pending=max(1024, options.max_in_flight * 8),
        max_waiting=512,
    )
    stream = subjects.input_stream(stage)
    started = time.monotonic()
    delay = 0.1
    while True:
        try:
            await _add_consumer(js, stream, config)
            return durable
        except nats.errors.TimeoutError:
            # Creating the same durable again is harmless, so a request that went
            # unanswered is simply asked again, until the budget says the broker is gone.
            if time.monotonic() - started >= CONSUMER_RETRY_SECONDS:
                raise
            log.warning("the JetStream API did not answer; asking again", stream=stream)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def _add_consumer(js: JetStreamContext, stream: str, config: ConsumerConfig) -> None:
    try:
        await js.add_consumer(stream, config)
    except BadRequestError:
        # The durable exists with other settings: bring it up to date.
        await js.add_consumer(stream, config)


@dataclass
class StageConsumer:
    """One replica's share of a stage's durable pull consumer.

    It keeps pull requests outstanding (batch-sized, renewed as messages arrive)
    rather than calling fetch() in a loop: fetch() of a batch waits for the
    whole batch or its timeout, which would hold a lone message back.
    """

    nc: NatsClient
    js: JetStreamContext
    stage: subjects.Stage
    handler: Handler
    publisher: Publisher
    options: ConsumerOptions
    on_poison: PoisonReporter | None = None
    payload_type: type[BaseModel] | None = None

    _inbox: str = ""
    _pending: int = 0  # messages asked for and not yet delivered or expired
    _in_flight: dict[str, tuple[Msg, float]] = field(default_factory=dict)
    _last_seen: float = 0.0
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def envelope_type(self) -> type[Envelope[Any]]:
        assert self.payload_type is not None
        return Envelope[self.payload_type]  # type: ignore[name-defined]

    def reconnected(self) -> None:
        """The broker forgot our pull requests when the connection dropped: ask again now
        rather than at the watchdog's next look."""
        self._pending = 0
        self._last_seen = time.monotonic()
        self._wake.set()

    def stop(self) -> None:
        """Stop asking for work; what is in flight finishes (graceful drain)."""
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        durable = await ensure_consumer(self.js, self.stage, self.options)
        self._next_subject = subjects.pull_subject(self.stage)
        self._durable = durable
        self._inbox = self.nc.new_inbox()
        self._last_seen = time.monotonic()
        envelope_type = self.envelope_type
        async with asyncio.TaskGroup() as tasks:
            # A callback rather than next_msg(): next_msg() costs a future, a timeout
            # and a task per message, which showed up as the largest part of a hop.
            async def on_message(msg: Msg) -> None:
                self._last_seen = time.monotonic()
                if self._is_status(msg) or self._stopping.is_set():
                    return
                self._pending = max(0, self._pending - 1)
                self._in_flight[msg.reply] = (msg, self._last_seen)
                tasks.create_task(self._handle(msg, envelope_type))

            sub = await self.nc.subscribe(self._inbox, cb=on_message, pending_msgs_limit=65536)
            try:
                tasks.create_task(self._watchdog())
                tasks.create_task(self._refill_loop())
                await self._request_more()
                await self._stopping.wait()
            finally:
                # Drain: ask for nothing more; in-flight tasks finish inside the group.
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
                self._wake.set()

    def _is_status(self, msg: Msg) -> bool:
        headers = msg.headers or {}
        status = headers.get("Status")
        if status is None:
            return False
        if status in ("404", "408", "409"):
            # The request ended: what it had not delivered will never come.
            undelivered = headers.get("Nats-Pending-Messages")
            if undelivered is not None:
                self._pending = max(0, self._pending - int(undelivered))
            elif status == "409":
                self._pending = 0
            self._wake.set()
        return True

    async def _request_more(self) -> None:
        capacity = self.options.max_in_flight - len(self._in_flight) - self._pending
        if self._stopping.is_set() or capacity < max(1, self.options.pull_batch // 2):
            return
        batch = min(capacity, self.options.pull_batch)
        request = {
            "batch": batch,
            "expires": int(self.options.pull_expires_seconds * 1e9),
            "idle_heartbeat": int(self.options.idle_heartbeat_seconds * 1e9),
        }
        self._pending += batch
        await self.nc.publish(self._next_subject, orjson.dumps(request), reply=self._inbox)

    async def _refill_loop(self) -> None:
        while not self._stopping.is_set():
            await self._wake.wait()
            self._wake.clear()
            await self._request_more()

    async def _watchdog(self) -> None:
        """Renew lost pull requests and keep long-running messages alive."""
        interval = min(self.options.idle_heartbeat_seconds, self.options.ack_wait_seconds / 3)
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=interval)
            now = time.monotonic()
            if now - self._last_seen > 3 * self.options.idle_heartbeat_seconds:
                # Neither messages nor heartbeats: the broker lost our requests
                # (a restart or reconnect). Ask again.
                self._pending = 0
                self._last_seen = now
                self._wake.set()
            for msg, started in list(self._in_flight.values()):
                if now - started > self.options.ack_wait_seconds / 3:
                    with contextlib.suppress(Exception):
                        await msg.in_progress()

    async def _handle(self, msg: Msg, envelope_type: type[Envelope[Any]]) -> None:
        try:
            await self._process(msg, envelope_type)
        except Exception as error:
            # Settling the message failed (ack, nak or dead letter with the broker away):
            # it comes back after the ack wait and is handled again; the stage lives on.
            log.warning("could not settle a message", error=repr(error))
        finally:
            self._in_flight.pop(msg.reply, None)
            self._wake.set()

    async def _process(self, msg: Msg, envelope_type: type[Envelope[Any]]) -> None:
        headers = msg.headers or {}
        msg_id = headers.get(MSG_ID_HEADER)
        stage = self.stage.value
        if msg.metadata.num_delivered > 1:
            STAGE_MESSAGES.labels(stage, "redelivered").inc()
        with process_span(msg.subject, self._durable, headers, msg_id) as span:
            try:
                envelope = envelope_type.model_validate_json(msg.data)
            except ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()[:5]
                )
                await self._dead_letter(msg, f"undecodable message: {problems}", kind="undecodable")
                return
            with structlog.contextvars.bound_contextvars(
                request_id=envelope.request_id,
                stage=self.stage.value,
                trace_id=current_trace_id(),
            ):
                span.set_attribute("finq.request_id", envelope.request_id)
                span.set_attribute("finq.attempt", envelope.attempt)
                budget_left = (
                    envelope.deadline - utc_now()
                ).total_seconds() + self.options.retry_budget_seconds
                if budget_left <= 0:
                    # Past the deadline and every retry: a clear failure, not silence.
                    await self._dead_letter(
                        msg,
                        "the request's deadline and retry budget passed before it was done",
                        envelope,
                        kind="deadline_passed",
                    )
                    return
                started = time.perf_counter()
                started_at = utc_now()
                try:
                    # A handler stuck (a query that never returns) is cut off at the same
                    # bound, so its message is not kept alive for ever.
                    async with asyncio.timeout(budget_left):
                        output = await self.handler(envelope)
                    ran_ms = round((time.perf_counter() - started) * 1000, 3)
                    output.envelope.timings_ms[stage] = ran_ms
                    output.envelope.stage_runs.append(
                        StageRun(
                            stage=self.stage,
                            attempt=envelope.attempt,
                            started_at=started_at,
                            duration_ms=ran_ms,
                        )
                    )
                    if isinstance(output, Forward):
                        await self.publisher.publish(output.subject, output.envelope)
                    elif isinstance(output, Reply):
                        await self.publisher.reply(output.envelope)
                except PoisonMessage as error:
                    STAGE_HANDLING_SECONDS.labels(stage).observe(time.perf_counter() - started)
                    await self._dead_letter(msg, str(error), envelope, kind="poison")
                    return
                except Exception as error:  # retried: by time for outages, by count else
                    STAGE_HANDLING_SECONDS.labels(stage).observe(time.perf_counter() - started)
                    span.record_exception(error)
                    delivered = msg.metadata.num_delivered
                    transient = is_transient(error)
                    if not transient and delivered >= self.options.max_deliver:
                        log.error("giving up", error=repr(error), deliveries=delivered)
                        await self._dead_letter(
                            msg,
                            f"failed {delivered} times: {error!r}",
                            envelope,
                            kind="retries_exhausted",
                        )
                        return
                    delay = self._retry_delay(delivered, transient)
                    log.warning(
                        "retrying",
                        error=repr(error),
                        deliveries=delivered,
                        transient=transient,
                        delay=round(delay, 2),
                    )
                    await msg.nak(delay=delay)
                    STAGE_MESSAGES.labels(stage, "failed").inc()
                    return
                await msg.ack()
                handled_seconds = time.perf_counter() - started
                STAGE_HANDLING_SECONDS.labels(stage).observe(handled_seconds)
                STAGE_MESSAGES.labels(stage, "ok").inc()
                log.debug("handled", ms=round(handled_seconds * 1000, 2), attempt=envelope.attempt)

    def _retry_delay(self, delivered: int, transient: bool) -> float:
        """Linear for a failure of the work (a few quick tries), exponential with full
        jitter for an outage, so replicas and requests do not retry in step."""
        base = self.options.nak_delay_seconds
        if not transient:
            return base * delivered
        ceiling = min(self.options.backoff_cap_seconds, base * 2 ** min(delivered - 1, 16))
        return random.uniform(base, max(base, ceiling))

    async def _dead_letter(
        self,
        msg: Msg,
        reason: str,
        envelope: Envelope[Any] | None = None,
        *,
        kind: DeadLetterKind,
    ) -> None:
        headers = {
            "Finq-Dead-Reason": reason[:1000],
            "Finq-Original-Subject": msg.subject,
            "Finq-Stage": self.stage.value,
            "Finq-Deliveries": str(msg.metadata.num_delivered),
        }
        if msg.headers and MSG_ID_HEADER in msg.headers:
            headers["Finq-Original-Msg-Id"] = msg.headers[MSG_ID_HEADER]
        await self.js.publish(
            subjects.dead_letter_subject(self.stage), msg.data, headers=inject_headers(headers)
        )
        DEAD_LETTERS.labels(self.stage.value, kind).inc()
        STAGE_MESSAGES.labels(self.stage.value, "dead_lettered").inc()
        log.error("dead-lettered", reason=reason[:300])
        if envelope is not None and self.on_poison is not None:
            with contextlib.suppress(Exception):
                await self.on_poison(envelope, reason)
        await msg.term()


async def read_dead_letters(js: JetStreamContext, stage: subjects.Stage) -> list[dict[str, Any]]:
    """The dead letters of one stage, oldest first (for operators and tests)."""
    try:
        info = await js.stream_info(subjects.DEAD_LETTER_STREAM)
    except NotFoundError:
        return []
    letters: list[dict[str, Any]] = []
    if info.state.messages == 0:
        return letters
    for seq in range(max(1, info.state.first_seq), info.state.last_seq + 1):
        try:
            raw = await js.get_msg(subjects.DEAD_LETTER_STREAM, seq)
        except NotFoundError:
            continue
        if raw.subject != subjects.dead_letter_subject(stage):
            continue
        letters.append({"headers": dict(raw.headers or {}), "data": raw.data})
    return letters
