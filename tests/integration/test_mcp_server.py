"""The MCP server with the real `mcp` client, over stdio and streamable HTTP (loopback)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from PIL import Image

from tests.integration.mcp_servers import (
    approving,
    connect,
    http_server,
    make_workspace,
    session_server_info,
    text_of,
    wire,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

TIMEOUT = 60

Open = Callable[..., Any]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return make_workspace(root)


@pytest.fixture(params=["stdio", "http"])
def open_client(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Open]:
    """`open_client(*server_args, elicitation=None)`: a session on a server for `workspace`.

    Over HTTP, one server runs per distinct set of arguments, so two sessions opened
    with the same arguments share it.
    """
    servers: dict[tuple[str, ...], str] = {}
    with contextlib.ExitStack() as stack:

        def open_client(*args: str, elicitation: Any = None) -> Any:
            full = ("--root", str(workspace), *args)
            if request.param == "stdio":
                return connect("stdio", *full, elicitation=elicitation)
            if full not in servers:
                servers[full] = stack.enter_context(http_server(*full))
            return connect(servers[full], elicitation=elicitation)

        yield open_client


def assert_no_host_path(result: types.CallToolResult, workspace: Path) -> None:
    text = text_of(result)
    assert str(workspace) not in text
    assert str(workspace.parent) not in text


async def test_tools_listed_with_annotations(open_client: Open) -> None:
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {
        "ls",
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "glob",
        "grep",
        "notebook_edit",
    }
    read = wire(tools["read_file"])["annotations"]
    assert read == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    edit = wire(tools["edit_file"])["annotations"]
    assert (edit["readOnlyHint"], edit["destructiveHint"], edit["idempotentHint"]) == (
        False,
        True,
        False,
    )
    write = wire(tools["write_file"])["annotations"]
    assert (write["readOnlyHint"], write["idempotentHint"]) == (False, True)
    schema = wire(tools["read_file"])["inputSchema"]
    assert "file_path" in schema["properties"]
    assert "runtime" not in schema["properties"]
    assert "-i" in wire(tools["grep"])["inputSchema"]["properties"]


async def test_read_text_and_image(open_client: Open) -> None:
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        text = await session.call_tool("read_file", {"file_path": "/notes.txt"})
        image = await session.call_tool("read_file", {"file_path": "/logo.png"})
    assert not wire(text)["isError"]
    handle = wire(text)["structuredContent"]["read_handle"]
    assert text_of(text) == f"1\talpha\n2\tbeta\n\nread_handle: {handle}"
    assert not wire(image)["isError"]
    blocks = [b for b in image.content if isinstance(b, types.ImageContent)]
    assert len(blocks) == 1
    assert wire(blocks[0])["mimeType"] == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(blocks[0].data))).size == (40, 30)


async def test_edit_refused_before_a_read_and_accepted_after(
    open_client: Open, workspace: Path
) -> None:
    edit = {"file_path": "/src/app.py", "old_string": "Helo", "new_string": "Hello"}
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        refused = await session.call_tool("edit_file", edit)
        assert wire(refused)["isError"]
        assert "read" in text_of(refused)
        assert "Helo," in (workspace / "src/app.py").read_text()
        await session.call_tool("read_file", {"file_path": "/src/app.py"})
        accepted = await session.call_tool("edit_file", edit)
    assert not wire(accepted)["isError"], text_of(accepted)
    assert (workspace / "src/app.py").read_text().count("Hello,") == 1


async def test_grep_glob_and_apply_patch(open_client: Open, workspace: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: /notes.txt\n alpha\n-beta\n+gamma\n"
        "*** Add File: /new.txt\n+fresh\n*** End Patch\n"
    )
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        found = await session.call_tool("grep", {"pattern": "Helo", "output_mode": "content"})
        globbed = await session.call_tool("glob", {"pattern": "**/*.py"})
        await session.call_tool("read_file", {"file_path": "/notes.txt"})
        patched = await session.call_tool("apply_patch", {"patch": patch})
    assert "/src/app.py:2:" in text_of(found)
    assert text_of(globbed).strip() == "/src/app.py"
    assert not wire(patched)["isError"], text_of(patched)
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    assert (workspace / "new.txt").read_text() == "fresh\n"


async def test_a_permission_ask_answered_through_elicitation(
    open_client: Open, workspace: Path
) -> None:
    asked: list[str] = []
    write = {"file_path": "/out.txt", "content": "approved\n"}
    async with (
        asyncio.timeout(TIMEOUT),
        open_client("--mode", "default", elicitation=approving({"approve": True}, asked)) as yes,
    ):
        result = await yes.call_tool("write_file", write)
    assert not wire(result)["isError"], text_of(result)
    assert len(asked) == 1
    assert "/out.txt" in asked[0]
    assert (workspace / "out.txt").read_text() == "approved\n"

    declined = {"approve": False, "reason": "not today"}
    async with (
        asyncio.timeout(TIMEOUT),
        open_client("--mode", "default", elicitation=approving(declined, asked)) as no,
    ):
        rejected = await no.call_tool("write_file", {"file_path": "/no.txt", "content": "x"})
    assert wire(rejected)["isError"]
    assert "not today" in text_of(rejected)
    assert not (workspace / "no.txt").exists()


async def test_a_permission_ask_refused_without_elicitation(
    open_client: Open, workspace: Path
) -> None:
    async with asyncio.timeout(TIMEOUT), open_client("--mode", "default") as session:
        result = await session.call_tool("write_file", {"file_path": "/out.txt", "content": "x"})
        read = await session.call_tool("read_file", {"file_path": "/notes.txt"})
    assert wire(result)["isError"]
    assert "elicitation" in text_of(result)
    assert not (workspace / "out.txt").exists()
    assert not wire(read)["isError"]  # reads are allowed in the default mode


async def test_an_error_sets_is_error(open_client: Open, workspace: Path) -> None:
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        missing = await session.call_tool("read_file", {"file_path": "/nope.txt"})
        bad = await session.call_tool("read_file", {"file_path": "/notes.txt", "offset": "x"})
    assert wire(missing)["isError"]
    assert "/nope.txt" in text_of(missing)
    assert_no_host_path(missing, workspace)
    assert wire(bad)["isError"]
    assert "offset" in text_of(bad)


async def test_a_second_session_has_its_own_read_state(open_client: Open, workspace: Path) -> None:
    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
    async with asyncio.timeout(TIMEOUT), open_client() as first:
        await first.call_tool("read_file", {"file_path": "/notes.txt"})
        async with open_client() as second:
            refused = await second.call_tool("edit_file", edit)
        assert wire(refused)["isError"]
        assert text_of(refused).startswith("Error: this MCP client has not read /notes.txt:")
        assert "read_handle" in text_of(refused)
        accepted = await first.call_tool("edit_file", edit)
    assert not wire(accepted)["isError"], text_of(accepted)
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"


async def test_the_read_handle_carries_a_read_into_another_session(
    open_client: Open, workspace: Path
) -> None:
    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
    async with asyncio.timeout(TIMEOUT):
        async with open_client() as reader:
            read = wire(await reader.call_tool("read_file", {"file_path": "/notes.txt"}))
        handle = read["structuredContent"]["read_handle"]
        assert read["content"][-1]["text"].endswith(f"\nread_handle: {handle}")
        async with open_client() as editor:  # over stdio: another server process
            edited = wire(await editor.call_tool("edit_file", {**edit, "read_handle": handle}))
        assert not edited["isError"], edited
        again = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "BETA"}
        fresh = edited["structuredContent"]["read_handle"]
        async with open_client() as third:
            stale = wire(await third.call_tool("edit_file", {**again, "read_handle": handle}))
            second = wire(await third.call_tool("edit_file", {**again, "read_handle": fresh}))
    assert stale["isError"]
    assert "modified since it was last read" in stale["content"][0]["text"]
    assert not second["isError"], second
    assert (workspace / "notes.txt").read_text() == "ALPHA\nBETA\n"


async def test_a_path_outside_the_root_is_refused_without_host_paths(
    open_client: Open, workspace: Path
) -> None:
    (workspace.parent / "secret.txt").write_text("top secret\n")
    (workspace / "escape").symlink_to(workspace.parent)
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        results = [
            await session.call_tool("read_file", {"file_path": "/../secret.txt"}),
            await session.call_tool("read_file", {"file_path": "/escape/secret.txt"}),
            await session.call_tool("write_file", {"file_path": "/../x.txt", "content": "x"}),
        ]
    for result in results:
        assert wire(result)["isError"]
        assert "top secret" not in text_of(result)
        assert_no_host_path(result, workspace)
    assert not (workspace.parent / "x.txt").exists()


async def test_large_execute_output_is_evicted_and_readable(
    open_client: Open, workspace: Path
) -> None:
    async with asyncio.timeout(TIMEOUT), open_client("--execute") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        result = await session.call_tool("execute", {"command": "seq 1 60000"})
        notice = text_of(result)
        path = notice.split("saved to ", 1)[1].split(".\n", 1)[0]
        back = await session.call_tool("read_file", {"file_path": path, "offset": 2, "limit": 2})
        found = await session.call_tool(
            "grep", {"pattern": "59999", "path": path, "output_mode": "content"}
        )
    assert wire(tools["execute"])["annotations"]["openWorldHint"] is True
    assert path.startswith("/large_tool_results/")
    assert text_of(back).startswith("2\t2\n3\t3")
    assert ":59999" in text_of(found)
    assert not (workspace / "large_tool_results").exists()


async def test_a_repeated_read_returns_the_content(open_client: Open) -> None:
    async with asyncio.timeout(TIMEOUT), open_client() as session:
        texts = [
            text_of(await session.call_tool("read_file", {"file_path": "/notes.txt"}))
            for _ in range(3)
        ]
        images = [
            await session.call_tool("read_file", {"file_path": "/logo.png"}) for _ in range(2)
        ]
    assert [text.partition("\n\nread_handle: ")[0] for text in texts] == ["1\talpha\n2\tbeta"] * 3
    for image in images:
        assert [b["type"] for b in wire(image)["content"]].count("image") == 1


async def test_the_server_names_itself_with_our_version(open_client: Open) -> None:
    from langchain_fstools import __version__  # noqa: PLC0415 - the name under test

    async with asyncio.timeout(TIMEOUT), open_client() as session:
        tools = (await session.list_tools()).tools
        info = session_server_info(session)
    assert info == {"name": "langchain-fstools", "version": __version__}
    for tool in tools:
        listed = wire(tool)
        assert listed["description"]
        assert "description" not in listed["inputSchema"]


async def test_progress_notifications_when_the_client_asks(
    open_client: Open, workspace: Path
) -> None:
    for n in range(30):
        (workspace / f"f{n}.txt").write_text("needle\n")
    seen: dict[str, list[tuple[float, str | None]]] = {}

    def recorder(name: str) -> Any:
        got = seen.setdefault(name, [])

        async def callback(progress: float, total: float | None, message: str | None) -> None:
            del total
            got.append((progress, message))

        return callback

    script = "for i in 1 2 3; do echo line$i; sleep 0.3; done"
    async with asyncio.timeout(TIMEOUT), open_client("--execute") as session:
        ran = await session.call_tool(
            "execute", {"command": script}, progress_callback=recorder("execute")
        )
        found = await session.call_tool(
            "grep", {"pattern": "needle"}, progress_callback=recorder("grep")
        )
        globbed = await session.call_tool(
            "glob", {"pattern": "*.txt"}, progress_callback=recorder("glob")
        )
        quiet = await session.call_tool("glob", {"pattern": "*.txt"})
    assert not wire(ran)["isError"]
    assert not wire(found)["isError"]
    assert not wire(globbed)["isError"]
    assert not wire(quiet)["isError"]
    output = "".join(message or "" for _, message in seen["execute"])
    assert output == "line1\nline2\nline3\n"
    assert len(seen["execute"]) >= 2  # sent while the command ran, not only at the end
    assert seen["grep"][-1][1] == "30 matching lines in 30 files so far"
    assert seen["glob"] == [(1.0, "31 files found")]  # once, with every part counted
    for events in seen.values():
        numbers = [progress for progress, _ in events]
        assert numbers == sorted(set(numbers))  # strictly increasing, as MCP requires
