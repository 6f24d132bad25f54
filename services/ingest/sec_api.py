"""SEC EDGAR over HTTP for `finq ingest sec`: fetch a company's companyfacts and submissions
JSON politely, and load them with the same code as `finq ingest companyfacts` and
`finq ingest submissions`.

SEC's fair-access policy asks every automated client to say who it is (a User-Agent of
"name email") and to make at most 10 requests a second; a client that does not is refused
(403) or throttled (429) for a while. So:

- one `httpx.AsyncClient` carries the declared User-Agent for the whole run
  (`sec_headers`);
- `RateLimiter` lets at most 10 requests start in any window of `RATE_WINDOW_SECONDS`,
  retries included. aiolimiter, the usual library, is a leaky bucket: a full bucket lets 10
  go at once and drips 10 more in over the next second, up to ~20 in one window, which is
  what SEC counts; and it would be a new dependency for a dozen lines;
- `fetch_document` retries 429, 5xx and transport failures with exponential backoff, waits
  what a Retry-After says (up to `RetryPolicy.max_wait_seconds`), and raises typed errors:
  `UnknownCikError` (404), `SecUnreachableError` (no connection at all: refused, DNS),
  `SecHttpError` (anything else that did not give a JSON document).

Per company (`download_company`): the submissions JSON first, since a 404 there means SEC
has no such CIK; then the older-filings pages it lists (`filings.files`); then companyfacts,
where a 404 after the submissions answered means the company files no XBRL financial data,
so only its filings are loaded. Every body is written unchanged to
DIR/submissions/CIK##########.json and DIR/companyfacts/CIK##########.json, the layout of
../shared/data/sec, and loaded from there by `ingest_companyfacts_files` and
`ingest_submissions_files` (`load_company_files`): a live ingest and a file ingest of the
same bytes store the same rows, and `--offline --from-dir DIR` replays a download.

Offline (asked for, or when SEC cannot be reached at all) the same files are read from a
directory instead (`offline_company_files`), and the report says so. Once the network has
failed the rest of the run stays offline rather than waiting out the retries again.

A ticker becomes a CIK from the companies the database holds, then the bundled dataset's
companies.json (no request needed), then SEC's company_tickers.json, fetched at most once
(offline: a company_tickers.json in the directory, else the tickers in its submissions
files). A company the database or dataset already holds keeps its symbol there.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from services.ingest.companyfacts import (
    IngestError,
    company_from_submissions,
    normalize_cik,
    normalize_symbol,
    read_json,
)
from services.ingest.dataset import (
    COMPANIES_FILE,
    DEFAULT_DATASET_DIR,
    ingest_companyfacts_files,
)
from services.ingest.filings import ingest_submissions_files

SEC_DATA_URL = "https://data.sec.gov"
SEC_WWW_URL = "https://www.sec.gov"
# SEC wants "name email"; the default says where to put them rather than pretend to be one.
DEFAULT_USER_AGENT = "finq/0.1 (contact: set FINQ_SEC_USER_AGENT)"
SEC_MAX_REQUESTS_PER_SECOND = 10
# SEC counts requests as they arrive, and two requests started a second apart can arrive
# closer together than that (a new connection's handshake delays the first); a tenth of a
# second is far more than that jitter and costs under 10% of the allowed rate.
RATE_WINDOW_SECONDS = 1.1

COMPANYFACTS_DIR = "companyfacts"
SUBMISSIONS_DIR = "submissions"
TICKER_MAP_FILE = "company_tickers.json"
# A submissions page name as SEC lists it; anything else in `filings.files` is not fetched,
# so a document cannot make the client request an arbitrary path.
_PAGE_NAME = re.compile(r"^CIK\d{10}-submissions-\d{3}\.json$")
_CIK_TEXT = re.compile(r"^(?:CIK)?0*(\d{1,10})$", re.IGNORECASE)

Report = Callable[[str], None]


class SecApiError(IngestError):
    """A request to SEC that gave no usable document; `code` says which kind of failure."""

    code = "sec_error"


class UnknownCikError(SecApiError):
    code = "unknown_cik"


class SecUnreachableError(SecApiError):
    """No connection could be made at all (refused, DNS failure): there is no network."""

    code = "sec_unreachable"


class SecHttpError(SecApiError):
    code = "sec_http_error"


class NotFoundError(SecApiError):
    code = "not_found"


# --- politeness: rate and retries ---------------------------------------------------


class RateLimiter:
    """At most `max_starts` acquisitions in any window of `period` seconds.

    A sliding log of the last starts: a caller waits until the oldest start in the log is a
    full period old. The lock queues waiters in arrival order (asyncio.Lock is fair).
    """

    def __init__(
        self,
        max_starts: int = SEC_MAX_REQUESTS_PER_SECOND,
        period: float = RATE_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_starts < 1 or period <= 0:
            raise ValueError("a rate limiter needs max_starts >= 1 and period > 0")
        self.max_starts = max_starts
        self.period = period
        self._clock = clock
        self._starts: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def acquire(self, on_wait: Callable[[float], None] | None = None) -> None:
        """Wait for a start; `on_wait` hears how long, before each wait the window makes."""
        async with self._lock:
            while True:
                now = self._clock()
                while self._starts and now - self._starts[0] >= self.period:
                    self._starts.popleft()
                if len(self._starts) < self.max_starts:
                    self._starts.append(now)
                    return
                wait = self._starts[0] + self.period - now
                if on_wait is not None:
                    on_wait(wait)
                # Waiting on the clock is the point here: there is no event to wait on.
                await asyncio.sleep(wait)


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4  # after the first try: 5 tries in all
    backoff_seconds: float = 0.5  # 0.5, 1, 2, 4 s
    # A Retry-After longer than this is not waited out: SEC's block after a burst lasts
    # about ten minutes, and a command that hangs that long looks broken.
    max_wait_seconds: float = 60.0

    def backoff(self, attempt: int) -> float:
        return float(self.backoff_seconds * 2**attempt)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class SecEndpoints:
    data_url: str = SEC_DATA_URL  # companyfacts and submissions
    www_url: str = SEC_WWW_URL  # the ticker map

    def submissions(self, name: str) -> str:
        return f"{self.data_url.rstrip('/')}/submissions/{name}"

    def companyfacts(self, cik: str) -> str:
        return f"{self.data_url.rstrip('/')}/api/xbrl/companyfacts/CIK{cik}.json"

    def ticker_map(self) -> str:
        return f"{self.www_url.rstrip('/')}/files/{TICKER_MAP_FILE}"


def _unheard(_: str) -> None:
    pass


@dataclass(frozen=True)
class SecClient:
    """What every request needs: the one HTTP client, the run's limiter, where and how.

    The three `on_` hooks are for showing progress, and hear a line each: the document
    each try asks for ("submissions CIK0000320193.json"); a wait of the client's own pace
    (`on_pacing`, frequent and short); a wait before a retry, which SEC asked for or the
    backoff makes (`on_retry_wait`, rare and worth telling)."""

    http: httpx.AsyncClient
    limiter: RateLimiter
    endpoints: SecEndpoints = field(default_factory=SecEndpoints)
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    on_request: Callable[[str], None] = _unheard
    on_pacing: Callable[[str], None] = _unheard
    on_retry_wait: Callable[[str], None] = _unheard


def sec_headers(user_agent: str) -> dict[str, str]:
    # SEC asks for compressed transfers too; httpx decodes gzip itself.
    return {"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"}


def _document_name(url: str) -> str:
    """What a URL asks for, as a progress line names it: "companyfacts CIK0000320193.json"."""
    path = httpx.URL(url).path
    kind = "companyfacts" if "/companyfacts/" in path else path.strip("/").split("/")[0]
    return f"{kind} {path.rsplit('/', 1)[-1]}"


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.2g} s"


def _json_object(body: bytes, url: str) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except ValueError as error:
        raise SecHttpError(f"{url} did not return JSON: {error}") from error
    if not isinstance(doc, dict):
        raise SecHttpError(f"{url} did not return a JSON object")
    return doc


async def fetch_document(sec: SecClient, url: str) -> tuple[bytes, dict[str, Any]]:
    """GET a JSON object: the body as sent and its parse. Retries 429, 5xx and transport
    failures (see the module docstring); every try waits its turn at the rate limiter."""
    policy = sec.policy
    failure = ""
    unreachable = False
    document = _document_name(url)

    def pacing(seconds: float) -> None:
        sec.on_pacing(
            f"waiting {seconds:.1f} s for SEC's rate limit "
            f"(at most {sec.limiter.max_starts} requests in {sec.limiter.period:g} s)"
        )

    for attempt in range(policy.retries + 1):
        await sec.limiter.acquire(pacing)
        sec.on_request(document if attempt == 0 else f"{document}, try {attempt + 1}")
        # Why the wait before the next try, as the progress line says it.
        waiting_for = ""
        try:
            response = await sec.http.get(url)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            failure, unreachable = f"cannot connect ({error or type(error).__name__})", True
            wait = policy.backoff(attempt)
        except httpx.TransportError as error:
            # Read errors and timeouts mid-body: the server is there, the transfer failed.
            failure, unreachable = f"{type(error).__name__}: {error}", False
            wait = policy.backoff(attempt)
        else:
            status = response.status_code
            if status == 200:
                return response.content, _json_object(response.content, url)
            if status == 404:
                raise NotFoundError(f"{url}: 404 Not Found")
            if status == 403:
                raise SecHttpError(
                    f"{url}: 403 Forbidden. SEC refuses clients without a declared "
                    "User-Agent: set FINQ_SEC_USER_AGENT to 'your-name your@email'"
                )
            if status != 429 and status < 500:
                raise SecHttpError(f"{url}: HTTP {status} {response.reason_phrase}")
            failure, unreachable = f"HTTP {status} {response.reason_phrase}", False
            asked = retry_after_seconds(response.headers.get("Retry-After"))
            if asked is not None and asked > policy.max_wait_seconds:
                raise SecHttpError(
                    f"{url}: {failure}, and SEC asks to wait {asked:.0f} s "
                    f"(more than {policy.max_wait_seconds:.0f}): try again later"
                )
            wait = asked if asked is not None else policy.backoff(attempt)
            if asked is not None:
                asker = "SEC's rate limit" if status == 429 else "SEC's Retry-After"
                waiting_for = f" for {asker} ({failure})"
        if attempt < policy.retries:
            sec.on_retry_wait(
                f"waiting {_seconds(wait)}{waiting_for} before retrying {document}"
                if waiting_for
                else f"waiting {_seconds(wait)} before retrying {document} ({failure})"
            )
            await asyncio.sleep(wait)
    tries = policy.retries + 1
    if unreachable:
        raise SecUnreachableError(f"{url}: {failure} after {tries} tries")
    raise SecHttpError(f"{url}: {failure} after {tries} tries; SEC may be down, try later")


# --- files ----------------------------------------------------------------------------


def _write_atomically(path: Path, body: bytes) -> None:
    # A run interrupted mid-write leaves the previous file (or none), never half a document.
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(body)
    os.replace(partial, path)


@dataclass(frozen=True)
class CompanyFiles:
    """A company's SEC files in the ../shared/data/sec layout; either may be absent."""

    cik: str
    submissions: Path | None
    companyfacts: Path | None
    pages: tuple[Path, ...] = ()


def listed_pages(submissions: Mapping[str, Any]) -> list[str]:
    """The older-filings page names a submissions document lists."""
    files = (submissions.get("filings") or {}).get("files") or []
    names = [entry.get("name") for entry in files if isinstance(entry, Mapping)]
    return [name for name in names if isinstance(name, str) and _PAGE_NAME.match(name)]


async def download_company(
    sec: SecClient, cik: str, directory: Path, report: Report = print
) -> CompanyFiles:
    """Fetch a company's submissions (with its pages) and companyfacts into `directory`."""
    name = f"CIK{cik}.json"
    try:
        body, submissions = await fetch_document(sec, sec.endpoints.submissions(name))
    except NotFoundError as error:
        raise UnknownCikError(
            f"unknown CIK {cik}: SEC has no submissions for it ({error}); check the number"
        ) from error
    submissions_path = directory / SUBMISSIONS_DIR / name
    _write_atomically(submissions_path, body)
    report(f"  submissions {name}: {len(body):,} bytes")
    pages: list[Path] = []
    for page in listed_pages(submissions):
        body, _ = await fetch_document(sec, sec.endpoints.submissions(page))
        pages.append(directory / SUBMISSIONS_DIR / page)
        _write_atomically(pages[-1], body)
        report(f"  submissions page {page}: {len(body):,} bytes")
    url = sec.endpoints.companyfacts(cik)
    try:
        body, facts = await fetch_document(sec, url)
    except NotFoundError:
        report(f"  companyfacts {name}: none (SEC has no XBRL financial data for it)")
        return CompanyFiles(cik, submissions_path, None, tuple(pages))
    if "facts" not in facts or normalize_cik(facts.get("cik")) != cik:
        raise SecHttpError(f"{url} did not return the companyfacts of CIK {cik}")
    companyfacts_path = directory / COMPANYFACTS_DIR / name
    _write_atomically(companyfacts_path, body)
    report(f"  companyfacts {name}: {len(body):,} bytes")
    return CompanyFiles(cik, submissions_path, companyfacts_path, tuple(pages))


def offline_company_files(directory: Path, cik: str) -> CompanyFiles:
    """A company's files already in `directory` (../shared/data/sec, or an earlier download)."""
    name = f"CIK{cik}.json"
    submissions = directory / SUBMISSIONS_DIR / name
    companyfacts = directory / COMPANYFACTS_DIR / name
    pages = tuple(sorted((directory / SUBMISSIONS_DIR).glob(f"CIK{cik}-submissions-*.json")))
    files = CompanyFiles(
        cik,
        submissions if submissions.is_file() else None,
        companyfacts if companyfacts.is_file() else None,
        pages,
    )
    if files.submissions is None and files.companyfacts is None:
        raise IngestError(
            f"no SEC files for CIK {cik} in {directory}: looked for "
            f"{COMPANYFACTS_DIR}/{name} and {SUBMISSIONS_DIR}/{name}"
        )
    return files


async def load_company_files(
    conn: asyncpg.Connection, files: CompanyFiles, symbol: str | None
) -> dict[str, Any]:
    """Load with the file ingests: companyfacts first (it writes the full company row, which
    the submissions ingest then leaves alone), then the filings. Pages sit beside the main
    submissions file, where `ingest_submissions_files` picks them up."""
    if files.submissions is None and symbol is None:
        raise IngestError(
            f"CIK {files.cik} has companyfacts but no submissions file to name its ticker: "
            "give the ticker instead of the CIK"
        )
    loaded: dict[str, Any] = {}
    if files.companyfacts is not None:
        loaded["companyfacts"] = await ingest_companyfacts_files(conn, [files.companyfacts], symbol)
    if files.submissions is not None:
        loaded["submissions"] = await ingest_submissions_files(conn, [files.submissions], symbol)
    return loaded


# --- which company ----------------------------------------------------------------------


def cik_of_identifier(text: str) -> str | None:
    """The 10-digit CIK if the text is one ("320193", "CIK0000320193"), else None."""
    match = _CIK_TEXT.match(text.strip())
    return f"{int(match.group(1)):010d}" if match else None


def parse_ticker_map(doc: Mapping[str, Any]) -> dict[str, str]:
    """Ticker → CIK from SEC's company_tickers.json ({"0": {"cik_str", "ticker", "title"}})."""
    tickers: dict[str, str] = {}
    for entry in doc.values():
        if not isinstance(entry, Mapping):
            continue
        ticker, cik = entry.get("ticker"), entry.get("cik_str")
        if isinstance(ticker, str) and cik is not None:
            # The map lists a company's main ticker first; keep it if one repeats.
            tickers.setdefault(ticker.upper(), normalize_cik(cik))
    return tickers


def tickers_in_directory(directory: Path) -> dict[str, str]:
    """Ticker → CIK for offline runs: a company_tickers.json in the directory if there is
    one, else the `tickers` of the submissions files in it."""
    ticker_map = directory / TICKER_MAP_FILE
    if ticker_map.is_file():
        return parse_ticker_map(json.loads(ticker_map.read_bytes()))
    tickers: dict[str, str] = {}
    for path in sorted((directory / SUBMISSIONS_DIR).glob("CIK??????????.json")):
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            # Not a submissions file after all; the ticker stays unknown and says so.
            continue
        if not isinstance(doc, dict) or doc.get("cik") is None:
            continue
        for ticker in doc.get("tickers") or []:
            if isinstance(ticker, str):
                tickers.setdefault(ticker.upper(), normalize_cik(doc["cik"]))
    return tickers


async def known_companies(conn: asyncpg.Connection) -> dict[str, str]:
    """Symbol → CIK of the companies the database holds, then the bundled dataset's
    (the database wins); companies without a CIK (prices only) are left out."""
    known: dict[str, str] = {}
    dataset_companies = DEFAULT_DATASET_DIR / COMPANIES_FILE
    if dataset_companies.is_file():
        for row in json.loads(dataset_companies.read_text("utf-8")):
            if row.get("cik"):
                known[row["symbol"]] = normalize_cik(row["cik"])
    for row in await conn.fetch("SELECT symbol, cik FROM companies WHERE cik IS NOT NULL"):
        known[row["symbol"]] = normalize_cik(row["cik"])
    return known


@dataclass(frozen=True)
class CompanyRequest:
    given: str  # as typed: "aapl", "320193"
    cik: str
    # The symbol to store under; None lets the submissions' first ticker name it.
    symbol: str | None


def resolve_company(
    given: str,
    known: Mapping[str, str],
    ticker_map: Mapping[str, str] | None,
    ticker_source: str = "SEC's ticker list",
) -> CompanyRequest | None:
    """The CIK and symbol for a ticker or CIK, or None when only the ticker map can tell
    and it is not loaded yet. Raises IngestError for a ticker nobody knows."""
    cik = cik_of_identifier(given)
    by_cik = {company_cik: symbol for symbol, company_cik in reversed(list(known.items()))}
    if cik is not None:
        return CompanyRequest(given, cik, by_cik.get(cik))
    ticker = normalize_symbol(given)
    if ticker in known:
        return CompanyRequest(given, known[ticker], ticker)
    if ticker_map is None:
        return None
    if ticker not in ticker_map:
        raise IngestError(
            f"unknown ticker {ticker}: neither the database, the bundled dataset nor "
            f"{ticker_source} has it; give its CIK instead"
        )
    cik = ticker_map[ticker]
    # Stored under a symbol the database already uses for the CIK (GOOG → GOOGL), so one
    # company never becomes two.
    return CompanyRequest(given, cik, by_cik.get(cik, ticker))


async def download_ticker_map(sec: SecClient, path: Path) -> Path:
    """SEC's company_tickers.json, as sent, written to `path` (whole or not at all)."""
    body, _ = await fetch_document(sec, sec.endpoints.ticker_map())
    _write_atomically(path, body)
    return path


async def fetch_ticker_map(sec: SecClient) -> dict[str, str]:
    _, doc = await fetch_document(sec, sec.endpoints.ticker_map())
    return parse_ticker_map(doc)


# --- the command ----------------------------------------------------------------------------


@dataclass
class SecIngestOutcome:
    loaded: dict[str, dict[str, Any]] = field(default_factory=dict)  # given → what was loaded
    failed: dict[str, str] = field(default_factory=dict)  # given → why
    offline_reason: str | None = None  # set when files were read instead of SEC


def _ticker_of(files: CompanyFiles) -> str:
    """The symbol the file ingest stored a company under when none was given: the
    submissions file's first ticker (`load_company_files` requires that file then)."""
    if files.submissions is None:
        return f"CIK {files.cik}"
    return company_from_submissions(read_json(files.submissions)).symbol


def _summary(loaded: Mapping[str, Any]) -> str:
    parts = []
    if "companyfacts" in loaded:
        facts = loaded["companyfacts"]
        parts.append(
            f"{facts['metric_values']:,} metric values ({facts['metric_values_changed']:,} changed)"
        )
    if "submissions" in loaded:
        filings = loaded["submissions"]
        parts.append(f"{filings['filings']:,} filings ({filings['filings_changed']:,} changed)")
    return ", ".join(parts)


async def ingest_sec(
    conn: asyncpg.Connection,
    sec: SecClient | None,
    identifiers: Sequence[str],
    *,
    save_dir: Path,
    offline_dir: Path,
    report: Report = print,
    on_company: Callable[[str], None] = _unheard,
) -> SecIngestOutcome:
    """`finq ingest sec`: each company from SEC (or, with `sec` None or no network, from
    `offline_dir`) into the database, one after another; a company that fails is reported
    and the rest go on. `on_company` hears each identifier as its company's turn comes."""
    outcome = SecIngestOutcome()
    if sec is None:
        outcome.offline_reason = "offline"
        report(f"offline: reading SEC files from {offline_dir}")

    def go_offline(error: SecUnreachableError) -> None:
        outcome.offline_reason = str(error)
        report(f"no network ({error}): reading SEC files from {offline_dir} instead")

    known = await known_companies(conn)
    ticker_map: dict[str, str] | None = None
    for given in identifiers:
        on_company(given)
        try:
            request = resolve_company(given, known, ticker_map)
            if request is None:
                if outcome.offline_reason is None and sec is not None:
                    try:
                        ticker_map = await fetch_ticker_map(sec)
                    except SecUnreachableError as error:
                        go_offline(error)
                source = "SEC's ticker list"
                if outcome.offline_reason is not None:
                    ticker_map = tickers_in_directory(offline_dir)
                    source = f"the files in {offline_dir}"
                # With a ticker map at hand the answer is a company or an IngestError.
                request = resolve_company(given, known, ticker_map or {}, source)
            if request is None:
                raise IngestError(f"cannot tell which company {given!r} is")
            label = f"{request.symbol or given.upper()} (CIK {request.cik})"
            files: CompanyFiles | None = None
            if outcome.offline_reason is None and sec is not None:
                report(f"{label}: fetching from {sec.endpoints.data_url}")
                try:
                    files = await download_company(sec, request.cik, save_dir, report)
                except SecUnreachableError as error:
                    go_offline(error)
            if files is None:
                files = offline_company_files(offline_dir, request.cik)
                report(f"{label}: reading files in {offline_dir}")
            loaded = await load_company_files(conn, files, request.symbol)
            symbol = request.symbol or _ticker_of(files)
        except IngestError as error:
            outcome.failed[given] = str(error)
            report(f"{given}: failed: {error}")
            continue
        outcome.loaded[given] = loaded
        report(f"{symbol} (CIK {request.cik}): loaded {_summary(loaded)}")
    return outcome
