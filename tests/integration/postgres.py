"""A throwaway PostgreSQL server for the integration tests.

`PostgresServer` runs `initdb` in a temporary directory and `pg_ctl start` on 127.0.0.1
at a free port, with trust authentication (loopback only). As root, the server runs as
the `postgres` system user (PostgreSQL refuses to run as root). Binaries are found on
PATH or in Debian's `/usr/lib/postgresql/<version>/bin`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def find_binary(name: str) -> str:
    """Path of a PostgreSQL server binary (`initdb`, `pg_ctl`)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    if not candidates:
        raise RuntimeError(f"{name} not found: install PostgreSQL (apt-get install postgresql)")
    return str(candidates[0])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; `start`, `restart`, `stop`."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="fstools-pg-"))
        self.data = self.directory / "data"
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.directory, "postgres", "postgres")
        self.user = "postgres" if self._as_root else os.environ.get("USER", "postgres")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_root else []
        result = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, check=False, timeout=120
        )
        if result.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {result.stdout}{result.stderr}")

    def init(self) -> None:
        """Create the cluster."""
        self._run(
            find_binary("initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-instructions",
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-h 127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"
        self._run(
            find_binary("pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast` drops connections; `immediate` is a crash)."""
        self._run(find_binary("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        """Stop and start again on the same port; clients' connections break."""
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        """Create database `name`; returns its connection string."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def url(self, database: str) -> str:
        """Connection string of `database` on this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def remove(self) -> None:
        """Delete the cluster's files."""
        shutil.rmtree(self.directory, ignore_errors=True)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until a connection succeeds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
