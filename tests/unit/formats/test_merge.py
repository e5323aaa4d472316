"""Three-way merge: merge3's answers, conflicts as hunks, added lines kept."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from merge3 import Merge3

from langchain_fstools.formats.merge import Hunk, lines, merge

BASE = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


def test_edits_to_different_functions_merge() -> None:
    ours = BASE.replace("return 1", "return 10")
    theirs = BASE.replace("return 2", "return 20")
    result = merge(BASE, ours, theirs)
    assert result.clean
    assert result.text == "def a():\n    return 10\n\n\ndef b():\n    return 20\n"


def test_the_same_line_changed_differently_is_a_conflict_with_all_three_sides() -> None:
    result = merge(
        BASE, BASE.replace("return 1", "return 10"), BASE.replace("return 1", "return 11")
    )
    assert result.text is None
    assert result.conflicts == (
        Hunk(2, ("    return 1\n",), ("    return 10\n",), ("    return 11\n",)),
    )


def test_line_endings_and_a_missing_last_newline_are_kept() -> None:
    base = "a\r\nb\r\nc"
    result = merge(base, "A\r\nb\r\nc", "a\r\nb\r\nC")
    assert result.text == "A\r\nb\r\nC"


def test_lines_keep_terminators() -> None:
    assert lines("a\nb") == ["a\n", "b"]
    assert lines("a\n") == ["a\n"]
    assert lines("") == []


# ----- property: random edit scripts on both sides --------------------------------------

_fresh = itertools.count()

Script = list[tuple[str, int]]
"""Edits as (operation, position): keep, delete, replace or insert before a base line."""


@st.composite
def edit_script(draw: st.DrawFn, size: int) -> Script:
    operations = st.sampled_from(["keep", "keep", "delete", "replace", "insert"])
    return [(draw(operations), index) for index in range(size + 1)]


def applied(base: list[str], script: Script, side: str) -> tuple[str, list[str]]:
    """The edited text and the lines the edit added (unique, so none is in the base)."""
    out: list[str] = []
    added: list[str] = []
    for operation, index in script:
        if operation in {"replace", "insert"}:
            added.append(f"{side} {next(_fresh)}\n")
            out.append(added[-1])
        if index < len(base) and operation in {"keep", "insert"}:
            out.append(base[index])
    return "".join(out), added


@st.composite
def three_texts(draw: st.DrawFn) -> tuple[str, str, list[str], str, list[str]]:
    base = draw(st.lists(st.sampled_from(["x\n", "y\n", "z\n", "w\n", "\n"]), max_size=12))
    ours, ours_added = applied(base, draw(edit_script(len(base))), "ours")
    theirs, theirs_added = applied(base, draw(edit_script(len(base))), "theirs")
    return "".join(base), ours, ours_added, theirs, theirs_added


@settings(max_examples=200, deadline=None)
@given(three_texts())
def test_a_merge_gives_what_merge3_gives(texts: tuple[str, str, list[str], str, list[str]]) -> None:
    base, ours, _, theirs, _ = texts
    library = Merge3(lines(base), lines(ours), lines(theirs))
    conflicts = [group[1:] for group in library.merge_groups() if group[0] == "conflict"]
    result = merge(base, ours, theirs)
    assert [(h.base, h.ours, h.theirs) for h in result.conflicts] == [
        tuple(tuple(side) for side in conflict) for conflict in conflicts
    ]
    if result.clean:
        assert result.text == "".join(library.merge_lines())


@settings(max_examples=200, deadline=None)
@given(three_texts())
def test_a_clean_merge_keeps_every_line_either_side_added(
    texts: tuple[str, str, list[str], str, list[str]],
) -> None:
    base, ours, ours_added, theirs, theirs_added = texts
    result = merge(base, ours, theirs)
    if result.text is not None:
        merged = lines(result.text)
        assert [line for line in ours_added + theirs_added if line not in merged] == []
