from __future__ import annotations

from shared.settings import StageSettings


class AnswererSettings(StageSettings):
    """FINQ_* variables the answerer reads (see shared.settings for the common ones)."""
