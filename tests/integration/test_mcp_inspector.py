"""The server driven by MCP Inspector's CLI: a new process (and connection) for every call.

`tests/integration/mcp_inspector` pins `@modelcontextprotocol/inspector` 2.x (installed by
`npm_packages`); each call here runs `mcp-inspector --cli` once, against a server it starts
over stdio or against one server over streamable HTTP (with a bearer token). Nothing of a
read outlives its process but the `read_handle`, so an edit is applied only when it is
passed back. Both protocol eras: `--protocol-era legacy` (initialize, a session per
process) and `modern` (2026-07-28, which the server speaks on the mcp SDK 2.x only:
`test_mcp_sdk2` runs this module there).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.mcp.handles import HANDLE_KEY_ENV
from langchain_fstools.mcp.sdk import GENERATION
from tests.integration.mcp_servers import HANDLE_KEY, SRC, command, http_server, make_workspace
from tests.integration.npm_packages import installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

PACKAGE = Path(__file__).parent / "mcp_inspector"
MODULE = "@modelcontextprotocol/inspector"
CALL_TIMEOUT = 120
"""Seconds for one inspector process: Node's start, the server's, one call."""
TOOL_IS_ERROR = 5
"""The CLI's exit status for a tool result with `isError`."""
TOKEN = "inspector-test-token"  # noqa: S105 - a test token
NOT_READ = "Error: this MCP client has not read /notes.txt:"


@pytest.fixture(scope="module")
def launcher() -> Path:
    """The installed inspector's `mcp-inspector` script."""
    package = installed(PACKAGE, MODULE) / "node_modules" / MODULE
    bins: dict[str, str] = json.loads((package / "package.json").read_text())["bin"]
    return package / bins["mcp-inspector"]


class Inspector:
    """Runs `mcp-inspector --cli` once per call against one target (a server's command or URL)."""

    def __init__(self, launcher: Path, home: Path, era: str, target: list[str]) -> None:
        self.command = [
            "node",
            str(launcher),
            "--cli",
            "--format",
            "json",
            "--quiet",
            "--protocol-era",
            era,
        ]
        self.target = target
        # Its own home: the CLI keeps a catalog and OAuth state under ~/.mcp-inspector.
        self.env = {**os.environ, "HOME": str(home)}

    def __call__(self, *options: str) -> tuple[int, dict[str, Any]]:
        """The CLI's exit status and the JSON it printed."""
        done = subprocess.run(
            [*self.command, *options, *self.target],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT,
            check=False,
        )
        assert done.stdout, (done.returncode, done.stderr)
        printed: dict[str, Any] = json.loads(done.stdout)
        return done.returncode, printed

    def tool(self, name: str, **arguments: str) -> tuple[int, dict[str, Any]]:
        """Call tool `name`: the exit status and the tool's result."""
        code, printed = self(
            "--method",
            "tools/call",
            "--tool-name",
            name,
            "--tool-args-json",
            json.dumps(arguments),
        )
        assert "result" in printed, printed
        result: dict[str, Any] = printed["result"]
        return code, result


def text(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


@pytest.fixture(params=["legacy", "modern"])
def era(request: pytest.FixtureRequest) -> str:
    """The protocol era the CLI pins; 2026-07-28 (`modern`) needs a server on mcp 2.x."""
    if request.param == "modern" and GENERATION < 2:
        pytest.skip("the 2026-07-28 protocol needs mcp 2.x (test_mcp_sdk2 runs this there)")
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "workspace")


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.contextmanager
def inspecting(
    launcher: Path, home: Path, era: str, transport: str, *server: str
) -> Iterator[Inspector]:
    """The CLI against a server run with `server`: one it starts per call, or one over HTTP."""
    home.mkdir(exist_ok=True)
    if transport == "stdio":
        # The CLI gives a stdio server only a default environment (HOME, PATH...): pass ours.
        env = [f"PYTHONPATH={SRC}", f"{HANDLE_KEY_ENV}={HANDLE_KEY}"]
        options = [word for pair in env for word in ("-e", pair)]
        yield Inspector(launcher, home, era, [*options, "--", *command(*server)])
        return
    with http_server(*server, "--token", TOKEN) as url:
        options = ["--header", f"Authorization: Bearer {TOKEN}", "--stored-auth-only"]
        yield Inspector(launcher, home, era, [*options, url])


@pytest.fixture
def inspector(
    launcher: Path, workspace: Path, tmp_path: Path, era: str, transport: str
) -> Iterator[Inspector]:
    """The CLI against a server of `workspace` (no permission layer)."""
    with inspecting(launcher, tmp_path / "home", era, transport, "--root", str(workspace)) as cli:
        yield cli


def test_each_call_a_new_process_edits_only_with_the_read_handle(
    inspector: Inspector, workspace: Path, era: str
) -> None:
    code, listed = inspector("--method", "tools/list")
    assert code == 0, listed
    tools = {tool["name"]: tool for tool in listed["result"]["tools"]}
    assert {"read_file", "edit_file", "write_file"} <= set(tools)
    assert "read_handle" in tools["edit_file"]["inputSchema"]["properties"]

    code, read = inspector.tool("read_file", file_path="/notes.txt")
    assert code == 0, read
    handle = read["structuredContent"]["read_handle"]
    assert text(read) == f"1\talpha\n2\tbeta\n\nread_handle: {handle}"
    # On 2026-07-28 every result names the server; the older protocol said it at initialize.
    meta = read.get("_meta", {})
    assert ("io.modelcontextprotocol/serverInfo" in meta) is (era == "modern"), read
    _, other = inspector.tool("read_file", file_path="/src/app.py")
    other_handle = other["structuredContent"]["read_handle"]

    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "ALPHA"}
    for refused_with in ({}, {"read_handle": other_handle}):
        code, refused = inspector.tool("edit_file", **edit, **refused_with)
        assert code == TOOL_IS_ERROR, refused
        assert refused["isError"] is True
        assert text(refused).startswith(NOT_READ), refused
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"

    code, edited = inspector.tool("edit_file", **edit, read_handle=handle)
    assert code == 0, edited
    assert edited["isError"] is False
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"
    fresh = edited["structuredContent"]["read_handle"]
    assert fresh != handle

    # The edit's handle stands for the new version: a second edit needs no new read.
    second = {"file_path": "/notes.txt", "old_string": "beta", "new_string": "BETA"}
    code, again = inspector.tool("edit_file", **second, read_handle=fresh)
    assert code == 0, again
    assert (workspace / "notes.txt").read_text() == "ALPHA\nBETA\n"


def test_an_approval_the_cli_cannot_give_is_a_refusal_not_a_failure(
    launcher: Path, workspace: Path, tmp_path: Path, era: str, transport: str
) -> None:
    server = ["--root", str(workspace), "--mode", "default"]
    with inspecting(launcher, tmp_path / "home", era, transport, *server) as cli:
        code, refused = cli.tool("write_file", file_path="/approved.txt", content="yes\n")
    assert code == TOOL_IS_ERROR, refused
    assert refused["isError"] is True
    assert text(refused).startswith(
        "Error: write_file needs a person's approval (the default mode asks for /approved.txt),"
        " but this MCP client cannot ask one"
    ), refused
    assert not (workspace / "approved.txt").exists()
