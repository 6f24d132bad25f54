"""OpenTelemetry set-up and W3C trace context carried in NATS headers.

Each stage opens a CONSUMER `process` span from the context its message
carries and a PRODUCER span for each message it sends, so one question is one
trace from the gateway to the validator.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased
from opentelemetry.trace import Span, SpanKind

MESSAGING_SYSTEM = "nats"


def setup_telemetry(
    service_name: str, extra_processor: SpanProcessor | None = None
) -> TracerProvider:
    """Install a tracer provider for this process; export over OTLP/HTTP when configured."""
    resource = Resource.create(
        {
            "service.name": service_name,
            "service.namespace": "finq",
            # Tells replicas of one stage apart in a trace.
            "service.instance.id": f"{socket.gethostname()}-{os.getpid()}",
        }
    )
    otlp = bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    # With nowhere to send spans, record none: ids are still made and propagated
    # (answers carry a trace_id, logs bind it), but no span data is built per message.
    recording = otlp or extra_processor is not None
    provider = TracerProvider(
        resource=resource, sampler=ParentBased(ALWAYS_ON) if recording else ALWAYS_OFF
    )
    if otlp:
        # Imported only when used: the exporter pulls in protobuf and requests.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if extra_processor is not None:
        provider.add_span_processor(extra_processor)
    trace.set_tracer_provider(provider)
    return provider


_tracer: trace.Tracer | None = None


def tracer() -> trace.Tracer:
    global _tracer
    if _tracer is None:
        _tracer = trace.get_tracer("finq")
    return _tracer


def inject_headers(headers: dict[str, str]) -> dict[str, str]:
    """Write the current trace context (traceparent, tracestate) into message headers."""
    propagate.inject(headers)
    return headers


def extract_context(headers: Mapping[str, str] | None) -> otel_context.Context:
    return propagate.extract(dict(headers or {}))


def current_trace_id() -> str | None:
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else None


@contextmanager
def process_span(
    subject: str, consumer: str, headers: Mapping[str, str] | None, message_id: str | None
) -> Iterator[Span]:
    """The CONSUMER span of one stage handling one message, parented on the sender's span."""
    attributes: dict[str, str | int] = {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": subject,
        "messaging.consumer.group.name": consumer,
    }
    if message_id:
        attributes["messaging.message.id"] = message_id
    with tracer().start_as_current_span(
        f"process {subject}",
        context=extract_context(headers),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    ) as span:
        yield span


@contextmanager
def send_span(subject: str, message_id: str | None, body_size: int) -> Iterator[Span]:
    """The PRODUCER span of one message sent; its context travels in the message headers."""
    attributes: dict[str, str | int] = {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "publish",
        "messaging.destination.name": subject,
        "messaging.message.body.size": body_size,
    }
    if message_id:
        attributes["messaging.message.id"] = message_id
    with tracer().start_as_current_span(
        f"send {subject}", kind=SpanKind.PRODUCER, attributes=attributes
    ) as span:
        yield span


# Statements that only open or close a transaction: no span of their own (each user-scoped
# transaction would otherwise add three spans around its one query).
_TRANSACTION_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "START"})
# Enough of a statement to tell which one it is; finq's SQL binds every value as a
# parameter, so the text holds no user data.
_QUERY_TEXT_CHARS = 1000
_FIRST_KEYWORD = re.compile(r"[A-Za-z]+")


@contextmanager
def database_span(query: str) -> Iterator[Span | None]:
    """A CLIENT span around one PostgreSQL statement, a child of the span in hand (the
    stage's `process` span, the gateway's request). None, and no span, outside any span
    (the reconciler's rounds, a health check: they would each be a trace of their own) and
    for the statements that only open or close a transaction."""
    text = " ".join(query.split())
    keyword = _FIRST_KEYWORD.match(text)
    operation = keyword.group(0).upper() if keyword else ""
    if operation in _TRANSACTION_CONTROL or not trace.get_current_span().is_recording():
        yield None
        return
    with tracer().start_as_current_span(
        operation or "postgresql",
        kind=SpanKind.CLIENT,
        attributes={
            "db.system.name": "postgresql",
            "db.operation.name": operation,
            "db.query.text": text[:_QUERY_TEXT_CHARS],
        },
    ) as span:
        yield span


@contextmanager
def model_span(stage: str, model: str, server: str | None = None) -> Iterator[Span]:
    """A CLIENT span around one call to the model (an OpenAI-compatible chat completion),
    under the stage's span; the caller adds the tokens it used (`gen_ai.usage.*`)."""
    attributes: dict[str, str] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "finq.stage": stage,
    }
    if server:
        attributes["server.address"] = server
    with tracer().start_as_current_span(
        f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield span
