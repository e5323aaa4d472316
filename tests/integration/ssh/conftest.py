"""Fixtures for the SSH tests: a real sshd on 127.0.0.1 and backends connected to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_fstools.backends.ssh import SSHBackend
from langchain_fstools.search.ripgrep import find_ripgrep
from tests.integration.ssh.sshd import Sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One server for the session; it must start, or every test using it fails."""
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.cleanup()


def connect(server: Sshd, root: Path, **options: object) -> SSHBackend:
    """A backend for `root` on `server`, logging in with the server's client key."""
    settings: dict[str, object] = {
        "port": server.port,
        "username": server.username,
        "client_keys": [server.client_key],
        "use_agent": False,
        "known_hosts": server.known_hosts,
        "rg_path": find_ripgrep() or "rg",
        **options,
    }
    return SSHBackend("127.0.0.1", root_dir=str(root), **settings)  # type: ignore[arg-type]


@pytest.fixture
def ssh_root(tmp_path: Path) -> Path:
    root = tmp_path / "remote"
    root.mkdir()
    return root


@pytest.fixture
def ssh_backend(sshd: Sshd, ssh_root: Path) -> Iterator[SSHBackend]:
    backend = connect(sshd, ssh_root)
    yield backend
    backend.close()
