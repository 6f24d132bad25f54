from __future__ import annotations

from shared.settings import StageSettings


class ValidatorSettings(StageSettings):
    """FINQ_* variables the validator reads (see shared.settings for the common ones)."""
