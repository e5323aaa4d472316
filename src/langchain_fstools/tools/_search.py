"""Search plumbing shared by glob and grep: pick the engine, bound the results."""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from langchain_fstools.core import calls, paths, progress
from langchain_fstools.search import engine
from langchain_fstools.search.contract import ListedFile, Listing

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.search.contract import FileHits, GrepRequest, SearchPart
    from langchain_fstools.tools._base import CallScope

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.25
"""Least seconds between two progress reports of one search."""

LINE_WIDTH = 500
"""Longest line text shown by grep; longer lines are cut with `…`."""


def deadline_of(scope: CallScope) -> float:
    """The monotonic time at which this call's search must stop."""
    return time.monotonic() + scope.context.settings.search_timeout


def search_root(path: str | None) -> Effect[FileInfo]:
    """Stat the search path (default `/`): must exist."""
    return calls.stat(paths.normalize(path or "/"))


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
    complete, total = True, 0
    for part in (yield from search_parts(scope, directory)):
        sub_globs = _below(globs, directory, part.directory)
        if part.native is not None:
            listing = yield from calls.blocking(
                partial(
                    part.native.list_files,
                    part.directory,
                    globs=sub_globs,
                    deadline=deadline,
                    newest=newest,
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
        found += kept
        # A listing cut to its newest left the excluded out itself, and counted the rest.
        total += len(kept) if listing.total is None else listing.total
        complete = complete and listing.complete
        progress.report({"files": total})
    return Listing(found, complete, total)


def grep(
    scope: CallScope, request: GrepRequest, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[bool]:
    """Search file contents, each part natively when its backend can; True if finished.

    While someone listens for progress, the counts so far (files with matches, matching
    lines) are reported at most every `PROGRESS_INTERVAL` seconds, and once at the end.
    """
    counts = _Counts() if progress.listening_now() else None
    if counts is not None:
        sink = counts.counting(sink)
    complete = True
    for part in (yield from search_parts(scope, request.directory)):
        sub = replace(
            request,
            directory=part.directory,
            globs=_below(request.globs, request.directory, part.directory),
        )

        def keep(hits: FileHits, part: SearchPart = part) -> None:
            if not _excluded(hits.path, part.excluded):
                sink(hits)

        if part.native is not None:
            finished = yield from calls.blocking(
                partial(part.native.grep, sub, deadline=deadline, sink=keep)
            )
        else:
            finished = yield from engine.grep(sub, deadline=deadline, sink=keep)
        complete = complete and finished
    if counts is not None:
        counts.report()
    return complete


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


def _below(
    globs: tuple[tuple[str, ...], ...], top: str, directory: str
) -> tuple[tuple[str, ...], ...]:
    """Re-anchor path globs (those with `/`) from `top` to its subdirectory `directory`."""
    if directory == top:
        return globs
    inner = directory[len(top) :].strip("/") + "/"
    return tuple(
        tuple(g.removeprefix("/").removeprefix(inner) if "/" in g.rstrip("/") else g for g in group)
        for group in globs
    )


def search_parts(scope: CallScope, directory: str) -> Effect[list[SearchPart]]:
    """The parts of the tree below `directory` and the engine of each, off the event loop.

    Finding a native search can block (a PATH lookup for `rg`, a round trip to ask an
    SSH server for its `rg`), so the async path asks from a worker thread.
    """
    parts: list[SearchPart] = yield from calls.blocking(
        partial(scope.backend.search_parts, directory)
    )
    if logger.isEnabledFor(logging.DEBUG):
        for part in parts:
            engine_used = "native" if part.native is not None else "python"
            logger.debug("search of %s: %s engine", part.directory, engine_used)
    return parts


def engine_name(scope: CallScope) -> Effect[str]:
    """Which engine served the call, for traces."""
    parts = yield from search_parts(scope, "/")
    natives = {part.native is not None for part in parts}
    return "native" if natives == {True} else "python" if natives == {False} else "mixed"


def cut(text: str) -> str:
    """Cut a line to `LINE_WIDTH` characters."""
    return text if len(text) <= LINE_WIDTH else text[:LINE_WIDTH] + "…"


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


__all__ = [
    "LINE_WIDTH",
    "ContentPage",
    "cut",
    "deadline_of",
    "engine_name",
    "grep",
    "list_files",
    "search_root",
]
