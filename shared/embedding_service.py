"""Embeddings on request: the ingest stage holds the one embedding model and encodes texts
for the router and the tools, so no other process loads torch (issue 17: each process but
the model's holder stays under 200 MB resident).

The exchange is core NATS, outside the streams. A requester (`RemoteEmbedder`) subscribes
once, at start, to its own answers (`finq.v3.embedded.<stage>.<instance>.*`) and publishes
each `EmbeddingRequest` on `finq.v3.embed` with a reply subject of its own below that, so
the answer never goes into an `_INBOX` (no stage may publish there: shared/nats_permissions.py).
The ingest replicas share the requests in one queue group (`EmbeddingServer`), encode in a
thread, and answer with the vectors as float32 bytes, the shape in an `EmbeddingsReady`
header; or with an `EmbeddingRefused` header and no body.

When no ingest replica is up, a request finds no answer within the timeout and raises
`EmbeddingServiceUnavailable`, a TransientError: the stage's bus retries the message within
its deadline, so a question that needs embeddings waits for the ingest stage to come back.
A question that needs none (most figure questions, which rules decide) never asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import structlog
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from shared import subjects
from shared.embeddings import MINILM_DIMENSIONS, Embedder, MiniLMEmbedder
from shared.outages import TransientError, is_transient

log = structlog.get_logger("finq.embedding_service")
T = TypeVar("T")

# The header that carries what an answer is; its body is the vectors, when there are any.
ANSWER_HEADER = "Finq-Embedding"
# How nats-server says, on the reply subject, that no one subscribes to a request's subject.
STATUS_HEADER = "Status"
NO_RESPONDERS_STATUS = "503"
# Bounds on one request, so that no requester can hold the model for long or send a
# message past the broker's max_payload (1 MB by default). A client splits its texts into
# requests within them.
MAX_TEXTS = 256
MAX_REQUEST_BYTES = 256 * 1024


class EmbeddingRequest(BaseModel):
    """Texts to encode, in order."""

    texts: list[str]


class EmbeddingsReady(BaseModel):
    """The answer's body holds `rows` × `dimensions` float32 values, row-major, by `model`."""

    outcome: Literal["ready"] = "ready"
    model: str
    rows: int = Field(ge=0)
    dimensions: int = Field(ge=1)


class EmbeddingRefused(BaseModel):
    """Why the server did not encode: a request past its bounds or unreadable (`too_many_texts`,
    `too_large`, `unreadable`: the requester's error), or the model failing (`failed`)."""

    outcome: Literal["refused"] = "refused"
    code: Literal["too_many_texts", "too_large", "unreadable", "failed"]
    message: str


EmbeddingAnswer = Annotated[EmbeddingsReady | EmbeddingRefused, Field(discriminator="outcome")]
_ANSWER = TypeAdapter(EmbeddingAnswer)


class EmbeddingRequestRefused(ValueError):
    """The server refused a request as wrong (too big, unreadable): retrying cannot help."""


class EmbeddingServiceUnavailable(TransientError):
    """No embedding server answered in time, or its model failed: worth trying later."""


@dataclass(frozen=True)
class EmbeddingLimits:
    max_texts: int = MAX_TEXTS
    max_bytes: int = MAX_REQUEST_BYTES


@dataclass(frozen=True)
class Answer:
    """An answer as it travels: its header and its body."""

    header: EmbeddingsReady | EmbeddingRefused
    body: bytes = b""


def answer_request(data: bytes, embedder: Embedder, limits: EmbeddingLimits) -> Answer:
    """The answer to one request's bytes (runs in a thread: encoding holds the CPU)."""
    if len(data) > limits.max_bytes:
        return Answer(
            EmbeddingRefused(
                code="too_large",
                message=f"a request of {len(data)} bytes; at most {limits.max_bytes}",
            )
        )
    try:
        request = EmbeddingRequest.model_validate_json(data)
    except ValidationError as error:
        return Answer(EmbeddingRefused(code="unreadable", message=str(error)[:300]))
    if len(request.texts) > limits.max_texts:
        return Answer(
            EmbeddingRefused(
                code="too_many_texts",
                message=f"{len(request.texts)} texts; at most {limits.max_texts} a request",
            )
        )
    try:
        vectors = np.ascontiguousarray(embedder.encode(request.texts), dtype=np.float32).reshape(
            len(request.texts), embedder.dimensions
        )
    except Exception as error:  # the model's failure is told to the requester, not raised
        log.exception("embedding failed", texts=len(request.texts))
        return Answer(EmbeddingRefused(code="failed", message=repr(error)[:300]))
    ready = EmbeddingsReady(
        model=embedder.name, rows=len(request.texts), dimensions=embedder.dimensions
    )
    return Answer(ready, vectors.tobytes())


def read_answer(header: str | None, body: bytes) -> npt.NDArray[np.float32]:
    """The vectors an answer holds; raises what the server's refusal means."""
    if header is None:
        raise EmbeddingServiceUnavailable("an embedding answer without its header")
    answer = _ANSWER.validate_json(header)
    if isinstance(answer, EmbeddingRefused):
        if answer.code == "failed":
            raise EmbeddingServiceUnavailable(f"the embedding model failed: {answer.message}")
        raise EmbeddingRequestRefused(f"{answer.code}: {answer.message}")
    vectors = np.frombuffer(body, dtype=np.float32)
    if vectors.size != answer.rows * answer.dimensions:
        raise EmbeddingServiceUnavailable(
            f"an embedding answer of {vectors.size} values for {answer.rows}×{answer.dimensions}"
        )
    return vectors.reshape(answer.rows, answer.dimensions)


class EmbeddingServer:
    """The ingest stage's side: answers `finq.v3.embed` with its embedder, sharing the
    requests with the other ingest replicas in one queue group. One request at a time per
    replica: encoding uses the cores anyway."""

    def __init__(
        self, nc: NatsClient, embedder: Embedder, limits: EmbeddingLimits | None = None
    ) -> None:
        self._nc = nc
        self._embedder = embedder
        self._limits = limits or EmbeddingLimits()
        self._subscription: Subscription | None = None

    async def start(self) -> None:
        self._subscription = await self._nc.subscribe(
            subjects.EMBED, queue=subjects.EMBED_QUEUE, cb=self._on_request
        )
        log.info("serving embeddings", subject=subjects.EMBED, model=self._embedder.name)

    async def close(self) -> None:
        if self._subscription is not None:
            # A drained connection has dropped the subscription already.
            with contextlib.suppress(Exception):
                await self._subscription.unsubscribe()
            self._subscription = None

    async def _on_request(self, msg: Msg) -> None:
        if not msg.reply.startswith(f"{subjects.EMBEDDED_PREFIX}."):
            log.warning("an embedding request with no reply subject of finq's", reply=msg.reply)
            return
        answer = await asyncio.to_thread(answer_request, msg.data, self._embedder, self._limits)
        await self._nc.publish(
            msg.reply, answer.body, headers={ANSWER_HEADER: answer.header.model_dump_json()}
        )


class RemoteEmbedder:
    """The requesters' side: `encode` asks the ingest stage for vectors. Created once per
    process, started (its one subscription) before the first request and closed at the end.
    Texts past one request's bounds are sent as several requests, in order."""

    def __init__(
        self,
        nc: NatsClient,
        stage: subjects.Stage,
        *,
        name: str,
        dimensions: int,
        timeout_seconds: float = 10.0,
        limits: EmbeddingLimits | None = None,
        instance: str | None = None,
    ) -> None:
        self.name = name
        self.dimensions = dimensions
        self._nc = nc
        self._stage = stage
        self._instance = instance or secrets.token_hex(6)
        self._timeout = timeout_seconds
        self._limits = limits or EmbeddingLimits()
        self._waiting: dict[str, asyncio.Future[npt.NDArray[np.float32]]] = {}
        self._subscription: Subscription | None = None

    async def start(self) -> None:
        self._subscription = await self._nc.subscribe(
            subjects.embedded_replies(self._stage, self._instance), cb=self._on_answer
        )

    async def close(self) -> None:
        for waiting in self._waiting.values():
            waiting.cancel()
        self._waiting.clear()
        if self._subscription is not None:
            with contextlib.suppress(Exception):
                await self._subscription.unsubscribe()
            self._subscription = None

    async def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The texts' vectors, one row each; EmbeddingServiceUnavailable when no ingest
        replica answers within the timeout."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [await self._request(batch) for batch in self._batches(texts)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    async def wait_until_serving(self, patience_cap_seconds: float = 5.0) -> None:
        """Return once an embedding server answers, asking again with backoff until then."""
        delay = 0.5
        while True:
            try:
                await self.encode(["ready"])
                return
            except Exception as error:
                if not is_transient(error):
                    raise
                log.info(
                    "waiting for the ingest stage to serve embeddings",
                    subject=subjects.EMBED,
                    stage=self._stage.value,
                    reason=str(error),
                    retry_in_seconds=delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, patience_cap_seconds)

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        # Room for the JSON around the texts and their escapes.
        budget = self._limits.max_bytes // 2
        batches: list[list[str]] = [[]]
        size = 0
        for text in texts:
            cost = len(text.encode()) + 8
            if batches[-1] and (len(batches[-1]) >= self._limits.max_texts or size + cost > budget):
                batches.append([])
                size = 0
            batches[-1].append(text)
            size += cost
        return batches

    async def _request(self, texts: list[str]) -> npt.NDArray[np.float32]:
        token = secrets.token_hex(8)
        answered: asyncio.Future[npt.NDArray[np.float32]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting[token] = answered
        try:
            await self._nc.publish(
                subjects.EMBED,
                EmbeddingRequest(texts=texts).model_dump_json().encode(),
                reply=subjects.embedded_subject(self._stage, self._instance, token),
            )
            return await asyncio.wait_for(answered, self._timeout)
        except TimeoutError as timeout:
            raise EmbeddingServiceUnavailable(
                f"no embedding server answered on {subjects.EMBED} within {self._timeout} s "
                "(is the ingest stage up?)"
            ) from timeout
        finally:
            self._waiting.pop(token, None)

    async def _on_answer(self, msg: Msg) -> None:
        token = msg.subject.rsplit(".", 1)[-1]
        waiting = self._waiting.get(token)
        if waiting is None or waiting.done():
            return  # its requester gave up waiting
        headers = msg.headers or {}
        if headers.get(STATUS_HEADER) == NO_RESPONDERS_STATUS:
            # nats-server's own answer when no one is subscribed to the request subject.
            waiting.set_exception(
                EmbeddingServiceUnavailable(
                    f"no embedding server is subscribed to {subjects.EMBED} "
                    "(is the ingest stage up?)"
                )
            )
            return
        try:
            vectors = read_answer(headers.get(ANSWER_HEADER), msg.data)
            if vectors.shape[1] != self.dimensions:
                raise EmbeddingRequestRefused(
                    f"the embedding service answered {vectors.shape[1]} dimensions, "
                    f"not {self.dimensions}: it holds another model than {self.name}"
                )
            waiting.set_result(vectors)
        except (EmbeddingRequestRefused, EmbeddingServiceUnavailable, ValidationError) as error:
            waiting.set_exception(error)


class EmbeddingsNeeded(Exception):
    """Synchronous code asked `CachedEmbedder` for texts it does not hold: fetch them (the
    async caller does, with a RemoteEmbedder) and run that code again."""

    def __init__(self, texts: Sequence[str]) -> None:
        super().__init__(f"{len(texts)} texts to embed")
        self.texts = list(texts)


class CachedEmbedder:
    """A synchronous embedder over vectors fetched ahead: `encode` answers from what it
    holds, or raises EmbeddingsNeeded with what it lacks. The router's routing is
    synchronous and deterministic, so its async caller can fetch what one run lacked and
    run it again. Bounded (least recently used first out) unless `capacity` is None."""

    def __init__(self, name: str, dimensions: int, capacity: int | None = 4096) -> None:
        self.name = name
        self.dimensions = dimensions
        self._capacity = capacity
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            raise EmbeddingsNeeded(missing)
        for text in texts:
            self._vectors.move_to_end(text)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self._vectors[text] for text in texts])

    def add(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
        if self._capacity is not None:
            while len(self._vectors) > self._capacity:
                self._vectors.popitem(last=False)

    async def fetch(self, texts: Sequence[str], remote: RemoteEmbedder) -> None:
        """Fetch `texts` from `remote` and hold them."""
        self.add(texts, await remote.encode(texts))


# Routing a question asks for the question's own texts one at a time, as each is reached:
# a metric phrase, its pieces when it matched nothing whole, then the question itself for
# the classifier. A round trip each (a few ms for a short text); past these, it fails.
FETCH_ROUNDS = 8


async def until_embedded(
    compute: Callable[[], Awaitable[T]],
    fetch: Callable[[Sequence[str]], Awaitable[None]],
    likely: Sequence[str] = (),
    rounds: int = FETCH_ROUNDS,
) -> T:
    """What `compute` returns once `fetch` has brought every text it raised
    EmbeddingsNeeded for; `compute` must be deterministic, since it runs again. `likely`
    texts, when any is needed, go with the first fetch (a round trip saved)."""
    extra = list(likely)
    for _ in range(rounds - 1):
        try:
            return await compute()
        except EmbeddingsNeeded as needed:
            await fetch(list(dict.fromkeys([*needed.texts, *extra])))
            extra = []
    return await compute()


async def minilm_on_request(
    nc: NatsClient,
    stage: subjects.Stage,
    timeout_seconds: float,
    cleanup: contextlib.AsyncExitStack,
) -> RemoteEmbedder:
    """MiniLM's vectors asked of the ingest stage, for `stage`: listening for its answers
    from now until `cleanup` closes."""
    remote = RemoteEmbedder(
        nc,
        stage,
        name=MiniLMEmbedder.name,
        dimensions=MINILM_DIMENSIONS,
        timeout_seconds=timeout_seconds,
    )
    await remote.start()
    cleanup.push_async_callback(remote.close)
    return remote
