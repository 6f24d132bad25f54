"""What one request and one user may cost: a body past its limit is refused while it is
read (declared or chunked) with 413, and a keyed user past their rate gets 429 with
Retry-After; both as the API's JSON error body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from services.gateway.limits import Admission, AdmissionGate, LoopLag, RateLimiter
from shared.identity import add_user
from tests.conftest import RunningFinq, another_gateway
from tests.helpers import wait_until


def test_a_user_gets_their_burst_then_one_request_per_refill_interval() -> None:
    now = [0.0]
    limiter = RateLimiter(per_minute=60, burst=2, clock=lambda: now[0])
    assert [limiter.take("a"), limiter.take("a")] == [0.0, 0.0]
    assert limiter.take("a") == pytest.approx(1.0)
    assert limiter.take("b") == 0.0  # each user has a bucket of their own
    now[0] += 1.0
    assert limiter.take("a") == 0.0
    assert RateLimiter.retry_after(0.2) == "1"


async def test_an_oversized_json_body_is_refused_with_413_whether_declared_or_chunked(
    client: httpx.AsyncClient,
) -> None:
    big = b'{"question": "' + b"a" * 100_000 + b'"}'
    declared = await client.post(
        "/v1/ask", content=big, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413
    assert declared.json()["code"] == "body_too_large"

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 8192):
            yield big[start : start + 8192]

    chunked = await client.post(
        "/v1/ask", content=chunks(), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 413
    assert chunked.json() == {
        "code": "body_too_large",
        "message": "the request body is over the limit of 65,536 bytes",
    }
    assert (await client.get("/healthz")).status_code == 200


@pytest.fixture(scope="module")
def strict_gateway(finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    limits = {"FINQ_GATEWAY_RATE_PER_MINUTE": "6", "FINQ_GATEWAY_RATE_BURST": "3"}
    with another_gateway(finq, tmp_path_factory, limits) as url:
        yield url


async def test_a_user_past_their_rate_gets_429_with_retry_after_and_others_do_not(
    finq: RunningFinq, strict_gateway: str
) -> None:
    conn = await asyncpg.connect(finq.servers.postgres.dsn)
    try:
        _, busy = await add_user(conn, "busy-limits")
        _, calm = await add_user(conn, "calm-limits")
    finally:
        await conn.close()
    async with httpx.AsyncClient(base_url=strict_gateway, timeout=30) as http:
        statuses = [
            (await http.get("/v1/conversations", headers={"Authorization": f"Bearer {busy}"}))
            for _ in range(4)
        ]
        assert [r.status_code for r in statuses] == [200, 200, 200, 429]
        refused = statuses[-1]
        assert refused.json()["code"] == "rate_limited"
        assert 1 <= int(refused.headers["retry-after"]) <= 10
        other = await http.get("/v1/conversations", headers={"Authorization": f"Bearer {calm}"})
        assert other.status_code == 200


def test_a_late_loop_refuses_questions_until_it_keeps_time_again() -> None:
    lag = LoopLag()
    admission = Admission(limit=10, max_loop_lag=0.5, loop_lag=lag)
    # One stall of a busy moment refuses no one.
    lag.observe(1.0)
    assert admission.try_enter()
    admission.leave()
    # A loop that stays late, tick after tick, is behind: a new question is refused at once.
    for _ in range(5):
        lag.observe(1.0)
    assert not admission.try_enter() and admission.in_flight == 0
    # Once it keeps time again, questions are admitted again within a few ticks.
    ticks = 0
    while not admission.try_enter():
        lag.observe(0.0)
        ticks += 1
    assert 1 <= ticks < 10 and lag.lag <= 0.5


async def test_the_loop_lag_watch_measures_a_loop_that_stays_blocked() -> None:
    import asyncio
    import time

    lag = LoopLag(interval=0.01)
    stopping = asyncio.Event()
    watching = asyncio.create_task(lag.watch(stopping))
    await asyncio.sleep(0)  # the watch starts its first tick
    for _ in range(4):
        # Blocking the loop on purpose: each of the watch's ticks comes 150 ms late.
        time.sleep(0.15)  # noqa: ASYNC251
        await asyncio.sleep(0)
    stopping.set()
    await watching
    assert lag.lag >= 0.05


async def test_the_gate_refuses_a_question_past_the_limit_before_the_app_sees_it() -> None:
    """A refusal costs no routing, no dependency and no body: the app is never called for
    it, and the place of an admitted question is held until its response has been sent."""
    admission = Admission(limit=1)
    release = asyncio.Event()
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])
        if scope["path"] == "/v1/ask":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate = AdmissionGate(app, lambda _: admission, frozenset({"/v1/ask"}), retry_after_seconds=1)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        first = asyncio.create_task(client.post("/v1/ask", json={"question": "q"}))
        await wait_until(lambda: admission.in_flight == 1)
        refused = await client.post("/v1/ask", json={"question": "q"})
        other = await client.get("/v1/conversations")  # not a question: never gated
        release.set()
        assert (await first).status_code == 200
        again = await client.post("/v1/ask", json={"question": "q"})
    assert refused.status_code == 503
    assert refused.json()["code"] == "overloaded" and refused.headers["retry-after"] == "1"
    assert other.status_code == 200 and again.status_code == 200
    assert reached == ["/v1/ask", "/v1/conversations", "/v1/ask"]
    assert admission.in_flight == 0
