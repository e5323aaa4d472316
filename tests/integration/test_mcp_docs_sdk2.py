"""docs/mcp.md's examples of mcp 2.x's `Client` (stdio and HTTP) run as written.

Their blocks start with `# mcp 2.x`; `test_readme.py` leaves them to this module, which
runs in the mcp 2.x venv (`test_mcp_sdk2.py`) and is skipped on mcp 1.x.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.mcp.sdk import GENERATION

ROOT = Path(__file__).resolve().parents[2]
MCP2 = "# mcp 2.x\n"
BLOCKS = [
    source
    for source in re.findall(
        r"^```python\n(.*?)^```$", (ROOT / "docs" / "mcp.md").read_text(), re.DOTALL | re.MULTILINE
    )
    if source.startswith(MCP2)
]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
    pytest.mark.skipif(GENERATION < 2, reason="mcp 1.x has no Client"),
]


def test_the_page_has_a_stdio_and_an_http_example() -> None:
    assert len(BLOCKS) == 2
    assert "StdioServerParameters" in BLOCKS[0]
    assert "--http" in BLOCKS[1]


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_mcp2_example_runs(
    number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # a stdio server gets the SDK's default environment (HOME, PATH, ...), not the
    # suite's XDG folders: its listing cache goes to this test's home
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    src = str(ROOT / "src")  # the server the example starts imports this checkout
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    )
    module = types.ModuleType("docs_block")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    exec(compile(BLOCKS[number], f"docs/mcp.md mcp 2.x block {number + 1}", "exec"), namespace)  # noqa: S102
