"""A local-disk agent built and run inside the event loop, as `langgraph dev` does.

`langgraph dev` calls an async graph factory on its event loop and refuses blocking
calls there (blockbuster; tests/conftest.py runs every async test under the same
configuration). Building the backend, the middleware and the agent, and running every
tool through `ainvoke`, must not block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import ToolMessage

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

SCRIPT = [
    tool_call("ls", call_id="ls", path="/"),
    tool_call("glob", call_id="glob", pattern="**/*.py"),
    tool_call("grep", call_id="grep", pattern="greet", output_mode="content"),
    tool_call("read_file", call_id="read", file_path="/src/app.py"),
    tool_call(
        "edit_file", call_id="edit", file_path="/src/app.py", old_string="Helo", new_string="Hello"
    ),
    tool_call("write_file", call_id="write", file_path="/notes/todo.md", content="- ship\n"),
    tool_call("execute", call_id="execute", command="cat src/app.py; echo done >&2"),
    "Done.",
]


async def make_graph(root: Path) -> Any:
    """An async graph factory, as `langgraph.json` would name it."""
    backend = LocalBackend(root, execute=True)
    return create_agent(
        ScriptedChatModel(turns=SCRIPT), middleware=[FilesystemMiddleware(backend=backend)]
    )


async def test_graph_factory_and_every_tool_run_without_blocking_the_loop(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text('def greet(n):\n    return f"Helo, {n}"\n')
    agent = await make_graph(tmp_path)
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "fix it"}]})
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert {key: m.status for key, m in results.items()} == dict.fromkeys(
        ["ls", "glob", "grep", "read", "edit", "write", "execute"], "success"
    )
    assert "Hello" in str(results["execute"].content)
    assert "[stderr] done" in str(results["execute"].content)
    assert (tmp_path / "notes" / "todo.md").read_text() == "- ship\n"
