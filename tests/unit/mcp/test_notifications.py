"""Progress reports become MCP progress notifications, only when the client asks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools.mcp.notifications import MESSAGE_CHARS, describe
from tests.unit.mcp.servers import Client, Request, file_server

if TYPE_CHECKING:
    from pathlib import Path


def test_messages() -> None:
    assert describe([{"output": "a\n"}, {"output": "b\n"}]) == "a\nb\n"
    assert describe([{"output": "x" * (MESSAGE_CHARS + 5) + "END"}]).endswith("END")
    assert len(describe([{"output": "x" * (MESSAGE_CHARS * 2)}])) == MESSAGE_CHARS
    assert describe([{"files": 1, "matches": 2}, {"files": 3, "matches": 7}]) == (
        "7 matching lines in 3 files so far"
    )
    assert describe([{"files": 12}]) == "12 files found"
    assert describe([{"lines": 1_500_000}]) == "1,500,000 lines scanned"


async def test_a_long_read_reports_the_lines_it_passes(tmp_path: Path) -> None:
    line = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm\n"  # 60 bytes
    count = 600_000  # 36 MB: two reports of 16 MiB each
    (tmp_path / "big.log").write_bytes(line * count)
    server = file_server(tmp_path)
    client = Client()
    request = Request("read_file", {"file_path": "/big.log", "offset": count, "limit": 1}, client)
    result = await server.call(request)  # type: ignore[arg-type]
    assert result.model_dump(by_alias=True)["isError"] is False
    messages = [message for _, message in request.sent]
    assert len(messages) >= 2
    assert all(m.endswith(" lines scanned") for m in messages)
    assert [n for n, _ in request.sent] == list(range(1, len(messages) + 1))


async def test_glob_reports_once_and_nothing_without_a_token(tmp_path: Path) -> None:
    for n in range(3):
        (tmp_path / f"f{n}.txt").write_text("x\n")
    server = file_server(tmp_path)
    client = Client()
    asked = Request("glob", {"pattern": "*.txt"}, client)
    await server.call(asked)  # type: ignore[arg-type]
    assert asked.sent == [(1, "3 files found")]
    silent = Request("glob", {"pattern": "*.txt"}, client, progress_token=None)
    await server.call(silent)  # type: ignore[arg-type]
    assert silent.sent == []


async def test_execute_output_arrives_while_the_command_runs(tmp_path: Path) -> None:
    server = file_server(tmp_path)
    script = "echo one; sleep 0.5; echo two"
    request = Request("execute", {"command": script}, Client())
    result = await server.call(request)  # type: ignore[arg-type]
    assert result.model_dump(by_alias=True)["isError"] is False
    assert "".join(message for _, message in request.sent) == "one\ntwo\n"
    assert len(request.sent) == 2
