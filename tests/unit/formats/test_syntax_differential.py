"""formats.syntax against a slow reference: random edits of real files, valid and broken.

The reference parses both texts whole with a fresh parser, lists every outermost error
of each, keeps those touching the changed bytes or the lines next to them, and drops
from the new text's the ones whose line text the old text's have (as a multiset). The
check under test must report the same errors (line and excerpt), with and without a
cached tree of the old text.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tree_sitter import Parser
from tree_sitter_language_pack import get_language

from langchain_fstools.formats.syntax import (
    EXCERPT_CHARS,
    TreeCache,
    introduced_errors,
    language_for,
)

if TYPE_CHECKING:
    from tree_sitter import Node

ROOT = Path(__file__).resolve().parents[3]
FILES = [
    "src/langchain_fstools/tools/writing.py",
    "src/langchain_fstools/patch/parser.py",
    "pyproject.toml",
    "mkdocs.yml",
    "bench/figures.json",
    "tests/integration/mcp_ts/client.mjs",
    "scripts/setup",
]
EDITS = 25
INSERTS = ["(", ")", ":", "{", "}", "]", '"', "'", '"""', "def ", "x = ", "\n", "\n    ", ","]
INSERTS += ["=", "if x", "return", " + ", "#", "//", "/*", "*/", "fi", "<", ";", "- ", "[["]

Found = list[tuple[int, str]]


def excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def near_errors(source: bytes, language: str, start: int, end: int) -> Found:
    """Every outermost error of a whole parse that touches [line before start, line after end]."""
    low = source.rfind(b"\n", 0, start)
    low = source.rfind(b"\n", 0, max(low, 0)) + 1 if low > 0 else 0
    high = source.find(b"\n", end)
    high = source.find(b"\n", high + 1) if high >= 0 else -1
    high = len(source) if high < 0 else high
    lines = source.split(b"\n")
    found: Found = []

    def visit(node: Node) -> None:
        for child in node.children:
            if child.end_byte < low or child.start_byte > high:
                continue
            if child.is_error or child.is_missing:
                row = child.start_point[0]
                found.append((row + 1, excerpt(lines[row])))
            elif child.has_error:
                visit(child)

    visit(Parser(get_language(language)).parse(source).root_node)  # type: ignore[arg-type]
    return found


def reference(old: str, new: str, language: str) -> Found:
    before, after = old.encode(), new.encode()
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    tail = 0
    while tail < min(len(before), len(after)) - start and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    had = Counter(text for _, text in near_errors(before, language, start, len(before) - tail))
    introduced = []
    for line, text in near_errors(after, language, start, len(after) - tail):
        if had[text]:
            had[text] -= 1
        else:
            introduced.append((line, text))
    return introduced


def random_edit(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    line = lines[at]
    cut = rng.randrange(len(line) + 1)
    match rng.randrange(5):
        case 0:
            lines[at] = line[:cut] + rng.choice(INSERTS) + line[cut:]
        case 1:
            lines[at] = line[:cut] + line[cut + rng.randrange(1, 12) :]
        case 2:
            del lines[at]
        case 3:
            lines.insert(at, lines[rng.randrange(len(lines))])
        case _:
            lines[at] = line + rng.choice(INSERTS) + " x"
    return "\n".join(lines)


def full_of_errors(text: str) -> str:
    """Every ninth line ends in a stray `)(`: errors all through the file."""
    return "\n".join(
        line + (" )(" if n % 9 == 4 else "") for n, line in enumerate(text.split("\n"))
    )


def broken_at_the_top(text: str) -> str:
    """A stray line after the first (which may be a shebang): one error above every edit."""
    first, rest = text.split("\n", 1)
    return f"{first}\n)( ]\n{rest}"


@pytest.mark.parametrize("path", FILES)
@pytest.mark.parametrize("kind", [str, full_of_errors, broken_at_the_top], ids=lambda f: f.__name__)
def test_random_edits_report_what_a_whole_two_text_comparison_reports(
    path: str, kind: object
) -> None:
    assert callable(kind)
    text = kind((ROOT / path).read_text())
    language = language_for(path, text)
    assert language is not None
    rng = random.Random(f"{path}-{kind.__name__}")  # noqa: S311 - reproducible edits
    trees = TreeCache()
    introduced_errors(None, text, language, trees=trees)
    reported = edits = 0
    while edits < EDITS or (kind is str and not reported and edits < 4 * EDITS):
        edits += 1  # a lenient grammar (YAML) may take more edits to break
        new = random_edit(rng, text)
        expected = reference(text, new, language)
        for cache in (None, trees):
            found = introduced_errors(text, new, language, trees=cache)
            assert [(p.line, p.excerpt) for p in found] == expected, (path, new)
        reported += bool(expected)
    if kind is str:
        assert 0 < reported < edits  # the edits both break the syntax and keep it
