"""The pure-Python search engine: walks any backend through its core calls.

It gives exactly what a backend's `NativeSearch` gives (see `backends.search`), and
serves every backend without one. Work streams file by file: a listing holds only the
files kept, a search holds one file's text at a time.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from langchain_fstools.core import calls
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.formats import encoding
from langchain_fstools.search.contract import (
    VCS_DIRECTORIES,
    FileHits,
    GrepRequest,
    InvalidPattern,
    LineHit,
    ListedFile,
    Listing,
)
from langchain_fstools.search.ignore import EXCLUDE_FILE, IGNORE_FILES, IgnoreRules

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.core.calls import Effect


def list_files(
    directory: str, *, globs: tuple[tuple[str, ...], ...], deadline: float
) -> Effect[Listing]:
    """The searchable files below `directory` that match the glob groups.

    Ignore files from the workspace root down to `directory` apply, as do those met
    on the way down. Stops at `deadline` (monotonic) with what it found.
    """
    rules = yield from _rules_above(directory)
    found: list[ListedFile] = []
    keep = compile_glob_groups(globs)
    complete = yield from _walk(directory, directory, rules, keep, deadline, found)
    return Listing(found, complete)


def _rules_above(directory: str) -> Effect[IgnoreRules]:
    rules = IgnoreRules()
    exclude = yield from _text_or_none(EXCLUDE_FILE)
    if exclude:
        rules = rules.extended("exclude", "", exclude)
    parts = [part for part in directory.split("/") if part]
    for depth in range(len(parts)):
        rules = yield from _with_ignore_files(rules, "/".join(parts[:depth]))
    return rules


def _with_ignore_files(
    rules: IgnoreRules, base: str, present: set[str] | None = None
) -> Effect[IgnoreRules]:
    for name in reversed(IGNORE_FILES):
        if present is not None and name not in present:
            continue
        text = yield from _text_or_none(f"/{base}/{name}" if base else f"/{name}")
        if text:
            rules = rules.extended(name, base, text)
    return rules


def _text_or_none(path: str) -> Effect[str | None]:
    try:
        data = yield from calls.read_bytes(path)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _walk(  # noqa: PLR0917 - one recursion's state
    directory: str,
    top: str,
    rules: IgnoreRules,
    keep: Callable[[str], bool],
    deadline: float,
    found: list[ListedFile],
) -> Effect[bool]:
    if time.monotonic() > deadline:
        return False
    entries = yield from calls.list_dir(directory)
    base = directory.lstrip("/")
    rules = yield from _with_ignore_files(rules, base, {e.name for e in entries if e.is_file})
    for entry in entries:
        if entry.link:
            continue
        relative = entry.path.lstrip("/")
        if entry.is_dir:
            if entry.name in VCS_DIRECTORIES or rules.ignored(relative, is_dir=True):
                continue
            if not (yield from _walk(entry.path, top, rules, keep, deadline, found)):
                return False
        elif entry.is_file and not rules.ignored(relative, is_dir=False):
            below_top = entry.path[len(top) :].lstrip("/")
            if keep(below_top):
                found.append(ListedFile(entry.path, entry.mtime))
    return True


def grep(
    request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[bool]:
    """Search like ripgrep would; hand each file with a match to `sink`.

    Returns whether it finished before `deadline`.

    Raises:
        InvalidPattern: the regex does not compile.
    """
    matcher = _Matcher(request)
    info = yield from calls.stat(request.directory)
    if info.is_file:
        candidates, complete = [ListedFile(info.path, info.mtime)], True
    else:
        listing = yield from list_files(request.directory, globs=request.globs, deadline=deadline)
        candidates, complete = listing.files, listing.complete
    for candidate in candidates:
        if time.monotonic() > deadline:
            return False
        try:
            data = yield from calls.read_bytes(candidate.path)
        except PermissionError:
            continue  # a file the backend may not read is not searched, as with ripgrep
        hits = matcher.search(candidate, data)
        if hits is not None:
            sink(hits)
    return complete


class _Matcher:
    """One compiled request, applied file by file."""

    def __init__(self, request: GrepRequest) -> None:
        flags = re.MULTILINE | (re.IGNORECASE if request.ignore_case else 0)
        if request.multiline:
            flags |= re.DOTALL
        source = request.pattern if request.regex else re.escape(request.pattern)
        try:
            self.regex = re.compile(source, flags)
        except re.error as exc:
            raise InvalidPattern(str(exc)) from None
        self.request = request
        literal = None if request.regex or request.ignore_case else request.pattern
        self.literal = literal.encode("utf-8") if literal else None
        self.within_lines = (
            not request.regex
            and not request.multiline
            and bool(request.pattern)
            and not any(c in request.pattern for c in "\r\n")
        )
        """A non-empty literal without line breaks: its matches in the whole text are
        exactly the lines' matches, so lines need not be searched one by one."""

    def search(self, listed: ListedFile, data: bytes) -> FileHits | None:
        codec = encoding.sniff(data[: encoding.SNIFF_BYTES])
        if codec is None:
            return None
        if self.literal is not None and codec.name == "utf-8" and self.literal not in data:
            return None
        text = codec.decode(data, errors="replace")
        if not self.regex.search(text):
            return None
        content = self.request.mode == "content"
        lines = _lines(text) if content or not self.within_lines else []
        matched = (
            _lines_with_matches(self.regex, text)
            if self.within_lines
            else self._matching_lines(text, lines)
        )
        if not matched:
            return None
        hits = FileHits(listed.path, listed.mtime, count=len(matched))
        if content:
            hits.lines = _with_context(lines, matched, self.request.before, self.request.after)
        return hits

    def _matching_lines(self, text: str, lines: list[str]) -> list[int]:
        """1-based numbers of the lines holding (part of) a match."""
        if not self.request.multiline:
            search = self.regex.search
            return [number for number, line in enumerate(lines, 1) if search(_strip_cr(line))]
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        numbers: set[int] = set()
        for match in self.regex.finditer(text):
            first = _line_of(starts, match.start())
            last = _line_of(starts, max(match.end() - 1, match.start()))
            numbers.update(range(first, min(last, len(lines)) + 1))
        return sorted(numbers)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _lines_with_matches(regex: re.Pattern[str], text: str) -> list[int]:
    """1-based numbers of the lines where `regex` matches, matches never spanning lines."""
    numbers: list[int] = []
    line, counted_to = 1, 0
    for match in regex.finditer(text):
        line += text.count("\n", counted_to, match.start())
        counted_to = match.start()
        if not numbers or numbers[-1] != line:
            numbers.append(line)
    return numbers


def _line_of(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low + 1


def _strip_cr(line: str) -> str:
    return line.removesuffix("\r")


def _with_context(lines: list[str], matched: list[int], before: int, after: int) -> list[LineHit]:
    wanted: set[int] = set()
    for number in matched:
        wanted.update(range(max(1, number - before), min(len(lines), number + after) + 1))
    matches = set(matched)
    return [LineHit(n, _strip_cr(lines[n - 1]), n in matches) for n in sorted(wanted)]


__all__ = ["grep", "list_files"]
