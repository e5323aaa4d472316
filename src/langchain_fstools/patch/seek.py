"""Find where a chunk's lines sit in a file: one pure function, strict to lenient.

`seek` looks for `pattern` as consecutive lines of `lines`, at or after `start`, in
four passes, each tried over the whole range before the next:

    1. exact;
    2. trailing whitespace ignored;
    3. surrounding whitespace ignored;
    4. Unicode punctuation folded to ASCII (dashes, curly quotes, special spaces),
       then surrounding whitespace ignored.

The first pass that finds a place wins, and within a pass the first place from `start`.
With `at_end`, the place where the pattern would end the file is tried first in each
pass. An empty pattern matches at `start` (the caller decides where pure additions go).

`closest` finds, when `seek` fails, the region most like the pattern, for error text.
"""

from __future__ import annotations

import difflib
from itertools import chain
from typing import TYPE_CHECKING

from langchain_fstools.formats.matching import DOUBLE_QUOTES, SINGLE_QUOTES

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys(SINGLE_QUOTES + "\u2032", "'"),  # and the prime
        **dict.fromkeys(DOUBLE_QUOTES + "\u2033", '"'),  # and the double prime
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000",
            " ",
        ),
    }
)


def _fold(line: str) -> str:
    return line.translate(_PUNCTUATION).strip()


PASSES: tuple[Callable[[str], str] | None, ...] = (None, str.rstrip, str.strip, _fold)
"""The normalisations of each pass, strictest first (None: exact)."""

_CLOSEST_WINDOW_LIMIT = 20_000


def seek(lines: Sequence[str], pattern: Sequence[str], start: int, *, at_end: bool) -> int | None:
    """Return the index in `lines` where `pattern` starts, or None.

    Args:
        lines: The file's lines, without line terminators.
        pattern: The lines to find, without terminators.
        start: The first index the match may start at (the forward cursor).
        at_end: Prefer the place where the pattern ends the file.

    Returns:
        The index of the first matching line, or None if no pass finds the pattern.
    """
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    if last < start:
        return None
    for normalise in PASSES:
        found = _search(lines, pattern, start, last, normalise, at_end=at_end)
        if found is not None:
            return found
    return None


def _search(
    lines: Sequence[str],
    pattern: Sequence[str],
    start: int,
    last: int,
    normalise: Callable[[str], str] | None,
    *,
    at_end: bool,
) -> int | None:
    fold = normalise or _same
    wanted = [fold(line) for line in pattern]
    first, size = wanted[0], len(wanted)
    order = chain([last] if at_end else [], range(start, last + 1))
    for index in order:
        if fold(lines[index]) == first and all(
            fold(lines[index + k]) == wanted[k] for k in range(1, size)
        ):
            return index
    return None


def _same(line: str) -> str:
    return line


def closest(lines: Sequence[str], pattern: Sequence[str], start: int) -> tuple[int, int] | None:
    """Return `(index, length)` of the region from `start` most like `pattern`.

    Regions are as long as the pattern; similarity compares whitespace-folded lines.
    Returns None when the file has no lines after `start` or nothing is similar.
    """
    if not pattern or start >= len(lines):
        return None
    size = min(len(pattern), len(lines) - start)
    wanted = "\n".join(_fold(line) for line in pattern)
    folded = [_fold(line) for line in lines]
    stop = min(len(lines) - size, start + _CLOSEST_WINDOW_LIMIT)
    best: tuple[float, int] = (0.0, -1)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    for index in range(start, stop + 1):
        matcher.set_seq1("\n".join(folded[index : index + size]))
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        ratio = matcher.ratio()
        if ratio > best[0]:
            best = (ratio, index)
    if best[1] < 0:
        return None
    return best[1], size


__all__ = ["PASSES", "closest", "seek"]
