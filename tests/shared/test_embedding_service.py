"""Embeddings on request over a real nats-server: the ingest stage's server answers the
router and the tools with the vectors the local model gives, refuses requests past its
bounds, and a requester with no server up fails transiently; the router routes through the
remote path as it does with a local model, and the tools search documents through it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import asyncpg
import numpy as np
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from services.control.servers import NatsServer, free_port
from services.router.intent_classifier import ARTIFACTS_DIR, IntentClassifier
from services.router.main import RouterEmbeddings, load_classifier, load_resolver
from services.router.routing import Router
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from services.router.settings import RouterSettings
from services.tools.document_search import DocumentSearch
from shared import bus, subjects
from shared.contracts.questions import QuestionAsked
from shared.db import create_pool
from shared.embedding_service import (
    CachedEmbedder,
    EmbeddingLimits,
    EmbeddingRequestRefused,
    EmbeddingServer,
    EmbeddingServiceUnavailable,
    RemoteEmbedder,
)
from shared.embeddings import MINILM_DIMENSIONS, MiniLMEmbedder
from shared.metric_resolver import MetricResolver
from shared.outages import is_transient
from shared.subjects import Stage
from shared.tools import SearchDocumentsArgs
from tests.tools.test_document_search import annual_report, store

TEXTS = ["money spent on research", "debt load", "how many employees did Apple have?"]
# The server's bounds here: small, so that tests can pass them.
SERVER_LIMITS = EmbeddingLimits(max_texts=64, max_bytes=16 * 1024)


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats-embeddings") / "nats", free_port())
    server.start()
    yield server
    server.stop()


async def connect(server: NatsServer, stage: Stage) -> NatsClient:
    # Each side as its own stage's NATS user: the permissions are part of what is tested.
    return await bus.connect(server.url, f"test-{stage.value}", *server.credentials(stage))


@pytest.fixture
async def ingest_nc(nats_server: NatsServer) -> AsyncIterator[NatsClient]:
    nc = await connect(nats_server, Stage.INGEST)
    yield nc
    await nc.close()


@pytest.fixture
async def serving(ingest_nc: NatsClient, minilm: MiniLMEmbedder) -> AsyncIterator[None]:
    server = EmbeddingServer(ingest_nc, minilm, SERVER_LIMITS)
    await server.start()
    await ingest_nc.flush()  # subscribed at the server before anyone asks
    yield
    await server.close()


async def remote_for(
    server: NatsServer, stage: Stage, limits: EmbeddingLimits | None = None, patience: float = 30
) -> tuple[NatsClient, RemoteEmbedder]:
    nc = await connect(server, stage)
    remote = RemoteEmbedder(
        nc,
        stage,
        name=MiniLMEmbedder.name,
        dimensions=MINILM_DIMENSIONS,
        timeout_seconds=patience,
        limits=limits,
    )
    await remote.start()
    return nc, remote


@pytest.fixture
async def router_remote(nats_server: NatsServer, serving: None) -> AsyncIterator[RemoteEmbedder]:
    nc, remote = await remote_for(nats_server, Stage.ROUTER, SERVER_LIMITS)
    yield remote
    await remote.close()
    await nc.close()


async def test_a_remote_encoding_gives_the_vectors_of_the_local_model(
    router_remote: RemoteEmbedder, minilm: MiniLMEmbedder
) -> None:
    vectors = await router_remote.encode(TEXTS)

    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), MINILM_DIMENSIONS)
    np.testing.assert_allclose(vectors, minilm.encode(TEXTS), atol=1e-5)


async def test_texts_past_one_requests_bounds_are_sent_as_several_requests_in_order(
    nats_server: NatsServer, serving: None, minilm: MiniLMEmbedder
) -> None:
    nc, remote = await remote_for(nats_server, Stage.TOOLS, EmbeddingLimits(max_texts=8))
    texts = [f"{text} ({n})" for n in range(7) for text in TEXTS]  # 21 texts, 8 a request
    try:
        vectors = await remote.encode(texts)
    finally:
        await remote.close()
        await nc.close()

    np.testing.assert_allclose(vectors, minilm.encode(texts), atol=1e-5)


async def test_a_request_past_the_servers_bounds_is_refused_not_retried(
    nats_server: NatsServer, serving: None
) -> None:
    # A client that believes it may send more than this server takes.
    nc, remote = await remote_for(nats_server, Stage.TOOLS, EmbeddingLimits(max_texts=100))
    try:
        with pytest.raises(EmbeddingRequestRefused, match="too_many_texts") as many:
            await remote.encode([f"text {n}" for n in range(SERVER_LIMITS.max_texts + 1)])
        with pytest.raises(EmbeddingRequestRefused, match="too_large") as large:
            await remote.encode(["word " * SERVER_LIMITS.max_bytes])
        assert not is_transient(many.value) and not is_transient(large.value)
        # The server goes on answering what is within its bounds.
        assert (await remote.encode(["debt load"])).shape == (1, MINILM_DIMENSIONS)
    finally:
        await remote.close()
        await nc.close()


async def test_with_no_ingest_stage_up_a_request_fails_as_worth_retrying(
    nats_server: NatsServer,
) -> None:
    nc, remote = await remote_for(nats_server, Stage.ROUTER, patience=0.3)
    try:
        with pytest.raises(EmbeddingServiceUnavailable, match="ingest stage") as failed:
            await remote.encode(["debt load"])
        assert is_transient(failed.value)
    finally:
        await remote.close()
        await nc.close()


async def test_a_requester_waiting_for_the_ingest_stage_goes_on_once_it_serves(
    nats_server: NatsServer, ingest_nc: NatsClient, minilm: MiniLMEmbedder
) -> None:
    nc, remote = await remote_for(nats_server, Stage.ROUTER, patience=1)
    server = EmbeddingServer(ingest_nc, minilm)
    waiting: asyncio.Task[None] | None = None
    try:
        asked = asyncio.Event()

        async def hear(_: Msg) -> None:
            asked.set()

        # The ingest stage's connection hears it ask, but nothing answers yet.
        await ingest_nc.subscribe(subjects.EMBED, cb=hear)
        await ingest_nc.flush()
        waiting = asyncio.create_task(remote.wait_until_serving(patience_cap_seconds=0.5))
        await asyncio.wait_for(asked.wait(), 10)
        assert not waiting.done()

        await server.start()
        await asyncio.wait_for(waiting, 10)
    finally:
        if waiting is not None and not waiting.done():
            waiting.cancel()
        await server.close()
        await remote.close()
        await nc.close()


def test_the_cache_says_which_texts_it_lacks_and_forgets_the_least_recently_used() -> None:
    cache = CachedEmbedder(MiniLMEmbedder.name, 2, capacity=2)
    cache.add(["a", "b"], np.eye(2, dtype=np.float32))
    cache.encode(["a"])  # "b" is now the least recently used
    cache.add(["c"], np.ones((1, 2), dtype=np.float32))

    assert cache.encode(["a", "c"]).tolist() == [[1, 0], [1, 1]]
    with pytest.raises(Exception, match="1 texts") as needed:
        cache.encode(["b", "a"])
    assert needed.value.texts == ["b"]  # type: ignore[attr-defined]


DIRECTORY = CompanyDirectory((CompanyEntry("AAPL", "Apple", ("apple",), 2025),))


# Each question reaches a different layer of the router.
ROUTED_QUESTIONS = (
    "could you sing something for me",  # the rules are unsure: the classifier decides
    "tell me how apple talks about risk",
    "apple money spent on research in 2024",  # a paraphrased metric: the embedding fallback
    "Apple revenue 2023",  # rules alone: no embedding asked for
)


async def test_the_router_routes_through_the_ingest_stages_embeddings_as_with_a_local_model(
    router_remote: RemoteEmbedder, minilm: MiniLMEmbedder, minilm_resolver: MetricResolver
) -> None:
    settings = RouterSettings()
    local = Router(
        DIRECTORY,
        metric_finder(DIRECTORY, minilm_resolver),
        IntentClassifier.load(ARTIFACTS_DIR, minilm),
    )
    embeddings = RouterEmbeddings(
        CachedEmbedder(MiniLMEmbedder.name, MINILM_DIMENSIONS), router_remote
    )
    remote = Router(
        DIRECTORY,
        metric_finder(DIRECTORY, await load_resolver({}, settings, embeddings)),
        load_classifier(settings, embeddings),
        fetch_embeddings=embeddings.fetch,
    )

    for question in ROUTED_QUESTIONS:
        asked = QuestionAsked(question=question)
        expected = await local.route(asked)
        routed = await remote.route(asked)
        assert routed.model_dump() == expected.model_dump(), question


async def test_the_remote_path_reaches_the_classifier_and_the_metric_embeddings(
    router_remote: RemoteEmbedder,
) -> None:
    settings = RouterSettings()
    embeddings = RouterEmbeddings(
        CachedEmbedder(MiniLMEmbedder.name, MINILM_DIMENSIONS), router_remote
    )
    router = Router(
        DIRECTORY,
        metric_finder(DIRECTORY, await load_resolver({}, settings, embeddings)),
        load_classifier(settings, embeddings),
        fetch_embeddings=embeddings.fetch,
    )

    sung = await router.route(QuestionAsked(question="could you sing something for me"))
    # "researching" is a form of a known word: the speller leaves it to the embeddings.
    asked = QuestionAsked(question="apple money spent on researching in 2024")
    research = await router.route(asked)

    assert (sung.intent, sung.decided_by) == ("out_of_scope", "classifier")
    assert [(m.id, m.method) for m in research.understood.metrics] == [
        ("research_and_development", "embedding")
    ]


async def test_the_tools_search_documents_through_the_ingest_stages_embeddings(
    database: str, nats_server: NatsServer, serving: None, minilm: MiniLMEmbedder
) -> None:
    pool: asyncpg.Pool = await create_pool(database, min_size=1, max_size=2)
    nc, remote = await remote_for(nats_server, Stage.TOOLS)
    try:
        for year, count in ((2021, "154,000"), (2022, "164,000")):
            await store(pool, minilm, annual_report(year, count))
        args = SearchDocumentsArgs(query="How many employees did Apple have?", fiscal_year=2021)

        result = await DocumentSearch(embed=remote.encode).search(pool, args)

        assert result == await DocumentSearch(minilm).search(pool, args)
        assert "154,000" in result.passages[0].text
    finally:
        await remote.close()
        await nc.close()
        await pool.close()
