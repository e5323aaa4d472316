"""seek: one test per matching pass, then the cursor, end anchoring and `closest`."""

from __future__ import annotations

from langchain_fstools.patch.seek import closest, seek


def test_pass_1_exact() -> None:
    lines = ["a", "b ", "b", "c"]
    assert seek(lines, ["b", "c"], 0, at_end=False) == 2


def test_pass_2_trailing_whitespace_ignored() -> None:
    lines = ["a", "value = 1   ", "c"]
    assert seek(lines, ["value = 1"], 0, at_end=False) == 1
    assert seek(lines, ["value = 1\t"], 0, at_end=False) == 1


def test_pass_3_surrounding_whitespace_ignored() -> None:
    lines = ["if x:", "        indented = 1", "done"]
    assert seek(lines, ["if x:", "indented = 1"], 0, at_end=False) == 0


def test_pass_4_unicode_punctuation_folded() -> None:
    lines = ["title = \u201cHello \u2014 world\u201d", "it\u2019s\u00a0here", "x \u2013 y"]
    assert seek(lines, ['title = "Hello - world"', "it's here"], 0, at_end=False) == 0
    assert seek(lines, ["x - y"], 0, at_end=False) == 2


def test_stricter_pass_wins_over_an_earlier_lenient_match() -> None:
    lines = ["value = 1  ", "value = 1"]
    assert seek(lines, ["value = 1"], 0, at_end=False) == 1


def test_search_starts_at_the_cursor() -> None:
    lines = ["x", "y", "x", "y"]
    assert seek(lines, ["x"], 1, at_end=False) == 2
    assert seek(lines, ["x", "y"], 3, at_end=False) is None


def test_at_end_prefers_the_place_that_ends_the_file() -> None:
    lines = ["end", "mid", "end"]
    assert seek(lines, ["end"], 0, at_end=True) == 2
    assert seek(lines, ["end"], 0, at_end=False) == 0


def test_empty_pattern_matches_at_the_cursor_and_too_long_pattern_never() -> None:
    assert seek(["a"], [], 1, at_end=False) == 1
    assert seek(["a"], ["a", "b"], 0, at_end=False) is None


def test_no_pass_matches() -> None:
    assert seek(["alpha", "beta"], ["gamma"], 0, at_end=False) is None


def test_closest_finds_the_most_similar_region() -> None:
    lines = ["def f():", "    return 1", "", "def g():", "    return 2"]
    assert closest(lines, ["def g():", "    return 3"], 0) == (3, 2)
    assert closest([], ["x"], 0) is None
