"""A pipeline as `finq up` runs it, on servers of its own under a home folder, with handles
on the servers and their watch, so a test may kill them (the session's PostgreSQL is
shared by every test and must never be killed) or use the `finq` command against it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from services.control.commands.database_setup import prepare_database
from services.control.commands.gateway_readiness import wait_until_ready
from services.control.commands.state_file import write_state
from services.control.servers import NatsServer, PostgresServer, free_port
from services.control.supervisor import ServerWatch, Supervisor
from tests.helpers import PIPELINE_READY_SECONDS


@dataclass
class WatchedFinq:
    home: Path
    url: str
    postgres: PostgresServer
    nats: NatsServer
    supervisor: Supervisor
    watch: ServerWatch

    def write_state(self) -> None:
        """The state file `finq status` and `finq dead` read, as `finq up` writes it."""
        write_state(self.home, self.url, self.postgres, self.nats, self.supervisor)


@contextlib.asynccontextmanager
async def watched_finq(home: Path, env: dict[str, str] | None = None) -> AsyncIterator[WatchedFinq]:
    """PostgreSQL (the bundled dataset loaded), nats-server and the six services, laid out
    as `finq up` lays them out under `home`; the router's models are left out (quicker)."""
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    postgres.start()
    supervisor: Supervisor | None = None
    try:
        nats.start()
        await prepare_database(postgres.dsn, service_dsn=postgres.service_dsn, load_glossary=False)
        port = free_port()
        supervisor = Supervisor(
            home / "logs",
            {
                **os.environ,
                "FINQ_NATS_URL": nats.url,
                "FINQ_DATABASE_URL": postgres.service_dsn,
                "FINQ_GATEWAY_PORT": str(port),
                "FINQ_ROUTER_METRIC_EMBEDDINGS": "false",
                "FINQ_ROUTER_CLASSIFIER_ENABLED": "false",
                "FINQ_TOOLS_DOCUMENT_SEARCH": "false",
                # Nothing here embeds: the ingest stage (and each restart of it after a
                # kill) skips loading MiniLM, about 8 CPU-seconds each time.
                "FINQ_EMBEDDING_PRELOAD": "false",
                "FINQ_DOCUMENT_UPLOAD_DIR": str(home / "uploads"),
                "FINQ_LOG_LEVEL": "DEBUG",
                **(env or {}),
            },
            stage_env=nats.credentials_env,
        )
        supervisor.start()
        watch = ServerWatch([postgres, nats])
        url = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(wait_until_ready, url, supervisor, PIPELINE_READY_SECONDS, watch)
        finq = WatchedFinq(home, url, postgres, nats, supervisor, watch)
        finq.write_state()
        yield finq
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
