"""The settings every finq process reads; each service subclasses with its own fields.

All variables share the `FINQ_` prefix so one ConfigMap (or one `.env`) configures
every stage; a service's own fields carry its name (`FINQ_GATEWAY_PORT`).
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "FINQ_"

# The ports `finq up` gives its own servers: away from 5432/4222 so a system
# PostgreSQL or NATS on the same machine is left alone.
DEFAULT_POSTGRES_PORT = 54329
DEFAULT_NATS_PORT = 42229


class FinqSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # One nats-server, or a cluster's nodes separated by commas (nats://a:4222,nats://b:4222).
    nats_url: str = f"nats://127.0.0.1:{DEFAULT_NATS_PORT}"
    # The NATS user this process connects as (its stage's, or `operator`; see
    # shared/nats_permissions.py) and its password; unset connects without credentials.
    # A SecretStr, so the password never shows in a repr or a log line.
    nats_user: str | None = None
    nats_password: SecretStr | None = None
    # The services' role (not the owner: row-level security applies to it), with its
    # password; `finq up` passes the one it made.
    database_url: str = f"postgresql://finq_app@127.0.0.1:{DEFAULT_POSTGRES_PORT}/finq"
    # A streaming read replica of that database (the same role and password), or unset.
    # The tools stage reads the figures it lacks from it when the replica has replayed every
    # change heard of, else from the primary (services/tools/metric_values.py). Kept out of
    # the settings' repr, as the URL may carry the password.
    database_read_url: str | None = Field(default=None, repr=False)
    log_level: str = "INFO"
    db_pool_min: int = Field(default=2, ge=1)
    db_pool_max: int = Field(default=10, ge=1)
    # An outage of the database or the broker is waited out (backoff with jitter up to
    # FINQ_BACKOFF_CAP_SECONDS) until a request's deadline plus this budget; then it fails
    # with a reason. The reconciler publishes unanswered questions again within it.
    retry_budget_seconds: float = Field(default=300.0, ge=0, le=86_400)
    # What each stage stream may hold on disk; full, it drops its oldest messages (see
    # shared/bus.py ensure_streams).
    stream_max_bytes: int = Field(default=1024**3, ge=1024 * 1024)
    # On how many nodes of a NATS cluster every stream keeps its messages: 3 on a
    # three-node cluster (any one node may die and nothing is lost), 1 on a single broker.
    stream_replicas: int = Field(default=1, ge=1, le=5)
    # How long a publish is tried again while its stream cannot take it: a cluster's stream
    # without a leader for some seconds after a node died, a connection lost on the way.
    # Unset: 20 s with FINQ_STREAM_REPLICAS above 1 (an election is routine there), else 0
    # (a single broker that is away is a 503 at the gateway at once).
    publish_retry_seconds: float | None = Field(default=None, ge=0, le=300)

    @property
    def publish_patience_seconds(self) -> float:
        if self.publish_retry_seconds is not None:
            return self.publish_retry_seconds
        return 20.0 if self.stream_replicas > 1 else 0.0


class StageSettings(FinqSettings):
    """What a consuming stage needs to pull its work from JetStream."""

    # How many messages one replica asks for at a time and works on at once:
    # batches of 16 or more and concurrent handling carried throughput in the
    # bus prototype (batch 1 lost 45%).
    pull_batch: int = Field(default=32, ge=1, le=1024)
    max_in_flight: int = Field(default=64, ge=1, le=4096)
    # Unacked messages come back after this; long work sends in_progress() so a
    # slow stage is not mistaken for a dead one.
    ack_wait_seconds: float = Field(default=30.0, gt=0)
    max_deliver: int = Field(default=5, ge=1)
    nak_delay_seconds: float = Field(default=0.5, ge=0)
    backoff_cap_seconds: float = Field(default=30.0, gt=0, le=600)
    # Where this process serves Prometheus metrics (/metrics, shared/metrics.py). 0, the
    # default, serves none, so replicas started side by side never fight over one port:
    # `finq up` gives each process a port of its own, deploy/ a fixed one per pod. Each
    # stage's class reads FINQ_<STAGE>_METRICS_PORT first (see metrics_port_setting).
    metrics_port: int = Field(default=0, ge=0, le=65535)
    # Loopback by default; a pod that is scraped listens on 0.0.0.0.
    metrics_host: str = "127.0.0.1"


def metrics_port_setting(stage: str) -> Any:
    """The `metrics_port` field of one stage's settings: FINQ_<STAGE>_METRICS_PORT, else
    FINQ_METRICS_PORT, else 0 (off). The stage's own variable lets one environment give
    every stage of a pipeline a different port (`finq up`, the tests)."""
    return Field(
        default=0,
        ge=0,
        le=65535,
        validation_alias=AliasChoices(
            f"{ENV_PREFIX}{stage.upper()}_METRICS_PORT", f"{ENV_PREFIX}METRICS_PORT"
        ),
    )


class OpenAISettings(BaseSettings):
    """The optional model, shared by the router (tool selection) and the answerer (prose):
    any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp). Read from the plain
    names the openai client uses, or with the FINQ_ prefix."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # A SecretStr: shown as '**********' in any repr, log line or error.
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "FINQ_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "FINQ_OPENAI_BASE_URL")
    )
    openai_model: str = Field(
        default="gpt-4o-mini", validation_alias=AliasChoices("OPENAI_MODEL", "FINQ_OPENAI_MODEL")
    )
    # Model calls one question may cause, over every stage and attempt: the router's tool
    # choice (up to 2) and the answerer's writing (once per attempt, up to 3). Past it,
    # finq answers without the model.
    max_model_calls_per_request: int = Field(default=4, ge=0, le=20)

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_api_key and self.openai_api_key.get_secret_value())

    @property
    def openai_key(self) -> str | None:
        """The key itself, for the client that sends it and nothing else."""
        return self.openai_api_key.get_secret_value() if self.openai_api_key else None
