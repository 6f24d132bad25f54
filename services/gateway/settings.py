from __future__ import annotations

from typing import Literal

from pydantic import Field

from services.ingest.documents import DocumentSettings
from shared.embeddings import EmbeddingSettings
from shared.settings import FinqSettings


class GatewaySettings(FinqSettings, DocumentSettings, EmbeddingSettings):
    """FINQ_* variables the gateway reads (see shared.settings for the common ones)."""

    # required: every request carries an API key (`finq users add NAME` makes one) and one
    # without gets 401; local: a request without a key acts as the local user (`finq up`).
    auth: Literal["required", "local"] = "local"
    gateway_host: str = "127.0.0.1"
    gateway_port: int = Field(default=8000, ge=1, le=65535)
    # How long POST /v1/ask waits for the validated answer before a 504.
    gateway_deadline_seconds: float = Field(default=30.0, gt=0, le=600)
    # Names this instance's reply subject; empty means a fresh id per start.
    gateway_instance: str = ""
    # How many earlier turns of a conversation go with each question, so a follow-up can
    # inherit what it leaves out.
    gateway_history_turns: int = Field(default=6, ge=0, le=50)
    # Uploads read at once; each job parses and embeds off the event loop.
    gateway_ingest_workers: int = Field(default=1, ge=1, le=8)
