"""What one request and one user may cost the gateway: a body limit enforced while the
body is read (a declared length past it is refused unread, and a chunked body is counted
as it arrives), and a per-user token bucket for requests.

Both answer with the API's JSON error body: 413 (`body_too_large`, `document_too_large`
for an upload), 429 `rate_limited` with `Retry-After`.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# How much of a refused body past its limit is still read and dropped (see BodyLimit).
DRAIN_BYTES = 8 * 1024 * 1024


def _json_error(status: int, code: str, message: str, *, close: bool) -> tuple[Message, Message]:
    body = json.dumps({"code": code, "message": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    start: Message = {"type": "http.response.start", "status": status, "headers": headers}
    return start, {"type": "http.response.body", "body": body}


OVERLOADED_MESSAGE = "finq is answering as many questions as it can; try again shortly"


class AdmissionGate:
    """ASGI middleware taking a place among the questions in flight (`Admission`) for each
    request to one of `paths`, and refusing at once with 503 `overloaded` and Retry-After
    when there is none, before any routing, dependency or body is worked on: under
    overload a refusal must cost the gateway far less than an answer, or refusing becomes
    the work that saturates it (bench/overload.py at eight times capacity). The place is
    held until the response is sent, a stream's to its end."""

    def __init__(
        self,
        app: ASGIApp,
        admission_of: Callable[[Scope], Admission | None],
        paths: frozenset[str],
        retry_after_seconds: int,
    ) -> None:
        self.app = app
        self.admission_of = admission_of
        self.paths = paths
        start, body = _json_error(503, "overloaded", OVERLOADED_MESSAGE, close=False)
        start["headers"].append((b"retry-after", str(retry_after_seconds).encode()))
        self.refusal = (start, body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        admission = self.admission_of(scope)
        if admission is None:  # not started yet: the app answers 503 itself
            await self.app(scope, receive, send)
            return
        if not admission.try_enter():
            for message in self.refusal:
                await send(message)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave()


class BodyLimit:
    """ASGI middleware refusing a request body past the bytes `limit_for(path)` gives with
    413 and the error code it gives."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], tuple[int, str]]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, code = self.limit_for(scope["path"])
        # Reading the rest of a refused body (and dropping it) lets the client finish
        # sending and read the 413; a client that would send more than this is cut off.
        drain_cap = min(16 * limit, limit + DRAIN_BYTES)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            drained = int(declared) <= drain_cap and await _drain(receive, drain_cap, 0)
            await self._refuse(send, limit, code, close=not drained)
            return
        received = 0
        exceeded = False
        drained = False

        async def counted() -> Message:
            # Past the limit the app is told the body ended (it cannot parse what it got),
            # and whatever it answers is replaced by the 413 below: raising here would be
            # turned into a 400 by the framework's body parsing.
            nonlocal received, exceeded, drained
            if exceeded:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    more = message.get("more_body", False)
                    drained = not more or await _drain(receive, drain_cap, received)
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def answered(message: Message) -> None:
            if not exceeded:
                await send(message)
            elif message["type"] == "http.response.start":
                await self._refuse(send, limit, code, close=not drained)

        await self.app(scope, counted, answered)

    @staticmethod
    async def _refuse(send: Send, limit: int, code: str, *, close: bool) -> None:
        start, body = _json_error(
            413, code, f"the request body is over the limit of {limit:,} bytes", close=close
        )
        await send(start)
        await send(body)


async def _drain(receive: Receive, cap: int, received: int) -> bool:
    """Read and drop the rest of a body; False when it runs past `cap` bytes in all."""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return False
        received += len(message.get("body", b""))
        if received > cap:
            return False
        if not message.get("more_body", False):
            return True


@dataclass
class RateLimiter:
    """A token bucket per user: `per_minute` requests a minute on average, `burst` at
    once. Held in this gateway's memory; replicas each hold their own."""

    per_minute: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)

    def take(self, user: str) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        now = self.clock()
        tokens, last = self._buckets.get(user, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.per_minute / 60.0)
        if tokens >= 1.0:
            self._buckets[user] = (tokens - 1.0, now)
            return 0.0
        self._buckets[user] = (tokens, now)
        return (1.0 - tokens) * 60.0 / self.per_minute

    @staticmethod
    def retry_after(seconds: float) -> str:
        return str(max(1, math.ceil(seconds)))


@dataclass
class LoopLag:
    """How late this process's event loop runs what is due: the queue no counter sees.

    Past what it can serve, a gateway's requests wait before any handler runs (parsed one
    by one on a busy loop), so a limit on questions in flight never trips while latency
    grows without bound. The lag of a timer that should fire every `interval` is that wait,
    smoothed: a loop that stays late sheds, while one stall of a busy moment (a schema built
    on first request, a large body parsed) passes without refusing anyone."""

    interval: float = 0.05
    lag: float = 0.0

    async def watch(self, stopping: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not stopping.is_set():
            started = loop.time()
            await asyncio.sleep(self.interval)
            self.observe(loop.time() - started - self.interval)

    def observe(self, late: float) -> None:
        self.lag = 0.7 * self.lag + 0.3 * max(0.0, late)


@dataclass
class Admission:
    """How many questions one gateway works on at once, and how busy its loop may be. Past
    either a question is refused at once (503 with Retry-After) instead of queueing without
    limit: memory stays bounded and the questions admitted keep their latency when finq is
    offered more than it can serve."""

    limit: int
    max_loop_lag: float = float("inf")  # seconds
    loop_lag: LoopLag = field(default_factory=LoopLag)
    in_flight: int = 0

    def try_enter(self) -> bool:
        if self.in_flight >= self.limit or self.loop_lag.lag > self.max_loop_lag:
            return False
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1
