"""`ls /` through the MCP server shows `/large_tool_results/` only once it holds a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import ToolMessage
from langgraph.store.memory import InMemoryStore

from langchain_fstools import CompositeBackend, LocalBackend, StoreBackend
from langchain_fstools.mcp.sessions import CallRuntime, Session
from tests.unit.mcp.servers import file_server

if TYPE_CHECKING:
    from pathlib import Path


def test_an_empty_mount_hidden_while_empty_is_not_listed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    results = StoreBackend(InMemoryStore())
    mounts = {"/large_tool_results/": results}
    hidden = CompositeBackend(LocalBackend(tmp_path), mounts, hidden_while_empty=mounts)
    shown = CompositeBackend(LocalBackend(tmp_path), mounts)
    assert [e.path for e in hidden.list_dir("/")] == ["/a.txt"]
    assert [e.path for e in shown.list_dir("/")] == ["/a.txt", "/large_tool_results"]
    results.write_bytes("/large_tool_results/r1", b"result\n")
    assert [e.path for e in hidden.list_dir("/")] == ["/a.txt", "/large_tool_results"]


async def test_ls_shows_large_tool_results_once_something_is_evicted(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    server = file_server(tmp_path)
    session = Session.open(
        server._toolkit, server.backend, policy=None, eviction=True, signer=server.handles
    )

    async def call(name: str, **args: object) -> str:
        message = await session.run(
            session.tools[name],
            {"name": name, "args": args, "id": f"c_{name}", "type": "tool_call"},
            CallRuntime(f"c_{name}"),
        )
        assert isinstance(message, ToolMessage)
        return str(message.content)

    assert "large_tool_results" not in await call("ls", path="/")
    assert "saved to /large_tool_results/" in await call("execute", command="seq 1 60000")
    assert "/large_tool_results/" in await call("ls", path="/")
