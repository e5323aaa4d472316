"""Every Python block of README.md runs as written, so no snippet can rot.

The blocks run in order in one namespace (as a reader would paste them), in a temporary
directory holding an empty `./repo`, against the throwaway PostgreSQL the integration
fixtures start (the store block reads its URL from `FSTOOLS_POSTGRES_URL`, as the README
tells a reader to set it).
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.integration.postgres import PostgresServer

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text())


def test_the_readme_has_python_blocks_for_each_feature() -> None:
    text = "\n".join(python_blocks())
    for needed in ("PostgresStore", 'stream_mode=["custom"', "ScriptedChatModel", "SSHBackend"):
        assert needed in text


def test_every_python_block_runs(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("FSTOOLS_POSTGRES_URL", postgres.create_database("readme"))
    module = types.ModuleType("readme")  # a real module, as dataclasses expect
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    blocks = python_blocks()
    for number, source in enumerate(blocks, start=1):
        code = compile(source, f"README.md python block {number}", "exec")
        exec(code, namespace)  # noqa: S102 - the README's own code, run as a reader would
    assert len(blocks) >= 7
