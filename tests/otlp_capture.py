"""A tiny OTLP/HTTP trace receiver on loopback, so tests see the spans real services export."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class CapturedSpan:
    service: str
    instance: str
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    attributes: dict[str, Any]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@dataclass
class OtlpCapture:
    spans: list[CapturedSpan] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        capture = self

        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                capture._add(request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _add(self, request: ExportTraceServiceRequest) -> None:
        added: list[CapturedSpan] = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    added.append(
                        CapturedSpan(
                            service=str(resource.get("service.name", "")),
                            instance=str(resource.get("service.instance.id", "")),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=span.kind,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                        )
                    )
        with self._changed:
            self.spans.extend(added)
            self._changed.notify_all()

    def wait_for(
        self, condition: Callable[[list[CapturedSpan]], bool], timeout: float = 20.0
    ) -> list[CapturedSpan]:
        """Block until the captured spans satisfy the condition (or fail at the timeout)."""
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self.spans), timeout=timeout):
                raise AssertionError(f"spans never satisfied the condition; have {len(self.spans)}")
            return list(self.spans)

    def trace(self, trace_id: str) -> list[CapturedSpan]:
        with self._changed:
            return [span for span in self.spans if span.trace_id == trace_id]
