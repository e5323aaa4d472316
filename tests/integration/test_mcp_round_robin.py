"""Two server processes behind a round-robin serve one client.

Calls alternate between the two instances (one port, then the other), so a read is
answered by one and the edit by the other, and an approval is asked by one and answered
on the other: what spans calls travels in the calls (read handles, the signed request
state), with the instances sharing only their key. On 2026-07-28 (mcp 2.x's `Client`)
that needs nothing more; on the older protocol the servers run with `--stateless` (no
`Mcp-Session-Id`, nothing evicted to one instance's memory).
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools.mcp.sdk import GENERATION
from tests.integration.mcp_servers import AUTHORIZATION, http_server, make_workspace, wire

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

TIMEOUT = 90


def round_robin(urls: list[str], calls: list[tuple[int, str]]) -> Any:
    """An HTTP client sending each `tools/call` to the next of `urls` in turn.

    Other requests (discovery, the listing the client fetches once) go to the first.
    Records `(port, tool)` for every `tools/call` it sends.
    """
    httpx2: Any = importlib.import_module("httpx2" if GENERATION >= 2 else "httpx")  # the SDK's

    parsed = [httpx2.URL(url) for url in urls]
    turns = itertools.cycle(parsed)

    class RoundRobin(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            body = json.loads(request.content or b"{}")
            calling = isinstance(body, dict) and body.get("method") == "tools/call"
            target = next(turns) if calling else parsed[0]
            request.url = request.url.copy_with(host=target.host, port=target.port)
            request.headers["host"] = f"{target.host}:{target.port}"
            if calling:
                calls.append((target.port, body["params"]["name"]))
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return httpx2.AsyncClient(
        transport=RoundRobin(), headers=AUTHORIZATION, timeout=httpx2.Timeout(30, read=300)
    )


@pytest.mark.skipif(GENERATION < 2, reason="mcp 1.x has no Client speaking 2026-07-28")
async def test_two_instances_alternating_serve_reads_edits_and_approvals(tmp_path: Path) -> None:
    from mcp import Client, types  # noqa: PLC0415 - mcp 2.x only
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    workspace = make_workspace(tmp_path)
    args = ("--root", str(workspace), "--mode", "accept_edits")
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> Any:
        del context
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    calls: list[tuple[int, str]] = []
    with http_server(*args) as first, http_server(*args) as second:
        transport = streamable_http_client(first, http_client=round_robin([first, second], calls))
        async with (
            asyncio.timeout(TIMEOUT),
            Client(transport, elicitation_callback=approve) as client,
        ):
            read = await client.call_tool("read_file", {"file_path": "/notes.txt"})
            handle = read.structured_content["read_handle"]
            edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
            edited = await client.call_tool("edit_file", {**edit, "read_handle": handle})
            ran = await client.call_tool("ls", {"path": "/"})
            protected = {"file_path": "/.bashrc", "content": "# approved\n"}
            written = await client.call_tool("write_file", protected)
    assert not edited.is_error, edited
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"
    assert not ran.is_error
    assert len(asked) == 1  # a protected path asks even in accept_edits
    assert not written.is_error, written
    assert (workspace / ".bashrc").read_text() == "# approved\n"
    ports = dict.fromkeys(port for port, _ in calls)
    assert len(ports) == 2
    by_tool = {name: [port for port, called in calls if called == name] for _, name in calls}
    assert by_tool["read_file"][0] != by_tool["edit_file"][0]  # read on one, edit on the other
    asking, answered = by_tool["write_file"]  # the question, then the retry with the answer
    assert asking != answered


async def test_two_stateless_instances_serve_a_client_of_the_older_protocol(
    tmp_path: Path,
) -> None:
    from mcp import ClientSession  # noqa: PLC0415
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    workspace = make_workspace(tmp_path)
    args = ("--root", str(workspace), "--execute", "--stateless")
    calls: list[tuple[int, str]] = []
    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
    with http_server(*args) as first, http_server(*args) as second:
        transport = streamable_http_client(first, http_client=round_robin([first, second], calls))
        async with (
            asyncio.timeout(TIMEOUT),
            transport as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            read = wire(await session.call_tool("read_file", {"file_path": "/notes.txt"}))
            blind = wire(await session.call_tool("edit_file", edit))
            handle = read["structuredContent"]["read_handle"]
            edited = wire(await session.call_tool("edit_file", {**edit, "read_handle": handle}))
            output = wire(await session.call_tool("execute", {"command": "seq 1 60000"}))
    assert blind["isError"]  # no session: only the handle says what was read
    assert not edited["isError"], edited
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"
    shown = output["content"][0]["text"]
    assert "large_tool_results" not in shown  # nothing kept in one instance's memory
    assert shown.startswith("1\n2\n3\n")
    assert "60000" in shown
    assert len({port for port, _ in calls}) == 2
