"""Edit matching: CRLF folding, curly quotes, line-number prefixes, uniqueness."""

from __future__ import annotations

import pytest

from langchain_fstools.formats.matching import Replacement, plan_replacement


def replace(raw: str, old: str, new: str, *, replace_all: bool = False) -> Replacement | int:
    return plan_replacement(raw, old, new, replace_all=replace_all)


def test_exact_single_match() -> None:
    assert replace("a b c", "b", "B") == Replacement("a B c", 1, "exact")


def test_lf_old_string_matches_crlf_file_and_keeps_crlf() -> None:
    result = replace("one\r\ntwo\r\nthree\r\n", "one\ntwo", "uno\ndos\ntres")
    assert isinstance(result, Replacement)
    assert result.text == "uno\r\ndos\r\ntres\r\nthree\r\n"


def test_mixed_endings_untouched_outside_span() -> None:
    raw = "a\nb\r\nc\nd\r\n"
    result = replace(raw, "c", "C")
    assert isinstance(result, Replacement)
    assert result.text == "a\nb\r\nC\nd\r\n"


def test_inserted_newline_takes_the_line_ending_of_its_line() -> None:
    result = replace("x\r\ny\n", "x", "x\nx2")
    assert isinstance(result, Replacement)
    assert result.text == "x\r\nx2\r\ny\n"


def test_curly_quotes_matched_and_kept() -> None:
    raw = "print(“hello”)  # it’s\n"
    result = replace(raw, 'print("hello")  # it\'s', 'print("bye")  # it\'s')
    assert result == Replacement("print(“bye”)  # it’s\n", 1, "quotes")


def test_line_number_prefixes_are_stripped() -> None:
    raw = "def f():\n    return 1\n"
    result = replace(
        raw, "     1→def f():\n     2→    return 1", "     1→def g():\n     2→    return 2"
    )
    assert result == Replacement("def g():\n    return 2\n", 1, "line_numbers")


@pytest.mark.parametrize(
    "gutter",
    ["{n}\t", "{n:>6}→", "{n:>6}\t", "{n}→"],
    ids=["tab", "padded-arrow", "cat-n", "arrow"],
)
def test_every_gutter_form_is_stripped(gutter: str) -> None:
    raw = "a = 1\n\n\tb = 2\n"
    old = "\n".join(gutter.format(n=n) + text for n, text in enumerate(["a = 1", "", "\tb = 2"], 1))
    assert replace(raw, old, "x") == Replacement("x\n", 1, "line_numbers")


def test_a_continuation_row_joins_the_line_it_continues() -> None:
    raw = "head\n" + "w" * 12 + "\ntail\n"
    old = "2\twwww\n2.1\twwww\n2.2\twwww\n3\ttail"
    assert replace(raw, old, "x") == Replacement("head\nx\n", 1, "line_numbers")
    assert replace(raw, "2.1\twwww\n2.2\twwww\n3\ttail", "x") == Replacement(
        "head\nwwwwx\n", 1, "line_numbers"
    )


def test_a_bare_number_is_a_blank_row_whose_tab_was_trimmed() -> None:
    raw = "a\n\nb\n"
    assert replace(raw, "1\ta\n2\n3\tb", "x") == Replacement("x\n", 1, "line_numbers")
    assert replace("7\n8\n", "7\n8", "x") == Replacement("x\n", 1, "exact")


def test_zero_and_many_matches_are_counts() -> None:
    assert replace("abc", "x", "y") == 0
    assert replace("aXa", "a", "b") == 2


def test_replace_all() -> None:
    assert replace("aXa", "a", "b", replace_all=True) == Replacement("bXb", 2, "exact")
