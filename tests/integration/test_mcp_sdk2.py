"""The MCP server's own tests again, on the mcp SDK 2.x.

The `test` extra pins mcp 1.x (langchain-mcp-adapters requires mcp<2), so `scripts/setup`
makes a second venv, `.venv-mcp2`, with mcp 2.x; this test runs there the server's unit
tests and its integration tests over stdio and HTTP (our Python client, the HTTP door,
the official TypeScript client), and mcp 2.x's own `Client` on the 2026-07-28 protocol (also against two instances
behind a round-robin).
Left out: the two modules that need langchain-mcp-adapters.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-mcp2" / "bin" / "python"
MODULES = [
    "tests/unit/mcp",
    "--ignore=tests/unit/mcp/test_to_fastmcp.py",
    "tests/integration/test_mcp_server.py",
    "tests/integration/test_mcp_http_door.py",
    "tests/integration/test_mcp_typescript.py",
    "tests/integration/test_mcp_client_modern.py",
    "tests/integration/test_mcp_round_robin.py",
]

pytestmark = pytest.mark.integration


def test_the_mcp_tests_pass_on_sdk_2() -> None:
    assert PYTHON.exists(), "no .venv-mcp2: run bash scripts/setup"
    version = subprocess.run(
        [PYTHON, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version.startswith("2."), version
    run = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:randomly", *MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1]
