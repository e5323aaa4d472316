"""mcp 2.x's own `Client` in its default mode: the 2026-07-28 protocol, no session.

The client negotiates `2026-07-28` against a 2.x server; nothing spans two calls but
what the calls carry, so an edit applies only with the `read_handle` of a read. Runs in
the mcp 2.x venv (see `test_mcp_sdk2.py`); skipped on mcp 1.x, which has no `Client`.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools.mcp.sdk import GENERATION
from tests.integration.mcp_servers import command, http_server, make_workspace, server_env

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
    pytest.mark.skipif(GENERATION < 2, reason="mcp 1.x has no Client speaking 2026-07-28"),
]

TIMEOUT = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return make_workspace(root)


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Any]:
    """What `mcp.Client` connects to: a stdio command line, or a server's URL."""
    from mcp import StdioServerParameters  # noqa: PLC0415 - mcp 2.x only

    if request.param == "http":
        with http_server("--root", str(workspace)) as url:
            yield url
        return
    args = command("--root", str(workspace))[1:]
    yield StdioServerParameters(command=sys.executable, args=args, env=server_env())


def result(answer: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


async def test_read_then_edit_with_the_handle_applies_and_blind_edits_are_refused(
    target: Any, workspace: Path
) -> None:
    from mcp import Client  # noqa: PLC0415 - mcp 2.x only

    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
    async with asyncio.timeout(TIMEOUT), Client(target) as client:
        assert client.session.protocol_version == "2026-07-28"
        other = result(await client.call_tool("read_file", {"file_path": "/src/app.py"}))
        read = result(await client.call_tool("read_file", {"file_path": "/notes.txt"}))
        blind = result(await client.call_tool("edit_file", edit))
        foreign = {**edit, "read_handle": other["structuredContent"]["read_handle"]}
        misdirected = result(await client.call_tool("edit_file", foreign))
        handle = read["structuredContent"]["read_handle"]
        edited = result(await client.call_tool("edit_file", {**edit, "read_handle": handle}))
    for refused in (blind, misdirected):
        assert refused["isError"] is True
        assert refused["content"][0]["text"].startswith(
            "Error: this MCP client has not read /notes.txt:"
        )
    assert edited["isError"] is False, edited
    assert edited["content"][-1]["text"].splitlines()[-1].startswith("read_handle: ")
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"
