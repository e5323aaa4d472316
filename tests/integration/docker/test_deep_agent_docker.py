"""A deep agent works in a Docker sandbox through this package's tools: deepagents'
`create_deep_agent` with the provider object as its `backend` (a `BaseSandbox`, as it
expects) and `FilesystemMiddleware` over `SandboxBackend` of the same sandbox in place
of its own file tools (a real Docker Engine, a scripted model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from deepagents import create_deep_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration

CONFIG: Any = {"configurable": {"thread_id": "deep"}}
APPROVE = Command(resume={"decisions": [{"type": "approve"}]})


def test_a_deep_agent_reads_edits_and_runs_a_command_in_the_container(
    docker_sandbox: DockerSandbox,
) -> None:
    docker_sandbox.upload_files([("/workspace/app.py", b"print(6 * 7)\n")])
    model = ScriptedChatModel(
        turns=[
            tool_call("read_file", file_path="/app.py"),
            tool_call("edit_file", file_path="/app.py", old_string="7", new_string="8"),
            tool_call("execute", command="python3 app.py > out.txt && cat out.txt"),
            "Done.",
        ]
    )
    files = FilesystemMiddleware(backend=SandboxBackend(docker_sandbox), mode="default")
    agent = create_deep_agent(
        model=model, backend=docker_sandbox, middleware=[files], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [{"role": "user", "content": "Make it print 48."}]}, CONFIG)
    asked = []
    while interrupts := agent.get_state(CONFIG).interrupts:
        asked.append(interrupts[0].value["action_requests"][0]["name"])
        agent.invoke(APPROVE, CONFIG)
    messages = agent.get_state(CONFIG).values["messages"]
    results = [(m.name, m.status) for m in messages if isinstance(m, ToolMessage)]
    assert results == [("read_file", "success"), ("edit_file", "success"), ("execute", "success")]
    assert asked == ["edit_file", "execute"]
    assert "48" in messages[-2].content
    assert messages[-1].content == "Done."
    downloaded = docker_sandbox.download_files(["/workspace/app.py", "/workspace/out.txt"])
    assert [d.content for d in downloaded] == [b"print(6 * 8)\n", b"48\n"]
