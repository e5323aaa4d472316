"""Background processes over MCP: one sandbox session per client, none without a session."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.server import NO_PROCESSES, FileServer
from tests.unit.mcp.servers import Client, Request, file_server

if TYPE_CHECKING:
    from pathlib import Path


async def _call(server: FileServer, client: object, name: str, **arguments: Any) -> str:
    request = Request(name, arguments, client, progress_token=None)
    result = (await server.call(request)).model_dump(by_alias=True, exclude_none=True)  # type: ignore[arg-type]
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


async def _read_until(server: FileServer, client: object, wanted: str) -> str:
    seen = ""
    for _ in range(200):
        seen += await _call(server, client, "process", action="read", process_id="p1")
        if wanted in seen:
            break
        await asyncio.sleep(0.05)
    return seen


async def test_a_client_keeps_its_processes_and_its_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    server = file_server(tmp_path)
    one, other = Client(), Client()
    started = await _call(server, one, "execute", command="cat", background=True)
    await _call(server, one, "process", action="write", process_id="p1", input="echoed\n")
    seen = await _read_until(server, one, "echoed")
    await _call(server, one, "execute", command="cd src")
    here = await _call(server, one, "execute", command="pwd")
    elsewhere = await _call(server, other, "execute", command="pwd")
    unknown = await _call(server, other, "process", action="read", process_id="p1")
    await _call(server, one, "process", action="kill", process_id="p1")
    server.backend.close()  # type: ignore[attr-defined]
    assert "process p1" in started
    assert "echoed" in seen
    assert here.startswith(str(tmp_path / "src"))
    assert elsewhere.startswith(f"{tmp_path}\n")
    assert "not a process of this thread here" in unknown


async def test_a_server_without_sessions_refuses_background_processes(tmp_path: Path) -> None:
    server = FileServer(
        LocalBackend(tmp_path, execute=True),
        tools=None,
        execute=True,
        mode=None,
        permissions=(),
        protected_paths=(),
        eviction=False,
        settings={},
        processes=False,
    )
    client = Client()
    refused = [
        await _call(server, client, "execute", command="sleep 5", background=True),
        await _call(server, client, "execute", command="sleep 5", yield_after=1),
        await _call(server, client, "process", action="list"),
    ]
    ran = await _call(server, client, "execute", command="echo whole")
    server.backend.close()  # type: ignore[attr-defined]
    assert refused == [NO_PROCESSES] * 3
    assert ran.startswith("whole\n")


async def test_a_sessionless_call_cannot_start_a_process(tmp_path: Path) -> None:
    server = file_server(tmp_path)
    request = Request(
        "execute",
        {"command": "sleep 5", "background": True},
        Client(),
        progress_token=None,
        asks_by_result=True,
    )
    result = (await server.call(request)).model_dump(by_alias=True, exclude_none=True)  # type: ignore[arg-type]
    server.backend.close()  # type: ignore[attr-defined]
    assert result["content"][0]["text"] == NO_PROCESSES
    assert result["isError"] is True
