r"""Find and replace text the way a model means it, without disturbing other bytes.

`plan_replacement` searches the file's text with its line endings folded to `\n`, so a
model's `\n`-only `old_string` matches a CRLF file; each match maps back to the exact
span of the original text, and the replacement gets the line ending of the span it
replaces. Everything outside the replaced spans stays as it was, byte for byte, in
LF, CRLF and mixed files alike.

Passes, strict to lenient (the first that finds anything wins):
    1. exact (after folding CRLF);
    2. curly quotes folded to straight ones on both sides; the replacement then takes
       the file's curly style;
    3. line-number gutters copied from read_file output stripped from `old_string`
       (and from `new_string` when every line of it has one): today's `12<TAB>`, the
       padded `    12→` of earlier versions and Claude Code, `cat -n`'s `    12<TAB>`.
       A continuation row (`12.1<TAB>`) joins the row before it without a newline, as
       the line it continues; a bare number is an empty line whose tab was trimmed.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Final, Literal

MatchPass = Literal["exact", "quotes", "line_numbers"]

SINGLE_QUOTES: Final = "\u2018\u2019\u201a\u201b"
"""Curly single quotes, folded to `'`."""

DOUBLE_QUOTES: Final = "\u201c\u201d\u201e\u201f"
"""Curly double quotes, folded to `"`."""

_QUOTE_FOLD = str.maketrans(
    {**dict.fromkeys(SINGLE_QUOTES, "'"), **dict.fromkeys(DOUBLE_QUOTES, '"')}
)
_CURLY = frozenset(SINGLE_QUOTES + DOUBLE_QUOTES)
_OPENING_CONTEXT = frozenset(" \t\n\r([{<\u2014\u2013-")
_LINE_PREFIX = re.compile(r" *\d+(?P<row>\.\d+)?(?:→|\t|$)")


@dataclass(frozen=True, slots=True)
class Replacement:
    """The outcome of planning an edit.

    Attributes:
        text: The whole new text.
        count: How many occurrences were replaced.
        matched_by: The pass that found them.
    """

    text: str
    count: int
    matched_by: MatchPass


@dataclass(frozen=True, slots=True)
class _Folded:
    """A text with CRLF folded to LF, and where the folded newlines were."""

    text: str
    crlf_at: list[int]

    @classmethod
    def of(cls, raw: str) -> _Folded:
        crlf_at: list[int] = []
        search = 0
        while (found := raw.find("\r\n", search)) >= 0:
            crlf_at.append(found - len(crlf_at))
            search = found + 2
        return cls(raw.replace("\r\n", "\n"), crlf_at)

    def to_raw(self, index: int) -> int:
        """Map an index of the folded text to the raw text."""
        return index + bisect.bisect_left(self.crlf_at, index)


def plan_replacement(raw: str, old: str, new: str, *, replace_all: bool) -> Replacement | int:
    """Replace `old` by `new` in `raw`.

    Args:
        raw: The file's text, line endings as stored.
        old: The text to replace, as the model wrote it. Must not be empty.
        new: The replacement, as the model wrote it.
        replace_all: Replace every occurrence; otherwise `old` must occur once.

    Returns:
        The `Replacement`, or the number of occurrences (0, or more than one without
        `replace_all`) when nothing can be replaced.
    """
    found = _find(raw, old)
    if found is None:
        return 0
    spans, matched_by = found
    if len(spans) > 1 and not replace_all:
        return len(spans)
    if matched_by == "line_numbers":
        new = _strip_line_prefixes(new) if _all_lines_prefixed(new) else new
    new = new.replace("\r\n", "\n")
    pieces: list[str] = []
    cursor = 0
    for start, end in spans:
        original = raw[start:end]
        replacement = _with_quote_style(new, original) if matched_by == "quotes" else new
        if _uses_crlf(raw, start, end):
            replacement = replacement.replace("\n", "\r\n")
        pieces += [raw[cursor:start], replacement]
        cursor = end
    pieces.append(raw[cursor:])
    return Replacement("".join(pieces), len(spans), matched_by)


def _find(raw: str, old: str) -> tuple[list[tuple[int, int]], MatchPass] | None:
    folded = _Folded.of(raw)
    needle = old.replace("\r\n", "\n")
    attempts: list[tuple[str, str, MatchPass]] = [(folded.text, needle, "exact")]
    quote_folded = folded.text.translate(_QUOTE_FOLD)
    attempts.append((quote_folded, needle.translate(_QUOTE_FOLD), "quotes"))
    if _all_lines_prefixed(needle):
        attempts.append((folded.text, _strip_line_prefixes(needle), "line_numbers"))
    for haystack, pattern, matched_by in attempts:
        if not pattern:
            continue
        spans = _spans(haystack, pattern)
        if spans:
            return [(folded.to_raw(s), folded.to_raw(e)) for s, e in spans], matched_by
    return None


def _spans(haystack: str, needle: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start >= 0:
        spans.append((start, start + len(needle)))
        start = haystack.find(needle, start + len(needle))
    return spans


def _uses_crlf(raw: str, start: int, end: int) -> bool:
    """Whether text replacing `raw[start:end]` should end its lines with CRLF."""
    span = raw[start:end]
    newlines = span.count("\n")
    if newlines:
        return span.count("\r\n") * 2 > newlines
    line_end = raw.find("\n", end)
    return line_end > 0 and raw[line_end - 1] == "\r"


def _with_quote_style(new: str, original: str) -> str:
    """Give `new` the curly quotes `original` uses, where it uses them."""
    uses_double = any(c in original for c in DOUBLE_QUOTES)
    uses_single = any(c in original for c in SINGLE_QUOTES)
    if not (_CURLY & set(original)):
        return new
    out: list[str] = []
    for i, char in enumerate(new):
        before = new[i - 1] if i else ""
        opening = not before or before in _OPENING_CONTEXT
        if char == '"' and uses_double:
            out.append("\u201c" if opening else "\u201d")
        elif char == "'" and uses_single:
            out.append("\u2018" if opening else "\u2019")
        else:
            out.append(char)
    return "".join(out)


def _all_lines_prefixed(text: str) -> bool:
    lines = [line for line in text.split("\n") if line]
    return bool(lines) and all(_LINE_PREFIX.match(line) for line in lines)


def _strip_line_prefixes(text: str) -> str:
    """The text of gutter rows; a continuation row (`12.1`) extends the line before it."""
    lines: list[str] = []
    for row in text.split("\n"):
        prefix = _LINE_PREFIX.match(row)
        if prefix is None:
            lines.append(row)
        elif prefix["row"] and lines:
            lines[-1] += row[prefix.end() :]
        else:
            lines.append(row[prefix.end() :])
    return "\n".join(lines)


__all__ = ["MatchPass", "Replacement", "plan_replacement"]
