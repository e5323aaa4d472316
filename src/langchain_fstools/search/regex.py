"""Regexes for the pure-Python engine: RE2, linear in time, with ripgrep's meaning.

Python's `re` backtracks: `(a+)+$` over forty `a`s and a `!` runs for minutes while
holding the GIL, so no deadline can stop it. RE2 (the `google-re2` package) matches in
time linear in the text, like the default engine of ripgrep, whose syntax it shares.
What differs is smoothed over here, so both engines find the same lines:

    1. `\\d`, `\\w`, `\\s` and their negations are Unicode-aware, as in ripgrep (RE2's
       own are ASCII-only); inside a class, `\\W`, `\\D` and `\\S` stay ASCII.
    2. `\\b` and `\\B` are ASCII word boundaries (RE2 has no Unicode ones): a word of
       non-ASCII letters may match where ripgrep would not.
    3. Look-around and backreferences, which neither engine supports, are refused
       with a reason that says what to do instead.

Where google-re2 is not installed (a remote host running the shipped engine, see
`search.host`), Python's `re` matches instead, with the same refusals; its `\\d`, `\\w`,
`\\s` are Unicode-aware already. It can backtrack, so there the deadline is kept by
killing the host's process (`backends.ssh.search`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

try:
    import re2
except ImportError:  # a host running the shipped engine without google-re2
    re2 = None

from langchain_fstools.search.contract import InvalidPattern

if TYPE_CHECKING:
    from collections.abc import Iterator

_WORD = r"\p{L}\p{M}\p{Nd}\p{Pc}"
_SPACE = r"\t-\r\x{85}\p{Z}"
_OUTSIDE = {
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
}
_INSIDE = {"d": r"\p{Nd}", "w": _WORD, "s": _SPACE}

_LOOK_AROUND = re.compile(r"\(\?<?[=!]")
_BACKREFERENCE = re.compile(r"\\(?:[1-9]|k<|g\{|g[0-9])")


class Regex:
    """A compiled search pattern (a literal is escaped first).

    Args:
        pattern: The pattern as the model gave it.
        regex: Whether `pattern` is a regex (else a literal).
        ignore_case: Case-insensitive matching.
        multiline: `.` matches a newline too.

    Raises:
        InvalidPattern: the regex does not compile, or uses a construct RE2 lacks.
    """

    def __init__(self, pattern: str, *, regex: bool, ignore_case: bool, multiline: bool) -> None:
        """Compile `pattern` (see the class docstring)."""
        self._compiled: Any
        self.needle = pattern if not regex and not ignore_case and pattern else None
        """The pattern when it is a non-empty, case-sensitive literal, else None. It is
        found with `str.find`: the same leftmost, non-overlapping matches, without the
        wrapper's byte-to-character offset scans."""
        if self.needle is not None:
            return
        if re2 is None:
            self._compiled = _python_regex(
                pattern, regex=regex, ignore_case=ignore_case, multiline=multiline
            )
            return
        source = _translate(pattern) if regex else re2.escape(pattern)
        flags = "m" + ("i" if ignore_case else "") + ("s" if multiline else "")
        options = re2.Options()
        options.log_errors = False
        options.max_mem = 256 << 20
        try:
            self._compiled = re2.compile(f"(?{flags}){source}", options)
        except re2.error as exc:
            raise InvalidPattern(_reason(pattern, exc)) from None

    def search(self, text: str) -> tuple[int, int] | None:
        """The span of the first match in `text`, or None."""
        if self.needle is not None:
            at = text.find(self.needle)
            return None if at < 0 else (at, at + len(self.needle))
        match = self._compiled.search(text)
        return None if match is None else match.span()

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of every non-overlapping match in `text`, in order."""
        if self.needle is not None:
            return _occurrences(text, self.needle)
        return (match.span() for match in self._compiled.finditer(text))


def _occurrences(text: str, needle: str) -> Iterator[tuple[int, int]]:
    """The spans of the non-overlapping occurrences of `needle` (not empty), left to right."""
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        yield at, end
        at = text.find(needle, end)


def _python_regex(pattern: str, *, regex: bool, ignore_case: bool, multiline: bool) -> Any:
    """`pattern` compiled by Python's `re`, refused as RE2 would refuse it."""
    known = unsupported(pattern) if regex else None
    if known is not None:
        raise InvalidPattern(known)
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0) | (re.DOTALL if multiline else 0)
    try:
        return re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise InvalidPattern(str(exc)) from None


def _translate(pattern: str) -> str:
    """`pattern` with `\\d`, `\\w`, `\\s` (and negations) made Unicode-aware."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            letter = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(letter, pattern[i : i + 2]))
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            out.append(char)
            i += 1
            # A `]` first in a class (after an optional `^`) is a literal.
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        if char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def unsupported(pattern: str) -> str | None:
    """Why `pattern` cannot work on either engine (look-around, backreferences), or None.

    The same words whichever engine refused the pattern.
    """
    if _LOOK_AROUND.search(pattern):
        return (
            "look-ahead and look-behind are not supported; match the surrounding text"
            " as part of the pattern instead"
        )
    if _BACKREFERENCE.search(pattern):
        return (
            "backreferences are not supported; spell out the repeated text, or search"
            " for each variant"
        )
    return None


def _reason(pattern: str, exc: Exception) -> str:
    known = unsupported(pattern)
    if known is not None:
        return known
    detail = exc.args[0] if exc.args else type(exc).__name__
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return str(detail).split(": ", 1)[0]  # RE2 then quotes the pattern


__all__ = ["Regex", "unsupported"]
