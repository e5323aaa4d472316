"""A LangGraph agent uses the MCP server through langchain-mcp-adapters, end to end."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

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
    # One session for the whole run: read-before-write is tracked per MCP session, and
    # client.get_tools() would open a new session for every call.
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
