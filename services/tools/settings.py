from __future__ import annotations

from shared.settings import StageSettings


class ToolsSettings(StageSettings):
    """FINQ_* variables the tools service reads (see shared.settings for the common ones)."""
