from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from services.gateway.conversations import HISTORY_MAX_CHARS
from shared.settings import FinqSettings


class GatewaySettings(FinqSettings):
    """FINQ_* variables the gateway reads (see shared.settings for the common ones)."""

    # required: every request carries an API key (`finq users add NAME` makes one) and one
    # without gets 401; local: a request without a key acts as the local user (`finq up`).
    auth: Literal["required", "local"] = "local"
    # The largest JSON body (a question is at most 2,000 characters); an upload's limit is
    # FINQ_DOCUMENT_UPLOAD_MAX_BYTES plus its multipart framing.
    gateway_json_max_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    # Requests a keyed user may make: this many a minute on average, `burst` at once; past
    # it, 429 with Retry-After. The local user of FINQ_AUTH=local is the machine's owner and
    # is not limited.
    gateway_rate_per_minute: float = Field(default=600.0, gt=0)
    gateway_rate_burst: int = Field(default=60, ge=1)
    gateway_host: str = "127.0.0.1"
    gateway_port: int = Field(default=8000, ge=1, le=65535)
    # How long POST /v1/ask waits for the validated answer before a 504.
    gateway_deadline_seconds: float = Field(default=30.0, gt=0, le=600)
    # Names this instance's reply subject; empty means a fresh id per start.
    gateway_instance: str = ""
    # How many earlier turns of a conversation go with each question, so a follow-up can
    # inherit what it leaves out.
    gateway_history_turns: int = Field(default=6, ge=0, le=50)
    # ...and at most this much of their question and answer text, the latest turns first.
    gateway_history_max_chars: int = Field(default=HISTORY_MAX_CHARS, ge=0, le=200_000)
    # Questions this gateway works on at once; past it, 503 `overloaded` with Retry-After.
    gateway_max_in_flight: int = Field(default=256, ge=1, le=100_000)
    # ...and past this lag of its event loop (requests waiting before any handler runs).
    gateway_max_loop_lag_ms: float = Field(default=500.0, gt=0, le=60_000)
    # Connections the kernel holds for the gateway before it takes them (the listen backlog):
    # the one queue in front of the admission limits, so it is kept short. A gateway that
    # gets the CPU first (services/control/scheduling.py) takes them in milliseconds; past
    # it a client's connection attempt waits and is retried by its TCP stack.
    gateway_backlog: int = Field(default=512, ge=16, le=65_535)
    # The reconciler: how often one gateway looks for saved work the bus lost, and how old
    # unanswered work must be before it is published again (younger is still on its way).
    gateway_reconcile_every_seconds: float = Field(default=10.0, gt=0, le=3600)
    gateway_reconcile_grace_seconds: float = Field(default=20.0, ge=0, le=3600)
    # The largest upload (413 past it, counted as it is read).
    document_upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    # The largest activity file POST /v1/portfolio/import takes (413 past it, counted as it
    # is read).
    gateway_portfolio_import_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    # Where an upload's body is held while it arrives (then it is in the database); unset:
    # the system's temporary folder.
    document_upload_dir: Path | None = None
    # Jaeger's UI (e.g. http://localhost:16686): GET /v1/traces/{trace_id} then links to
    # `{jaeger_url}/trace/{trace_id}`. Unset: no link.
    jaeger_url: str | None = None
