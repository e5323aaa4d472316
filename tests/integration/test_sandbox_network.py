"""The bwrap sandbox has no network: a listener on loopback is reached only from outside."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.sandbox import Method, Sandbox


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records what each connection sends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                received.append(connection.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(timeout=2)
    server.close()


@pytest.mark.integration
@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_sandboxed_command_cannot_connect_but_unsandboxed_can(
    tmp_path: Path, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    command = f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'"

    plain = LocalBackend(tmp_path, execute=True, sandbox=None).execute(
        command, timeout=20, output_limit=1000
    )
    assert plain.exit_code == 0, plain.output
    deadline = time.monotonic() + 2
    while not received and time.monotonic() < deadline:
        time.sleep(0.02)
    assert received == [b"hi\n"]

    for sandbox in (Sandbox(), Sandbox(method="landlock")):
        boxed = LocalBackend(tmp_path, execute=True, sandbox=sandbox).execute(
            command, timeout=20, output_limit=1000
        )
        assert boxed.exit_code != 0
        assert any(
            refusal in boxed.output
            for refusal in (
                "Connection refused",
                "Network is unreachable",
                "Permission denied",
                "Operation not permitted",
            )
        ), boxed.output
    assert received == [b"hi\n"]


@pytest.mark.integration
@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_a_sandbox_with_network_true_can_connect(
    tmp_path: Path, listener: tuple[int, list[bytes]], method: Method
) -> None:
    port, received = listener
    backend = LocalBackend(tmp_path, execute=True, sandbox=Sandbox(network=True, method=method))
    result = backend.execute(
        f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'", timeout=20, output_limit=1000
    )
    assert result.exit_code == 0, result.output
    deadline = time.monotonic() + 2
    while not received and time.monotonic() < deadline:
        time.sleep(0.02)
    assert received == [b"hi\n"]
