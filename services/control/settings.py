from __future__ import annotations

from pathlib import Path

from pydantic import Field

from shared.settings import DEFAULT_NATS_PORT, DEFAULT_POSTGRES_PORT, FinqSettings


class ControlSettings(FinqSettings):
    """FINQ_* variables the `finq` command reads (see shared.settings for the common ones)."""

    # Where `finq up` keeps its servers' data, logs and state.
    home: Path = Path(".finq")
    postgres_port: int = Field(default=DEFAULT_POSTGRES_PORT, ge=1, le=65535)
    nats_port: int = Field(default=DEFAULT_NATS_PORT, ge=1, le=65535)
    gateway_host: str = "127.0.0.1"
    gateway_port: int = Field(default=8000, ge=1, le=65535)
    # `finq ask` talks to this; empty means the gateway `finq up` started.
    url: str = ""
