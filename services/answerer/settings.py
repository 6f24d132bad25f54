from __future__ import annotations

from pydantic import Field

from shared.settings import OpenAISettings, StageSettings, metrics_port_setting


class AnswererSettings(StageSettings, OpenAISettings):
    """FINQ_* variables the answerer reads (see shared.settings for the common ones)."""

    # FINQ_ANSWERER_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("answerer")

    # LLM prose only when OPENAI_API_KEY is set; on timeout or error the deterministic
    # answer goes out, and the response says so.
    answerer_llm_timeout_seconds: float = Field(default=20.0, gt=0, le=300)
    # US dollars per million tokens (input, output) by model, for the cost in the query log;
    # a model not listed is recorded with tokens and no cost.
    answerer_llm_prices: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: {
            "gpt-4o-mini": (0.15, 0.60),
            "gpt-4o": (2.50, 10.00),
            "gpt-4.1-mini": (0.40, 1.60),
        }
    )
