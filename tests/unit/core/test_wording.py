"""Counts in model-facing text agree with their nouns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from langchain_fstools import errors
from langchain_fstools.core.wording import plural
from langchain_fstools.tools.render import render_error

SRC = Path(__file__).parents[3] / "src" / "langchain_fstools"


@pytest.mark.parametrize(
    ("count", "noun", "irregular", "expected"),
    [
        (1, "line", None, "1 line"),
        (0, "line", None, "0 lines"),
        (2, "byte", None, "2 bytes"),
        (1234, "file", None, "1,234 files"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
        (1.0, "second", None, "1 second"),
        (0.5, "second", None, "0.5 seconds"),
    ],
)
def test_plural(count: float, noun: str, irregular: str | None, expected: str) -> None:
    assert plural(count, noun, irregular) == expected


def test_one_second_is_singular() -> None:
    text = render_error(errors.CommandTimedOut(timeout=1.0, output=""), tool="execute")
    assert "within 1 second and" in text


def test_no_count_is_glued_to_a_plural_noun_in_the_sources() -> None:
    """A `{count} lines` placeholder says `1 lines` for one; counts go through `plural`."""
    glued = re.compile(
        r"\{[^{}]*\}\s?(?:lines|bytes|seconds|files|entries|pages|cells|times|tokens|rows)\b"
    )
    found = [
        f"{path.relative_to(SRC)}: {match.group()}"
        for path in SRC.rglob("*.py")
        for match in glued.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
