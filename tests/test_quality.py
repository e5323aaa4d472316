"""The code stays ruff- and mypy --strict-clean: checked as part of the test run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the 'test' extra")
    return found


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_static_checks_pass(command: list[str]) -> None:
    result = subprocess.run(
        [_tool(command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


SCRIPTED_TURNS = """\
from langchain_fstools.testing import ScriptedChatModel, parallel, tool_call

model = ScriptedChatModel(
    turns=[
        tool_call("read_file", file_path="/a.py"),
        parallel(tool_call("ls", path="/"), tool_call("glob", pattern="*.py")),
        "Done.",
    ]
)
"""


def test_the_documented_scripted_model_form_type_checks_without_the_pydantic_plugin(
    tmp_path: Path,
) -> None:
    """`turns` mixes messages and text under mypy --strict with pydantic's bare types."""
    (tmp_path / "script.py").write_text(SCRIPTED_TURNS)
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\n")  # no pydantic.mypy plugin
    result = subprocess.run(
        [
            _tool("mypy"),
            "--config-file",
            str(tmp_path / "mypy.ini"),
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "without-plugins"),
            str(tmp_path / "script.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MYPYPATH": str(ROOT / "src")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
