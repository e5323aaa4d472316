"""A literal is matched in the whole text at once: the lines found must be those a
line-by-line search of the same pattern (as an escaped regex) finds."""

from __future__ import annotations

import random
import re

import pytest

from langchain_fstools.search.contract import GrepMode, GrepRequest, ListedFile
from langchain_fstools.search.engine import _Matcher

PIECES = ["ab", "abab", "x", " ", "\t", "é", "É", "\r", "\n", "\r\n", "a.b", "(", "AB", "ß"]
PATTERNS = ["ab", "abab", "b a", "a.b", "é", "É", "x\t", "(", "ß", "bx"]


def _found(pattern: str, text: str, *, regex: bool, ignore_case: bool, mode: GrepMode) -> object:
    request = GrepRequest(
        re.escape(pattern) if regex else pattern,
        "/",
        regex=regex,
        ignore_case=ignore_case,
        mode=mode,
        before=1,
        after=1,
    )
    hits = _Matcher(request).search(ListedFile("/f.txt", 0.0), text.encode())
    return None if hits is None else (hits.count, hits.lines)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
def test_literal_lines_match_a_line_by_line_search(seed: int, mode: GrepMode) -> None:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    for _ in range(300):
        text = "".join(rng.choices(PIECES, k=rng.randint(0, 30)))
        pattern = rng.choice(PATTERNS)
        ignore_case = rng.random() < 0.3
        whole = _found(pattern, text, regex=False, ignore_case=ignore_case, mode=mode)
        by_line = _found(pattern, text, regex=True, ignore_case=ignore_case, mode=mode)
        assert whole == by_line, (pattern, text)


def test_each_matching_line_counts_once() -> None:
    text = "abab ab\nnone\r\nab\r\n\nxab"
    assert _found("ab", text, regex=False, ignore_case=False, mode="count") == (3, [])
