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
from tests.integration.mcp_servers import (
    command,
    http_server,
    http_transport,
    make_workspace,
    server_env,
)

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
            yield http_transport(url)
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


def approving(answer: dict[str, Any] | None, seen: list[str], before: Any = None) -> Any:
    """An elicitation callback: records the message, runs `before`, then answers."""

    async def callback(context: Any, params: Any) -> Any:
        from mcp import types  # noqa: PLC0415 - mcp 2.x only

        del context
        seen.append(params.message)
        if before is not None:
            before()
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    return callback


@pytest.fixture
def approval_target(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Any]:
    """A server with `--mode default` (every write asks), over stdio or HTTP."""
    from mcp import StdioServerParameters  # noqa: PLC0415 - mcp 2.x only

    args = ("--root", str(workspace), "--mode", "default")
    if request.param == "http":
        with http_server(*args) as url:
            yield http_transport(url)
        return
    yield StdioServerParameters(command=sys.executable, args=command(*args)[1:], env=server_env())


@pytest.mark.parametrize("approval_target", ["stdio", "http"], indirect=True)
@pytest.mark.parametrize(
    ("answer", "written"), [({"approve": True}, True), ({"approve": False}, False), (None, False)]
)
async def test_approvals_ask_by_multi_round_trip_and_nothing_raises(
    approval_target: Any, workspace: Path, answer: dict[str, Any] | None, written: bool
) -> None:
    from mcp import Client  # noqa: PLC0415 - mcp 2.x only

    seen: list[str] = []
    write = {"file_path": "/approved.txt", "content": "yes\n"}
    callback = approving(answer, seen)
    async with (
        asyncio.timeout(TIMEOUT),
        Client(approval_target, elicitation_callback=callback) as client,
    ):
        assert client.session.protocol_version == "2026-07-28"
        done = result(await client.call_tool("write_file", write))
    assert len(seen) == 1
    assert "/approved.txt" in seen[0]
    assert "+yes" in seen[0]  # the diff the person approves
    assert done["isError"] is (not written), done
    assert (workspace / "approved.txt").exists() is written
    if not written:
        assert done["content"][0]["text"].startswith("User rejected the tool call for `write_file`")


@pytest.mark.parametrize("approval_target", ["stdio"], indirect=True)
async def test_a_change_approved_after_the_file_changed_is_refused_as_stale(
    approval_target: Any, workspace: Path
) -> None:
    from mcp import Client  # noqa: PLC0415 - mcp 2.x only

    seen: list[str] = []
    meddle = lambda: (workspace / "approved.txt").write_text("someone else\n")  # noqa: E731
    callback = approving({"approve": True}, seen, before=meddle)
    write = {"file_path": "/approved.txt", "content": "yes\n"}
    async with (
        asyncio.timeout(TIMEOUT),
        Client(approval_target, elicitation_callback=callback) as client,
    ):
        done = result(await client.call_tool("write_file", write))
    assert done["isError"] is True
    assert "changed after the change was approved" in done["content"][0]["text"]
    assert (workspace / "approved.txt").read_text() == "someone else\n"


@pytest.mark.parametrize("approval_target", ["stdio"], indirect=True)
async def test_a_client_that_cannot_ask_gets_a_refusal(
    approval_target: Any, workspace: Path
) -> None:
    from mcp import Client  # noqa: PLC0415 - mcp 2.x only

    write = {"file_path": "/approved.txt", "content": "yes\n"}
    async with asyncio.timeout(TIMEOUT), Client(approval_target) as client:
        done = result(await client.call_tool("write_file", write))
    assert done["isError"] is True
    assert "cannot ask one" in done["content"][0]["text"]
    assert not (workspace / "approved.txt").exists()
