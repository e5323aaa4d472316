"""The MCP server's language servers, through the real `mcp` client over stdio.

Where the `lsp` extra is installed (the suite turns the default off in its environment,
`LANGCHAIN_FSTOOLS_DIAGNOSTICS=off`; this server runs without that), the server lists
the read-only `diagnostics` tool and its changes report the diagnostics they introduced.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from langchain_fstools.lsp import DIAGNOSTICS_ENV
from tests.integration.mcp_servers import command, server_env, text_of

pytestmark = [pytest.mark.integration]

TIMEOUT = 60


def server(root: Path, *, diagnostics: str) -> StdioServerParameters:
    """A stdio server over `root`, with `LANGCHAIN_FSTOOLS_DIAGNOSTICS=diagnostics`."""
    env = {**server_env(), DIAGNOSTICS_ENV: diagnostics}
    args = command("--root", str(root))[1:]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


async def test_the_diagnostics_tool_is_listed_and_changes_report_theirs(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "old.py").write_text("print(before)\n")
    async with (
        asyncio.timeout(TIMEOUT),
        stdio_client(server(tmp_path, diagnostics="on")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["diagnostics"].annotations is not None
        assert tools["diagnostics"].annotations.readOnlyHint is True
        written = await session.call_tool(
            "write_file", {"file_path": "/pkg/new.py", "content": "print(missing)\n"}
        )
        existing = await session.call_tool("diagnostics", {"path": "/pkg"})
    assert not written.isError
    assert "/pkg/new.py:1:7: error F821 Undefined name `missing` (ruff)" in text_of(written)
    assert str(tmp_path) not in text_of(written)
    listed = text_of(existing).splitlines()
    assert "/pkg/old.py:1:7: error F821 Undefined name `before` (ruff)" in listed
    assert "/pkg/new.py:1:7: error F821 Undefined name `missing` (ruff)" in listed


async def test_turned_off_the_server_lists_no_diagnostics_tool(tmp_path: Path) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        stdio_client(server(tmp_path, diagnostics="off")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        written = await session.call_tool(
            "write_file", {"file_path": "/new.py", "content": "print(missing)\n"}
        )
    assert "read_file" in names
    assert "diagnostics" not in names
    assert "F821" not in text_of(written)
