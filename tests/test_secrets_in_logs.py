"""No secret in a log line: tracebacks carry no local variables, and passwords in URLs and
anything shaped like an API key are masked wherever a line carries them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from shared.logs import redact

ROOT = Path(__file__).resolve().parents[1]
SECRET_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
FINQ_KEY = "finq_" + "Z" * 43
PASSWORD = "hunter2-very-secret"

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
