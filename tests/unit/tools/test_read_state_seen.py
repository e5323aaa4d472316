"""The "unchanged" stub only where the tool can see the earlier result is still shown.

Inside an agent the conversation is in graph state, so a repeated read of an unchanged
file answers with the stub while the first result is in the messages. A standalone
toolkit (and the MCP server, tested in tests/integration/test_mcp_server.py) cannot
see what its caller still has (a client may have compacted its context), so a repeated
read returns the content again. Read-before-write holds in both.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from PIL import Image

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

if TYPE_CHECKING:
    from pathlib import Path

STUB = "File unchanged since your last read"


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_standalone_toolkit_returns_the_content_again(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "logo.png").write_bytes(png())
    tools = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    for _ in range(3):
        assert tools["read_file"].invoke({"file_path": "/a.txt"}) == "     1→alpha\n     2→beta"
    for _ in range(2):
        again = tools["read_file"].invoke({"file_path": "/logo.png"})
        assert isinstance(again, list)
        assert any(block.get("type") == "image" for block in again if isinstance(block, dict))


async def test_a_standalone_toolkit_returns_the_content_again_async(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    tools = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    first = await tools["read_file"].ainvoke({"file_path": "/a.txt", "offset": 1, "limit": 5})
    second = await tools["read_file"].ainvoke({"file_path": "/a.txt", "offset": 1, "limit": 5})
    assert first == second == "     1→alpha"


def test_read_before_write_still_holds_standalone(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    tools = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    edit = {"file_path": "/a.txt", "old_string": "alpha", "new_string": "beta"}
    refused = tools["edit_file"].invoke(edit)
    assert "has not been read" in refused
    tools["read_file"].invoke({"file_path": "/a.txt"})
    tools["read_file"].invoke({"file_path": "/a.txt"})
    tools["edit_file"].invoke(edit)
    assert (tmp_path / "a.txt").read_text() == "beta\n"


def test_inside_an_agent_the_stub_is_given_while_the_result_is_shown(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    model = ScriptedChatModel(
        turns=[
            tool_call("read_file", file_path="/a.txt"),
            tool_call("read_file", file_path="/a.txt"),
            "Done.",
        ]
    )
    agent = create_agent(model, tools=FileToolkit(LocalBackend(tmp_path)).get_tools())
    state = agent.invoke({"messages": [{"role": "user", "content": "Read a.txt twice."}]})
    first, second = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert first.content == "     1→alpha\n     2→beta"
    assert str(second.content).startswith(STUB)
