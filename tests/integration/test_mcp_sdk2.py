"""The MCP server's own tests again, on the mcp SDK 2.x.

The `test` extra pins mcp 1.x (langchain-mcp-adapters requires mcp<2), so this test makes a
second venv, `.venv-mcp2`, with mcp 2.x (`scripts/mcp2-venv`: the first run installs it, later
runs reuse it while `pyproject.toml` is unchanged; `scripts/setup` does not make it), and
runs there the server's unit tests and its integration tests over stdio and HTTP (our
Python client, the HTTP door, the official TypeScript client, MCP Inspector's CLI), and
mcp 2.x's own `Client` on the 2026-07-28 protocol (also against two instances behind a
round-robin).
Left out: the two modules that need langchain-mcp-adapters.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ".venv-mcp2"
PYTHON = ROOT / VENV / "bin" / "python"
MODULES = [
    "tests/unit/mcp",
    "--ignore=tests/unit/mcp/test_to_fastmcp.py",
    "tests/integration/test_mcp_server.py",
    "tests/integration/test_mcp_http_door.py",
    "tests/integration/test_mcp_typescript.py",
    "tests/integration/test_mcp_inspector.py",
    "tests/integration/test_mcp_client_modern.py",
    "tests/integration/test_mcp_round_robin.py",
    "tests/integration/test_mcp_docs_sdk2.py",
]

pytestmark = pytest.mark.integration


def _run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    """`command` run in the checkout (20 minutes at most), its output kept."""
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=1200
    )


@pytest.fixture(scope="module")
def mcp2_venv(pytestconfig: pytest.Config) -> Path:
    """`.venv-mcp2`, made by `scripts/mcp2-venv` unless it is there with its requirements.

    Its lines (each step, and every 30 s that a step still runs) go to the terminal as
    they come, when the test runs in the main process (`-n 0`): the first install takes
    minutes. `.ci/run` makes it before the tests.
    """
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        made = subprocess.run(["bash", "scripts/mcp2-venv"], cwd=ROOT, check=False, timeout=1200)
    assert made.returncode == 0, "scripts/mcp2-venv failed; its output is above"
    return PYTHON


def test_the_mcp_tests_pass_on_sdk_2(mcp2_venv: Path) -> None:
    version = _run(mcp2_venv, "-c", "import importlib.metadata as m; print(m.version('mcp'))")
    assert version.stdout.startswith("2."), version.stdout + version.stderr
    run = _run(mcp2_venv, "-m", "pytest", "-q", "-p", "no:randomly", *MODULES)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1]


CLIENT_2 = """
import asyncio, os, sys
from mcp import Client, StdioServerParameters

async def main() -> None:
    # this environment, so the server keeps its listing cache where the suite's is
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    async with Client(server) as client:
        listed = await client.list_tools()
        print(len(listed.tools))

asyncio.run(main())
"""


def test_an_mcp_2_client_meets_a_1x_server_without_a_flood_of_warnings(
    mcp2_venv: Path, tmp_path: Path
) -> None:
    """mcp 2.x's `Client` first asks `server/discover`; the 1.x server's refusal is quiet."""
    server = [sys.executable, "-m", "langchain_fstools", "mcp", "--root", str(tmp_path)]
    run = _run(mcp2_venv, "-c", CLIENT_2, *server)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert int(run.stdout.split()[-1]) > 0  # the tools were listed after the fallback
    assert "validation error" not in run.stderr, run.stderr
