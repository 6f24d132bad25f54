from __future__ import annotations

from shared.settings import StageSettings, metrics_port_setting


class ValidatorSettings(StageSettings):
    """FINQ_* variables the validator reads (see shared.settings for the common ones)."""

    # FINQ_VALIDATOR_METRICS_PORT, else FINQ_METRICS_PORT; 0 (the default): no /metrics.
    metrics_port: int = metrics_port_setting("validator")
