"""Every Python block of README.md and of the documentation site runs as written.

Each block runs on its own (its own imports, a fresh module namespace), as a reader
would paste it, in a temporary directory holding an empty `./repo`. A block that reads
`FSTOOLS_POSTGRES_URL` gets a database of the throwaway PostgreSQL the integration
fixtures start, as the docs tell a reader to set it; one that makes a `DockerSandbox`
gets `DOCKER_HOST` of the checkout's Docker Engine (tests/integration/docker/engine.py).
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.integration.docker.engine import start_engine
from tests.integration.postgres import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


MCP2 = "# mcp 2.x\n"
"""The first line of a block that needs the mcp SDK 2.x: it runs in `.venv-mcp2`
(`tests/integration/test_mcp_docs_sdk2.py`), not here, where mcp is 1.x."""


def python_blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        for number, source in enumerate(BLOCK.findall(page.read_text()), start=1):
            if not source.startswith(MCP2):
                found.append((str(page.relative_to(ROOT)), number, source))
    return found


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_for_each_feature() -> None:
    text = "\n".join(source for _, _, source in BLOCKS)
    for needed in (
        "PostgresStore",
        'stream_mode=["custom"',
        "ScriptedChatModel",
        "SSHBackend",
        "LargeResultEviction",
        "file_bytes",
        "parallel(",
        "create_deep_agent",
        "apply_patch(",
    ):
        assert needed in text, needed
    readme = [source for page, _, source in BLOCKS if page == "README.md"]
    assert readme, "README.md needs its complete example"


@pytest.mark.parametrize(
    ("page", "number", "source"), BLOCKS, ids=[f"{page}#{number}" for page, number, _ in BLOCKS]
)
def test_every_python_block_runs_on_its_own(
    page: str,
    number: int,
    source: str,
    postgres: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    # A stdio MCP server started by a block gets the SDK's default environment, which
    # carries HOME but not the suite's XDG folders: give it a home of its own.
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if "FSTOOLS_POSTGRES_URL" in source:
        name = re.sub(r"[^a-z0-9]+", "_", f"docs_{page}_{number}".lower())
        monkeypatch.setenv("FSTOOLS_POSTGRES_URL", postgres.create_database(name))
    if "DockerSandbox" in source:
        monkeypatch.setenv("DOCKER_HOST", start_engine().host)
    module = types.ModuleType("docs_block")  # a real module, as dataclasses expect
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    code = compile(source, f"{page} python block {number}", "exec")
    exec(code, namespace)  # noqa: S102 - the docs' own code, run as a reader would
