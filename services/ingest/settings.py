from __future__ import annotations

from pydantic import Field

from services.ingest.documents import DocumentSettings
from shared.embeddings import EmbeddingSettings
from shared.settings import StageSettings, metrics_port_setting


class IngestSettings(StageSettings, DocumentSettings, EmbeddingSettings):
    """FINQ_* variables the ingest stage reads (see shared.settings for the common ones)."""

    # FINQ_INGEST_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("ingest")

    # A few uploads at once: each parse is a child process that may use up to
    # FINQ_INGEST_PARSE_MAX_MB, and embedding uses the cores.
    pull_batch: int = Field(default=2, ge=1, le=64)
    max_in_flight: int = Field(default=2, ge=1, le=64)
    # What one file may take to parse (in its own child process): past these the upload
    # fails with the limit it hit.
    ingest_parse_timeout_seconds: float = Field(default=120.0, gt=0, le=3600)
    ingest_parse_max_mb: int = Field(default=1536, ge=64, le=65536)
    ingest_parse_cpu_seconds: int = Field(default=120, ge=1, le=3600)
    # Times the stage may begin reading one upload (a worker killed while reading it starts
    # it again): past them the upload fails instead of being tried forever.
    ingest_max_attempts: int = Field(default=3, ge=1, le=20)
