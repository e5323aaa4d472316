"""Search plumbing shared by glob and grep: pick the engine, bound the results."""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from langchain_fstools.core import calls, paths, progress
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.formats.text import LINE_WIDTH
from langchain_fstools.search import engine
from langchain_fstools.search.contract import ListedFile, Listing, SearchOutcome
from langchain_fstools.search.roots import checked_root, checks_root

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.search.contract import FileHits, GrepRequest, SearchPart
    from langchain_fstools.tools.base import CallScope

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.25
"""Least seconds between two progress reports of one search."""


LEAD = 100
"""Characters shown before a match that starts too far into a long line."""


def require_text(argument: str, value: str) -> None:
    """Refuse a pattern no engine can search: one with a NUL.

    Lone surrogates are refused for every tool, by `ToolArgs`.

    Raises:
        InvalidArgument: naming `argument` and what is wrong with it.
    """
    if "\x00" in value:
        raise InvalidArgument(
            argument,
            "it contains a NUL character, which never matches (files with NUL bytes are"
            " binary and not searched); remove it",
        )


def deadline_of(scope: CallScope) -> float:
    """The monotonic time at which this call's search must stop."""
    return time.monotonic() + scope.context.settings.search_timeout


def search_root(scope: CallScope, path: str | None, *, listing: bool = False) -> Effect[str]:
    """The canonical search path (default `/`), checked (see `search.roots.checked_root`).

    Where one native search covers it and checks its root in its own run
    (`checks_root`), the check is left to it: one round trip, not two.

    Raises:
        FileNotFoundError, SpecialFile: the path is missing, or a device, FIFO or socket.
        NotADirectoryError: `listing` and the path is a file.
    """
    directory = paths.normalize(path or "/")
    parts = yield from search_parts(scope, directory)
    if len(parts) == 1 and parts[0].directory == directory and checks_root(parts[0].native):
        return directory
    return (yield from checked_root(directory, listing=listing)).path


def list_files(
    scope: CallScope,
    directory: str,
    globs: tuple[tuple[str, ...], ...],
    deadline: float,
    *,
    newest: int | None = None,
) -> Effect[Listing]:
    """List searchable files, each part of the tree natively when its backend can.

    With `newest`, a native search may return only its newest files (see
    `NativeSearch.list_files`); `Listing.count` still counts all.
    """
    found: list[ListedFile] = []
    complete, total, skipped = True, 0, 0
    wanted = _wanted(globs, directory)
    for part in (yield from search_parts(scope, directory)):
        sub_globs, exact = _below(globs, directory, part.directory)
        if part.native is not None:
            listing = yield from calls.blocking(
                partial(
                    part.native.list_files,
                    part.directory,
                    globs=sub_globs,
                    deadline=deadline,
                    newest=newest if exact else None,
                    excluded=part.excluded,
                )
            )
        else:
            listing = yield from engine.list_files(
                part.directory, globs=sub_globs, deadline=deadline
            )
        kept = listing.files
        if part.excluded:
            kept = [f for f in kept if not _excluded(f.path, part.excluded)]
        if not exact:
            kept = [f for f in kept if wanted(f.path)]
        found += kept
        # A listing cut to its newest left the excluded out itself, and counted the rest.
        total += len(kept) if listing.total is None else listing.total
        complete = complete and listing.complete
        skipped += listing.skipped
    progress.report({"files": total})  # once, when every part is counted
    return Listing(found, complete, total, skipped)


def grep(
    scope: CallScope, request: GrepRequest, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[SearchOutcome]:
    """Search file contents, each part natively when its backend can.

    While someone listens for progress, the counts so far (files with matches, matching
    lines) are reported at most every `PROGRESS_INTERVAL` seconds, and once at the end.
    """
    counts = _Counts() if progress.listening_now() else None
    if counts is not None:
        sink = counts.counting(sink)
    complete, skipped = True, 0
    wanted = _wanted(request.globs, request.directory)
    for part in (yield from search_parts(scope, request.directory)):
        sub_globs, exact = _below(request.globs, request.directory, part.directory)
        sub = replace(request, directory=part.directory, globs=sub_globs)

        def keep(hits: FileHits, part: SearchPart = part, exact: bool = exact) -> None:  # noqa: FBT001
            if not _excluded(hits.path, part.excluded) and (exact or wanted(hits.path)):
                sink(hits)

        if part.native is not None:
            finished = yield from calls.blocking(
                partial(part.native.grep, sub, deadline=deadline, sink=keep)
            )
        else:
            outcome = yield from engine.grep(sub, deadline=deadline, sink=keep)
            finished, skipped = outcome.complete, skipped + outcome.skipped
        complete = complete and finished
    if counts is not None:
        counts.report()
    return SearchOutcome(complete, skipped)


class _Counts:
    """What a search found so far, reported as progress now and then."""

    def __init__(self) -> None:
        self.files = 0
        self.matches = 0
        self._reported = time.monotonic()

    def counting(self, sink: Callable[[FileHits], None]) -> Callable[[FileHits], None]:
        """`sink`, counting each file's hits first."""

        def counted(hits: FileHits) -> None:
            self.files += 1
            self.matches += hits.count or len(hits.lines)
            if time.monotonic() - self._reported >= PROGRESS_INTERVAL:
                self.report()
            sink(hits)

        return counted

    def report(self) -> None:
        self._reported = time.monotonic()
        progress.report({"files": self.files, "matches": self.matches})


def _excluded(path: str, excluded: tuple[str, ...]) -> bool:
    return any(paths.is_within(path, prefix) for prefix in excluded)


def _wanted(globs: tuple[tuple[str, ...], ...], top: str) -> Callable[[str], bool]:
    """Whether a virtual path below `top` matches the glob groups, relative to `top`."""
    matches = compile_glob_groups(globs)
    return lambda path: matches(path[len(top) :].lstrip("/"))


def _below(
    globs: tuple[tuple[str, ...], ...], top: str, directory: str
) -> tuple[tuple[tuple[str, ...], ...], bool]:
    """The glob groups, relative to `top`, re-anchored to its subdirectory `directory`.

    A name glob (no `/`) means the same anywhere; a path glob is anchored at `top`, so
    below `directory` it keeps only what follows `directory`'s own path, still
    anchored (`/memories/*.py` becomes `/*.py` in `/memories`). A group holding a glob
    that cannot be moved (`/*.md`, `m*/x.py`) is left out, and the second value is
    False: the caller must then filter what the part finds with the original globs.
    """
    if directory == top:
        return globs, True
    inner = directory[len(top) :].strip("/") + "/"
    moved_groups: list[tuple[str, ...]] = []
    exact = True
    for group in globs:
        moved = [_moved(glob, inner) for glob in group]
        if any(glob is None for glob in moved):
            exact = False
            continue
        moved_groups.append(tuple(glob for glob in moved if glob is not None))
    return tuple(moved_groups), exact


def _moved(glob: str, inner: str) -> str | None:
    """`glob` (relative to a directory) relative to its subdirectory `inner`, or None."""
    if "/" not in glob.rstrip("/"):
        return glob
    body = glob.lstrip("/")
    literal = not any(char in inner for char in "*?[]{}\\")
    if literal and body.startswith(inner) and body[len(inner) :].strip("/"):
        return "/" + body[len(inner) :]
    if body.startswith("**/") and "/" not in body[3:].rstrip("/"):
        return body
    return None


def search_parts(scope: CallScope, directory: str) -> Effect[list[SearchPart]]:
    """The parts of the tree below `directory` and the engine of each, off the event loop.

    Finding a native search can block (a PATH lookup for `rg`, a round trip to ask an
    SSH server for its `rg`, a permission guard resolving the path on a remote
    backend), so the async path asks from a worker thread, once per call and directory.
    """
    known = scope.search_layouts.get(directory)
    if known is not None:
        return known
    parts: list[SearchPart] = yield from calls.blocking(
        partial(scope.backend.search_parts, directory)
    )
    scope.search_layouts[directory] = parts
    if logger.isEnabledFor(logging.DEBUG):
        for part in parts:
            engine_used = "native" if part.native is not None else "python"
            logger.debug("search of %s: %s engine", part.directory, engine_used)
    return parts


def engine_name(scope: CallScope, directory: str) -> Effect[str]:
    """Which engine searched `directory` in this call, for traces."""
    parts = yield from search_parts(scope, directory)
    natives = {part.native is not None for part in parts}
    return "native" if natives == {True} else "python" if natives == {False} else "mixed"


def cut(text: str, column: int = 0) -> str:
    """Cut a line to `LINE_WIDTH` characters, keeping the match at `column` in view.

    A match near the start shows the line's start; one further in shows `LEAD`
    characters before it and the rest of the window after, with `…` where text is cut.
    """
    if len(text) <= LINE_WIDTH:
        return text
    start = 0 if column + LINE_WIDTH - LEAD <= LINE_WIDTH else column - LEAD
    window = text[start : start + LINE_WIDTH]
    return ("…" if start else "") + window + ("…" if start + LINE_WIDTH < len(text) else "")


class ContentPage:
    """Keeps the files whose lines can fall in one page of path-sorted output.

    Files arrive in any order; only the first `needed` output lines (by path) can be
    shown, so files sorted after them are dropped as soon as they cannot matter.
    Memory stays bounded by the page plus one file, however many matches there are.
    """

    def __init__(self, needed: int | None) -> None:
        """Keep enough files for `needed` lines (None: keep everything)."""
        self.needed = needed
        self.files: list[FileHits] = []
        self._keys: list[str] = []
        self.total_lines = 0
        self.total_files = 0
        self.total_matches = 0

    def add(self, hits: FileHits) -> None:
        """Take one file's hits."""
        self.total_lines += len(hits.lines)
        self.total_files += 1
        self.total_matches += hits.count
        slot = bisect.bisect(self._keys, hits.path)
        self._keys.insert(slot, hits.path)
        self.files.insert(slot, hits)
        if self.needed is None:
            return
        kept = sum(len(f.lines) for f in self.files)
        while len(self.files) > 1 and kept - len(self.files[-1].lines) >= self.needed:
            kept -= len(self.files.pop().lines)
            self._keys.pop()


def skipped_note(count: int) -> str:
    """The line glob and grep add when `count` entries could not be read."""
    entry = "entry" if count == 1 else "entries"
    return (
        f"({count:,} unreadable {entry}"
        " (permission denied, removed during the search, or a storage error)"
        " skipped; the results cover the rest.)"
    )


__all__ = [
    "ContentPage",
    "cut",
    "deadline_of",
    "engine_name",
    "grep",
    "list_files",
    "require_text",
    "search_root",
    "skipped_note",
]
