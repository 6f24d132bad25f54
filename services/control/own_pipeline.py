"""A pipeline of an evaluation's own: PostgreSQL, NATS and the five stages started in a
folder of its own, so a running `finq up` is untouched, with the demo user made (the
questions that say "my" ask about the demo portfolio) and whatever else the evaluation
needs loaded before the stages start."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from services.control.commands.database_setup import prepare_database
from services.control.commands.demo_user import DEMO_KEY_FILE, prepare_demo
from services.control.commands.gateway_readiness import wait_until_ready
from services.control.progress import Progress
from services.control.servers import NatsServer, PostgresServer, free_port
from services.control.supervisor import Supervisor

# Longer than `finq up` waits: an evaluation is often run beside other work, and the stages'
# first model loads and embeddings are slow on a busy machine.
EVAL_READY_SECONDS = 360


@dataclass(frozen=True, slots=True)
class OwnPipeline:
    url: str  # the gateway's
    key: str  # the demo user's API key
    owner_dsn: str  # the database's owner: for loading what the evaluation asks about


@contextmanager
def own_pipeline(
    progress: Progress,
    home: Path | None = None,
    prepare: Callable[[str], Awaitable[None]] | None = None,
) -> Iterator[OwnPipeline]:
    """Start everything under `home` (a new temporary folder when None; a folder given
    again keeps its database, so what was loaded into it is loaded once), run `prepare`
    with the owner's DSN before the stages start, and stop everything on the way out.
    Raises ServerError when something cannot start."""
    home = home or Path(tempfile.mkdtemp(prefix="finq-eval-"))
    home.mkdir(parents=True, exist_ok=True)
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    supervisor: Supervisor | None = None
    try:
        print(f"starting a pipeline of its own under {home}", flush=True)
        with progress.waiting(f"waiting for PostgreSQL on port {postgres.port}"):
            postgres.start()
        with progress.waiting(f"waiting for NATS on port {nats.port}"):
            nats.start()
        asyncio.run(
            prepare_database(postgres.dsn, service_dsn=postgres.service_dsn, progress=progress)
        )
        print("\n".join(asyncio.run(prepare_demo(postgres.dsn, home))), flush=True)
        if prepare is not None:
            asyncio.run(prepare(postgres.dsn))
        key = (home / DEMO_KEY_FILE).read_text().strip()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "FINQ_NATS_URL": nats.url,
            "FINQ_DATABASE_URL": postgres.service_dsn,
            "FINQ_GATEWAY_HOST": "127.0.0.1",
            "FINQ_GATEWAY_PORT": str(port),
            "FINQ_LOG_LEVEL": "WARNING",
            # The demo user asks about a thousand questions as fast as they are answered.
            "FINQ_GATEWAY_RATE_PER_MINUTE": "1000000",
        }
        supervisor = Supervisor(home / "logs", env, stage_env=nats.credentials_env)
        supervisor.start()
        wait_until_ready(url, supervisor, timeout=EVAL_READY_SECONDS, progress=progress)
        yield OwnPipeline(url, key, postgres.dsn)
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
