"""The command environment through an agent with a checkpointer, on local disk,
in the bwrap sandbox and over SSH: the agent's secrets stay out, `env=` goes in."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.testing import ScriptedChatModel, tool_call
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

COMMAND = 'echo "key=[$MY_API_KEY] ci=[$CI]"'


def run_agent(backend: Backend) -> str:
    agent = create_agent(
        ScriptedChatModel(turns=[tool_call("execute", command=COMMAND), "Ran it."]),
        middleware=[FilesystemMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "env"}}
    state = agent.invoke({"messages": [{"role": "user", "content": "Run it"}]}, config)
    (reply,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert reply.status == "success", reply.content
    # The checkpointed thread holds the same reply: nothing of the secret was stored.
    saved = agent.get_state(config).values["messages"]
    assert "s3cret" not in str(saved)
    return str(reply.content)


Make = Callable[[Path], Backend]


def local(root: Path) -> Backend:
    return LocalBackend(root, execute=True, inherit_env=["PATH"], env={"CI": "1"})


def sandboxed(root: Path) -> Backend:
    assert shutil.which("bwrap"), "bubblewrap is not installed (see .ci/run)"
    return LocalBackend(root, execute=True, sandbox="bwrap", env={"CI": "1"})


@pytest.mark.parametrize("make", [local, sandboxed], ids=["local", "sandbox"])
def test_commands_get_env_and_not_the_agents_secrets(
    make: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_KEY", "s3cret")
    assert "key=[] ci=[1]" in run_agent(make(tmp_path))


def test_over_ssh_commands_get_env_and_not_the_sessions_variables(
    sshd: Sshd, ssh_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_KEY", "s3cret")
    backend = connect(sshd, ssh_root, inherit_env=False, env={"CI": "1"})
    try:
        assert "key=[] ci=[1]" in run_agent(backend)
    finally:
        backend.close()
