"""A case-sensitive literal is found with `str.find`: the same spans as the regex engine."""

from __future__ import annotations

import re

import re2
from hypothesis import given
from hypothesis import strategies as st

from langchain_fstools.search.regex import Regex

_TEXT = st.text(st.sampled_from("aab\n\r é€𝄞."), max_size=40)


@given(_TEXT, _TEXT.filter(bool), st.booleans())
def test_literal_spans_are_the_escaped_regex_spans(text: str, needle: str, multiline: bool) -> None:
    literal = Regex(needle, regex=False, ignore_case=False, multiline=multiline)
    expected = [m.span() for m in re.finditer(re.escape(needle), text)]
    assert list(literal.spans(text)) == expected
    assert [m.span() for m in re2.finditer(re2.escape(needle), text)] == expected
    first = literal.search(text)
    assert first == (expected[0] if expected else None)


def test_an_empty_literal_and_a_case_blind_one_still_use_the_regex_engine() -> None:
    assert Regex("", regex=False, ignore_case=False, multiline=False).search("ab") == (0, 0)
    blind = Regex("AB", regex=False, ignore_case=True, multiline=False)
    assert list(blind.spans("ab Ab")) == [(0, 2), (3, 5)]
