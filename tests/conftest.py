"""Fixtures: real PostgreSQL + pgvector, real nats-server, and the five services as processes."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
from xdist.scheduler import LoadScopeScheduling

from services.control.commands.database_setup import prepare_database
from services.control.commands.gateway_readiness import wait_until_ready
from services.control.scheduling import PIPELINE_NICE, lower_priority
from services.control.servers import (
    NatsCluster,
    NatsServer,
    PostgresServer,
    free_port,
    free_ports,
)
from services.control.stage_process import start_stage
from services.control.supervisor import Supervisor
from shared.embeddings import MiniLMEmbedder
from shared.metric_resolver import MetricResolver
from shared.subjects import Stage
from tests.helpers import PIPELINE_READY_SECONDS, wait_until
from tests.openai_stand_in import OpenAIStandIn, ScriptedReply
from tests.otlp_capture import OtlpCapture

# Short enough that a test of redelivery after a crash waits seconds, not the default 30.
TEST_ACK_WAIT_SECONDS = 3.0


# Modules that parse the same 10-K filings (20 to 60 seconds each, cached per process by
# tests.helpers.parsed_filing) run on one worker, so each filing is parsed once per run.
FILING_READERS = frozenset({"test_statement_reading", "test_financebench", "test_document_parsing"})

# The longest modules (wall seconds on two workers, 2026-11-28), handed out first so that
# neither worker is left with one of them at the end while the other idles.
LONGEST_FIRST = (
    "test_faults",  # 210
    "test_documents_end_to_end",  # 160
    "test_eval_golden",  # 150
    "test_hostile_input",  # 120
    "test_openapi_schemathesis",  # 110
    "test_document_answers",  # 100
    "test_router_llm_properties",  # 70
    "test_supervision",  # 70
)


def module_name(nodeid: str) -> str:
    return Path(module_path(nodeid)).stem


def module_path(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def work_unit(nodeid: str) -> str:
    """The tests one pytest-xdist worker runs together: a module (its module fixtures, a
    pipeline or a parsed filing, start once), or the filing readers as one."""
    path = module_path(nodeid)
    return "filings" if Path(path).stem in FILING_READERS else path


def pytest_configure(config: pytest.Config) -> None:
    """A test worker of pytest-xdist runs at the pipeline's priority: its own CPU work (a
    filing parsed, hypothesis's examples) must not starve the pipelines the other workers
    wait on, which run below the default priority (services.control.scheduling)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        lower_priority(os.getpid(), PIPELINE_NICE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (a stable sort: every other test keeps its place)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(module_name(item.nodeid), len(rank)))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadscope`, in units of work_unit, in collection order. Not xdist's loadgroup
    with marks: on pytest 9.2 its groups are silently lost (pytest-xdist issue 1386: it
    renames the tests' node ids, which pytest no longer reads), so every module's fixtures
    started on both workers."""
    if config.getvalue("dist") != "loadscope":
        return None
    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)  # type: ignore[arg-type]


class ModuleScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


@dataclass
class Servers:
    postgres: PostgresServer
    nats: NatsServer


@dataclass
class RunningFinq:
    url: str
    supervisor: Supervisor
    servers: Servers
    spans: OtlpCapture


SERVERS_PREFIX = "finq-test-servers-"


def remove_servers_left_behind() -> None:
    """The servers' folders of test runs whose process is gone (killed before cleaning up):
    each holds a PostgreSQL data directory of a few hundred megabytes."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SERVERS_PREFIX}*-*"):
        pid = folder.name.removeprefix(SERVERS_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    # Not under pytest's own folder: any other pytest the same user starts meanwhile sets
    # /tmp/pytest-of-<user> back to 0700, which shuts PostgreSQL (its own user) out of its
    # data directory, and the server panics halfway through the suite.
    remove_servers_left_behind()
    home = Path(tempfile.mkdtemp(prefix=f"{SERVERS_PREFIX}{os.getpid()}-"))
    # Not durable: thrown away with the session, it need not fsync (a database made and
    # dropped per test would otherwise wait on a checkpoint each time).
    postgres = PostgresServer(home / "postgres", free_port(), durable=False)
    # With its monitoring port: a test can ask it who is subscribed to what (/connz).
    nats_port, nats_monitor_port = free_ports(2)
    nats = NatsServer(home / "nats", nats_port, monitor_port=nats_monitor_port)
    postgres.start()
    try:
        nats.start()
        try:
            asyncio.run(prepare_database(postgres.dsn, service_dsn=postgres.service_dsn))
            yield Servers(postgres, nats)
        finally:
            nats.stop()
    finally:
        postgres.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The bundled MiniLM, loaded once for every test that embeds (about six seconds)."""
    return MiniLMEmbedder.load()


@pytest.fixture(scope="session")
def minilm_resolver(minilm: MiniLMEmbedder) -> MetricResolver:
    """The catalog's resolver with MiniLM's vectors of every alias, embedded once for the
    tests that only read it (embedding the catalog takes seconds)."""
    return MetricResolver.from_catalog(embedder=minilm)


@pytest.fixture(scope="session")
def span_capture() -> Iterator[OtlpCapture]:
    capture = OtlpCapture()
    capture.start()
    yield capture
    capture.stop()


def stage_environment(servers: Servers, gateway_port: int, spans: OtlpCapture) -> dict[str, str]:
    return {
        **os.environ,
        "FINQ_NATS_URL": servers.nats.url,
        # The services' own role: row-level security applies to it, as in production.
        "FINQ_DATABASE_URL": servers.postgres.service_dsn,
        "FINQ_GATEWAY_PORT": str(gateway_port),
        "FINQ_ACK_WAIT_SECONDS": str(TEST_ACK_WAIT_SECONDS),
        "FINQ_NAK_DELAY_SECONDS": "0.2",
        # The ingest stage embeds the catalog's phrases for the router in batches; with
        # three test workers on two cores a batch can take longer than the default 5 s.
        "FINQ_ROUTER_EMBEDDING_TIMEOUT_SECONDS": "30",
        "FINQ_LOG_LEVEL": "DEBUG",
        # The golden run (tests/control/test_eval_golden.py) asks about 1,000 questions with
        # one key; at the default 600 a minute it spent most of its time waiting out 429s.
        # The limits are tested on gateways of their own (tests/gateway/test_gateway_limits.py).
        "FINQ_GATEWAY_RATE_PER_MINUTE": "60000",
        "FINQ_GATEWAY_RATE_BURST": "1000",
        "OTEL_EXPORTER_OTLP_ENDPOINT": spans.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        # Uploads land under the test session's folder, not the checkout's .finq.
        "FINQ_DOCUMENT_UPLOAD_DIR": str(servers.postgres.data_dir.parent / "uploads"),
    }


@pytest.fixture(scope="session")
def finq(
    servers: Servers, span_capture: OtlpCapture, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningFinq]:
    gateway_port = free_port()
    url = f"http://127.0.0.1:{gateway_port}"
    supervisor = Supervisor(
        tmp_path_factory.mktemp("finq-logs"),
        stage_environment(servers, gateway_port, span_capture),
        # Each stage connects to NATS as its own user, as in production.
        stage_env=servers.nats.credentials_env,
    )
    supervisor.start()
    try:
        wait_until_ready(url, supervisor, timeout=PIPELINE_READY_SECONDS)
        yield RunningFinq(url, supervisor, servers, span_capture)
    finally:
        supervisor.stop()


@pytest.fixture
async def client(finq: RunningFinq) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=finq.url, timeout=60.0) as http:
        yield http


def read_logs(log_dir: Path) -> dict[str, str]:
    return {path.stem: path.read_text(errors="replace") for path in sorted(log_dir.glob("*.log"))}


# The databases tests copy theirs from, one per server and kind, built on first use:
# migrating takes a third of a second, loading the bundled dataset (and embedding the
# glossary) seconds; a copy takes a tenth.
_templates: dict[tuple[int, str], str] = {}
_template_lock = asyncio.Lock()


async def database_template(
    servers: Servers, load_dataset: bool = True, load_glossary: bool = False
) -> str:
    """A migrated database on the session's server (holding the bundled dataset and the
    glossary, if asked), made once per session, for databases of tests to be copied from."""
    name = "template_" + ("dataset" if load_dataset else "migrated")
    name += "_glossary" if load_glossary else ""
    key = (servers.postgres.port, name)
    async with _template_lock:
        if key not in _templates:
            await prepare_database(
                servers.postgres.dsn_for(name),
                load_default=load_dataset,
                load_glossary=load_glossary,
                service_dsn=servers.postgres.service_dsn_for(name),
            )
            _templates[key] = name
        return _templates[key]


@asynccontextmanager
async def own_database(
    servers: Servers, name: str, template: str | None = None
) -> AsyncIterator[str]:
    """A migrated database of its own on the session's server, dropped afterwards: a copy of
    `template`, by default of the migrated one."""
    template = template or await database_template(servers, load_dataset=False)
    admin = await asyncpg.connect(servers.postgres.dsn_for("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        dsn = servers.postgres.dsn_for(name)
        await prepare_database(
            dsn, load_default=False, service_dsn=servers.postgres.service_dsn_for(name)
        )
        yield dsn
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@dataclass
class OwnFinq:
    client: httpx.AsyncClient
    supervisor: Supervisor
    nats: NatsServer | NatsCluster


@asynccontextmanager
async def own_pipeline(
    servers: Servers,
    tmp_path: Path,
    name: str,
    env: dict[str, str] | None = None,
    load_glossary: bool = False,
    nats: NatsServer | NatsCluster | None = None,
    stage_settings: Mapping[Stage, Mapping[str, str]] | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    """The five services on a NATS of their own and a database of their own (the bundled
    dataset loaded), for tests whose data or settings must not reach the shared pipeline.
    `stage_settings`: settings of one stage only, over `env`."""
    async with own_finq(servers, tmp_path, name, env, load_glossary, nats, stage_settings) as finq:
        yield finq.client


@asynccontextmanager
async def own_finq(
    servers: Servers,
    tmp_path: Path,
    name: str,
    env: dict[str, str] | None = None,
    load_glossary: bool = False,
    nats: NatsServer | NatsCluster | None = None,
    stage_settings: Mapping[Stage, Mapping[str, str]] | None = None,
) -> AsyncIterator[OwnFinq]:
    """own_pipeline, with its supervisor and broker too. `nats`: a broker (or cluster) the
    caller started and stops; none: a nats-server of the pipeline's own."""
    own_nats = nats is None
    if nats is None:
        nats = NatsServer(tmp_path / "nats", free_port())
        nats.start()
    broker = nats

    def stage_env(stage: Stage) -> dict[str, str]:
        return {**broker.credentials_env(stage), **(stage_settings or {}).get(stage, {})}

    try:
        template = await database_template(servers, load_glossary=load_glossary)
        async with own_database(servers, name, template):
            port = free_port()
            supervisor = Supervisor(
                tmp_path / "logs",
                {
                    **os.environ,
                    "FINQ_NATS_URL": nats.url,
                    "FINQ_DATABASE_URL": servers.postgres.service_dsn_for(name),
                    "FINQ_GATEWAY_PORT": str(port),
                    "FINQ_ROUTER_METRIC_EMBEDDINGS": "false",
                    "FINQ_ROUTER_CLASSIFIER_ENABLED": "false",
                    # Most own pipelines never embed: the ingest stage loads the model on
                    # its first request, not at start (8 CPU-seconds a pipeline). Those
                    # that search documents ask for it at start (a search waits 5 s).
                    "FINQ_EMBEDDING_PRELOAD": "false",
                    "FINQ_DOCUMENT_UPLOAD_DIR": str(tmp_path / "uploads"),
                    **(env or {}),
                },
                stage_env=stage_env,
            )
            supervisor.start()
            try:
                url = f"http://127.0.0.1:{port}"
                await asyncio.to_thread(wait_until_ready, url, supervisor, PIPELINE_READY_SECONDS)
                async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                    yield OwnFinq(client, supervisor, nats)
            finally:
                supervisor.stop()
    finally:
        if own_nats:
            nats.stop()


def model_env(model: OpenAIStandIn) -> dict[str, str]:
    """The settings of a pipeline whose model is `model`: an ack wait of a second, so a
    model that thinks for seconds outlasts several (the answerer must keep its message)."""
    return {
        "FINQ_ACK_WAIT_SECONDS": "1",
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_MODEL": "gpt-4o-mini",
    }


@dataclass
class ModelPipeline:
    model: OpenAIStandIn
    client: httpx.AsyncClient

    def script(self, *replies: ScriptedReply) -> OpenAIStandIn:
        """The model's replies for the next question, and its record of requests emptied."""
        self.model.replies = list(replies)
        self.model.requests.clear()
        return self.model


@pytest.fixture(scope="session")
async def model_pipeline(
    servers: Servers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ModelPipeline]:
    """The five services with a scripted model, on a NATS and a database of their own, for
    every test that needs a model and no setting of its own: each scripts the replies it
    needs (replacing any left over) before it asks."""
    async with (
        OpenAIStandIn([]) as model,
        own_pipeline(
            servers, tmp_path_factory.mktemp("model-pipeline"), "t_model_pipeline", model_env(model)
        ) as client,
    ):
        yield ModelPipeline(model, client)


@pytest.fixture
async def database(servers: Servers, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A database of this test's own, named for its module and test so tests never share one."""
    raw = f"t_{request.module.__name__.rsplit('.', 1)[-1][5:15]}_{request.node.name[:40]}"
    async with own_database(servers, re.sub(r"[^a-z0-9_]", "_", raw.lower())) as dsn:
        yield dsn


@contextmanager
def another_gateway(
    finq: RunningFinq, tmp_path_factory: pytest.TempPathFactory, settings: dict[str, str]
) -> Iterator[str]:
    """One more gateway process on the session's bus and database, with its own settings
    (FINQ_AUTH=required, small limits); yields its URL once it answers."""
    port = free_port()
    environment = {
        **stage_environment(finq.servers, port, finq.spans),
        **finq.servers.nats.credentials_env(Stage.GATEWAY),
        "FINQ_GATEWAY_INSTANCE": f"extra-{port}",
        **settings,
    }
    log = tmp_path_factory.mktemp("extra-gateway") / "gateway.log"
    process = start_stage(Stage.GATEWAY, environment, log)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the extra gateway exited; see {log}")
        try:
            return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        asyncio.run(wait_until(answers, within=PIPELINE_READY_SECONDS))
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
