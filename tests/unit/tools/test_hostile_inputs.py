"""Arguments no file can hold get an error naming what is wrong, on every tool."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_fstools import errors
from langchain_fstools.core import paths
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness

BAD = "/a\udc80.txt"

CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("ls", {"path": BAD}, "path"),
    ("read_file", {"file_path": BAD}, "file_path"),
    ("write_file", {"file_path": BAD, "content": "x"}, "file_path"),
    ("write_file", {"file_path": "/ok.txt", "content": "x\udc80"}, "content"),
    ("edit_file", {"file_path": BAD, "old_string": "a", "new_string": "b"}, "file_path"),
    ("glob", {"pattern": "*.txt", "path": BAD}, "path"),
    ("glob", {"pattern": "/a\udc80*"}, "pattern"),
    ("grep", {"pattern": "x", "path": BAD}, "path"),
    ("grep", {"pattern": "x\udc80"}, "pattern"),
    ("grep", {"pattern": "x", "glob": "\udc80*"}, "glob"),
    ("apply_patch", {"patch": f"*** Begin Patch\n*** Add File: {BAD}\n+x\n*** End Patch"}, "patch"),
    ("notebook_edit", {"notebook_path": BAD, "new_source": "x"}, "notebook_path"),
]


@pytest.mark.parametrize(("tool", "args", "field"), CALLS, ids=lambda v: str(v)[:20])
def test_lone_surrogate_is_named(run: Run, tool: str, args: dict[str, Any], field: str) -> None:
    message = run(tool, **args)
    assert message.status == "error"
    assert "unexpectedly" not in str(message.content)
    assert f"{field} contains a lone surrogate (U+DC80)" in str(message.content)


def test_normalize_refuses_a_lone_surrogate() -> None:
    with pytest.raises(errors.InvalidPath, match="lone surrogate"):
        paths.normalize(BAD)


@pytest.mark.parametrize("regex", [False, True])
def test_a_nul_in_a_pattern_says_why_it_cannot_match(h: Harness, run: Run, regex: bool) -> None:
    h.seed("/nul.txt", b"before\nx\x00y\nafter\n")
    message = run("grep", pattern="x\x00y", regex=regex)
    assert message.status == "error"
    assert "invalid pattern: it contains a NUL character, which never matches" in str(
        message.content
    )
