"""Tools wiring: each route.decided becomes tools.completed."""

from __future__ import annotations

import functools

import asyncpg

from services.tools.document_search import DocumentSearch
from services.tools.metric_values import MetricValueCache
from services.tools.runner import run_route
from services.tools.settings import ToolsSettings
from shared import subjects
from shared.bus import Forward, Handler
from shared.contracts.envelope import Envelope
from shared.contracts.questions import RouteDecided
from shared.db import create_pool
from shared.embedding_service import minilm_on_request
from shared.embeddings import load_embedder
from shared.runtime import StageClients, run, serve_stage


async def document_search(clients: StageClients, settings: ToolsSettings) -> DocumentSearch | None:
    if not settings.tools_document_search:
        return None
    if settings.embedding_provider != "minilm":
        # An endpoint's client: made at the first search, no model held here.
        return DocumentSearch(load=functools.partial(load_embedder, settings))
    # The ingest stage holds MiniLM and embeds each query on request; until it is up, a
    # search waits (a transient failure the bus retries) and figures are served meanwhile.
    remote = await minilm_on_request(
        clients.nc, subjects.Stage.TOOLS, settings.tools_embedding_timeout_seconds, clients.cleanup
    )
    return DocumentSearch(embed=remote.encode)


async def replica_pool(clients: StageClients) -> asyncpg.Pool | None:
    """The pool to FINQ_DATABASE_READ_URL, if set, closed with the stage. It opens no
    connection until a read needs one (min_size 0): a replica that is away does not keep
    the stage from starting, its reads go to the primary meanwhile."""
    settings = clients.settings
    if not settings.database_read_url:  # unset, or set empty (as a template may leave it)
        return None
    pool = await create_pool(settings.database_read_url, min_size=0, max_size=settings.db_pool_max)
    clients.cleanup.push_async_callback(pool.close)
    return pool


async def build_handler(clients: StageClients) -> Handler:
    pool = clients.pool
    assert pool is not None
    settings = clients.settings
    assert isinstance(settings, ToolsSettings)
    documents = await document_search(clients, settings)
    # Figures from memory, emptied on every change (services/tools/metric_values.py), the
    # ones it lacks read from the read replica when there is one and it has caught up.
    metric_values = MetricValueCache(
        settings.database_url,
        max_groups=settings.tools_metric_cache_groups,
        replica=await replica_pool(clients),
    )
    clients.cleanup.push_async_callback(metric_values.aclose)

    async def handle(envelope: Envelope[RouteDecided]) -> Forward:
        completed = await run_route(
            pool, envelope.payload, documents, envelope.user_id, metric_values
        )
        return Forward(subjects.TOOLS_COMPLETED, envelope.carry(completed))

    return handle  # type: ignore[return-value]


def main() -> None:
    run(
        serve_stage(
            subjects.Stage.TOOLS, ToolsSettings(), RouteDecided, build_handler, needs_database=True
        )
    )
