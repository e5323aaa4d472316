"""SandboxBackend(DockerSandbox): the helper's commands through a relay (`backends.sandbox.relay`).

`DockerSandbox.open_stream` keeps one `docker exec -i` open; the file tools' operations
then cost no `docker exec` each. Counted by wrapping the sandbox's own `execute` and
`open_stream`, never by looking into the container from the host.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import docker.errors
import pytest

from langchain_fstools import FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend, relay

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox
    from tests.integration.docker.engine import DockerEngine

pytestmark = pytest.mark.integration

_RELAYS = "grep -l 'fstools[-]relay' /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3"
"""The pids of the relays' processes in the container (with the shells that started them;
the pattern does not match this command's own)."""


def _counted(sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    execute, open_stream = sandbox.execute, sandbox.open_stream

    def counted_execute(command: str, *, timeout: int | None = None) -> Any:
        calls["execute"] += 1
        return execute(command, timeout=timeout)

    def counted_open_stream(command: str) -> Any:
        calls["open_stream"] += 1
        return open_stream(command)

    monkeypatch.setattr(sandbox, "execute", counted_execute)
    monkeypatch.setattr(sandbox, "open_stream", counted_open_stream)
    return calls


def test_file_tools_cost_no_docker_exec_once_the_relay_runs(
    docker_sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counted(docker_sandbox, monkeypatch)
    backend = SandboxBackend(docker_sandbox)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    tools["write_file"].invoke({"file_path": "/src/a.py", "content": "def f():\n    return 1\n"})
    tools["grep"].invoke({"pattern": "return", "path": "/"})  # the first search asks what rg is
    warm = calls["execute"]
    for number in range(5):
        path = f"/src/m{number}.py"
        tools["write_file"].invoke({"file_path": path, "content": f"X = {number}\n"})
        assert f"X = {number}" in str(tools["read_file"].invoke({"file_path": path}))
        edited = tools["edit_file"].invoke(
            {"file_path": path, "old_string": f"X = {number}", "new_string": "X = -1"}
        )
        assert "rror" not in str(edited)
    assert "m4.py" in str(tools["grep"].invoke({"pattern": "X = -1", "path": "/src"}))
    assert "m3.py" in str(tools["glob"].invoke({"pattern": "**/m*.py", "path": "/"}))
    assert calls["execute"] == warm
    assert calls["open_stream"] == 1
    backend.close()


def test_a_relay_killed_in_the_sandbox_loses_nothing(docker_sandbox: DockerSandbox) -> None:
    """Killed between calls (a provider's own clean-up): the next call still answers."""
    backend = SandboxBackend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    killed = docker_sandbox.execute(
        f"for p in $({_RELAYS}); do kill -KILL $p; done; sleep 0.2; {_RELAYS}"
    )
    assert killed.exit_code == 0
    assert not killed.output.strip()
    backend.write_bytes("/a.txt", b"two")
    assert backend.read_bytes("/a.txt") == b"two"
    backend.close()


def test_closing_the_backend_ends_its_relays(docker_sandbox: DockerSandbox) -> None:
    backend = SandboxBackend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    assert docker_sandbox.execute(_RELAYS).output.strip()
    backend.close()
    until = time.monotonic() + 10
    while docker_sandbox.execute(_RELAYS).output.strip():
        assert time.monotonic() < until, "a relay outlived its backend's close"
        time.sleep(0.2)


def test_an_idle_sandbox_still_ends_itself_after_its_relay_ends(
    docker_engine: DockerEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay, "RELAY_IDLE", 1.0)
    sandbox = docker_engine.sandbox(idle_timeout=2)
    try:
        backend = SandboxBackend(sandbox)
        backend.write_bytes("/a.txt", b"one")
        assert backend.read_bytes("/a.txt") == b"one"
        until = time.monotonic() + 30
        while time.monotonic() < until:
            try:
                docker_engine.client.containers.get(sandbox.id)
            except docker.errors.NotFound:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the sandbox did not end itself once its relay was idle")
    finally:
        sandbox.close()


def test_a_sandbox_gone_under_a_live_relay_is_one_sentence(docker_engine: DockerEngine) -> None:
    """The container is removed by another client while a relay is kept open for it."""
    sandbox = docker_engine.sandbox()
    backend = SandboxBackend(sandbox)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    backend.write_bytes("/notes.txt", b"one\n")
    sandbox.close()
    for name, args in [
        ("write_file", {"file_path": "/other.txt", "content": "two\n"}),
        ("read_file", {"file_path": "/notes.txt"}),
        ("grep", {"pattern": "one", "path": "/"}),
    ]:
        message = tools[name].invoke({"type": "tool_call", "id": "c1", "name": name, "args": args})
        assert message.status == "error", (name, message.content)
        (sentence,) = [line for line in str(message.content).splitlines() if line]
        assert "gone" in sentence, sentence
        assert sentence.endswith(".")
    backend.close()
