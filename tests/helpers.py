"""Builders and locations the tests share."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The reference data beside the checkout (`../shared/data`), or FINQ_SHARED_DATA."""
    configured = os.environ.get("FINQ_SHARED_DATA")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


def require_shared_data(*parts: str) -> Path:
    """The path under ../shared/data, or skip: a user's clone has no ../shared."""
    path = shared_data_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/data/{'/'.join(parts)}, which this checkout does not have")
    return path
