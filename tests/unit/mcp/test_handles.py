"""Read state that travels with the call: signed read handles, with no session behind them."""

from __future__ import annotations

import re
import stat
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools import FileToolkit
from langchain_fstools.mcp.content import HANDLE_LINE
from langchain_fstools.mcp.handles import (
    HANDLE_KEY_ENV,
    KEY_FILE,
    InvalidHandle,
    ReadHandles,
    handle_key,
)
from langchain_fstools.tools.reads import ReadRecord
from tests.unit.mcp.servers import Client, Request, file_server

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.mcp.server import FileServer

KEY = b"k" * 32
RECORD = ReadRecord(version="v1", ranges=[[1, 20]], total_lines=40, view="lines:1:20")


def test_a_handle_opens_to_the_path_version_and_lines_it_was_minted_for() -> None:
    handles = ReadHandles(KEY)
    path, record = handles.open(handles.mint("/src/é.py", RECORD))
    assert path == "/src/é.py"
    assert (record["version"], record["ranges"], record["total_lines"]) == ("v1", [[1, 20]], 40)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda h: h.replace(h[3], "A" if h[3] != "A" else "B", 1),  # the payload altered
        lambda h: h.rpartition(".")[0],  # no tag
        lambda h: "not a handle",
        lambda h: ReadHandles(b"other" * 8).mint("/a.txt", RECORD),  # another key's
    ],
)
def test_an_altered_or_foreign_handle_is_refused(spoil: Any) -> None:
    handles = ReadHandles(KEY)
    with pytest.raises(InvalidHandle):
        handles.open(spoil(handles.mint("/a.txt", RECORD)))


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        ReadHandles(b"short")


def test_the_key_comes_from_the_argument_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv(HANDLE_KEY_ENV, "from-the-environment")
    assert handle_key("given") == b"given"
    assert handle_key() == b"from-the-environment"
    assert not (tmp_path / KEY_FILE).exists()


def test_without_one_a_key_is_kept_in_the_config_folder_readable_only_by_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv(HANDLE_KEY_ENV, raising=False)
    first = handle_key()
    kept = tmp_path / KEY_FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert len(first) >= 32
    assert handle_key() == first  # the next server process signs with the same key
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]
    kept.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        handle_key()


def sessionless(name: str, **arguments: Any) -> Request:
    """A call on the 2026-07-28 protocol: no session, each from its own connection."""
    return Request(name, arguments, Client(), progress_token=None, asks_by_result=True)


# ----- the server: each call from a new connection, as on the 2026-07-28 protocol ------


async def call(server: FileServer, name: str, **arguments: Any) -> dict[str, Any]:
    """One call from a client with no session (a new connection every time)."""
    result = await server.call(Request(name, arguments, Client(), progress_token=None))  # type: ignore[arg-type]
    return result.model_dump(by_alias=True, exclude_none=True)


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def handle(result: dict[str, Any]) -> str:
    token = result["structuredContent"]["read_handle"]
    assert text(result).splitlines()[-1] == f"{HANDLE_LINE}{token}"
    return str(token)


@pytest.fixture
def server(tmp_path: Path) -> FileServer:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "other.txt").write_text("one\n")
    return file_server(tmp_path, handle_key=KEY)


async def test_an_edit_with_the_reads_handle_applies_and_returns_a_fresh_one(
    server: FileServer, tmp_path: Path
) -> None:
    read = await call(server, "read_file", file_path="/notes.txt")
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    first = await call(server, "edit_file", **edit, read_handle=handle(read))
    assert first["isError"] is False
    again = {"file_path": "/notes.txt", "old_string": "gamma", "new_string": "delta"}
    second = await call(server, "edit_file", **again, read_handle=handle(first))
    assert second["isError"] is False, text(second)
    assert (tmp_path / "notes.txt").read_text() == "alpha\ndelta\n"


async def test_a_blind_edit_and_one_with_another_files_handle_are_refused(
    server: FileServer, tmp_path: Path
) -> None:
    other = handle(await call(server, "read_file", file_path="/other.txt"))
    await call(server, "read_file", file_path="/notes.txt")  # read, but the handle not passed
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    for refused in [
        await call(server, "edit_file", **edit),
        await call(server, "edit_file", **edit, read_handle=other),
    ]:
        assert refused["isError"] is True
        assert text(refused).startswith("Error: this MCP client has not read /notes.txt:")
        assert "read_handle" in text(refused)
    assert (tmp_path / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_a_handle_for_an_older_version_is_stale(server: FileServer, tmp_path: Path) -> None:
    old = handle(await call(server, "read_file", file_path="/notes.txt"))
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    assert (await call(server, "edit_file", **edit, read_handle=old))["isError"] is False
    edit = {"file_path": "/notes.txt", "old_string": "gamma", "new_string": "delta"}
    stale = await call(server, "edit_file", **edit, read_handle=old)
    assert stale["isError"] is True
    assert "modified since it was last read" in text(stale)
    assert (tmp_path / "notes.txt").read_text() == "alpha\ngamma\n"


async def test_an_altered_handle_is_refused_with_what_to_do(server: FileServer) -> None:
    token = handle(await call(server, "read_file", file_path="/notes.txt"))
    forged = token.replace(token[5], "A" if token[5] != "A" else "B", 1)
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    refused = await call(server, "edit_file", **edit, read_handle=forged)
    assert refused["isError"] is True
    assert text(refused).startswith("Error: read_handle is not one this server gave")


async def test_handles_accumulate_so_windows_read_in_turn_allow_an_overwrite(
    server: FileServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    head = await call(server, "read_file", file_path="/notes.txt", limit=5)
    write = {"file_path": "/notes.txt", "content": "new\n"}
    partial = await call(server, "write_file", **write, read_handle=handle(head))
    assert partial["isError"] is True
    assert "has read only part of /notes.txt" in text(partial)
    tail = await call(
        server, "read_file", file_path="/notes.txt", offset=6, read_handle=handle(head)
    )
    written = await call(server, "write_file", **write, read_handle=handle(tail))
    assert written["isError"] is False, text(written)
    assert (tmp_path / "notes.txt").read_text() == "new\n"


async def test_a_session_client_that_passes_no_handle_still_edits(
    server: FileServer, tmp_path: Path
) -> None:
    client = Client()
    read = Request("read_file", {"file_path": "/notes.txt"}, client, progress_token=None)
    await server.call(read)  # type: ignore[arg-type]
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    result = await server.call(Request("edit_file", edit, client, progress_token=None))  # type: ignore[arg-type]
    assert result.model_dump(by_alias=True)["isError"] is False
    assert (tmp_path / "notes.txt").read_text() == "alpha\ngamma\n"


async def test_a_handle_from_one_server_instance_works_on_another_with_the_key(
    server: FileServer, tmp_path: Path
) -> None:
    token = handle(await call(server, "read_file", file_path="/notes.txt"))
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    stranger = file_server(tmp_path, handle_key=b"x" * 32)
    assert (await call(stranger, "edit_file", **edit, read_handle=token))["isError"] is True
    twin = file_server(tmp_path, handle_key=KEY)
    assert (await call(twin, "edit_file", **edit, read_handle=token))["isError"] is False


def test_the_listing_offers_read_handle_only_on_the_tools_that_take_it(
    server: FileServer,
) -> None:
    schemas = {tool.name: tool.model_dump(by_alias=True) for tool in server.listing}
    takers = {
        name for name, s in schemas.items() if "read_handle" in s["inputSchema"]["properties"]
    }
    assert takers == {"read_file", "edit_file", "write_file", "notebook_edit"}
    assert "unchanged" not in schemas["read_file"]["description"]
    assert "read_handle" in schemas["edit_file"]["description"]
    # the LangChain tools, as agents get them, keep their schemas and description
    tools = {tool.name: tool for tool in FileToolkit(server.backend).get_tools()}
    schema = tools["edit_file"].tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert "read_handle" not in schema["properties"]
    assert "read_handle" not in tools["edit_file"].description


async def test_sessionless_calls_count_reads_only_through_handles(
    server: FileServer, tmp_path: Path
) -> None:
    await server.call(sessionless("read_file", file_path="/notes.txt"))  # type: ignore[arg-type]
    edit = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "gamma"}
    refused = await server.call(sessionless("edit_file", **edit))  # type: ignore[arg-type]
    assert refused.model_dump(by_alias=True)["isError"] is True  # another caller's read
    assert (tmp_path / "notes.txt").read_text() == "alpha\nbeta\n"


async def test_a_sessionless_clients_evicted_result_can_be_read_back(
    server: FileServer,
) -> None:
    ran = await server.call(sessionless("execute", command="seq 1 60000"))  # type: ignore[arg-type]
    saved = re.search(r"/large_tool_results/[\w-]+", text(ran.model_dump(by_alias=True)))
    assert saved is not None
    back = await server.call(sessionless("read_file", file_path=saved.group(0), limit=2))  # type: ignore[arg-type]
    dumped = back.model_dump(by_alias=True)
    assert dumped["isError"] is False, text(dumped)
    assert text(dumped).startswith("1\t1\n2\t2")


async def test_a_server_without_a_token_serves_reads_and_refuses_every_change(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("a\n")
    server = file_server(tmp_path, reads_only=True)

    assert sorted(tool.name for tool in server.listing) == ["glob", "grep", "ls", "read_file"]
    assert (await call(server, "read_file", file_path="/notes.txt"))["isError"] is False
    for name, arguments in [
        ("write_file", {"file_path": "/pwned.txt", "content": "x"}),
        ("execute", {"command": "touch pwned.txt"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: p\n+x\n*** End Patch"}),
    ]:
        refused = await call(server, name, **arguments)
        assert refused["isError"] is True
        assert text(refused).startswith(f"Error: {name} is not served here: this server takes")
    assert not (tmp_path / "pwned.txt").exists()
