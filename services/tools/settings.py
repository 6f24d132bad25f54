from __future__ import annotations

from pydantic import Field

from services.tools.metric_values import MAX_GROUPS
from shared.embeddings import EmbeddingSettings
from shared.settings import StageSettings, metrics_port_setting


class ToolsSettings(StageSettings, EmbeddingSettings):
    """FINQ_* variables the tools service reads (see shared.settings for the common ones)."""

    # FINQ_TOOLS_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("tools")

    # search_documents embeds each query: with MiniLM (the default) the ingest stage, which
    # holds the model, encodes it on request (shared/embedding_service.py); with `openai`
    # the endpoint is called from here. Off: the tool answers "not set up".
    tools_document_search: bool = True
    # How long a query's embedding waits for the ingest stage before the search is retried
    # later (a transient failure the bus retries within the question's deadline).
    tools_embedding_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    # The most (company, metric, period type) groups of figures the stage keeps in memory,
    # the least recently used dropped first (services/tools/metric_values.py): memory stays
    # flat however many companies are held. A group is one company's one metric, a few KB.
    tools_metric_cache_groups: int = Field(default=MAX_GROUPS, ge=1, le=10_000_000)
