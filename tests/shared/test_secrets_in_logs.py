"""No secret in a log line: tracebacks carry no local variables, and passwords in URLs and
anything shaped like an API key are masked wherever a line carries them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from services.control.servers import SERVICE_ROLE
from shared.identity import add_user
from shared.logs import redact
from shared.subjects import Stage
from tests.conftest import Servers, own_pipeline
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
FINQ_KEY = "finq_" + "Z" * 43
PASSWORD = "hunter2-very-secret"
QUESTION = "What was Apple's revenue in fiscal 2023?"

PROGRAM = f"""
from shared.logs import configure_logging
log = configure_logging("test")
def connect():
    openai_api_key = {SECRET_KEY!r}
    dsn = "postgresql://finq:{PASSWORD}@db:5432/finq"
    raise ConnectionError(f"could not connect to {{dsn}}")
try:
    connect()
except ConnectionError:
    log.exception("database unavailable", dsn="postgresql://finq:{PASSWORD}@db/finq")
log.info("request", authorization="Bearer {FINQ_KEY}", key={FINQ_KEY!r})
"""


def test_an_exception_log_shows_no_local_variable_password_or_key() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    logs = ran.stdout + ran.stderr
    assert "database unavailable" in logs and "ConnectionError" in logs
    for secret in (SECRET_KEY, PASSWORD, FINQ_KEY):
        assert secret not in logs
    assert "postgresql://finq:***@db" in logs


def test_redact_masks_url_passwords_and_keys_and_leaves_the_rest() -> None:
    assert redact("postgresql://u:p4ss@h:5/db and nats://a:b@n:4222") == (
        "postgresql://u:***@h:5/db and nats://a:***@n:4222"
    )
    assert redact(f"key {SECRET_KEY} and {FINQ_KEY}") == "key *** and ***"
    assert redact("postgresql://postgres@127.0.0.1:54329/finq") == (
        "postgresql://postgres@127.0.0.1:54329/finq"
    )


def start_gateway(servers: Servers, database_url: str, openai_key: str) -> str:
    """What a gateway prints when it cannot log in to the database: it must stop."""
    ran = subprocess.run(
        [sys.executable, "-m", "services.gateway"],
        cwd=ROOT,
        env={
            **os.environ,
            **servers.nats.credentials_env(Stage.GATEWAY),
            "FINQ_NATS_URL": servers.nats.url,
            "FINQ_DATABASE_URL": database_url,
            "OPENAI_API_KEY": openai_key,
            "FINQ_GATEWAY_PORT": "1",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    return ran.stdout + ran.stderr


def read_every_log(folder: Path, postgres_log: Path) -> dict[str, str]:
    logs = {path.name: path.read_text(errors="replace") for path in folder.rglob("*.log")}
    logs["postgres.log"] = postgres_log.read_text(errors="replace")
    return logs


async def test_no_secret_reaches_any_log_after_database_and_model_errors(
    servers: Servers, tmp_path: Path
) -> None:
    """The five processes with a model that fails every call and database connections
    killed under them, then a gateway started with a wrong database password: every log
    line of every process and server is scanned for every secret in play."""
    openai_key = "sk-proj-" + os.urandom(24).hex()
    failing_model = [ScriptedReply(status=500) for _ in range(20)]
    async with (
        OpenAIStandIn(failing_model) as model,
        own_pipeline(
            servers,
            tmp_path,
            "t_secret_scan",
            {
                "OPENAI_API_KEY": openai_key,
                "OPENAI_BASE_URL": model.base_url,
                "FINQ_LOG_LEVEL": "DEBUG",
            },
        ) as client,
    ):
        owner = await asyncpg.connect(servers.postgres.dsn_for("t_secret_scan"))
        try:
            _, api_key = await add_user(owner, "sam")
            headers = {"Authorization": f"Bearer {api_key}"}
            asked = await client.post("/v1/ask", json={"question": QUESTION}, headers=headers)
            assert asked.status_code == 200, asked.text
            # The model failed and the template answer went out instead.
            assert model.requests and asked.json()["generation"]["mode"] == "deterministic"
            # Every service connection to this database dies under its pool.
            killed = await owner.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE usename = $1 AND datname = 't_secret_scan'",
                SERVICE_ROLE,
            )
            assert killed > 0
            # Until the pools have new connections, a request is refused as "try again"
            # (503, JSON, Retry-After), never dropped or a stack trace; then answered.
            statuses = []
            for _ in range(10):
                again = await client.post("/v1/ask", json={"question": QUESTION}, headers=headers)
                statuses.append(again.status_code)
                if again.status_code == 200:
                    break
                assert again.status_code == 503, again.text
                assert again.json()["code"] == "unavailable" and again.headers["retry-after"]
            assert statuses[-1] == 200, statuses
            wrong = await client.get("/v1/conversations", headers={"Authorization": "Bearer x"})
            assert wrong.status_code == 401
        finally:
            await owner.close()
    nats_passwords = json.loads((tmp_path / "nats-credentials.json").read_text()).values()
    database_password = servers.postgres.service_password()
    wrong_dsn = servers.postgres.service_dsn.replace(database_password, PASSWORD)
    refused = await asyncio.to_thread(start_gateway, servers, wrong_dsn, openai_key)
    logs = await asyncio.to_thread(read_every_log, tmp_path, servers.postgres.log_path)
    logs["refused gateway"] = refused
    assert "password authentication failed" in logs["refused gateway"]
    assert any("LLM answer failed" in text for text in logs.values())
    secrets = {
        "the OpenAI key": openai_key,
        "the user's API key": api_key,
        "the services' database password": database_password,
        "a wrong database password": PASSWORD,
        **{f"a NATS password ({n})": password for n, password in enumerate(nats_passwords)},
    }
    for where, text in logs.items():
        for what, secret in secrets.items():
            assert secret not in text, f"{what} is in {where}"
