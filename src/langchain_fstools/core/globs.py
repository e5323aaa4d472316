"""Glob patterns, with gitignore/ripgrep meaning, compiled to one regex.

One module serves the glob tool, grep's `glob` and `type` filters, and both engines,
so a pattern means the same everywhere:

    1. A pattern without `/` matches a file's *name* at any depth: `*.py`.
    2. A pattern with `/` matches the path relative to the search directory, from its
       start: `src/*.py`, `src/**/test_*.py` (a leading `/` is dropped).
    3. `*` and `?` stay within one path component; `**` spans components (`**/`
       matches zero or more directories); `[abc]`, `[a-z]`, `[!x]` are classes;
       `{a,b}` alternatives nest.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from langchain_fstools.errors import InvalidArgument

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def compile_globs(patterns: Iterable[str]) -> Callable[[str], bool]:
    """Return a predicate over relative POSIX paths: does any pattern match?

    Raises:
        InvalidArgument: a pattern is empty or malformed (unclosed `[` or `{`).
    """
    sources = [_source(pattern) for pattern in patterns]
    if not sources:
        return lambda _path: True
    matcher = re.compile("|".join(f"(?:{source})" for source in sources), re.DOTALL).fullmatch
    return lambda path: matcher(path) is not None


def compile_glob_groups(groups: Iterable[Iterable[str]]) -> Callable[[str], bool]:
    """Return a predicate: does the path match some glob of every group?"""
    predicates = [compile_globs(group) for group in groups]
    if len(predicates) <= 1:
        return predicates[0] if predicates else lambda _path: True
    return lambda path: all(predicate(path) for predicate in predicates)


def expand_braces(pattern: str, limit: int) -> list[str] | None:
    """`pattern` with its `{a,b}` alternatives spelled out (nested and empty ones too).

    `{a,{b,c}}.py` gives `a.py`, `b.py`, `c.py`; `{a,}x` gives `ax`, `x`. Classes
    (`[{]`) and escapes (`\\{`) are kept as they are. Returns None when there would be
    more than `limit` patterns.

    Raises:
        InvalidArgument: an unclosed `{`.
    """
    start = _first_brace(pattern)
    if start < 0:
        return [pattern]
    end, options = _braces(pattern, start, pattern)
    expanded: list[str] = []
    for option in options:
        rest = expand_braces(pattern[:start] + option + pattern[end + 1 :], limit)
        if rest is None or len(expanded) + len(rest) > limit:
            return None
        expanded += rest
    return expanded


def _first_brace(pattern: str) -> int:
    """Index of the first `{` that opens alternatives (not escaped, not in a class)."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end > 0:
                i = end + 1
                continue
        if char == "{":
            return i
        i += 1
    return -1


def _source(pattern: str) -> str:
    """The regex source matching what `pattern` names (module docstring rules)."""
    if not pattern.strip():
        raise InvalidArgument("glob", "the pattern is empty")
    anchored = "/" in pattern.rstrip("/")
    body = _translate(pattern.lstrip("/").rstrip("/"), pattern)
    return body if anchored else f"(?:.*/)?{body}"


def _translate(pattern: str, original: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end < 0:
                raise InvalidArgument("glob", f"unclosed '[' in {original!r}")
            inner = pattern[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            escaped = inner.replace("\\", "\\\\").replace("^", "\\^")
            out.append(f"[{'^/' if negate else ''}{escaped}]")
            i = end + 1
        elif char == "{":
            end, options = _braces(pattern, i, original)
            out.append("(?:" + "|".join(_translate(o, original) for o in options) + ")")
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _braces(pattern: str, start: int, original: str) -> tuple[int, list[str]]:
    """Split `{a,b{c,d}}` at top-level commas; return the closing index and parts."""
    depth = 0
    options: list[str] = []
    current: list[str] = []
    for index in range(start + 1, len(pattern)):
        char = pattern[index]
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                options.append("".join(current))
                return index, options
            depth -= 1
        elif char == "," and depth == 0:
            options.append("".join(current))
            current = []
            continue
        current.append(char)
    raise InvalidArgument("glob", f"unclosed '{{' in {original!r}")


__all__ = ["compile_glob_groups", "compile_globs", "expand_braces"]
