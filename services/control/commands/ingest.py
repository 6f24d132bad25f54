"""`finq ingest KIND ...`: SEC companyfacts, submissions and price files, the bundled dataset,
documents and filings folders to search, and companies fetched from SEC EDGAR."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from services.control.commands import Subparsers
from services.control.commands.database_setup import maintain_chunk_index, prepare_database
from services.control.progress import Progress, Step
from services.control.settings import ControlSettings

if TYPE_CHECKING:
    from services.ingest.sec_api import SecClient


def register(subparsers: Subparsers) -> None:
    ingest = subparsers.add_parser("ingest", help="load data into the database")
    ingest_kinds = ingest.add_subparsers(dest="kind", required=True)
    facts = ingest_kinds.add_parser("companyfacts", help="SEC XBRL companyfacts JSON files")
    facts.add_argument("paths", nargs="+")
    facts.add_argument("--symbol", default=None, help="the ticker, when it cannot be found")
    facts.set_defaults(handler=command_ingest)
    submissions = ingest_kinds.add_parser(
        "submissions", help="SEC submissions JSON files (the filings list of a company)"
    )
    submissions.add_argument("paths", nargs="+")
    submissions.add_argument("--symbol", default=None, help="the ticker, instead of tickers[0]")
    submissions.set_defaults(handler=command_ingest)
    prices = ingest_kinds.add_parser(
        "prices", help="daily price CSVs (Date,Open,High,Low,Close,Adj Close,Volume)"
    )
    prices.add_argument("paths", nargs="+")
    prices.add_argument("--symbol", default=None, help="the ticker, instead of the file name")
    prices.set_defaults(handler=command_ingest)
    ingest_kinds.add_parser("default", help="the bundled default dataset").set_defaults(
        handler=command_ingest
    )
    docs = ingest_kinds.add_parser(
        "docs", help="documents to search: PDF, EDGAR HTML, DOCX, TXT, MD, course files"
    )
    docs.add_argument("paths", nargs="+", help="files or folders")
    docs.add_argument(
        "--collection", default=None, help="default: courses for course files, else uploads"
    )
    docs.add_argument("--symbol", default=None, help="the company the documents are about")
    docs.add_argument("--form", default=None, help="e.g. 10-K")
    docs.add_argument("--fiscal-year", type=int, default=None)
    docs.add_argument("--fiscal-quarter", type=int, default=None, choices=[1, 2, 3, 4])
    docs.add_argument("--title", default=None)
    docs.add_argument("--force", action="store_true", help="embed again even if unchanged")
    docs.set_defaults(handler=command_ingest_documents)
    filings = ingest_kinds.add_parser(
        "filings",
        help="a folder of 10-K/10-Q filings (PDF or EDGAR HTML), sub-folders named by ticker",
    )
    filings.add_argument("folder")
    filings.add_argument("--force", action="store_true", help="embed again even if unchanged")
    filings.set_defaults(handler=command_ingest_documents)
    directory = ingest_kinds.add_parser(
        "directory",
        help="SEC's directory of filers (company_tickers.json), every company with a ticker",
        description="Load SEC's company_tickers.json (every filer with a ticker, about "
        "10,000) into the directory the router names companies from, replacing what was "
        "there; former names come from the submissions files beside it, where there are any.",
    )
    source = directory.add_mutually_exclusive_group()
    source.add_argument(
        "--file",
        default=None,
        metavar="PATH",
        help="the offline copy (default: company_tickers.json in FINQ_SEC_OFFLINE_DIR, "
        "else SEC's current one)",
    )
    source.add_argument(
        "--online",
        action="store_true",
        help="fetch SEC's current company_tickers.json (FINQ_SEC_USER_AGENT), kept in "
        "FINQ_HOME/sec",
    )
    directory.set_defaults(handler=command_ingest_directory)
    sec = ingest_kinds.add_parser(
        "sec",
        help="companyfacts and submissions from SEC EDGAR (or files when offline)",
        description="Fetch each company's companyfacts and submissions JSON from SEC "
        "(FINQ_SEC_USER_AGENT, at most 10 requests a second) and load them as "
        "`ingest companyfacts` and `ingest submissions` do. Without a network, or with "
        "--offline, the files are read from --from-dir.",
    )
    sec.add_argument("companies", nargs="+", metavar="TICKER|CIK")
    sec.add_argument("--offline", action="store_true", help="read files, make no requests")
    sec.add_argument(
        "--from-dir",
        default=None,
        metavar="DIR",
        help="where offline files are: DIR/companyfacts/CIK##########.json and "
        "DIR/submissions/CIK##########.json (default FINQ_SEC_OFFLINE_DIR, ../shared/data/sec)",
    )
    sec.add_argument(
        "--save-dir",
        default=None,
        metavar="DIR",
        help="where downloads are written, in the same layout (default FINQ_HOME/sec)",
    )
    sec.set_defaults(handler=command_ingest_sec)


def command_ingest(args: argparse.Namespace, settings: ControlSettings) -> int:
    import asyncpg

    from services.ingest.dataset import (
        DEFAULT_DATASET_DIR,
        ingest_companyfacts_files,
        load_dataset,
        read_dataset,
    )
    from services.ingest.filings import ingest_submissions_files
    from services.ingest.prices import ingest_price_files

    async def run() -> Any:
        await prepare_database(settings.operator_dsn, load_default=False)
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            if args.kind == "default":
                return await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
            if args.kind == "submissions":
                paths = [Path(p) for p in args.paths]
                return await ingest_submissions_files(conn, paths, args.symbol)
            if args.kind == "prices":
                return await ingest_price_files(conn, [Path(p) for p in args.paths], args.symbol)
            return await ingest_companyfacts_files(conn, [Path(p) for p in args.paths], args.symbol)
        finally:
            await conn.close()

    try:
        print(asyncio.run(run()))
    except Exception as error:
        print(f"ingest failed: {error}", file=sys.stderr)
        return 1
    return 0


def command_ingest_documents(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq ingest docs PATH…` and `finq ingest filings DIR`: parse, chunk, embed, store."""
    from services.ingest.documents import (
        DocumentSettings,
        document_files,
        ingest_file,
        ingest_filings_folder,
    )
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder

    progress = Progress()
    step: Step | None = None

    def on_file(number: int, count: int, path: Path) -> None:
        nonlocal step
        if step is None:
            step = progress.step("ingesting filings", total=count)
        step.start(str(path.relative_to(args.folder)))

    async def run() -> list[Any]:
        await prepare_database(settings.operator_dsn, load_default=False, progress=progress)
        pool = await create_pool(settings.operator_dsn, min_size=1, max_size=4)
        try:
            progress.above("loading the embedding model")
            with progress.waiting("loading the embedding model"):
                embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
            chunking = DocumentSettings()
            if args.kind == "filings":
                return await ingest_filings_folder(
                    pool, embedder, Path(args.folder), chunking, True, args.force, on_file
                )
            overrides = {
                "symbol": args.symbol,
                "form": args.form,
                "fiscal_year": args.fiscal_year,
                "fiscal_quarter": args.fiscal_quarter,
                "title": args.title,
            }
            stored = []
            paths = document_files(Path(p) for p in args.paths)
            with progress.step("ingesting documents", total=len(paths)) as documents:
                for path in paths:
                    progress.above(f"{path}")
                    documents.start(path.name)
                    stored.append(
                        await ingest_file(
                            pool,
                            embedder,
                            path,
                            collection=args.collection,
                            settings=chunking,
                            overrides=overrides,
                            show_progress_bar=True,
                            force=args.force,
                        )
                    )
            return stored
        finally:
            await pool.close()

    async def run_and_size_index() -> list[Any]:
        stored = await run()
        # After a failure the next start sizes it (prepare_database), so it is not done here.
        await maintain_chunk_index(settings.operator_dsn, progress)
        return stored

    try:
        stored = asyncio.run(run_and_size_index())
    except Exception as error:
        if step is not None:
            step.finish("stopped")
        print(f"ingest failed: {error}", file=sys.stderr)
        return 1
    if step is not None:
        step.finish()
    for item in stored:
        pages = f"{item.nonempty_pages}/{item.pages} pages, " if item.pages else ""
        how = "unchanged, kept" if item.reused else f"{item.seconds:.1f} s"
        print(f"{item.title}: {pages}{item.tables} tables, {item.chunks} chunks ({how})")
    return 0


def sec_http_options(settings: ControlSettings) -> dict[str, Any]:
    """The HTTP client SEC is asked with: its User-Agent rule, the run's timeout."""
    from services.ingest.sec_api import sec_headers

    return {
        "headers": sec_headers(settings.sec_user_agent),
        "timeout": settings.sec_timeout_seconds,
        "follow_redirects": True,
    }


def sec_client(settings: ControlSettings, http: httpx.AsyncClient, **hooks: Any) -> SecClient:
    """A SecClient over `http` with the settings' pace, endpoints and retries; `hooks` are
    its progress callbacks (on_request, on_pacing, on_retry_wait)."""
    from services.ingest.sec_api import RateLimiter, RetryPolicy, SecClient, SecEndpoints

    return SecClient(
        http=http,
        limiter=RateLimiter(settings.sec_max_requests_per_second),
        endpoints=SecEndpoints(settings.sec_data_url, settings.sec_www_url),
        policy=RetryPolicy(
            retries=settings.sec_retries,
            backoff_seconds=settings.sec_backoff_seconds,
            max_wait_seconds=settings.sec_max_wait_seconds,
        ),
        **hooks,
    )


def command_ingest_directory(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq ingest directory [--file PATH | --online]`: see shared.sec_filers."""
    import asyncpg

    from services.ingest.sec_api import SecApiError, download_ticker_map
    from shared.sec_filers import load_sec_directory, read_sec_directory

    offline = settings.sec_offline_dir / "company_tickers.json"
    path = Path(args.file) if args.file else offline
    online = args.online or (not args.file and not offline.is_file())
    if online:
        path = settings.home / "sec" / "company_tickers.json"
    elif not path.is_file():
        print(f"ingest failed: no directory file at {path} (give one with --file)", file=sys.stderr)
        return 1

    async def run() -> int:
        if online:
            async with httpx.AsyncClient(**sec_http_options(settings)) as http:
                await download_ticker_map(sec_client(settings, http), path)
            print(f"fetched SEC's directory into {path}")
        # Former names from the submissions files beside it: `finq ingest sec` keeps its
        # downloads in the same layout.
        submissions = path.parent / "submissions"
        filers = read_sec_directory(path, submissions if submissions.is_dir() else None)
        await prepare_database(settings.operator_dsn, load_default=False)
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            return await load_sec_directory(conn, filers)
        finally:
            await conn.close()

    try:
        loaded = asyncio.run(run())
    except SecApiError as error:
        print(f"ingest failed: SEC's directory: {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError, asyncpg.PostgresError) as error:
        print(f"ingest failed: {path}: {error}", file=sys.stderr)
        return 1
    print(f"loaded {loaded:,} filers from {path}")
    return 0


def command_ingest_sec(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq ingest sec TICKER|CIK...`: see services.ingest.sec_api."""
    import asyncpg

    from services.ingest.sec_api import SecIngestOutcome, ingest_sec

    offline_dir = Path(args.from_dir) if args.from_dir else settings.sec_offline_dir
    save_dir = Path(args.save_dir) if args.save_dir else settings.home / "sec"
    progress = Progress()
    companies = progress.step("ingesting from SEC", total=len(args.companies))

    def report(line: str) -> None:
        # Flushed per line: a download takes seconds, and output may be a pipe.
        progress.above(line)

    async def run() -> SecIngestOutcome:
        await prepare_database(settings.operator_dsn, load_default=False, progress=progress)
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            if args.offline:
                return await ingest_sec(
                    conn,
                    None,
                    args.companies,
                    save_dir=save_dir,
                    offline_dir=offline_dir,
                    report=report,
                    on_company=companies.start,
                )
            async with httpx.AsyncClient(**sec_http_options(settings)) as http:
                sec = sec_client(
                    settings,
                    http,
                    on_request=companies.detail,
                    on_pacing=companies.detail,
                    on_retry_wait=progress.note,
                )
                return await ingest_sec(
                    conn,
                    sec,
                    args.companies,
                    save_dir=save_dir,
                    offline_dir=offline_dir,
                    report=report,
                    on_company=companies.start,
                )
        finally:
            await conn.close()

    if not args.offline and "set FINQ_SEC_USER_AGENT" in settings.sec_user_agent:
        print("note: SEC asks who is calling; set FINQ_SEC_USER_AGENT='your-name your@email'")
    try:
        with companies:
            outcome = asyncio.run(run())
    except Exception as error:
        print(f"ingest failed: {error}", file=sys.stderr)
        return 1
    if outcome.failed:
        print(f"{len(outcome.failed)} of {len(args.companies)} failed", file=sys.stderr)
        return 1
    return 0
