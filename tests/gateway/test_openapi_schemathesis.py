"""The OpenAPI schema states what the gateway enforces: schemathesis (`st run`) generates
requests from it, valid and invalid, in every phase (examples, coverage, fuzzing and the
stateful phase that follows the schema's links), runs every check on every answer, and
finds no failure. It runs against a gateway of the session's pipeline that requires keys,
as two users, so the object-level authorization check can ask for one user's rows as the
other; seed and examples are fixed, so a run is the same run every time."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from shared.identity import add_user, user_for_key
from tests.conftest import RunningFinq, another_gateway
from tests.helpers import REPO_ROOT

ST = Path(sys.executable).with_name("st")
CONFIG = REPO_ROOT / "tests" / "schemathesis.toml"
SEED = 20261125
# Per operation, for the fuzzing and stateful phases (the examples and coverage phases are
# what the schema itself yields, whatever this is). 100 cost about 40 s of the suite's
# ten-minute budget on two cores; at 50 the run generates 1,870 test cases (seed above).
MAX_EXAMPLES = 50
PHASES = ("examples", "coverage", "fuzzing", "stateful")
# Every check schemathesis has but max_response_time, which needs a limit and measures the
# machine more than the schema.
CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
}


@dataclass(frozen=True)
class KeyedGateway:
    url: str
    keys: dict[str, str]  # user name → API key
    owner_dsn: str  # the database's owner, who adds the users DELETE /v1/me deletes


@pytest.fixture(scope="module")
def keyed_gateway(
    finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KeyedGateway]:
    """A gateway that requires keys, with no rate limit to speak of (schemathesis sends a
    thousand requests in seconds), and two users of its own."""

    async def make_users() -> dict[str, str]:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            suffix = os.urandom(3).hex()
            return {
                name: (await add_user(conn, f"{name}-{suffix}"))[1] for name in ("st-a", "st-b")
            }
        finally:
            await conn.close()

    keys = asyncio.run(make_users())
    settings = {
        "FINQ_AUTH": "required",
        "FINQ_GATEWAY_RATE_PER_MINUTE": "1000000",
        "FINQ_GATEWAY_RATE_BURST": "100000",
    }
    with another_gateway(finq, tmp_path_factory, settings) as url:
        yield KeyedGateway(url, keys, finq.servers.postgres.dsn)


def wfc_auth(keys: dict[str, str]) -> dict[str, object]:
    """The users as a Web Fuzzing Commons auth file, which schemathesis reads."""
    return {
        "auth": [
            {"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {key}"}]}
            for name, key in keys.items()
        ]
    }


def test_schemathesis_finds_no_failure_in_any_phase_with_every_check(
    keyed_gateway: KeyedGateway, tmp_path: Path
) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps(wfc_auth(keyed_gateway.keys)))
    reports = tmp_path / "reports"
    command = [
        str(ST),
        "--config-file",
        str(CONFIG),
        "run",
        f"{keyed_gateway.url}/openapi.json",
        "--seed",
        str(SEED),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--phases",
        ",".join(PHASES),
        # One worker: the same requests in the same order, so the run repeats.
        "--workers",
        "1",
        "--auth-wfc",
        str(auth),
        # Nothing carried over from an earlier run: what fails must fail from the seed.
        "--generation-database",
        "none",
        "--request-timeout",
        "60",
        "--no-color",
        "--report",
        "json,ndjson",
        "--report-dir",
        str(reports),
    ]
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        # DELETE /v1/me is sent as a user made for it, never as the run's (the hooks).
        "FINQ_SCHEMATHESIS_KEYS": json.dumps(list(keyed_gateway.keys.values())),
        "FINQ_SCHEMATHESIS_OWNER_DSN": keyed_gateway.owner_dsn,
    }
    run = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]

    report = json.loads(next(reports.glob("json-*.json")).read_text())
    assert report["complete"] and report["errors"] == []
    assert {name: phase["status"] for name, phase in report["phases"].items()} == {
        name: "success" for name in PHASES
    }
    # Every operation of the schema was sent requests: a route added is covered by adding it.
    operations = report["operations"]
    assert operations["tested"] == operations["selected"] and operations["skipped"] == 0, operations
    cases = report["test_cases"]
    assert cases["with_failures"] == 0 and cases["errored"] == 0
    assert cases["generated"] >= 500, cases
    events = next(reports.glob("ndjson-*.ndjson")).read_text()
    ran = {check for check in CHECKS if f'"name":"{check}"' in events}
    assert ran == CHECKS, f"checks that never ran: {sorted(CHECKS - ran)}"
    # DELETE /v1/me was sent, and went as users made for it (the hooks): the run's are left.
    assert '"label":"DELETE /v1/me"' in events

    async def keys_in_use() -> list[str | None]:
        owner = await asyncpg.connect(keyed_gateway.owner_dsn)
        try:
            return [await user_for_key(owner, key) for key in keyed_gateway.keys.values()]
        finally:
            await owner.close()

    assert None not in asyncio.run(keys_in_use())
