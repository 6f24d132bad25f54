from __future__ import annotations

from pydantic import Field

from shared import metric_resolver
from shared.embeddings import EmbeddingSettings
from shared.settings import OpenAISettings, StageSettings, metrics_port_setting


class RouterSettings(StageSettings, OpenAISettings, EmbeddingSettings):
    """FINQ_ROUTER_* variables the router reads (see shared.settings for the common ones)."""

    # FINQ_ROUTER_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("router")

    # The MiniLM fallback for paraphrased metric names; without it, misspelt names still
    # resolve (fuzzy). With FINQ_EMBEDDING_PROVIDER=minilm (the default) the ingest stage
    # holds the model and encodes for the router (shared/embedding_service.py); with
    # `openai` the router loads MiniLM itself (~450 MB), since its classifier was trained on
    # MiniLM's vectors and the ingest stage then holds none.
    router_metric_embeddings: bool = True
    # How long one embedding request waits for the ingest stage before the question is
    # retried later (a transient failure), and how many question texts' vectors are kept.
    router_embedding_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    router_embedding_cache_size: int = Field(default=4096, ge=16)
    router_embedding_threshold: float = Field(
        default=metric_resolver.EMBEDDING_THRESHOLD, ge=0, le=1
    )
    router_embedding_min_lead: float = Field(default=metric_resolver.EMBEDDING_MIN_LEAD, ge=0, le=1)
    # Rules decide alone when their best intent scores at least this and leads the runner-up
    # by the margin; otherwise the classifier, then the LLM (when configured), is asked.
    router_rules_min_score: float = Field(default=2.5, ge=0)
    router_rules_min_margin: float = Field(default=1.0, ge=0)
    # Layer 2: the trained intent classifier (MiniLM embeddings, loaded with the metric
    # embeddings). On the validation split 0.6/0.2 accepts 59% of questions at 92% accuracy;
    # the rest go on to the LLM, or keep the rules' best reading.
    router_classifier_enabled: bool = True
    router_classifier_threshold: float = Field(default=0.6, ge=0, le=1)
    router_classifier_min_margin: float = Field(default=0.2, ge=0, le=1)
    # To overrule the intent the rules leaned to (when they found any), the classifier must
    # be surer still: on the golden set its confident overrulings were mostly wrong.
    router_classifier_override: float = Field(default=0.9, ge=0, le=1)

    # A slow model must not hold a question past its deadline: on timeout the rules' reading
    # stands.
    router_llm_timeout_seconds: float = Field(default=8.0, gt=0, le=120)
