from __future__ import annotations

from shared.settings import StageSettings


class RouterSettings(StageSettings):
    """FINQ_* variables the router reads (see shared.settings for the common ones)."""
