"""`finq ingest sec` against a stand-in for SEC on loopback: a real HTTP server in a thread
that serves companyfacts and submissions JSON, records every request (when it arrived and
its headers) and can be scripted to answer 429, 500, 404 or to drop the connection.

Tests that must run everywhere serve small documents built here; the end-to-end test
serves the real files of ../shared/data/sec and skips without them. Nothing reaches the
internet: every URL points at 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from services.control.servers import free_port
from services.ingest.companyfacts import IngestError
from services.ingest.dataset import parse_companyfacts_files
from services.ingest.filings import read_submissions_files
from services.ingest.sec_api import (
    RateLimiter,
    RetryPolicy,
    SecClient,
    SecEndpoints,
    SecHttpError,
    UnknownCikError,
    cik_of_identifier,
    download_company,
    fetch_document,
    ingest_sec,
    resolve_company,
    retry_after_seconds,
    sec_headers,
    tickers_in_directory,
)
from tests.helpers import require_shared_data, run_finq

USER_AGENT = "finq-tests test@example.com"
EXAMPLE_CIK = "0000001234"
TESLA_CIK = "0001318605"
# Short enough that a test of the retry budget takes milliseconds, not the default seconds.
FAST_RETRIES = RetryPolicy(retries=2, backoff_seconds=0.01, max_wait_seconds=5)


# --- the stand-in for SEC ---------------------------------------------------------------------


@dataclass(frozen=True)
class Scripted:
    """One answer the stand-in gives before it serves the document; drop closes the
    connection without answering."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


@dataclass(frozen=True)
class Seen:
    path: str
    arrived: float  # time.monotonic(), the clock the client's rate limiter reads
    user_agent: str | None


class StandInSec:
    """SEC's paths on 127.0.0.1: documents by path, scripted answers consumed first."""

    def __init__(self, documents: dict[str, bytes]) -> None:
        self.documents = documents
        self.scripts: dict[str, list[Scripted]] = defaultdict(list)
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as SEC speaks it: the client reuses connections between requests.
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                arrived = time.monotonic()
                with stand_in._lock:
                    stand_in.requests.append(Seen(self.path, arrived, self.headers["User-Agent"]))
                    scripted = stand_in.scripts[self.path]
                    answer = scripted.pop(0) if scripted else None
                if answer is not None and answer.drop:
                    self.close_connection = True
                    return
                body = stand_in.documents.get(self.path)
                status = answer.status if answer else (200 if body is not None else 404)
                payload = body if status == 200 and body is not None else b'{"error":"no"}'
                self.send_response(status)
                for name, value in (answer.headers if answer else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            # The default listen backlog of 5 makes the sixth of ten simultaneous connects
            # wait for a SYN retry (a second), bunching a burst's arrivals into the next one's.
            request_queue_size = 64
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def paths(self) -> list[str]:
        with self._lock:
            return [seen.path for seen in self.requests]

    def __enter__(self) -> StandInSec:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def submissions_path(name: str) -> str:
    return f"/submissions/{name}"


def companyfacts_path(cik: str) -> str:
    return f"/api/xbrl/companyfacts/CIK{cik}.json"


# --- small documents ---------------------------------------------------------------------------


def small_companyfacts(cik: str = EXAMPLE_CIK) -> dict[str, Any]:
    """Three calendar years of revenue and net income, each filed in its own 10-K."""
    facts: dict[str, list[dict[str, Any]]] = {"Revenues": [], "NetIncomeLoss": []}
    for year, revenue in ((2021, 100e6), (2022, 120e6), (2023, 150e6)):
        for tag, value in (("Revenues", revenue), ("NetIncomeLoss", revenue / 10)):
            facts[tag].append(
                {
                    "start": f"{year}-01-01",
                    "end": f"{year}-12-31",
                    "val": value,
                    "accn": f"{cik}-{year % 100 + 1:02d}-000001",
                    "fy": year,
                    "fp": "FY",
                    "form": "10-K",
                    "filed": f"{year + 1}-02-15",
                }
            )
    return {
        "cik": int(cik),
        "entityName": "EXAMPLE CORP",
        "facts": {"us-gaap": {tag: {"units": {"USD": rows}} for tag, rows in facts.items()}},
    }


def small_submissions(cik: str = EXAMPLE_CIK, ticker: str = "EXMP") -> dict[str, Any]:
    accessions = [f"{cik}-{year % 100 + 1:02d}-000001" for year in (2021, 2022, 2023)]
    return {
        "cik": str(int(cik)),
        "name": "Example Corp",
        "tickers": [ticker],
        "fiscalYearEnd": "1231",
        "filings": {
            "recent": {
                "accessionNumber": accessions,
                "filingDate": ["2022-02-15", "2023-02-15", "2024-02-15"],
                "reportDate": ["2021-12-31", "2022-12-31", "2023-12-31"],
                "form": ["10-K", "10-K", "10-K"],
                "primaryDocument": ["a.htm", "b.htm", "c.htm"],
                "primaryDocDescription": ["10-K", "10-K", "10-K"],
                "items": ["", "", ""],
            },
            "files": [],
        },
    }


def encoded(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def small_documents(cik: str = EXAMPLE_CIK) -> dict[str, bytes]:
    return {
        submissions_path(f"CIK{cik}.json"): encoded(small_submissions(cik)),
        companyfacts_path(cik): encoded(small_companyfacts(cik)),
        "/files/company_tickers.json": encoded(
            {"0": {"cik_str": int(cik), "ticker": "EXMP", "title": "Example Corp"}}
        ),
    }


def write_offline_directory(directory: Path, cik: str = EXAMPLE_CIK) -> Path:
    """The small documents in the ../shared/data/sec layout."""
    (directory / "submissions").mkdir(parents=True)
    (directory / "companyfacts").mkdir()
    (directory / "submissions" / f"CIK{cik}.json").write_bytes(encoded(small_submissions(cik)))
    (directory / "companyfacts" / f"CIK{cik}.json").write_bytes(encoded(small_companyfacts(cik)))
    return directory


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def sec_stand_in() -> Iterator[StandInSec]:
    with StandInSec(small_documents()) as stand_in:
        yield stand_in


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(headers=sec_headers(USER_AGENT), timeout=10) as client:
        yield client


def sec_client(http: httpx.AsyncClient, url: str, policy: RetryPolicy = FAST_RETRIES) -> SecClient:
    return SecClient(http, RateLimiter(), SecEndpoints(url, url), policy)


# --- politeness ----------------------------------------------------------------------------------


async def test_every_request_declares_the_configured_user_agent(
    sec_stand_in: StandInSec, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    messages: list[str] = []
    await download_company(
        sec_client(http, sec_stand_in.url), EXAMPLE_CIK, tmp_path, messages.append
    )

    assert [seen.user_agent for seen in sec_stand_in.requests] == [USER_AGENT, USER_AGENT]


async def test_a_429_with_retry_after_is_waited_out_and_then_succeeds(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    path = submissions_path(f"CIK{EXAMPLE_CIK}.json")
    sec_stand_in.scripts[path] = [Scripted(429, {"Retry-After": "1"})]

    body, doc = await fetch_document(sec_client(http, sec_stand_in.url), sec_stand_in.url + path)

    first, second = sec_stand_in.requests
    assert doc["tickers"] == ["EXMP"] and body == sec_stand_in.documents[path]
    # Retry-After said one second; the backoff alone would have been 10 ms.
    assert second.arrived - first.arrived >= 1.0


async def test_a_dropped_connection_is_retried(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    path = submissions_path(f"CIK{EXAMPLE_CIK}.json")
    sec_stand_in.scripts[path] = [Scripted(drop=True)]

    _, doc = await fetch_document(sec_client(http, sec_stand_in.url), sec_stand_in.url + path)

    assert doc["name"] == "Example Corp"
    assert sec_stand_in.paths() == [path, path]


async def test_server_errors_beyond_the_retry_budget_give_a_clear_error(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    path = companyfacts_path(EXAMPLE_CIK)
    sec_stand_in.scripts[path] = [Scripted(500)] * 10

    with pytest.raises(SecHttpError, match=r"HTTP 500 .* after 3 tries; SEC may be down"):
        await fetch_document(sec_client(http, sec_stand_in.url), sec_stand_in.url + path)

    # The first try and the two retries of FAST_RETRIES, and not one more.
    assert sec_stand_in.paths() == [path] * 3


async def test_a_retry_after_longer_than_the_longest_wait_fails_at_once(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    path = companyfacts_path(EXAMPLE_CIK)
    sec_stand_in.scripts[path] = [Scripted(429, {"Retry-After": "600"})]

    with pytest.raises(SecHttpError, match="asks to wait 600 s"):
        await fetch_document(sec_client(http, sec_stand_in.url), sec_stand_in.url + path)

    assert len(sec_stand_in.requests) == 1


async def test_a_refusal_for_an_undeclared_client_says_to_set_the_user_agent(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    path = companyfacts_path(EXAMPLE_CIK)
    sec_stand_in.scripts[path] = [Scripted(403)]

    with pytest.raises(SecHttpError, match="FINQ_SEC_USER_AGENT"):
        await fetch_document(sec_client(http, sec_stand_in.url), sec_stand_in.url + path)


async def test_an_unknown_cik_is_reported_as_an_unknown_cik(
    sec_stand_in: StandInSec, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    with pytest.raises(UnknownCikError, match="unknown CIK 0000000042") as raised:
        await download_company(
            sec_client(http, sec_stand_in.url), "0000000042", tmp_path, lambda _: None
        )

    assert raised.value.code == "unknown_cik"
    # A 404 is an answer, not a failure to retry.
    assert sec_stand_in.paths() == [submissions_path("CIK0000000042.json")]


def test_retry_after_is_read_as_seconds_or_as_a_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("7", now) == 7.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == (
        30.0
    )
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None


async def test_rate_limiter_never_starts_more_than_ten_requests_a_second(
    sec_stand_in: StandInSec, http: httpx.AsyncClient
) -> None:
    sec = sec_client(http, sec_stand_in.url)
    url = sec_stand_in.url + submissions_path(f"CIK{EXAMPLE_CIK}.json")

    started = time.monotonic()
    async with asyncio.TaskGroup() as group:
        for _ in range(25):
            group.create_task(fetch_document(sec, url))
    elapsed = time.monotonic() - started

    arrivals = sorted(seen.arrived for seen in sec_stand_in.requests)
    assert len(arrivals) == 25
    # Any eleven consecutive arrivals span at least a second: no one-second window, however
    # placed, holds more than ten.
    spans = [later - earlier for earlier, later in zip(arrivals, arrivals[10:], strict=False)]
    assert min(spans) >= 1.0, spans
    # Two full windows must pass before the 21st request may start.
    assert elapsed >= 2.0
    print(f"25 requests in {elapsed:.2f} s; shortest span of 11 arrivals {min(spans):.3f} s")


# --- which company ---------------------------------------------------------------------------


def test_a_cik_is_read_in_any_of_its_spellings() -> None:
    assert cik_of_identifier("320193") == cik_of_identifier("CIK0000320193") == "0000320193"
    assert cik_of_identifier("AAPL") is None


def test_a_company_already_held_keeps_its_symbol_whatever_ticker_names_it() -> None:
    known = {"GOOGL": "0001652044"}
    sec_map = {"GOOG": "0001652044", "MSFT": "0000789019"}

    def stored_as(given: str, ticker_map: dict[str, str] | None) -> str | None:
        request = resolve_company(given, known, ticker_map)
        assert request is not None
        return request.symbol

    assert resolve_company("goog", known, None) is None  # only SEC's list can tell
    assert stored_as("goog", sec_map) == "GOOGL"
    assert stored_as("1652044", None) == "GOOGL"
    assert stored_as("msft", sec_map) == "MSFT"
    with pytest.raises(IngestError, match="unknown ticker ZZZZ"):
        resolve_company("ZZZZ", known, sec_map)


def test_offline_tickers_come_from_the_submissions_files(tmp_path: Path) -> None:
    offline_dir = write_offline_directory(tmp_path / "sec")
    assert tickers_in_directory(offline_dir) == {"EXMP": EXAMPLE_CIK}


# --- the command ---------------------------------------------------------------------------------


async def test_without_a_network_the_files_are_read_from_the_directory(
    database: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    offline_dir = write_offline_directory(tmp_path / "sec")
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    messages: list[str] = []
    conn = await asyncpg.connect(database)
    try:
        outcome = await ingest_sec(
            conn,
            sec_client(http, closed),
            ["EXMP"],
            save_dir=tmp_path / "downloads",
            offline_dir=offline_dir,
            report=messages.append,
        )
        revenue = await conn.fetchval(
            "SELECT value FROM metric_values WHERE symbol = 'EXMP' AND metric = 'revenue' "
            "AND period_type = 'annual' AND fiscal_year = 2023"
        )
        filings = await conn.fetchval("SELECT count(*) FROM filings WHERE symbol = 'EXMP'")
    finally:
        await conn.close()

    assert outcome.failed == {}
    assert outcome.offline_reason is not None and "cannot connect" in outcome.offline_reason
    assert any(m.startswith("no network") and str(offline_dir) in m for m in messages), messages
    assert (revenue, filings) == (150e6, 3)
    assert not (tmp_path / "downloads").exists()


async def run_sec_finq(*args: str, database: str, sec_url: str, home: Path) -> tuple[int, str, str]:
    return await run_finq(
        *args,
        database=database,
        FINQ_HOME=str(home),
        FINQ_SEC_DATA_URL=sec_url,
        FINQ_SEC_WWW_URL=sec_url,
        FINQ_SEC_USER_AGENT=USER_AGENT,
        FINQ_SEC_BACKOFF_SECONDS="0.01",
    )


async def test_offline_reads_the_files_and_makes_no_request(
    database: str, sec_stand_in: StandInSec, tmp_path: Path
) -> None:
    offline_dir = write_offline_directory(tmp_path / "sec")

    code, out, err = await run_sec_finq(
        "ingest", "sec", "--offline", "--from-dir", str(offline_dir), "1234",
        database=database, sec_url=sec_stand_in.url, home=tmp_path,
    )  # fmt: skip

    assert code == 0, err
    assert f"offline: reading SEC files from {offline_dir}" in out
    assert f"1234 (CIK {EXAMPLE_CIK}): reading files in {offline_dir}" in out
    # Named by the ticker its submissions file gives.
    assert f"EXMP (CIK {EXAMPLE_CIK}): loaded 13 metric values (13 changed), 3 filings" in out
    assert sec_stand_in.requests == []


async def test_a_ticker_nobody_holds_is_looked_up_in_secs_ticker_map(
    database: str, sec_stand_in: StandInSec, tmp_path: Path
) -> None:
    code, out, err = await run_sec_finq(
        "ingest", "sec", "exmp", "--save-dir", str(tmp_path / "downloads"),
        database=database, sec_url=sec_stand_in.url, home=tmp_path,
    )  # fmt: skip

    assert code == 0, err
    assert sec_stand_in.paths() == [
        "/files/company_tickers.json",
        submissions_path(f"CIK{EXAMPLE_CIK}.json"),
        companyfacts_path(EXAMPLE_CIK),
    ]
    assert f"EXMP (CIK {EXAMPLE_CIK}): fetching from {sec_stand_in.url}" in out
    saved = tmp_path / "downloads" / "companyfacts" / f"CIK{EXAMPLE_CIK}.json"
    assert saved.read_bytes() == sec_stand_in.documents[companyfacts_path(EXAMPLE_CIK)]


async def test_an_unknown_cik_fails_that_company_and_the_command(
    database: str, sec_stand_in: StandInSec, tmp_path: Path
) -> None:
    code, out, err = await run_sec_finq(
        "ingest", "sec", "42", "EXMP", "--save-dir", str(tmp_path / "downloads"),
        database=database, sec_url=sec_stand_in.url, home=tmp_path,
    )  # fmt: skip

    assert code == 1
    assert "42: failed: unknown CIK 0000000042" in out
    # The other company is still loaded.
    assert "EXMP (CIK 0000001234): loaded" in out
    assert "1 of 2 failed" in err


async def test_ingest_sec_loads_the_same_values_as_the_file_ingest(
    database: str, tmp_path: Path
) -> None:
    shared = require_shared_data("sec")
    documents = {
        companyfacts_path(TESLA_CIK): (
            shared / "companyfacts" / f"CIK{TESLA_CIK}.json"
        ).read_bytes()
    }
    for path in sorted((shared / "submissions").glob(f"CIK{TESLA_CIK}*.json")):
        documents[submissions_path(path.name)] = path.read_bytes()
    downloads = tmp_path / "downloads"

    with StandInSec(documents) as stand_in:
        code, out, err = await run_sec_finq(
            "ingest", "sec", "TSLA", "--save-dir", str(downloads),
            database=database, sec_url=stand_in.url, home=tmp_path,
        )  # fmt: skip
        requested = stand_in.paths()

    assert code == 0, err
    # Tesla is in the bundled dataset: its CIK needs no ticker map.
    assert requested == [
        submissions_path(f"CIK{TESLA_CIK}.json"),
        submissions_path(f"CIK{TESLA_CIK}-submissions-001.json"),
        companyfacts_path(TESLA_CIK),
    ]
    for line in ("submissions CIK0001318605.json", "submissions page", "companyfacts"):
        assert line in out
    _, expected_values = parse_companyfacts_files(
        [shared / "companyfacts" / f"CIK{TESLA_CIK}.json"]
    )
    expected_filings = read_submissions_files([shared / "submissions" / f"CIK{TESLA_CIK}.json"])
    conn = await asyncpg.connect(database)
    try:
        stored = await conn.fetch(
            "SELECT metric, period_type, fiscal_year, fiscal_quarter, value, provenance "
            "FROM metric_values WHERE symbol = 'TSLA'"
        )
        filings = await conn.fetchval("SELECT count(*) FROM filings WHERE symbol = 'TSLA'")
    finally:
        await conn.close()

    assert {tuple(row) for row in stored} == {
        (v.metric, v.period_type, v.fiscal_year, v.fiscal_quarter, v.value, v.provenance)
        for v in expected_values
    }
    assert filings == len(expected_filings.filings)
    # The download is the bytes SEC sent, so an offline rerun reads the very same thing.
    for path, body in documents.items():
        folder = "companyfacts" if path.startswith("/api/") else "submissions"
        assert (downloads / folder / Path(path).name).read_bytes() == body


async def test_the_directory_of_filers_is_fetched_from_sec_kept_and_loaded(
    database: str, sec_stand_in: StandInSec, tmp_path: Path
) -> None:
    code, out, err = await run_sec_finq(
        "ingest", "directory", "--online",
        database=database, sec_url=sec_stand_in.url, home=tmp_path,
    )  # fmt: skip

    assert code == 0, err
    kept = tmp_path / "sec" / "company_tickers.json"
    assert f"fetched SEC's directory into {kept}" in out
    assert f"loaded 1 filers from {kept}" in out
    assert [(seen.path, seen.user_agent) for seen in sec_stand_in.requests] == [
        ("/files/company_tickers.json", USER_AGENT)
    ]
    conn = await asyncpg.connect(database)
    try:
        row = await conn.fetchrow("SELECT cik, name, tickers FROM sec_filers")
    finally:
        await conn.close()
    assert (row["cik"], row["name"], row["tickers"]) == (int(EXAMPLE_CIK), "Example Corp", ["EXMP"])


async def test_a_directory_sec_will_not_send_is_a_clear_failure(
    database: str, sec_stand_in: StandInSec, tmp_path: Path
) -> None:
    sec_stand_in.documents.pop("/files/company_tickers.json")

    code, _, err = await run_sec_finq(
        "ingest", "directory", "--online",
        database=database, sec_url=sec_stand_in.url, home=tmp_path,
    )  # fmt: skip

    assert code == 1
    assert err.startswith("ingest failed: SEC's directory:"), err
    assert "Traceback" not in err
