from __future__ import annotations

from shared.embeddings import EmbeddingSettings
from shared.settings import StageSettings, metrics_port_setting


class ToolsSettings(StageSettings, EmbeddingSettings):
    """FINQ_* variables the tools service reads (see shared.settings for the common ones)."""

    # FINQ_TOOLS_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("tools")

    # search_documents embeds each query, so the tools service loads the embedder at start
    # (a few seconds and ~300 MB for MiniLM). Off: the tool answers "not set up".
    tools_document_search: bool = True
