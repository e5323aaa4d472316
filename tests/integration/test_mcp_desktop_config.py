"""The desktop-client configuration docs/mcp.md and getting-started's sixth first task give
starts a working server as written:
its `command` and `args` (with the repository path filled in) spawned over stdio, as
Claude Desktop and Cursor do, list the tools and read and edit a file."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.mcp_servers import server_env, text_of

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


PAGES = ["mcp.md", "getting-started.md"]


def desktop_entry(page: str) -> dict[str, object]:
    """The `mcpServers` entry of docs/`page` that starts the installed console script."""
    blocks = re.findall(
        r"^```json\n(.*?)^```$", (ROOT / "docs" / page).read_text(), re.DOTALL | re.MULTILINE
    )
    tables = [json.loads(block) for block in blocks if '"mcpServers"' in block]
    entries = [entry for table in tables for entry in table["mcpServers"].values()]
    (entry,) = [e for e in entries if str(e.get("command", "")).endswith("/langchain-fstools-mcp")]
    return entry


@pytest.mark.parametrize("page", PAGES)
async def test_the_documented_desktop_configuration_serves_the_repository(
    page: str, tmp_path: Path
) -> None:
    entry = desktop_entry(page)
    assert entry["command"] == "/path/to/venv/bin/langchain-fstools-mcp"
    script = Path(sys.executable).parent / "langchain-fstools-mcp"  # this virtualenv's
    args = [str(tmp_path) if arg == "/path/to/repo" else str(arg) for arg in entry["args"]]  # type: ignore[union-attr]
    (tmp_path / "todo.txt").write_text("- ship\n")
    params = StdioServerParameters(command=str(script), args=args, env=server_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"ls", "read_file", "write_file", "edit_file", "glob", "grep"} <= names
        seen = await session.call_tool("read_file", {"file_path": "/todo.txt"})
        assert text_of(seen).startswith("1\t- ship\n")
        edit = {"file_path": "/todo.txt", "old_string": "ship", "new_string": "shipped"}
        edited = await session.call_tool("edit_file", edit)  # no --mode: no one to ask
        assert not edited.isError, text_of(edited)
    assert (tmp_path / "todo.txt").read_text() == "- shipped\n"
