"""formats.syntax: languages, and which errors a change introduced, for every language."""

from __future__ import annotations

import sys

import pytest

from langchain_fstools.formats.syntax import (
    LANGUAGES,
    MAX_CHECK_BYTES,
    SyntaxProblem,
    TreeCache,
    available,
    introduced_errors,
    kernel_language,
    language_for,
)
from tests.unit.formats.syntax_cases import CASES, IDS, Case

by_case = pytest.mark.parametrize("case", CASES, ids=IDS)


def lines(problems: list[SyntaxProblem]) -> list[int]:
    return [problem.line for problem in problems]


def test_every_language_has_a_case() -> None:
    assert sorted(case.language for case in CASES) == sorted(LANGUAGES)


@by_case
def test_case_files_are_valid_and_named_for_their_language(case: Case) -> None:
    assert language_for(case.path) == case.language
    assert introduced_errors(None, case.text, case.language) == []


@by_case
@pytest.mark.parametrize("cached", [False, True], ids=["full", "incremental"])
def test_a_breaking_edit_is_reported_on_its_line(case: Case, cached: bool) -> None:
    trees = TreeCache() if cached else None
    if trees is not None:
        assert introduced_errors(None, case.text, case.language, trees=trees) == []
    found = introduced_errors(case.text, case.broken, case.language, trees=trees)
    assert lines(found) == [case.break_line]
    assert found[0].excerpt == case.breaking[1].strip()


@by_case
def test_fixing_an_error_reports_nothing(case: Case) -> None:
    assert introduced_errors(case.broken, case.text, case.language) == []


@by_case
@pytest.mark.parametrize("cached", [False, True], ids=["full", "incremental"])
def test_only_the_new_error_is_reported_in_a_file_with_another(case: Case, cached: bool) -> None:
    before = case.with_other
    assert lines(introduced_errors(None, before, case.language)) == [case.other_line]
    trees = TreeCache() if cached else None
    if trees is not None:
        introduced_errors(None, before, case.language, trees=trees)
    after = before.replace(*case.breaking, 1)
    assert lines(introduced_errors(before, after, case.language, trees=trees)) == [case.break_line]


@by_case
def test_an_error_that_only_moved_is_not_new(case: Case) -> None:
    shifted = "\n\n\n" + case.broken
    assert introduced_errors(case.broken, shifted, case.language) == []
    both = "\n\n\n" + case.with_other.replace(*case.breaking, 1)
    assert lines(introduced_errors(case.with_other, both, case.language)) == [case.break_line + 3]


def test_every_error_of_a_new_file_is_introduced() -> None:
    text = "x = = 1\ny = 2\nz = = 3\n"
    expected = [
        SyntaxProblem(1, 5, "invalid syntax", "x = = 1"),
        SyntaxProblem(3, 5, "invalid syntax", "z = = 3"),
    ]
    assert introduced_errors(None, text, "python") == expected
    assert introduced_errors("", text, "python") == expected
    assert introduced_errors("x = = 1\ny = 2\n", text, "python") == expected[1:]


def test_a_missing_token_is_named() -> None:
    (problem,) = introduced_errors(None, "int f() {\n    return 1\n}\n", "c")
    assert problem.message == 'missing ";"'
    assert problem.line == 2


def test_columns_count_characters_not_bytes() -> None:
    (problem,) = introduced_errors(None, 's = "ééé"; t = (1 2)\n', "javascript")
    assert problem.column == len('s = "ééé"; t = (1 ') + 1


def test_long_lines_are_cut_in_the_excerpt() -> None:
    text = "x = [" + ", ".join(["1"] * 200) + " 2]\n"
    (problem,) = introduced_errors(None, text, "javascript")
    assert len(problem.excerpt) == 120
    assert problem.excerpt.endswith("…")


def test_bytes_and_crlf_texts_are_checked() -> None:
    old = b"def f():\r\n    return 1\r\n"
    new = b"def f():\r\n    return (1\r\n"
    (problem,) = introduced_errors(old, new, "python")
    assert problem.excerpt == "return (1"


def test_texts_above_the_limit_are_not_checked() -> None:
    big = "x = 1\n" * (MAX_CHECK_BYTES // 6 + 1) + "y = (\n"
    assert introduced_errors(None, big, "python") == []


def test_without_the_grammars_nothing_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    assert not available()
    assert introduced_errors(None, "x = (\n", "python") == []


def test_with_the_grammars_installed_the_check_is_available() -> None:
    assert available()


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        ("/src/app.py", "", "python"),
        ("/src/App.TSX", "", "tsx"),
        ("/web/app.mjs", "", "javascript"),
        ("/x/main.hpp", "", "cpp"),
        ("/Gemfile", "", "ruby"),
        ("/bin/tool", "#!/usr/bin/env python3\nprint(1)\n", "python"),
        ("/bin/tool", "#!/usr/bin/python3.12 -u\n", "python"),
        ("/bin/run", "#!/bin/bash\necho hi\n", "bash"),
        ("/bin/run", "#!/usr/bin/env -S node --no-warnings\n", "javascript"),
        ("/bin/run.cgi", "#!/usr/bin/env ruby\n", "ruby"),
        ("/bin/run", "#!/usr/bin/env perl\n", None),
        ("/bin/run", "echo hi\n", None),
        ("/notes.txt", "", None),
        ("/nb.ipynb", '{"cells": []}', None),
    ],
)
def test_language_by_extension_name_or_shebang(path: str, text: str, expected: str | None) -> None:
    assert language_for(path, text) == expected


def test_shebang_read_from_bytes() -> None:
    assert language_for("/tool", b"#!/usr/bin/env node\n") == "javascript"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("python", "python"), ("Python", "python"), ("C++", "cpp"), ("julia", None), (None, None)],
)
def test_kernel_languages(name: object, expected: str | None) -> None:
    assert kernel_language(name) == expected


def test_tree_cache_keeps_recent_trees_within_its_size() -> None:
    trees = TreeCache(max_bytes=30)
    introduced_errors(None, "a = 1\n" * 3, "python", trees=trees)
    assert trees.get("python", ("a = 1\n" * 3).encode()) is not None
    assert trees.get("javascript", ("a = 1\n" * 3).encode()) is None
    introduced_errors(None, "b = 2\n" * 3, "python", trees=trees)
    assert trees.get("python", ("a = 1\n" * 3).encode()) is None
    assert trees.get("python", ("b = 2\n" * 3).encode()) is not None


def test_a_cached_tree_is_not_changed_by_a_check() -> None:
    trees = TreeCache()
    old = "def f():\n    return 1\n"
    introduced_errors(None, old, "python", trees=trees)
    introduced_errors(old, "def f():\n    return (1\n", "python", trees=trees)
    tree = trees.get("python", old.encode())
    assert tree is not None
    assert not tree.root_node.has_error
    assert tree.root_node.end_byte == len(old)


def test_in_a_file_full_of_errors_only_errors_by_the_change_count() -> None:
    """Errors far from the change are the file's own; the pre-image is parsed only if
    the change has errors next to it, and tree-sitter's different recovery elsewhere
    is not reported."""
    broken = "".join(f"def f{i}(a, b:\n    return a + {i}\n\n" for i in range(40))
    worse = broken.replace("return a + 10\n", "return (a + 10\n")
    assert [(p.line, p.excerpt) for p in introduced_errors(broken, worse, "python")] == [
        (32, "return (a + 10")
    ]
    bad = "x = = 1\n" + "".join(f"def f{i}(a, b):\n    return a + {i}\n\n" for i in range(40))
    assert introduced_errors(None, bad, "python")  # it has an error, at the top
    assert introduced_errors(bad, bad.replace("+ 30\n", "+ 31\n"), "python") == []
