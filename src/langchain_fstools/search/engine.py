"""The pure-Python search engine: walks any backend through its core calls.

It gives exactly what a backend's `NativeSearch` gives (see `search.contract`), and
serves every backend without one. Work streams file by file: a listing holds only the
files kept, a search holds one file's text at a time.

Nothing here outlives the deadline: every backend call is bounded by it
(`calls.before`), and regexes run on RE2, in linear time (`search.regex`). A directory
or file that cannot be read (refused, or gone since it was listed) is skipped and
counted, and the search goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_fstools.core import calls
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.core.results import EntryKind
from langchain_fstools.formats import encoding
from langchain_fstools.search.contract import (
    VCS_DIRECTORIES,
    FileHits,
    GrepRequest,
    LineHit,
    ListedFile,
    Listing,
    SearchOutcome,
)
from langchain_fstools.search.ignore import EXCLUDE_FILE, IGNORE_FILES, IgnoreRules
from langchain_fstools.search.regex import Regex

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.results import FileInfo


@dataclass
class _Walk:
    """What one walk collects, and until when it may run."""

    top: str
    keep: Callable[[str], bool]
    deadline: float
    found: list[ListedFile]
    skipped: int = 0


def list_files(
    directory: str, *, globs: tuple[tuple[str, ...], ...], deadline: float
) -> Effect[Listing]:
    """The searchable files below `directory` that match the glob groups.

    Ignore files from the workspace root down to `directory` apply, as do those met
    on the way down. Stops at `deadline` (monotonic) with what it found; every
    backend call is bounded by it.

    Raises:
        OSError: `directory` itself cannot be listed.
    """
    return (yield from calls.before(deadline, _list_files(directory, globs, deadline)))


def _list_files(
    directory: str, globs: tuple[tuple[str, ...], ...], deadline: float
) -> Effect[Listing]:
    walk = _Walk(directory, compile_glob_groups(globs), deadline, [])
    try:
        rules = yield from _rules_above(directory)
        complete = yield from _walk(directory, rules, walk)
    except calls.DeadlinePassed:
        complete = False
    return Listing(walk.found, complete, skipped=walk.skipped)


def _rules_above(directory: str) -> Effect[IgnoreRules]:
    rules = IgnoreRules()
    exclude = yield from _text_or_none(EXCLUDE_FILE)
    if exclude:
        rules = rules.extended("exclude", "", exclude)
    parts = [part for part in directory.split("/") if part]
    for depth in range(len(parts)):
        rules = yield from _with_ignore_files(rules, "/".join(parts[:depth]))
    return rules


def ignored_among(targets: Sequence[tuple[str, bool]]) -> Effect[set[str]]:
    """Which of `targets` (a virtual path, and whether it is a directory) are ignored.

    As the search decides: the ignore files of every directory above a path (and the
    workspace's exclude file); a path below an ignored directory is ignored. Each
    directory's files are read once, and none below an ignored directory.
    """
    root = IgnoreRules()
    exclude = yield from _text_or_none(EXCLUDE_FILE)
    if exclude:
        root = root.extended("exclude", "", exclude)
    rules: dict[str, IgnoreRules | None] = {}  # a directory's rules; None: it is ignored
    found: set[str] = set()
    for path, is_dir in targets:
        parts = [part for part in path.split("/") if part]
        current: IgnoreRules | None = root
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            if base not in rules:
                parent = rules["/".join(parts[: depth - 1])] if depth else root
                if parent is None or (depth and parent.ignored(base, is_dir=True)):
                    rules[base] = None
                else:
                    rules[base] = yield from _with_ignore_files(parent, base)
            current = rules[base]
            if current is None:
                break
        if current is None or current.ignored("/".join(parts), is_dir=is_dir):
            found.add(path)
    return found


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


def _entries(directory: str, walk: _Walk) -> Effect[list[FileInfo]]:
    """The entries of `directory`; none, counted as skipped, if it cannot be listed.

    Any failure of one directory below the top (refused, gone since its parent was
    listed, or a backend's own error such as a store's) skips it, so the search keeps
    what it found elsewhere; only the deadline stops the walk.

    Raises:
        Exception: the top directory itself cannot be listed (as the backend raised it).
    """
    try:
        return (yield from calls.list_dir(directory))
    except calls.DeadlinePassed:
        raise
    except Exception:
        if directory == walk.top:
            raise
        walk.skipped += 1
        return []


def _walk(directory: str, rules: IgnoreRules, walk: _Walk) -> Effect[bool]:
    if time.monotonic() > walk.deadline:
        return False
    entries = yield from _entries(directory, walk)
    ignore_files = {f"{directory.rstrip('/')}/{name}": name for name in IGNORE_FILES}
    present = {ignore_files[e.path] for e in entries if e.path in ignore_files and e.is_file}
    rules = yield from _with_ignore_files(rules, directory.lstrip("/"), present)
    keep, found, top = walk.keep, walk.found, len(walk.top)
    for entry in entries:  # once per file: plain attributes, no properties
        if entry.link:
            continue
        path, kind = entry.path, entry.kind
        if kind is EntryKind.DIRECTORY:
            name = path.rpartition("/")[2]
            if name in VCS_DIRECTORIES or rules.ignored(path.lstrip("/"), is_dir=True):
                continue
            if not (yield from _walk(path, rules, walk)):
                return False
        elif (
            kind is EntryKind.FILE
            and not rules.ignored(path.lstrip("/"), is_dir=False)
            and keep(path[top:].lstrip("/"))
        ):
            found.append(ListedFile(path, entry.mtime))
    return True


def grep(
    request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[SearchOutcome]:
    """Search like ripgrep would; hand each file with a match to `sink`.

    Every backend call is bounded by `deadline`; a search cut short by it keeps what
    it found and says so (`SearchOutcome.complete`).

    Raises:
        InvalidPattern: the regex does not compile.
    """
    matcher = _Matcher(request)
    return (yield from calls.before(deadline, _grep(request, matcher, deadline, sink)))


def _grep(
    request: GrepRequest, matcher: _Matcher, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[SearchOutcome]:
    try:
        info = yield from calls.stat(request.directory)
    except calls.DeadlinePassed:
        return SearchOutcome(complete=False)
    if info.is_file:
        listing = Listing([ListedFile(info.path, info.mtime)], complete=True)
    else:
        listing = yield from list_files(request.directory, globs=request.globs, deadline=deadline)
    skipped = listing.skipped
    for candidate in listing.files:
        if time.monotonic() > deadline:
            return SearchOutcome(complete=False, skipped=skipped)
        try:
            data = yield from calls.read_bytes(candidate.path)
        except calls.DeadlinePassed:
            return SearchOutcome(complete=False, skipped=skipped)
        except OSError:
            skipped += 1  # refused, or gone since it was listed: go on without it
            continue
        hits = matcher.search(candidate, data)
        if hits is not None:
            sink(hits)
    return SearchOutcome(listing.complete, skipped)


def file_matcher(request: GrepRequest) -> Callable[[ListedFile, bytes], FileHits | None]:
    """What `grep` applies to each file: its bytes to its hits (None: no match).

    For a backend's native search that fetches files its own way.

    Raises:
        InvalidPattern: the regex does not compile.
    """
    return _Matcher(request).search


class _Matcher:
    """One compiled request, applied file by file."""

    def __init__(self, request: GrepRequest) -> None:
        self.regex = Regex(
            request.pattern,
            regex=request.regex,
            ignore_case=request.ignore_case,
            multiline=request.multiline,
        )
        self.request = request
        needle = self.regex.needle
        self.literal = needle.encode("utf-8") if needle is not None else None
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
        if self.regex.search(text) is None:
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

    def _matching_lines(self, text: str, lines: list[str]) -> dict[int, int]:
        """The lines holding (part of) a match: 1-based number → match column.

        The column is that of the first match starting on the line (0 if none does).
        """
        if not self.request.multiline:
            search = self.regex.search
            found = ((number, search(_strip_cr(line))) for number, line in enumerate(lines, 1))
            return {number: span[0] for number, span in found if span is not None}
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        numbers: dict[int, int] = {}
        for start, end in self.regex.spans(text):
            first = _line_of(starts, start)
            last = _line_of(starts, max(end - 1, start))
            numbers.setdefault(first, start - starts[first - 1])
            for number in range(first + 1, min(last, len(lines)) + 1):
                numbers.setdefault(number, 0)
        return dict(sorted(numbers.items()))


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _lines_with_matches(regex: Regex, text: str) -> dict[int, int]:
    """The lines where `regex` matches: 1-based number → column of the first match.

    Matches never span lines here.
    """
    numbers: dict[int, int] = {}
    line, counted_to = 1, 0
    for start, _end in regex.spans(text):
        line += text.count("\n", counted_to, start)
        counted_to = start
        if line not in numbers:
            numbers[line] = start - (text.rfind("\n", 0, start) + 1)
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


def _with_context(
    lines: list[str], matched: dict[int, int], before: int, after: int
) -> list[LineHit]:
    wanted: set[int] = set()
    for number in matched:
        wanted.update(range(max(1, number - before), min(len(lines), number + after) + 1))
    return [
        LineHit(n, _strip_cr(lines[n - 1]), n in matched, matched.get(n, 0)) for n in sorted(wanted)
    ]


__all__ = ["file_matcher", "grep", "ignored_among", "list_files"]
