from __future__ import annotations

from pathlib import Path

from pydantic import Field

from services.control.scheduling import PIPELINE_NICE
from services.control.servers import PostgresServer
from shared.settings import DEFAULT_NATS_PORT, DEFAULT_POSTGRES_PORT, FinqSettings


class ControlSettings(FinqSettings):
    """FINQ_* variables the `finq` command reads (see shared.settings for the common ones)."""

    # Where `finq up` keeps its servers' data, logs and state.
    home: Path = Path(".finq")
    postgres_port: int = Field(default=DEFAULT_POSTGRES_PORT, ge=1, le=65535)
    nats_port: int = Field(default=DEFAULT_NATS_PORT, ge=1, le=65535)
    gateway_host: str = "127.0.0.1"
    gateway_port: int = Field(default=8000, ge=1, le=65535)
    # `finq up` gives each stage process its own /metrics port, counting up from this one
    # (router-0 on it, tools-0 on the next, ...; `finq status` lists them); 0: none. The
    # gateway serves /metrics on FINQ_GATEWAY_PORT.
    metrics_base_port: int = Field(default=42300, ge=0, le=65535)
    # The nice value of every process `finq up` starts but the gateway (the stages,
    # PostgreSQL, nats-server): under overload the gateway gets the CPU first, to take each
    # connection and refuse what finq cannot serve (services/control/scheduling.py). 0 runs
    # them all alike.
    pipeline_nice: int = Field(default=PIPELINE_NICE, ge=0, le=19)
    # `finq ask` talks to this; empty means the gateway `finq up` started.
    url: str = ""
    # The owner's DSN, for migrations and the operator's commands (`finq migrate`, `finq
    # ingest`, `finq users`, `finq data check`). Unset: FINQ_DATABASE_URL when that is set,
    # else the Unix socket of the PostgreSQL that `finq up` runs under `home`.
    database_owner_url: str | None = None
    # A folder of filings `finq up` loads after the dataset, as `finq ingest filings DIR`
    # does (files already held are kept, so a restart is quick); unset loads none.
    filings_dir: Path | None = None

    # `finq ingest sec`. SEC refuses clients that do not say who they are: its policy asks
    # for "name email" here.
    sec_user_agent: str = "finq/0.1 (contact: set FINQ_SEC_USER_AGENT)"
    # Base URLs, so tests (or a mirror) can stand in for SEC.
    sec_data_url: str = "https://data.sec.gov"
    sec_www_url: str = "https://www.sec.gov"
    # SEC's ceiling is 10 a second for the whole client; lower is allowed, higher is not.
    sec_max_requests_per_second: int = Field(default=10, ge=1, le=10)
    sec_retries: int = Field(default=4, ge=0, le=10)
    sec_backoff_seconds: float = Field(default=0.5, ge=0)
    # A Retry-After longer than this fails the company instead of hanging the command.
    sec_max_wait_seconds: float = Field(default=60.0, ge=0)
    sec_timeout_seconds: float = Field(default=30.0, gt=0)
    # Where `finq ingest sec` reads files when offline: the layout of ../shared/data/sec.
    sec_offline_dir: Path = Path("../shared/data/sec")

    @property
    def operator_dsn(self) -> str:
        """The DSN the operator's commands use (the owner's; see database_owner_url)."""
        if self.database_owner_url:
            return self.database_owner_url
        if "database_url" in self.model_fields_set:
            return self.database_url
        return PostgresServer(self.home / "postgres", self.postgres_port).dsn
