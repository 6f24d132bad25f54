"""Router wiring: load the company directory and the metric resolver once, then route each
question and keep the alias log.

The router holds no embedding model (with the default FINQ_EMBEDDING_PROVIDER=minilm): the
ingest stage encodes for it (shared/embedding_service.py). It starts once an ingest replica
answers, with the catalog's vectors fetched; afterwards, while no ingest replica is up, a
question that needs an embedding (the classifier, a paraphrased metric name) fails as
transient and the bus retries it within its deadline, and one the rules decide alone (most
figure questions) is routed as ever."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import asyncpg
import structlog

from services.router.directory_watch import DirectoryWatch, Stale
from services.router.filer_directory import FilerDirectory, english_words
from services.router.fiscal_calendar import load_fiscal_calendars
from services.router.intent_classifier import ARTIFACTS_DIR as CLASSIFIER_ARTIFACTS
from services.router.intent_classifier import IntentClassifier
from services.router.llm_selection import LlmToolSelector
from services.router.metric_finding import MetricFinder
from services.router.routing import Router
from services.router.rules import (
    CompanyDirectory,
    CompanyEntry,
    RuleThresholds,
    capabilities,
    metric_finder,
)
from services.router.settings import RouterSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts.envelope import Envelope, ModelCallBudget
from shared.contracts.questions import QuestionAsked, RouteDecided
from shared.embedding_service import (
    CachedEmbedder,
    RemoteEmbedder,
    minilm_on_request,
    until_embedded,
)
from shared.embeddings import MINILM_DIMENSIONS, Embedder, MiniLMEmbedder
from shared.metric_aliases import (
    Database,
    confirm_exact_uses,
    load_learned_aliases,
    record_metric_phrases,
)
from shared.metric_resolver import MetricResolver, Resolution
from shared.runtime import StageClients, run, serve_stage
from shared.sec_filers import read_sec_filers

log = structlog.get_logger()


# The latest data held per company, so "last year" and "last month" mean the latest held:
# the latest annual year from the periods held (migration 024), one index probe a company.
DIRECTORY_SQL = """
SELECT c.symbol, c.display_name, c.aliases, c.tickers,
       (SELECT max(mp.fiscal_year) FROM metric_periods mp
         WHERE mp.symbol = c.symbol AND mp.period_type = 'annual') AS latest_fiscal_year,
       (SELECT max(p.day) FROM prices p WHERE p.symbol = c.symbol) AS latest_price_day
FROM companies c
ORDER BY c.symbol
"""


async def load_directory(
    pool: asyncpg.Pool, filers: FilerDirectory | None = None
) -> CompanyDirectory:
    """The companies held; with SEC's directory, each also by what people call it there
    ("Costco" for COSTCO WHOLESALE CORP), so a company just ingested is named as people
    name it."""
    rows = await pool.fetch(DIRECTORY_SQL)
    return CompanyDirectory(
        tuple(
            CompanyEntry(
                symbol=row["symbol"],
                display_name=row["display_name"],
                names=tuple(
                    dict.fromkeys(
                        [
                            *row["aliases"],
                            *(filers.names_of(row["symbol"]) if filers is not None else ()),
                        ]
                    )
                ),
                tickers=tuple(row["tickers"] or ()),
                latest_fiscal_year=row["latest_fiscal_year"],
                latest_price_day=row["latest_price_day"],
            )
            for row in rows
        ),
        await load_fiscal_calendars(pool),
    )


async def load_filers(pool: asyncpg.Pool) -> FilerDirectory | None:
    """SEC's directory of filers, when `finq ingest directory` loaded one."""
    async with pool.acquire() as conn:
        filers = await read_sec_filers(conn)
    if not filers:
        return None

    def build() -> FilerDirectory:
        directory = FilerDirectory(filers, english_words())
        directory.mentions("warm aapl")  # the word lists load on first use: not on a question
        return directory

    directory = await asyncio.to_thread(build)
    log.info("SEC directory of filers ready", filers=len(filers))
    return directory


@dataclass
class DirectoryRefresh:
    """Reads the directories again after a change is heard, before the next question.

    At 5,000 companies the reading takes seconds (the start queries scan the figures), and
    an ingest beside the services changes them statement after statement. So a reading runs
    as a task of its own, one at a time, and starts no sooner than `min_interval_seconds`
    or three times the last reading's length after the last one started (so they take at
    most a quarter of the time); a question waits for it up to `wait_seconds` (a few
    companies: it is done, and the question sees the company just loaded), else is routed
    on the directories as they were."""

    router: Router
    pool: asyncpg.Pool
    watch: DirectoryWatch
    min_interval_seconds: float = 2.0
    wait_seconds: float = 1.0
    _task: asyncio.Task[None] | None = None
    _started: float = float("-inf")
    _last_seconds: float = 0.0

    async def before_question(self) -> None:
        if self._task is None or self._task.done():
            pause = max(self.min_interval_seconds, 3 * self._last_seconds)
            if time.monotonic() - self._started < pause:
                return
            stale = await self.watch.take()
            if not stale:
                return
            self._started = time.monotonic()
            self._task = asyncio.create_task(self._read_again(stale))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), self.wait_seconds)

    async def _read_again(self, stale: Stale) -> None:
        """The companies held (and the metric finder, which knows their names' words) and
        SEC's directory, as they are now; a failed reading keeps the last."""
        router = self.router
        try:
            filers = await load_filers(self.pool) if stale.filers else router.filers
            directory = await load_directory(self.pool, filers)
        except (OSError, asyncpg.PostgresError, TimeoutError) as error:
            log.warning("could not read the companies again", error=repr(error))
            return
        router.filers = filers
        router.directory = directory
        router.finder = metric_finder(directory, router.finder.resolver)
        self._last_seconds = time.monotonic() - self._started
        log.info(
            "companies read again",
            companies=len(directory.entries),
            seconds=round(self._last_seconds, 3),
        )

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@dataclass(frozen=True)
class RouterEmbeddings:
    """What the classifier and the metric resolver encode with: a local MiniLM, or (the
    default) a cache of vectors the ingest stage served, filled by `fetch`."""

    embedder: Embedder
    remote: RemoteEmbedder | None = None

    async def fetch(self, texts: Sequence[str]) -> None:
        assert self.remote is not None and isinstance(self.embedder, CachedEmbedder)
        await self.embedder.fetch(texts, self.remote)


async def load_embeddings(
    clients: StageClients, settings: RouterSettings
) -> RouterEmbeddings | None:
    if not (settings.router_metric_embeddings or settings.router_classifier_enabled):
        return None
    if settings.embedding_provider != "minilm":
        # The classifier was trained on MiniLM's vectors, which an ingest stage embedding
        # with another provider does not hold. Loading torch takes seconds: off the loop.
        return RouterEmbeddings(await asyncio.to_thread(MiniLMEmbedder.load))
    remote = await minilm_on_request(
        clients.nc,
        subjects.Stage.ROUTER,
        settings.router_embedding_timeout_seconds,
        clients.cleanup,
    )
    # The router is ready once it can embed: questions will ask the ingest stage for vectors.
    await remote.wait_until_serving()
    cache = CachedEmbedder(
        MiniLMEmbedder.name, MINILM_DIMENSIONS, capacity=settings.router_embedding_cache_size
    )
    return RouterEmbeddings(cache, remote)


async def load_resolver(
    learned: Mapping[str, str], settings: RouterSettings, embeddings: RouterEmbeddings | None
) -> MetricResolver:
    """The catalog's resolver with the aliases learned so far."""
    if not settings.router_metric_embeddings:
        embeddings = None
    if embeddings is None or embeddings.remote is None:
        embedder = embeddings.embedder if embeddings is not None else None
        resolver = await asyncio.to_thread(MetricResolver.from_catalog, embedder, learned)
    else:
        # The catalog's vectors ship with finq (shared/stored_vectors.py); any phrase
        # changed since is fetched once into a cache of its own (the resolver keeps the
        # vectors). The question cache serves what questions ask.
        remote = embeddings.remote
        catalog = CachedEmbedder(remote.name, remote.dimensions, capacity=None)

        async def build() -> MetricResolver:
            return await asyncio.to_thread(MetricResolver.from_catalog, catalog, learned)

        resolver = await until_embedded(build, functools.partial(catalog.fetch, remote=remote))
        resolver.embedder = embeddings.embedder
    resolver.embedding_threshold = settings.router_embedding_threshold
    resolver.embedding_min_lead = settings.router_embedding_min_lead
    log.info(
        "metric resolver ready",
        phrases=len(resolver.phrases),
        learned=len(learned),
        embeddings=embeddings is not None,
        served_by_ingest=embeddings is not None and embeddings.remote is not None,
    )
    return resolver


def load_classifier(
    settings: RouterSettings, embeddings: RouterEmbeddings | None
) -> IntentClassifier | None:
    if not settings.router_classifier_enabled or embeddings is None:
        return None
    classifier = IntentClassifier.load(CLASSIFIER_ARTIFACTS, embeddings.embedder)
    log.info("intent classifier ready", artifacts=str(CLASSIFIER_ARTIFACTS))
    return classifier


async def keep_alias_log(
    db: Database, finder: MetricFinder, envelope: Envelope[QuestionAsked], route: RouteDecided
) -> None:
    """Count what only a fallback understood or nothing did; learn readings that this
    conversation has now confirmed by naming the metric exactly."""
    understood = route.understood
    resolutions = [
        Resolution(m.text or m.id, m.id, m.confidence, m.method)  # type: ignore[arg-type]
        for m in understood.metrics
        if m.by_fallback
    ]
    unresolved = understood.unknown_metric_phrases
    if resolutions or unresolved:
        await record_metric_phrases(
            db, envelope.conversation_id, route.question, resolutions, unresolved
        )
    if envelope.payload.first_in_conversation and not resolutions:
        return  # nothing of this conversation can be awaiting confirmation
    learned = await confirm_exact_uses(
        db, envelope.conversation_id, envelope.request_id, understood.named_metrics
    )
    for phrase, metric in learned.items():
        finder.learn(phrase, metric)
        log.info("learned metric alias", phrase=phrase, metric=metric)


async def build_handler(clients: StageClients) -> Handler:
    assert clients.pool is not None
    pool = clients.pool
    settings = clients.settings
    assert isinstance(settings, RouterSettings)
    # Listening first: a change made while the directories load is heard, not lost.
    watch = DirectoryWatch(settings.database_url)
    clients.cleanup.push_async_callback(watch.aclose)
    await watch.open()
    filers = await load_filers(pool)
    directory = await load_directory(pool, filers)
    embeddings = await load_embeddings(clients, settings)
    learned = await load_learned_aliases(pool)
    finder = metric_finder(directory, await load_resolver(learned, settings, embeddings))
    selector = None
    if settings.llm_configured:
        # openai takes about a second to import: a stage loads it only when a model is configured.
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            api_key=settings.openai_key,
            base_url=settings.openai_base_url,
            timeout=settings.router_llm_timeout_seconds,
            max_retries=0,
        )
        clients.cleanup.push_async_callback(client.close)
        selector = LlmToolSelector(client, settings.openai_model, capabilities(directory))
        log.info("LLM tool selection on", model=settings.openai_model)
    router = Router(
        directory,
        finder,
        classifier=load_classifier(settings, embeddings),
        selector=selector,
        thresholds=RuleThresholds(
            settings.router_rules_min_score, settings.router_rules_min_margin
        ),
        classifier_threshold=settings.router_classifier_threshold,
        classifier_min_margin=settings.router_classifier_min_margin,
        classifier_override=settings.router_classifier_override,
        filers=filers,
        fetch_embeddings=(
            embeddings.fetch if embeddings is not None and embeddings.remote is not None else None
        ),
    )

    refresh = DirectoryRefresh(router, pool, watch)
    clients.cleanup.push_async_callback(refresh.aclose)

    async def handle(envelope: Envelope[QuestionAsked]) -> Forward:
        budget = ModelCallBudget.of(envelope, settings.max_model_calls_per_request)
        await refresh.before_question()
        route = await router.route(envelope.payload, budget)
        await keep_alias_log(pool, router.finder, envelope, route)
        routed = envelope.carry(route)
        routed.model_calls += budget.used
        return Forward(subjects.ROUTE_DECIDED, routed)

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.ROUTER,
            RouterSettings(),
            QuestionAsked,
            build_handler,
            needs_database=True,
        )
    )
