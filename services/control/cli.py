"""`finq`: up, down, status, ask, migrate, ingest, data check, aliases and dead letters."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import SecretStr

from services.control.eval_splits import DOCUMENT_ONLY_SPLITS, DOCUMENT_SPLITS
from services.control.portfolio_commands import (
    add_ask_identity,
    add_portfolio_commands,
    ask_headers,
    demo_at_start,
)
from services.control.progress import Progress, Step
from services.control.servers import NatsServer, PostgresServer, ServerError, port_is_open
from services.control.settings import ControlSettings
from services.control.supervisor import ServerWatch, Supervisor
from shared.logs import redact
from shared.subjects import Stage

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from shared.dead_letters import Replayed

STATE_FILE = "state.json"

T = TypeVar("T")


async def prepare_database(
    dsn: str,
    load_default: bool = True,
    load_glossary: bool | None = None,
    service_dsn: str | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Create and migrate the database (as its owner, `dsn`), make the role the services
    connect as (`service_dsn`'s user and password) with the privileges it needs, load the
    bundled dataset unless this version of it is already there (a new finq release's
    dataset is loaded once, over the old one), and the bundled glossary documents that
    changed (with `load_glossary`, by default when the dataset is loaded). Each of these
    says on `progress` that it is under way."""
    import hashlib

    import asyncpg

    from services.ingest.dataset import (
        DEFAULT_DATASET_DIR,
        MANIFEST_FILE,
        load_dataset,
        read_dataset,
    )
    from services.ingest.document_store import ensure_embedding_column
    from shared.db import ensure_database, ensure_service_role, migrate
    from shared.embeddings import EmbeddingSettings

    progress = progress or Progress.silent()
    with progress.waiting("migrating the database"):
        await ensure_database(dsn)
        await migrate(dsn)
        if service_dsn is not None:
            await ensure_service_role(dsn, service_dsn)
        # Typed here, by the owner: the services' role may not change the schema.
        conn = await asyncpg.connect(dsn)
        try:
            await ensure_embedding_column(conn, EmbeddingSettings().dimensions)
        finally:
            await conn.close()
    if load_glossary if load_glossary is not None else load_default:
        await load_glossary_documents(dsn, progress)
    if not load_default:
        return {}
    digest = hashlib.sha256((DEFAULT_DATASET_DIR / MANIFEST_FILE).read_bytes()).hexdigest()
    conn = await asyncpg.connect(dsn)
    try:
        if await conn.fetchval("SELECT true FROM dataset_loads WHERE manifest_sha256 = $1", digest):
            return {}
        with progress.waiting("loading the bundled dataset"):
            counts = await load_dataset(conn, read_dataset(DEFAULT_DATASET_DIR))
        await conn.execute(
            "INSERT INTO dataset_loads (manifest_sha256, counts) VALUES ($1, $2::jsonb)"
            " ON CONFLICT DO NOTHING",
            digest,
            json.dumps(counts),
        )
        return counts
    finally:
        await conn.close()


async def load_glossary_documents(dsn: str, progress: Progress | None = None) -> int:
    """The glossary's explainers and metric definitions, embedded where they changed (the
    embedding model is loaded only then)."""
    progress = progress or Progress.silent()
    from services.ingest.documents import glossary_to_embed, load_glossary
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder

    pool = await create_pool(dsn, min_size=1, max_size=2)
    try:
        pending = await glossary_to_embed(pool)
        if not pending:
            return 0
        with progress.waiting(f"embedding {len(pending)} glossary documents (loading the model)"):
            embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
            stored = await load_glossary(pool, embedder, pending)
        progress.above(f"embedded {len(stored)} glossary documents")
        return len(stored)
    finally:
        await pool.close()


def wait_until_ready(
    url: str,
    supervisor: Supervisor,
    timeout: float,
    watch: ServerWatch | None = None,
    progress: Progress | None = None,
) -> None:
    """Poll the gateway's /readyz until it answers 200, restarting what died meanwhile;
    `progress` is told what is not ready yet, as /readyz names it."""
    progress = progress or Progress.silent()
    deadline = time.monotonic() + timeout
    with progress.waiting(f"waiting for the gateway at {url}") as wait:
        while time.monotonic() < deadline:
            if watch is not None:
                watch.restart_dead()
            supervisor.restart_crashed()
            try:
                ready = httpx.get(f"{url}/readyz", timeout=1.0)
                if ready.status_code == 200:
                    return
                wait.update(waiting_for(ready))
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise ServerError(f"the gateway was not ready within {timeout:g} s; see the logs")


def waiting_for(ready: httpx.Response) -> str:
    """What a not-ready /readyz says is missing, as a progress line: "waiting for router,
    tools to be ready (loading models)"."""
    try:
        message = str(ready.json().get("message", ""))
    except ValueError:
        message = ""
    idle = message.partition("stages not consuming yet: ")[2]
    if idle:
        return f"waiting for {idle} to be ready (loading models)"
    return f"waiting for the gateway: {message or f'HTTP {ready.status_code}'}"


def _parse_replicas(values: list[str]) -> dict[Stage, int]:
    replicas: dict[Stage, int] = {}
    for value in values:
        name, _, count = value.partition("=")
        replicas[Stage(name)] = int(count)
    return replicas


def command_up(args: argparse.Namespace, settings: ControlSettings) -> int:
    home = settings.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    url = f"http://{settings.gateway_host}:{settings.gateway_port}"
    if port_is_open(settings.gateway_port, settings.gateway_host):
        print(f"port {settings.gateway_port} is taken: is finq already up? (finq status)")
        return 1
    postgres = PostgresServer(
        home / "postgres", settings.postgres_port, nice=settings.pipeline_nice
    )
    nats = NatsServer(home / "nats", settings.nats_port, nice=settings.pipeline_nice)
    supervisor: Supervisor | None = None
    progress = Progress()
    # SIGTERM (finq down) unwinds through the same clean-up as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(f"starting PostgreSQL on {settings.postgres_port} and NATS on {settings.nats_port}")
        with progress.waiting(f"waiting for PostgreSQL on port {settings.postgres_port}"):
            postgres.start()
        with progress.waiting(f"waiting for NATS on port {settings.nats_port}"):
            nats.start()
        loaded = asyncio.run(
            prepare_database(postgres.dsn, service_dsn=postgres.service_dsn, progress=progress)
        )
        if loaded:
            print(f"loaded the bundled dataset: {loaded}")
        print(demo_at_start(postgres.dsn, home))
        if settings.filings_dir is not None:
            from services.control.filings_folder import ingest_filings_dir

            asyncio.run(
                ingest_filings_dir(postgres.dsn, settings.filings_dir.resolve(), progress=progress)
            )
        env = {
            **os.environ,
            "FINQ_NATS_URL": nats.url,
            "FINQ_DATABASE_URL": postgres.service_dsn,
            "FINQ_GATEWAY_HOST": settings.gateway_host,
            "FINQ_GATEWAY_PORT": str(settings.gateway_port),
        }
        # Each stage connects to NATS as its own user (shared/nats_permissions.py); the
        # passwords stay in the 0600 file beside NATS's data, never in the state file.
        supervisor = Supervisor(
            home / "logs",
            env,
            _parse_replicas(args.replicas),
            stage_env=nats.credentials_env,
            metrics_base_port=settings.metrics_base_port,
            pipeline_nice=settings.pipeline_nice,
        )
        supervisor.start()
        # The servers are watched like the stages: a dead one is reaped and started again
        # on its port and data; the stages and the gateway reconnect by themselves.
        watch = ServerWatch([postgres, nats], report=progress.above)
        write_state(home, url, postgres, nats, supervisor)
        wait_until_ready(url, supervisor, timeout=120, watch=watch, progress=progress)
        # What was restarted while it got ready has new pids.
        write_state(home, url, postgres, nats, supervisor)
        print(f"finq is up at {url} (docs at {url}/docs); Ctrl-C stops it")
        if metrics := metrics_ports(supervisor):
            listed = ", ".join(f"{name} :{port}" for name, port in metrics.items())
            print(f"metrics at {url}/metrics and http://127.0.0.1:<port>/metrics: {listed}")
        while True:
            time.sleep(0.5)
            restarted = watch.restart_dead() + supervisor.restart_crashed()
            if restarted:
                print(f"restarted {', '.join(restarted)}", flush=True)
                write_state(home, url, postgres, nats, supervisor)
    except KeyboardInterrupt:
        print("\nstopping finq")
    except ServerError as error:
        print(f"finq could not start: {error}", file=sys.stderr)
        return 1
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
        (home / STATE_FILE).unlink(missing_ok=True)
    return 0


def write_state(
    home: Path, url: str, postgres: PostgresServer, nats: NatsServer, supervisor: Supervisor
) -> None:
    processes: dict[str, int | None] = {
        "supervisor": os.getpid(),
        "postgres": postgres.process.pid if postgres.process else None,
        "nats": nats.process.pid if nats.process else None,
    }
    for service in supervisor.services:
        processes[service.name] = service.process.pid if service.process else None
    state = {
        "url": url,
        "postgres_dsn": postgres.dsn,
        "nats_url": nats.url,
        "pids": processes,
        "metrics_ports": metrics_ports(supervisor),
    }
    (home / STATE_FILE).write_text(json.dumps(state, indent=2))


def metrics_ports(supervisor: Supervisor) -> dict[str, int]:
    """Each stage process's /metrics port, by process name."""
    return {
        service.name: service.metrics_port
        for service in supervisor.services
        if service.metrics_port is not None
    }


def read_state(settings: ControlSettings) -> dict[str, Any] | None:
    path = settings.home.resolve() / STATE_FILE
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def process_state(pid: int | None, started_by: float | None = None) -> str:
    """`running`, `zombie` (exited, not reaped by its parent) or `dead` (gone). A process
    created after `started_by` (a time.time()) cannot be the one recorded then: its pid
    was reused, so the recorded one is dead."""
    import psutil

    if not pid:
        return "dead"
    try:
        process = psutil.Process(pid)
        status = process.status()
        created = process.create_time()
    except psutil.NoSuchProcess:
        return "dead"
    except psutil.AccessDenied:
        return "running"  # someone else's process: it exists, and that is all we can see
    if status == psutil.STATUS_ZOMBIE:
        return "zombie"
    if status == psutil.STATUS_DEAD:
        return "dead"
    # create_time is rounded to the clock tick: a second of slack.
    if started_by is not None and created > started_by + 1.0:
        return "dead"
    return "running"


def pid_alive(pid: int | None) -> bool:
    return process_state(pid) == "running"


def command_down(_: argparse.Namespace, settings: ControlSettings) -> int:
    state = read_state(settings)
    if state is None:
        print("finq is not running here")
        return 0
    pid = state["pids"]["supervisor"]
    if pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    for name, child in state["pids"].items():
        if name != "supervisor" and pid_alive(child):
            os.kill(child, signal.SIGTERM)
    (settings.home.resolve() / STATE_FILE).unlink(missing_ok=True)
    print("finq is down")
    return 0


def command_status(_: argparse.Namespace, settings: ControlSettings) -> int:
    """Each process of the state file, `running`, `zombie` or `dead`, and the gateway's
    readiness; exit 1 unless every process runs and the gateway is ready."""
    state = read_state(settings)
    if state is None:
        print(f"finq is not running here (no state in {settings.home.resolve()})")
        return 1
    # Every pid in it was alive when the file was written (it is written again on restarts).
    written = (settings.home.resolve() / STATE_FILE).stat().st_mtime
    healthy = True
    metrics = state.get("metrics_ports", {})
    for name, pid in state["pids"].items():
        condition = process_state(pid, started_by=written)
        healthy &= condition == "running"
        port = f" metrics :{metrics[name]}" if name in metrics else ""
        print(f"{name:<14} pid {pid!s:<8} {condition}{port}")
    try:
        ready = httpx.get(f"{state['url']}/readyz", timeout=3.0)
        print(f"{'gateway':<14} {state['url']} {ready.status_code} {ready.text}")
        healthy &= ready.status_code == 200
    except httpx.HTTPError as error:
        print(f"{'gateway':<14} {state['url']} unreachable: {error}")
        healthy = False
    return 0 if healthy else 1


def command_ask(args: argparse.Namespace, settings: ControlSettings) -> int:
    state = read_state(settings)
    url = settings.url or (state["url"] if state else "http://127.0.0.1:8000")
    body = {"question": args.question, "conversation_id": args.conversation}
    try:
        response = httpx.post(
            f"{url}/v1/ask", json=body, headers=ask_headers(args, settings), timeout=args.timeout
        )
    except httpx.HTTPError as error:
        print(f"could not reach finq at {url}: {error}", file=sys.stderr)
        return 1
    data = response.json()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0 if response.is_success else 1
    if not response.is_success:
        print(f"error {response.status_code} {data.get('code')}: {data.get('message')}")
        return 1
    print(data["answer"])
    for number, citation in enumerate(data["citations"], start=1):
        print(
            f"  [{number}] {citation['label']}"
            + (f" {citation['url']}" if citation.get("url") else "")
        )
    validation = data["validation"]
    verdict = "validated" if validation["passed"] else f"NOT validated ({validation['severity']})"
    print(f"  {verdict}; trace {data.get('trace_id')}")
    return 0


def command_migrate(_: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq migrate`: the schema, as the owner; then, when FINQ_DATABASE_URL names the
    services' own role, that role (made or brought up to date from the URL's password)."""
    from shared.db import ensure_database, ensure_service_role, migrate

    service_dsn = settings.database_url if "database_url" in settings.model_fields_set else None

    async def run() -> tuple[list[str], str | None]:
        await ensure_database(settings.operator_dsn)
        applied = await migrate(settings.operator_dsn)
        role = None
        if service_dsn is not None and service_dsn != settings.operator_dsn:
            role = await ensure_service_role(settings.operator_dsn, service_dsn)
        return applied, role

    applied, role = asyncio.run(run())
    print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")
    if role is not None:
        print(f"the services connect as {role} (row-level security applies to it)")
    return 0


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

    try:
        stored = asyncio.run(run())
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


def command_ingest_sec(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq ingest sec TICKER|CIK...`: see services.ingest.sec_api."""
    import asyncpg

    from services.ingest.sec_api import (
        RateLimiter,
        RetryPolicy,
        SecClient,
        SecEndpoints,
        SecIngestOutcome,
        ingest_sec,
        sec_headers,
    )

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
            async with httpx.AsyncClient(
                headers=sec_headers(settings.sec_user_agent),
                timeout=settings.sec_timeout_seconds,
                follow_redirects=True,
            ) as http:
                sec = SecClient(
                    http=http,
                    limiter=RateLimiter(settings.sec_max_requests_per_second),
                    endpoints=SecEndpoints(settings.sec_data_url, settings.sec_www_url),
                    policy=RetryPolicy(
                        retries=settings.sec_retries,
                        backoff_seconds=settings.sec_backoff_seconds,
                        max_wait_seconds=settings.sec_max_wait_seconds,
                    ),
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


def command_data_check(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq data check [--json]`: see services.ingest.data_check."""
    import asyncpg

    from services.ingest.data_check import CheckReport, check_database, format_report

    async def run() -> CheckReport:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            return await check_database(conn)
        finally:
            await conn.close()

    try:
        report = asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot check {redact(settings.operator_dsn)}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 1 if report.errors else 0


def _filings_data_dir(args: argparse.Namespace, settings: ControlSettings) -> Path | None:
    data_dir = Path(args.data_dir) if args.data_dir else settings.sec_offline_dir.parent
    if not (data_dir / "filings").is_dir():
        print(f"no filings under {data_dir}: pass --data-dir (../shared/data)", file=sys.stderr)
        return None
    return data_dir


def _on_a_database(
    dsn: str | None, prefix: str, evaluate: Callable[[str], Awaitable[T]]
) -> T | None:
    """`evaluate(dsn)` on the database `dsn` names, or on a migrated PostgreSQL of its own
    started under a temporary folder and stopped afterwards; None when that cannot start."""
    import tempfile

    from services.control.servers import free_port

    if dsn:
        return asyncio.run(evaluate(dsn))
    home = Path(tempfile.mkdtemp(prefix=prefix))
    postgres = PostgresServer(home / "postgres", free_port())
    try:
        print(f"starting PostgreSQL of its own under {home}", flush=True)
        postgres.start()
        asyncio.run(prepare_database(postgres.dsn, load_glossary=False))
        return asyncio.run(evaluate(postgres.dsn))
    except ServerError as error:
        print(f"PostgreSQL could not start: {error}", file=sys.stderr)
        return None
    finally:
        postgres.stop()


def command_eval_documents(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq eval documents`: through a pipeline of its own (kept under --home when given),
    or with --passages the passage answerer alone on a database of its own unless --dsn names
    one. Exit 1 when an answer raised or finq could not start."""
    from services.control.document_eval import evaluate_documents, evaluate_documents_in_pipeline

    data_dir = _filings_data_dir(args, settings)
    if data_dir is None:
        return 1
    report_path = Path(args.report) if args.report else None
    split = args.split or "all"
    if not args.passages:
        home = Path(args.home) if args.home else None
        try:
            report = evaluate_documents_in_pipeline(data_dir, report_path, split, home)
        except ServerError as error:
            print(f"finq could not start: {error}", file=sys.stderr)
            return 1
        return 1 if report.overall.errors else 0
    passages = _on_a_database(
        args.dsn,
        "finq-eval-documents-",
        lambda dsn: evaluate_documents(dsn, data_dir, report_path, split),
    )
    return 1 if passages is None or passages.overall.errors else 0


def command_eval(args: argparse.Namespace, settings: ControlSettings) -> int:
    if args.suite == "retrieval":
        return command_eval_retrieval(args, settings)
    if args.suite == "documents":
        return command_eval_documents(args, settings)
    return command_eval_golden(args)


async def evaluate_retrieval(dsn: str, data_dir: Path, report_path: Path | None) -> bool:
    """Ingest the filings the retrieval questions are about (kept if already held), then
    score search on them with and without temporal filters. True when hit@5 ≥ 80%."""
    from services.control.retrieval_eval import (
        RankedHit,
        SearchFilters,
        format_report,
        load_financebench_questions,
        load_team_questions,
        report_json,
        run_retrieval_eval,
    )
    from services.ingest.documents import ingest_file
    from services.tools.document_search import DocumentSearch
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder
    from shared.tools import FILINGS_COLLECTION, SearchDocumentsArgs

    questions = load_team_questions() + load_financebench_questions(data_dir)
    needed = sorted({(q.symbol, q.document) for q in questions})
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
        for symbol, name in needed:
            path = data_dir / "filings" / symbol / name
            stored = await ingest_file(
                pool, embedder, path, collection=FILINGS_COLLECTION, folder_symbol=symbol
            )
            how = "held" if stored.reused else f"{stored.seconds:.1f} s"
            print(f"{stored.title}: {stored.chunks} chunks ({how})", flush=True)
        documents = DocumentSearch(embedder)

        async def search(query: str, filters: SearchFilters | None) -> list[RankedHit]:
            args = SearchDocumentsArgs(
                query=query[:500],
                symbols=list(filters.symbols) if filters and filters.symbols else None,
                forms=list(filters.forms) if filters and filters.forms else None,
                fiscal_year=filters.fiscal_year if filters else None,
                limit=10,
            )
            result = await documents.search(pool, args)
            return [
                RankedHit(p.source_name or p.title, p.page or 0, p.page_end)
                for p in result.passages
            ]

        reports = await run_retrieval_eval(search, data_dir)
    finally:
        await pool.close()
    print(format_report(reports))
    if report_path is not None:
        text = json.dumps(report_json(reports), indent=2)
        await asyncio.to_thread(report_path.write_text, text)
        print(f"wrote {report_path} (it quotes FinanceBench questions: do not commit it)")
    return reports[0].meets_target


def command_eval_retrieval(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq eval retrieval`: on a database of its own unless --dsn names one."""
    data_dir = _filings_data_dir(args, settings)
    if data_dir is None:
        return 1
    report = Path(args.report) if args.report else None
    met = _on_a_database(
        args.dsn,
        "finq-eval-retrieval-",
        lambda dsn: evaluate_retrieval(dsn, data_dir, report),
    )
    return 0 if met else 1


def command_eval_golden(args: argparse.Namespace) -> int:
    """`finq eval`: the golden questions scored; `--write-levels` records what every bundled
    question measured as eval_levels.json, `--check-levels` exits 1 below those levels."""
    from services.control.evaluation import (
        LEVELS_FILE,
        build_report,
        format_report,
        levels_missed,
        load_levels,
        load_questions,
        run_golden,
        thresholds_missed,
        write_levels,
        write_report,
    )
    from services.control.own_pipeline import own_pipeline

    if (args.write_levels or args.check_levels) and (
        args.url or args.golden or args.split != "all"
    ):
        # Levels are what the test gates on: every bundled question, offline, on a pipeline
        # like the test's; a running gateway may have a model configured or other data.
        print(
            "--write-levels and --check-levels take every bundled question on a pipeline "
            "of its own: leave out --url, --golden and --split",
            file=sys.stderr,
        )
        return 2
    if args.split in DOCUMENT_ONLY_SPLITS:
        print(
            f"{args.split} is a split of the document questions: finq eval documents",
            file=sys.stderr,
        )
        return 2
    questions = load_questions(args.split, Path(args.golden) if args.golden else None)
    progress = Progress()
    if args.url:
        outcomes = asyncio.run(
            run_golden(args.url, questions, args.concurrency, progress=progress, key=args.key)
        )
    else:
        try:
            with own_pipeline(progress) as pipeline:
                outcomes = asyncio.run(
                    run_golden(
                        pipeline.url,
                        questions,
                        args.concurrency,
                        progress=progress,
                        key=pipeline.key,
                    )
                )
        except ServerError as error:
            print(f"finq could not start: {error}", file=sys.stderr)
            return 1
    report = build_report(outcomes)
    print(format_report(report))
    if args.report:
        write_report(report, Path(args.report))
        print(f"wrote {args.report}")
    if args.write_levels:
        unanswered = [outcome.golden.id for outcome in outcomes if outcome.body is None]
        if unanswered:
            # A deadline missed on a busy machine is not a level: it would let the pipeline
            # fall that far with no test noticing.
            print(f"levels not written: no answer to {unanswered}", file=sys.stderr)
            return 1
        levels = write_levels(report)
        print(f"wrote {LEVELS_FILE}:\n{json.dumps(levels['splits'], indent=2)}")
        # Measuring is the point here: the thresholds below gate a run, not a measurement.
        return 0
    if args.check_levels:
        below = levels_missed(report, load_levels())
        if below:
            print("below the measured levels: " + "; ".join(below))
            return 1
    missed = thresholds_missed(
        report,
        args.min_intent_accuracy,
        args.min_answer_correctness,
        args.min_heldout_answer_correctness,
    )
    if missed:
        print("below threshold: " + "; ".join(missed))
        return 1
    return 0


def command_train_router(args: argparse.Namespace, _: ControlSettings) -> int:
    from services.router.intent_classifier import ARTIFACTS_DIR
    from services.router.intent_training import DEFAULT_PER_TEMPLATE, DEFAULT_SEED, train
    from shared.embeddings import MiniLMEmbedder

    out = Path(args.out) if args.out else ARTIFACTS_DIR
    print("loading MiniLM…", flush=True)
    embedder = MiniLMEmbedder.load()
    _, report = train(
        embedder,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        per_template=args.size or DEFAULT_PER_TEMPLATE,
        out=out,
    )
    print(f"seed {report.seed}; examples " + ", ".join(f"{k} {v}" for k, v in report.sizes.items()))
    print("accuracy " + ", ".join(f"{k} {v:.1%}" for k, v in report.accuracy.items()))
    print("test accuracy per intent (templates never seen in training):")
    for intent, accuracy in report.per_intent_test.items():
        print(f"  {intent:20} {accuracy:.1%}")
    print(f"wrote {out} in {report.seconds:.1f} s")
    return 0


def command_aliases(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq aliases`: the metric phrases users typed that the catalog did not know."""
    import asyncpg

    from shared.metric_aliases import list_alias_misses, load_learned_aliases

    async def run() -> tuple[list[Any], dict[str, str]]:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            return await list_alias_misses(conn, args.limit), await load_learned_aliases(conn)
        finally:
            await conn.close()

    try:
        misses, learned = asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as error:
        print(f"cannot read {redact(settings.operator_dsn)}: {error}", file=sys.stderr)
        return 2
    if args.json:
        body = {
            "misses": [
                {
                    **miss.__dict__,
                    "first_seen": miss.first_seen.isoformat(),
                    "last_seen": miss.last_seen.isoformat(),
                }
                for miss in misses
            ],
            "learned": learned,
        }
        print(json.dumps(body, indent=2))
        return 0
    print(f"{'count':>5}  {'phrase':<32} {'read as':<28} last seen")
    for miss in misses:
        reading = (
            f"{miss.resolved_to} ({miss.method} {miss.confidence:.2f})" if miss.resolved_to else "-"
        )
        print(f"{miss.count:>5}  {miss.phrase:<32} {reading:<28} {miss.last_seen:%Y-%m-%d %H:%M}")
    if learned:
        print("\nlearned aliases:")
        for phrase, metric in sorted(learned.items()):
            print(f"  {phrase} → {metric}")
    return 0


def command_users(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq users add NAME | list | revoke NAME`: who may ask, by API key."""
    import asyncpg

    from shared.identity import IdentityError, add_user, list_users, revoke_user

    async def run() -> int:
        conn = await asyncpg.connect(settings.operator_dsn)
        try:
            if args.users_command == "add":
                user, key = await add_user(conn, args.name, operator=args.operator)
                role = "operator " if user.operator else ""
                print(f"{role}user {user.name} ({user.id}) added; their API key, shown only now:")
                print(key)
            elif args.users_command == "revoke":
                user = await revoke_user(conn, args.name)
                print(f"user {user.name}: key {user.key_prefix}… revoked")
            else:
                print(
                    f"{'name':<24} {'id':<20} {'key':<14} {'created':<17} {'revoked':<17} operator"
                )
                for user in await list_users(conn):
                    revoked = f"{user.revoked_at:%Y-%m-%d %H:%M}" if user.revoked_at else "-"
                    key = f"{user.key_prefix}…" if user.key_prefix else "(no key)"
                    print(
                        f"{user.name:<24} {user.id:<20} {key:<14} "
                        f"{user.created_at:%Y-%m-%d %H:%M} {revoked:<17} "
                        f"{'yes' if user.operator else '-'}"
                    )
            return 0
        except IdentityError as error:
            print(f"finq users: {error}", file=sys.stderr)
            return 2
        finally:
            await conn.close()

    return asyncio.run(run())


# How long `finq dead` waits for nats-server before it says it cannot reach it.
NATS_CONNECT_TIMEOUT_SECONDS = 10.0


def operator_nats(settings: ControlSettings) -> tuple[str, str | None, SecretStr | None]:
    """Where and as whom the operator's commands connect to NATS: FINQ_NATS_URL (else the
    broker of `finq up`'s state file, else FINQ_NATS_PORT on loopback), as FINQ_NATS_USER
    with FINQ_NATS_PASSWORD, else as `operator` with the password `finq up` keeps in the
    home folder (FINQ_HOME), else without credentials."""
    from shared.nats_permissions import OPERATOR

    state = read_state(settings)
    if "nats_url" in settings.model_fields_set:
        url = settings.nats_url
    elif state is not None and state.get("nats_url"):
        url = str(state["nats_url"])
    else:
        url = f"nats://127.0.0.1:{settings.nats_port}"
    if settings.nats_user:
        return url, settings.nats_user, settings.nats_password
    server = NatsServer(settings.home.resolve() / "nats", settings.nats_port)
    password = server.stored_password(OPERATOR)
    if password is None:
        return url, None, None
    return url, OPERATOR, SecretStr(password)


async def connect_as_operator(
    settings: ControlSettings, patience: float = NATS_CONNECT_TIMEOUT_SECONDS
) -> NatsClient:
    """A NATS client for the operator's commands; ServerError when the broker does not
    answer within `patience` seconds or refuses the credentials."""
    from shared import bus

    url, user, password = operator_nats(settings)
    errors: list[Exception] = []

    async def remember(error: Exception) -> None:
        # Not logged: the command says what went wrong once, at the end.
        errors.append(error)

    try:
        async with asyncio.timeout(patience):
            return await bus.connect(url, "finq-cli", user, password, error_cb=remember)
    except TimeoutError:
        last = f": {errors[-1]}" if errors else ""
        raise ServerError(f"cannot reach NATS at {url}{last}") from None
    except bus.NatsRefused as error:
        raise ServerError(f"{error} (set FINQ_NATS_USER and FINQ_NATS_PASSWORD)") from None


def describe_replay(replayed: Replayed) -> str:
    deadline = (
        f"; its deadline had passed, the new one is {replayed.new_deadline:%H:%M:%S} UTC"
        if replayed.new_deadline
        else ""
    )
    return (
        f"replayed dead letter {replayed.seq} onto {replayed.subject} "
        f"({replayed.stream} #{replayed.stream_seq}, message id {replayed.msg_id}){deadline}; "
        "removed it from the dead letters"
    )


def command_dead(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq dead list [--stage S] [--limit N] [--json]` and `finq dead replay ID...`."""
    from shared.dead_letters import (
        DeadLetter,
        DeadLetterError,
        list_dead_letters,
        replay_dead_letter,
    )

    async def run() -> list[DeadLetter]:
        nc = await connect_as_operator(settings, args.timeout)
        try:
            js = nc.jetstream()
            if args.dead_command == "list":
                return await list_dead_letters(js, args.stage, args.limit)
            for seq in args.seqs:
                replayed = await replay_dead_letter(
                    js, seq, args.deadline_seconds, args.keep_deadline
                )
                print(describe_replay(replayed), flush=True)
            return []
        finally:
            await nc.close()

    try:
        letters = asyncio.run(run())
    except ServerError as error:
        print(f"finq dead: {error}", file=sys.stderr)
        return 2
    except DeadLetterError as error:
        print(f"finq dead: {error}", file=sys.stderr)
        return 1
    if args.dead_command == "replay":
        return 0
    if args.json:
        print(json.dumps([letter.to_json() for letter in letters], indent=2))
        return 0
    if not letters:
        print("no dead letters")
        return 0
    print(f"{'id':>6}  {'stage':<10} {'request':<34} {'when (UTC)':<19} reason")
    for letter in letters:
        when = f"{letter.dead_at:%Y-%m-%d %H:%M:%S}" if letter.dead_at else "-"
        print(
            f"{letter.seq:>6}  {letter.stage or '-':<10} {letter.request_id or '-':<34} "
            f"{when:<19} {letter.reason}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="finq", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start PostgreSQL, NATS and the five services")
    up.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="STAGE=N",
        help="run N replicas of a stage (repeatable), e.g. --replicas tools=2",
    )
    up.set_defaults(run=command_up)
    commands.add_parser("down", help="stop what `finq up` started").set_defaults(run=command_down)
    commands.add_parser("status", help="each process and its health").set_defaults(
        run=command_status
    )
    ask = commands.add_parser("ask", help="ask a question")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print the whole response as JSON")
    ask.add_argument("--conversation", default=None, help="continue this conversation id")
    ask.add_argument("--timeout", type=float, default=60.0)
    add_ask_identity(ask)
    ask.set_defaults(run=command_ask)
    commands.add_parser("migrate", help="apply the database migrations").set_defaults(
        run=command_migrate
    )
    ingest = commands.add_parser("ingest", help="load data into the database")
    ingest_kinds = ingest.add_subparsers(dest="kind", required=True)
    facts = ingest_kinds.add_parser("companyfacts", help="SEC XBRL companyfacts JSON files")
    facts.add_argument("paths", nargs="+")
    facts.add_argument("--symbol", default=None, help="the ticker, when it cannot be found")
    facts.set_defaults(run=command_ingest)
    submissions = ingest_kinds.add_parser(
        "submissions", help="SEC submissions JSON files (the filings list of a company)"
    )
    submissions.add_argument("paths", nargs="+")
    submissions.add_argument("--symbol", default=None, help="the ticker, instead of tickers[0]")
    submissions.set_defaults(run=command_ingest)
    prices = ingest_kinds.add_parser(
        "prices", help="daily price CSVs (Date,Open,High,Low,Close,Adj Close,Volume)"
    )
    prices.add_argument("paths", nargs="+")
    prices.add_argument("--symbol", default=None, help="the ticker, instead of the file name")
    prices.set_defaults(run=command_ingest)
    ingest_kinds.add_parser("default", help="the bundled default dataset").set_defaults(
        run=command_ingest
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
    docs.set_defaults(run=command_ingest_documents)
    filings = ingest_kinds.add_parser(
        "filings",
        help="a folder of 10-K/10-Q filings (PDF or EDGAR HTML), sub-folders named by ticker",
    )
    filings.add_argument("folder")
    filings.add_argument("--force", action="store_true", help="embed again even if unchanged")
    filings.set_defaults(run=command_ingest_documents)
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
    sec.set_defaults(run=command_ingest_sec)
    data = commands.add_parser("data", help="look at the data held")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    check = data_commands.add_parser(
        "check",
        help="gaps and suspicious values per company; exit 1 on an error-level finding",
    )
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(run=command_data_check)
    users = commands.add_parser("users", help="who may ask: users and their API keys")
    users_commands = users.add_subparsers(dest="users_command", required=True)
    users_add = users_commands.add_parser("add", help="add a user and print their key once")
    users_add.add_argument("name")
    users_add.add_argument(
        "--operator",
        action="store_true",
        help="may open the admin page: every user's failed and slowest questions, dead letters",
    )
    users_commands.add_parser("list", help="every user, with key prefix and revocation")
    users_revoke = users_commands.add_parser("revoke", help="revoke a user's key")
    users_revoke.add_argument("name")
    users.set_defaults(run=command_users)
    add_portfolio_commands(commands)
    aliases = commands.add_parser(
        "aliases", help="metric phrases that missed or needed a fallback, and learned aliases"
    )
    aliases.add_argument("--limit", type=int, default=50)
    aliases.add_argument("--json", action="store_true")
    aliases.set_defaults(run=command_aliases)
    dead = commands.add_parser(
        "dead", help="the dead-letter stream: messages a stage gave up on, and their replay"
    )
    dead_commands = dead.add_subparsers(dest="dead_command", required=True)
    dead_list = dead_commands.add_parser(
        "list", help="dead letters, oldest first: id, stage, request, when, reason"
    )
    dead_list.add_argument("--stage", choices=[stage.value for stage in Stage])
    dead_list.add_argument("--limit", type=int, default=100, help="the newest N (default 100)")
    dead_list.add_argument("--json", action="store_true")
    dead_replay = dead_commands.add_parser(
        "replay",
        help="publish dead letters again onto their original subjects, then remove them",
        description="Each dead letter's original message is published again onto its "
        "original subject with a message id of its own (<original id>:replay-<ID>) and "
        "removed from the dead letters; one that dies again is dead-lettered anew, with a "
        "new id. An envelope whose deadline passed gets a new one (--deadline-seconds).",
    )
    dead_replay.add_argument("seqs", nargs="+", type=int, metavar="ID")
    dead_replay.add_argument(
        "--deadline-seconds",
        type=float,
        default=60.0,
        help="a deadline that passed is moved this far from now (default 60)",
    )
    dead_replay.add_argument(
        "--keep-deadline", action="store_true", help="publish the message exactly as it was"
    )
    for dead_command in (dead_list, dead_replay):
        dead_command.add_argument(
            "--timeout",
            type=float,
            default=NATS_CONNECT_TIMEOUT_SECONDS,
            help="seconds to wait for nats-server (default 10)",
        )
    dead.set_defaults(run=command_dead)

    evaluate = commands.add_parser(
        "eval",
        help="golden: the golden questions through the live pipeline, scored; retrieval: "
        "document search on filings (hit@1, hit@5, MRR with and without temporal filters); "
        "documents: answers quoted from filings (accuracy, grounding, hit@k per split)",
    )
    evaluate.add_argument(
        "suite", nargs="?", default="golden", choices=["golden", "retrieval", "documents"]
    )
    evaluate.add_argument("--data-dir", help="retrieval: the reference data (../shared/data)")
    evaluate.add_argument("--dsn", help="retrieval: a database to use instead of its own")
    evaluate.add_argument(
        "--passages",
        action="store_true",
        help="documents: answer with search and the passage answerer alone, not the pipeline",
    )
    evaluate.add_argument(
        "--home",
        help="documents: the folder of the pipeline's own servers, kept between runs so the "
        "filings are read once (default: a new temporary folder)",
    )
    evaluate.add_argument("--url", help="a running gateway (default: start one of its own)")
    evaluate.add_argument("--golden", help="golden questions JSONL (default: the bundled set)")
    evaluate.add_argument("--report", help="write the JSON report here")
    evaluate.add_argument("--concurrency", type=int, default=4)
    evaluate.add_argument(
        "--key",
        help="with --url: ask as this key's user (the demo user's, whose portfolio the "
        "portfolio questions ask about); a pipeline of its own asks as its demo user",
    )
    evaluate.add_argument(
        "--split",
        choices=[*DOCUMENT_SPLITS, "all"],
        default="all",
        help="dev (the questions rules are tuned on), heldout (never tuned on), outside "
        "(written outside the project), the documents' later outside splits "
        f"({', '.join(DOCUMENT_ONLY_SPLITS)}), or all",
    )
    evaluate.add_argument(
        "--write-levels",
        action="store_true",
        help="golden: measure every bundled question on a pipeline of its own and write "
        "each split's levels to services/control/eval_levels.json (what the test gates on)",
    )
    evaluate.add_argument(
        "--check-levels",
        action="store_true",
        help="golden: exit 1 when a split falls more than a point below its measured level, "
        "or shows more figures for another question",
    )
    evaluate.add_argument("--min-intent-accuracy", type=float, default=0.95, help="dev split")
    evaluate.add_argument("--min-answer-correctness", type=float, default=0.95, help="dev split")
    evaluate.add_argument("--min-heldout-answer-correctness", type=float, default=0.0)
    evaluate.set_defaults(run=command_eval)

    train = commands.add_parser("train", help="train finq's models")
    train_kinds = train.add_subparsers(dest="model", required=True)
    router = train_kinds.add_parser("router", help="the router's intent classifier")
    # Defaults live with the training code, which is only imported when training runs.
    router.add_argument("--seed", type=int, help="default: the seed the shipped model used")
    router.add_argument("--size", type=int, help="examples per template (default 30)")
    router.add_argument("--out", help="artifacts folder (default: the shipped one)")
    router.set_defaults(run=command_train_router)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args, ControlSettings())
    return code


if __name__ == "__main__":
    sys.exit(main())
