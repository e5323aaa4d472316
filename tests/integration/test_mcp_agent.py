"""A LangGraph agent uses the MCP server through langchain-mcp-adapters, end to end."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from langchain_fstools.testing import ScriptedChatModel
from tests.integration.mcp_servers import command, make_workspace, server_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

SCRIPT = [
    ("edit_file", {"file_path": "/src/app.py", "old_string": "Helo", "new_string": "Hello"}),
    ("read_file", {"file_path": "/src/app.py"}),
    ("edit_file", {"file_path": "/src/app.py", "old_string": "Helo", "new_string": "Hello"}),
    ("grep", {"pattern": "Hello", "output_mode": "content"}),
]


async def test_agent_reads_edits_and_greps_through_mcp(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    client = MultiServerMCPClient(
        {
            "files": {
                "transport": "stdio",
                "command": sys.executable,
                "args": command("--root", str(workspace))[1:],
                "env": server_env(),
            }
        }
    )
    turns = [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])
        for n, (name, args) in enumerate(SCRIPT, start=1)
    ]
    model = ScriptedChatModel(turns=[*turns, AIMessage(content="Fixed.")])
    # One session for the whole run: its reads count, so the script passes no read_handle
    # (client.get_tools() opens a session per call: see the test below).
    async with asyncio.timeout(90), client.session("files") as session:
        tools = await load_mcp_tools(session)
        assert {"read_file", "edit_file", "grep"} <= {t.name for t in tools}
        agent = create_agent(model, tools=tools)
        result = await agent.ainvoke({"messages": [{"role": "user", "content": "Fix the typo."}]})
    results = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == [name for name, _ in SCRIPT]
    refused, read, edited, found = results
    assert refused.status == "error"
    assert "read" in str(refused.content)
    assert "Helo" in str(read.content)
    assert edited.status != "error"
    assert "/src/app.py:2:" in str(found.content)
    assert (
        workspace / "src/app.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'
    assert result["messages"][-1].content == "Fixed."


class HandleFollowingModel(ScriptedChatModel):
    """A model that does what the descriptions say: read, then edit with the read's handle."""

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: PLC0415

        del stop, run_manager, kwargs
        results = [m for m in messages if isinstance(m, ToolMessage)]
        edit = {"file_path": "/src/app.py", "old_string": "Helo", "new_string": "Hello"}
        if not results:
            turn = AIMessage(
                content="",
                tool_calls=[
                    {"name": "read_file", "args": {"file_path": "/src/app.py"}, "id": "call_1"}
                ],
            )
        elif len(results) == 1:
            handle = re.search(r"^read_handle: (\S+)$", text(results[0]), re.MULTILINE)
            assert handle is not None, results[0].content
            args = {**edit, "read_handle": handle.group(1)}
            turn = AIMessage(
                content="", tool_calls=[{"name": "edit_file", "args": args, "id": "call_2"}]
            )
        else:
            turn = AIMessage(content="Fixed.")
        return ChatResult(generations=[ChatGeneration(message=turn)])


def text(message: ToolMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] if isinstance(b, dict) else str(b) for b in content)


async def test_an_agent_edits_through_get_tools_with_a_session_per_call(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    client = MultiServerMCPClient(
        {
            "files": {
                "transport": "stdio",
                "command": sys.executable,
                "args": command("--root", str(workspace))[1:],
                "env": server_env(),
            }
        }
    )
    async with asyncio.timeout(90):
        tools = await client.get_tools()  # each call opens its own session (a new server)
        agent = create_agent(HandleFollowingModel(), tools=tools)
        result = await agent.ainvoke({"messages": [{"role": "user", "content": "Fix the typo."}]})
    read, edited = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "read_handle: " in text(read)
    assert edited.status != "error", edited.content
    assert "Hello" in (workspace / "src/app.py").read_text()
    assert result["messages"][-1].content == "Fixed."
