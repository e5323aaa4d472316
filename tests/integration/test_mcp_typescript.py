"""The server driven by a client we did not write: the official MCP TypeScript SDK.

`tests/integration/mcp_ts/client.mjs` (the SDK v1, pinned by its package.json and
lockfile, installed with `npm ci` into a cache folder on first use: `npm_packages`) and
`tests/integration/mcp_ts2/client.mjs` (the SDK v2, which speaks 2026-07-28 to an mcp 2.x
server) run a scenario against the server over stdio and over streamable HTTP and print
what they saw as JSON. Skipped,
with the reason, only when Node.js or npm is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.mcp.sdk import GENERATION
from tests.integration.mcp_servers import command, http_server, make_workspace, server_env
from tests.integration.npm_packages import installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

PACKAGE = Path(__file__).parent / "mcp_ts"
PACKAGE_2 = Path(__file__).parent / "mcp_ts2"
NODE_TIMEOUT = 180


@pytest.fixture(scope="module")
def client_dir() -> Path:
    """The SDK v1 client (`@modelcontextprotocol/sdk`), installed."""
    return installed(PACKAGE, "@modelcontextprotocol/sdk")


@pytest.fixture(scope="module")
def client2_dir() -> Path:
    """The SDK v2 client (`@modelcontextprotocol/client`, 2026-07-28), installed."""
    return installed(PACKAGE_2, "@modelcontextprotocol/client")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    make_workspace(root)
    for n in range(5):
        (root / f"hay{n}.txt").write_text("needle\n")
    return root


def run_client(folder: Path, scenario: str, target: str, answer: str = "") -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(folder / "client.mjs"), scenario, target, answer],
        cwd=folder,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def target_for(transport: str, *args: str) -> Any:
    """A context manager yielding the client's target: a URL, or a stdio command line."""
    if transport == "http":
        return http_server(*args)
    return _StdioTarget(json.dumps([sys.executable, *command(*args)[1:]]))


class _StdioTarget:
    def __init__(self, target: str) -> None:
        self.target = target

    def __enter__(self) -> str:
        return self.target

    def __exit__(self, *exc: object) -> None:
        del exc


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tools_reads_edits_and_progress(client_dir: Path, workspace: Path, transport: str) -> None:
    with target_for(transport, "--root", str(workspace), "--execute") as target:
        seen = run_client(client_dir, "tools", target)

    assert seen["server"]["name"] == "langchain-fstools"
    tools = seen["tools"]
    assert tools["read_file"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert tools["write_file"]["annotations"]["idempotentHint"] is True
    assert tools["edit_file"]["annotations"]["idempotentHint"] is False
    assert tools["execute"]["annotations"]["openWorldHint"] is True
    assert "file_path" in tools["read_file"]["properties"]

    handle = seen["readText"]["handle"]
    assert seen["readText"] == {
        "isError": False,
        "text": f"1\talpha\n2\tbeta\n\nread_handle: {handle}",
        "types": ["text"],
        "mimeTypes": [],
        "handle": handle,
    }
    assert seen["readAgain"]["text"] == seen["readText"]["text"]  # content, not a stub
    assert "image" in seen["readImage"]["types"]
    assert seen["readImage"]["mimeTypes"] == ["image/png"]

    assert not seen["editAfterRead"]["isError"], seen["editAfterRead"]
    assert (workspace / "src/app.py").read_text().count("Hello,") == 1
    refused = seen["editInFreshSession"]
    assert refused["isError"]
    assert refused["text"].startswith("Error: this MCP client has not read /notes.txt:")
    assert not seen["editWithHandleInFreshSession"]["isError"], seen
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"

    progress = seen["progress"]
    ticks = "".join(p["message"] for p in progress if p["tool"] == "execute")
    assert ticks == "tick1\ntick2\ntick3\n"
    assert seen["execute"]["text"].startswith("tick1\ntick2\ntick3")
    grep = [p["message"] for p in progress if p["tool"] == "grep"]
    assert not seen["grep"]["isError"], seen["grep"]
    assert grep, (seen["grep"], progress)
    assert grep[-1] == "5 matching lines in 5 files so far"


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("answer", ["accept", "decline"])
def test_an_approval_through_elicitation(
    client_dir: Path, workspace: Path, transport: str, answer: str
) -> None:
    with target_for(transport, "--root", str(workspace), "--mode", "default") as target:
        seen = run_client(client_dir, "approval", target, answer)
    (asked,) = seen["elicited"]
    assert "/approved.txt" in asked["message"]
    assert asked["schema"]["required"] == ["approve"]
    assert set(asked["schema"]["properties"]) == {"approve", "reason"}
    if answer == "accept":
        assert not seen["written"]["isError"], seen["written"]
        assert (workspace / "approved.txt").read_text() == "yes\n"
    else:
        assert seen["written"]["isError"]
        assert "rejected" in seen["written"]["text"]
        assert not (workspace / "approved.txt").exists()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_v2_client_edits_only_with_the_handle_of_a_read_of_that_file(
    client2_dir: Path, workspace: Path, transport: str
) -> None:
    with target_for(transport, "--root", str(workspace)) as target:
        seen = run_client(client2_dir, "handles", target)
    assert (seen["protocol"] == "2026-07-28") is (GENERATION >= 2), seen["protocol"]
    assert seen["read"]["text"].endswith(f"\n\nread_handle: {seen['read']['handle']}")
    for refused in (seen["blind"], seen["misdirected"]):
        assert refused["isError"]
        assert refused["text"].startswith("Error: this MCP client has not read /src/app.py:")
    assert not seen["edited"]["isError"], seen["edited"]
    assert seen["edited"]["handle"]
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\n"
    assert "Helo," in (workspace / "src/app.py").read_text()


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("answer", ["accept", "decline"])
def test_the_v2_client_answers_an_approval(
    client2_dir: Path, workspace: Path, transport: str, answer: str
) -> None:
    with target_for(transport, "--root", str(workspace), "--mode", "default") as target:
        seen = run_client(client2_dir, "approval", target, answer)
    (asked,) = seen["elicited"]
    assert "/approved.txt" in asked
    assert "+yes" in asked
    assert seen["written"]["isError"] is (answer != "accept"), seen["written"]
    assert (workspace / "approved.txt").exists() is (answer == "accept")
