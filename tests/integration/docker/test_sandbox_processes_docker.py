"""Background processes on `SandboxBackend(DockerSandbox)`: kept in the container by the
helper, read, listed, killed, ended with the backend, bounded, and one sentence once the
container is gone (a real Docker Engine)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from langchain_core.messages import ToolMessage

from langchain_fstools import FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.errors import StoreUnavailable

if TYPE_CHECKING:
    from langchain_fstools.backends.sandbox.kept_processes import SandboxProcesses
    from langchain_fstools.sandboxes.docker import DockerSandbox
    from langchain_fstools.shell.session.background import Background

pytestmark = pytest.mark.integration

PORT = 8765
SERVERS = (
    "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done"
    " | grep -c '^python3 \\(-u \\)\\?-m http[.]server'"
)
"""How many `python3 -m http.server` processes run in the container (no pgrep there)."""


def _table(backend: SandboxBackend) -> SandboxProcesses:
    table = backend.processes()
    assert table is not None
    return table


def _until(check: object, seconds: float = 20.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def _read_until(process: Background, text: str, seconds: float = 20.0) -> str:
    seen = ""
    until = time.monotonic() + seconds
    while text not in seen and time.monotonic() < until:
        seen += process.read().text
        time.sleep(0.2)
    return seen


def test_a_server_runs_in_the_background_is_read_listed_and_killed(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = SandboxBackend(docker_sandbox)
    table = _table(backend)
    server = table.start(f"python3 -u -m http.server {PORT} --bind 127.0.0.1", output_limit=10_000)
    assert _until(lambda: table.accepts(PORT))
    fetch = f"python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{PORT}/')\""
    assert docker_sandbox.execute(fetch).exit_code == 0
    assert "GET / HTTP" in _read_until(server, "GET / HTTP")
    (listed,) = table.all()
    assert (listed.ident, listed.running) == (server.ident, True)
    server.kill()
    assert (server.running, server.ended_by) == (False, "kill")
    assert docker_sandbox.execute(SERVERS).output.strip() == "0"


def test_closing_the_backend_ends_its_processes_in_the_container(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = SandboxBackend(docker_sandbox)
    _table(backend).start(f"python3 -m http.server {PORT} --bind 127.0.0.1", output_limit=1000)
    assert _until(lambda: docker_sandbox.execute(SERVERS).output.strip() == "1")
    backend.close()
    assert _until(lambda: docker_sandbox.execute(SERVERS).output.strip() == "0")


def test_a_flooding_process_stays_bounded(docker_sandbox: DockerSandbox) -> None:
    backend = SandboxBackend(docker_sandbox)
    process = _table(backend).start("yes flood", output_limit=4000)
    time.sleep(2)
    output = process.read()
    process.kill()
    assert len(output.text) <= 4200
    assert output.skipped > 1_000_000


def test_a_process_gone_with_its_container_is_one_sentence(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = SandboxBackend(docker_sandbox)
    toolkit = FileToolkit(backend)
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    started = tools["execute"].invoke(
        {
            "type": "tool_call",
            "name": "execute",
            "id": "c1",
            "args": {"command": "while :; do echo tick; sleep 1; done", "background": True},
        }
    )
    assert isinstance(started, ToolMessage)
    assert started.status == "success"
    docker_sandbox.close()
    read = tools["process"].invoke(
        {
            "type": "tool_call",
            "name": "process",
            "id": "c2",
            "args": {"action": "read", "process_id": "p1"},
        }
    )
    assert isinstance(read, ToolMessage)
    assert read.status == "error"
    text = str(read.content)
    assert text.startswith("Error: the file store failed: ")
    assert text.count(". ") <= 2  # one sentence, and the setup note
    with pytest.raises(StoreUnavailable):
        _table(backend).all()
    backend.close()  # its processes went with the container: nothing to end, no error
