"""formats/diff.py: unified patches and the snippets shown to models."""

from __future__ import annotations

import difflib
import random
import re

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


def _random_edit(rnd: random.Random, vocabulary: int) -> tuple[list[str], list[str]]:
    old = [f"line {rnd.randrange(vocabulary)}\n" for _ in range(rnd.randint(1, 40))]
    new = list(old)
    for _ in range(rnd.randint(1, 3)):
        start = rnd.randint(0, len(new))
        end = min(len(new), start + rnd.randint(0, 3))
        new[start:end] = [f"new {rnd.randrange(vocabulary)}\n" for _ in range(rnd.randint(0, 3))]
    return old, new


def _apply(old: list[str], patch: str) -> list[str]:
    """Apply a unified diff of whole lines, checking every context and removed line."""
    result: list[str] = []
    position = 0
    for line in patch.splitlines(keepends=True)[2:]:
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if header:
            start = int(header[1]) - (0 if header[2] == "0" else 1)
            result += old[position:start]
            position = start
            continue
        if line[0] in " -":
            assert old[position] == line[1:]
            position += 1
        if line[0] in " +":
            result.append(line[1:])
    return result + old[position:]


@pytest.mark.parametrize("seed", range(20))
def test_an_edit_patch_turns_the_old_text_into_the_new(seed: int) -> None:
    rnd = random.Random(seed)  # noqa: S311 - reproducible test data
    for _ in range(200):
        old, new = _random_edit(rnd, vocabulary=rnd.choice([3, 10]))
        patch = unified_patch("/f.txt", "".join(old), "".join(new))
        assert _apply(old, patch or "") == new


@pytest.mark.parametrize("seed", range(20))
def test_an_edit_patch_of_distinct_lines_is_what_difflib_gives(seed: int) -> None:
    rnd = random.Random(seed)  # noqa: S311 - reproducible test data
    for _ in range(200):
        old, new = _random_edit(rnd, vocabulary=10**9)
        old_text, new_text = "".join(old), "".join(new).removesuffix("\n" * rnd.randint(0, 1))
        assert unified_patch("/f.txt", old_text, new_text) == _difflib_patch(
            "/f.txt", old_text, new_text
        )


def test_a_one_line_change_deep_in_a_long_file_names_its_line() -> None:
    old = "".join(f"row {n}\n" for n in range(1, 5001))
    new = old.replace("row 4000\n", "row four thousand\n")
    assert unified_patch("/long.txt", old, new) == (
        "--- a/long.txt\n+++ b/long.txt\n@@ -3997,7 +3997,7 @@\n"
        " row 3997\n row 3998\n row 3999\n-row 4000\n+row four thousand\n"
        " row 4001\n row 4002\n row 4003\n"
    )


def test_a_snippet_shows_the_first_changed_lines_and_counts_the_rest() -> None:
    old = "".join(f"row {n}\n" for n in range(1, 101))
    new = old.replace("row 10\n", "row ten\n").replace("row 90\n", "row ninety\n")
    patch = unified_patch("/rows.txt", old, new)
    shown = snippet(patch, 5)
    assert (
        shown == "@@ -10 +10 @@\n-row 10\n+row ten\n@@ -90 +90 @@\n-row 90\n... (1 more diff line)"
    )
    assert snippet(patch, 100) == shown.rpartition("\n")[0] + "\n+row ninety"
    assert "@@ -7,7 +7,7 @@\n row 7\n row 8\n row 9\n-row 10" in (patch or "")  # the artifact


def test_a_snippet_numbers_insertions_and_deletions_as_diff_u0() -> None:
    old = "".join(f"l{n}\n" for n in range(1, 30))
    new = old.replace("l20\n", "").replace("l25\n", "l25\nX\n")
    assert (
        snippet(unified_patch("/a", old, new), 20) == "@@ -20 +19,0 @@\n-l20\n@@ -25,0 +25 @@\n+X"
    )
    assert snippet(unified_patch("/a", "a\nb\n", ""), 20) == "@@ -1,2 +0,0 @@\n-a\n-b"


def test_a_snippet_keeps_removed_lines_that_look_like_file_headers() -> None:
    patch = unified_patch("/q.sql", "-- note\nselect 1;\n", "select 1;\n")
    assert snippet(patch, 10) == "@@ -1 +0,0 @@\n--- note"


def test_a_snippet_cuts_long_lines() -> None:
    shown = snippet(unified_patch("/w.txt", "", "x" * 300 + "\n"), 10)
    assert shown == "@@ -0,0 +1 @@\n+" + "x" * 199 + "…"
