"""formats/diff.py: unified patches and the snippets shown to models."""

from __future__ import annotations

import difflib

import pytest

from langchain_fstools.formats.diff import snippet, unified_patch


def _difflib_patch(path: str, old: str, new: str) -> str:
    old_lines = old.replace("\r\n", "\n").splitlines(keepends=True)
    new_lines = new.replace("\r\n", "\n").splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, new_lines, f"a{path}", f"b{path}", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


@pytest.mark.parametrize(
    "new",
    ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "x\u2028y\n", "a\x0cb", "\r", "line\n" * 300],
)
def test_a_created_file_patch_is_what_difflib_gives(new: str) -> None:
    assert unified_patch("/dir/new file.txt", "", new) == _difflib_patch(
        "/dir/new file.txt", "", new
    )


def test_an_edit_patch_has_hunks_with_context() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    patch = unified_patch("/a.txt", old, new)
    assert patch == _difflib_patch("/a.txt", old, new)
    assert "@@ -7,7 +7,7 @@\n" in (patch or "")


def test_texts_too_large_get_no_patch_and_the_snippet_says_so() -> None:
    assert unified_patch("/big.txt", "", "x" * (2 * 1024 * 1024 + 1)) is None
    assert "too large" in snippet(None, 10)
