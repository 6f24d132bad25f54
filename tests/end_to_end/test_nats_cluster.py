"""finq on a three-node NATS cluster: every stream kept on all three nodes
(FINQ_STREAM_REPLICAS=3), so a SIGKILL of any one node under load loses no question and
restarts no finq process, and the node started again rejoins with its data."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from services.control.servers import NatsCluster, NatsServer
from shared import bus, subjects
from shared.nats_permissions import OPERATOR
from shared.settings import FinqSettings
from tests.conftest import Servers, own_finq
from tests.helpers import wait_until

QUESTIONS = 60
# One question started every this many seconds (60 over about 15 s), at most this many
# waiting for their answers at once.
SPACING_SECONDS = 0.25
AT_ONCE = 6
# When the node dies and when it comes back: after this many answers, counted from the
# start and from the kill.
KILL_AFTER_ANSWERS = 12
RESTART_AFTER_MORE_ANSWERS = 15
STREAMS = (*subjects.STAGE_STREAMS.values(), subjects.DEAD_LETTER_STREAM)
QUESTION_STREAM = subjects.input_stream(subjects.Stage.ROUTER)
SETTINGS = {
    "FINQ_STREAM_REPLICAS": "3",
    # A message whose ack died with the node comes back in seconds, not the default 30.
    "FINQ_ACK_WAIT_SECONDS": "3",
    "FINQ_NAK_DELAY_SECONDS": "0.2",
}
REQUEST_ID = re.compile(r"request ([0-9a-f]{32})")
COMPANIES = ("Apple", "NVIDIA", "Alphabet", "Tesla")
METRICS = ("revenue", "net income", "total assets")
YEARS = (2021, 2022, 2023, 2024)
PHRASINGS = (
    "What was {company}'s {metric} in fiscal {year}?",
    "{company} {metric} for fiscal year {year}",
)


def distinct_questions(count: int) -> list[str]:
    combinations = itertools.product(PHRASINGS, YEARS, METRICS, COMPANIES)
    questions = [
        phrasing.format(company=company, metric=metric, year=year)
        for phrasing, year, metric, company in combinations
    ]
    assert len(set(questions)) >= count
    return questions[:count]


@dataclass
class Load:
    """What the questions came back with, per question: the answer's body, or the request
    id an HTTP 504 names (answered later), or what else came back; and the longest wait."""

    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    slowest: float = 0.0
    late: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> int:
        return len(self.answered) + len(self.late) + len(self.failed)


async def ask_all(client: httpx.AsyncClient, questions: list[str], load: Load) -> None:
    """A steady load: one question every SPACING_SECONDS, at most AT_ONCE in flight."""
    slots = asyncio.Semaphore(AT_ONCE)
    started = time.monotonic()

    async def ask(index: int, question: str) -> None:
        await asyncio.sleep(max(0.0, started + index * SPACING_SECONDS - time.monotonic()))
        async with slots:
            asked = time.monotonic()
            response = await client.post("/v1/ask", json={"question": question}, timeout=90)
            load.slowest = max(load.slowest, time.monotonic() - asked)
        if response.status_code == 200:
            load.answered[question] = response.json()
        elif response.status_code == 504 and (found := REQUEST_ID.search(response.text)):
            load.late[question] = found.group(1)
        else:
            load.failed[question] = f"{response.status_code}: {response.text}"

    async with asyncio.TaskGroup() as tasks:
        for index, question in enumerate(questions):
            tasks.create_task(ask(index, question))


async def stream_leader(js: JetStreamContext, stream: str) -> str:
    info = await js.stream_info(stream)
    assert info.cluster is not None and info.cluster.leader
    return info.cluster.leader


async def lead_from(nc: NatsClient, js: JetStreamContext, node: NatsServer) -> None:
    """Make `node` the leader of the questions' stream and of the router's consumer (a
    leader steps down in favour of a preferred peer)."""
    assert node.cluster is not None
    wanted = node.cluster.server_name
    stream, durable = QUESTION_STREAM, subjects.durable_name(subjects.Stage.ROUTER)
    placement = json.dumps({"placement": {"preferred": wanted}}).encode()

    async def leaders() -> tuple[str | None, str | None]:
        try:
            stream_info = await js.stream_info(stream)
            consumer_info = await js.consumer_info(stream, durable)
        except Exception:  # no leader for a moment: asked again
            return None, None
        return (
            stream_info.cluster.leader if stream_info.cluster else None,
            consumer_info.cluster.leader if consumer_info.cluster else None,
        )

    async def led_from_node() -> bool:
        stream_leader, consumer_leader = await leaders()
        if stream_leader is None or consumer_leader is None:
            return False
        if stream_leader != wanted:
            await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", placement, 5)
        elif consumer_leader != wanted:
            await nc.request(f"$JS.API.CONSUMER.LEADER.STEPDOWN.{stream}.{durable}", placement, 5)
        else:
            return True
        return False

    await wait_until(led_from_node, 30, every=0.2)


def node_named(cluster: NatsCluster, server_name: str) -> int:
    for index, node in enumerate(cluster.nodes):
        if node.cluster is not None and node.cluster.server_name == server_name:
            return index
    raise KeyError(server_name)


def monitoring(node: NatsServer, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{node.monitor_port}{path}", timeout=5) as r:
        report: dict[str, Any] = json.load(r)
    return report


def finq_clients_on(node: NatsServer) -> list[str]:
    """The finq processes connected to one node (its monitoring port's /connz)."""
    connections = monitoring(node, "/connz").get("connections") or []
    names = (str(connection.get("name", "")) for connection in connections)
    return sorted(name for name in names if name.startswith("finq-"))


def stream_state_on(node: NatsServer) -> dict[str, int]:
    """Messages per finq stream as one node holds them (its monitoring port's /jsz)."""
    found: dict[str, int] = {}
    for account in monitoring(node, "/jsz?streams=true").get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            found[stream["name"]] = int(stream["state"]["messages"])
    return found


def test_a_nats_url_may_name_every_node_of_a_cluster() -> None:
    assert bus.server_urls("nats://a:4222") == ["nats://a:4222"]
    assert bus.server_urls("nats://a:4222, nats://b:4222,nats://c:4222,") == [
        "nats://a:4222",
        "nats://b:4222",
        "nats://c:4222",
    ]


def test_publishes_wait_out_an_election_only_on_replicated_streams() -> None:
    assert FinqSettings().publish_patience_seconds == 0.0
    assert FinqSettings(stream_replicas=3).publish_patience_seconds == 20.0
    assert FinqSettings(stream_replicas=3, publish_retry_seconds=5).publish_patience_seconds == 5


def test_the_nodes_of_a_cluster_share_users_and_each_has_its_own_ports_and_folder(
    tmp_path: Path,
) -> None:
    cluster = NatsCluster(tmp_path)
    ports = [port for node in cluster.nodes for port in node_ports(node)]
    assert len(set(ports)) == len(ports) == 3 * len(cluster.nodes)
    assert (
        len({node.data_dir for node in cluster.nodes})
        == len({n.log_path for n in cluster.nodes})
        == 3
    )
    configs = [node.config_text() for node in cluster.nodes]
    passwords = cluster.passwords()
    for config in configs:
        for password in passwords.values():
            assert json.dumps(password) in config
    assert cluster.url.split(",") == [node.url for node in cluster.nodes]
    # A cluster on the same folder keeps the users' and the routes' passwords.
    again = NatsCluster(tmp_path)
    assert again.passwords() == passwords
    assert again.route_password() == cluster.route_password()


def node_ports(node: NatsServer) -> list[int]:
    assert node.cluster is not None and node.monitor_port is not None
    return [node.port, node.cluster.route_port, node.monitor_port]


@pytest.mark.timeout(180)
async def test_a_node_killed_under_load_loses_no_question_and_restarts_no_finq_process(
    servers: Servers, tmp_path: Path
) -> None:
    cluster = NatsCluster(tmp_path / "cluster")
    await asyncio.to_thread(cluster.start)
    try:
        async with own_finq(servers, tmp_path, "t_nats_cluster", SETTINGS, nats=cluster) as finq:
            nc = await bus.connect(cluster.url, "cluster-test", *cluster.credentials(OPERATOR))
            js = nc.jetstream()
            try:
                for stream in STREAMS:
                    info = await js.stream_info(stream)
                    assert info.config.num_replicas == 3, stream
                    assert info.cluster is not None and len(info.cluster.replicas or []) == 2
                pids = {s.name: s.process.pid for s in finq.supervisor.services if s.process}
                # The worst node to lose: the one most finq processes are connected to (they
                # must move to another), made the leader of the questions' stream and of the
                # router's consumer (the gateway's publishes and the router's pulls then wait
                # for a new leader).
                clients = [finq_clients_on(node) for node in cluster.nodes]
                assert sum(map(len, clients)) == len(finq.supervisor.services), clients
                victim = max(range(len(cluster.nodes)), key=lambda index: len(clients[index]))
                await lead_from(nc, js, cluster.nodes[victim])

                questions = distinct_questions(QUESTIONS)
                load = Load()
                began = time.monotonic()
                asking = asyncio.create_task(ask_all(finq.client, questions, load))
                await wait_until(lambda: load.done >= KILL_AFTER_ANSWERS or asking.done(), 60)
                cluster.kill_node(victim)
                killed_at = load.done
                await wait_until(
                    lambda: load.done >= killed_at + RESTART_AFTER_MORE_ANSWERS or asking.done(),
                    60,
                )
                assert killed_at < QUESTIONS, "the node died only after the load was over"
                restarting = asyncio.create_task(asyncio.to_thread(cluster.start_node, victim))
                await asyncio.wait_for(asking, 90)
                await restarting
                took = time.monotonic() - began

                assert not load.failed, load.failed
                for question, body in load.answered.items():
                    assert body["answer"] and body["validation"]["passed"], (question, body)
                # An answer that missed its HTTP wait was still given: its row is there.
                owner = await asyncpg.connect(servers.postgres.dsn_for("t_nats_cluster"))
                try:

                    async def late_ones_answered() -> bool:
                        found = await owner.fetchval(
                            "SELECT count(*) FROM answers WHERE request_id = ANY($1::text[])",
                            list(load.late.values()),
                        )
                        return bool(found == len(load.late))

                    await wait_until(late_ones_answered, 60)
                    # Asked once each, answered once each.
                    rows = await owner.fetch(
                        "SELECT q.question, count(a.request_id) AS answers FROM questions q "
                        "LEFT JOIN answers a USING (request_id) GROUP BY q.question"
                    )
                finally:
                    await owner.close()
                request_ids = [b["request_id"] for b in load.answered.values()]
                request_ids += list(load.late.values())
                assert len(set(request_ids)) == QUESTIONS
                assert sorted(r["question"] for r in rows) == sorted(questions)
                assert all(r["answers"] == 1 for r in rows), rows

                # No finq process died or was started again.
                finq.supervisor.restart_crashed()
                assert all(s.running() and s.restarts == 0 for s in finq.supervisor.services)
                assert {s.name: s.process.pid for s in finq.supervisor.services if s.process} == (
                    pids
                )

                # The node came back with its data and caught up with what it missed.
                leader = node_named(cluster, await stream_leader(js, QUESTION_STREAM))

                async def caught_up() -> bool:
                    mine, theirs = await asyncio.gather(
                        asyncio.to_thread(stream_state_on, cluster.nodes[victim]),
                        asyncio.to_thread(stream_state_on, cluster.nodes[leader]),
                    )
                    return mine.get(QUESTION_STREAM) == theirs.get(QUESTION_STREAM) == QUESTIONS

                await wait_until(caught_up, 30)
                print(
                    f"{QUESTIONS} questions in {took:.1f} s: {len(load.answered)} answered in "
                    f"time (slowest {load.slowest:.1f} s), {len(load.late)} late; node "
                    f"{victim} (clients {clients[victim]}) killed after {killed_at} answers"
                )
            finally:
                await nc.close()
    finally:
        await asyncio.to_thread(cluster.stop)
