"""The MCP server over its other backends, started as a user would start it:
`--postgres URL` (files in a PostgreSQL store) and `--ssh HOST` (files on a remote host)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from tests.integration.mcp_servers import connect, text_of
from tests.integration.ssh.sshd import Sshd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

TIMEOUT = 90


async def write_read_edit_search(*args: str) -> None:
    """Create, read, edit (only after a read, per session) and search through the server."""
    async with connect("stdio", *args) as session:
        created = await session.call_tool(
            "write_file", {"file_path": "/src/app.py", "content": "x = 1\ny = 2\n"}
        )
        assert not created.isError, text_of(created)
        read = await session.call_tool("read_file", {"file_path": "/src/app.py"})
        assert "x = 1" in text_of(read)
        edit = {"file_path": "/src/app.py", "old_string": "y = 2", "new_string": "y = 3"}
        edited = await session.call_tool("edit_file", edit)
        assert not edited.isError, text_of(edited)
        found = await session.call_tool("grep", {"pattern": "y = 3", "output_mode": "content"})
        assert "/src/app.py:2:y = 3" in text_of(found)
    async with connect("stdio", *args) as fresh:  # a new session has read nothing
        refused = await fresh.call_tool(
            "edit_file", {"file_path": "/src/app.py", "old_string": "x = 1", "new_string": "x = 0"}
        )
        assert refused.isError
        assert "read" in text_of(refused).lower()
        listed = await fresh.call_tool("glob", {"pattern": "**/*.py"})
        assert "/src/app.py" in text_of(listed)


def test_over_a_postgresql_store(postgres_url: str) -> None:
    namespace = f"mcp.t{uuid.uuid4().hex[:8]}"
    args = ("--postgres", postgres_url, "--namespace", namespace)
    asyncio.run(asyncio.wait_for(write_read_edit_search(*args), TIMEOUT))


def test_over_ssh(sshd: Sshd, ssh_root: Path) -> None:
    args = (
        "--ssh",
        "127.0.0.1",
        "--ssh-root",
        str(ssh_root),
        "--ssh-port",
        str(sshd.port),
        "--ssh-user",
        sshd.username,
        "--ssh-key",
        str(sshd.client_key),
        "--known-hosts",
        str(sshd.known_hosts),
    )
    asyncio.run(asyncio.wait_for(write_read_edit_search(*args), TIMEOUT))
    assert (ssh_root / "src" / "app.py").read_text() == "x = 1\ny = 3\n"
