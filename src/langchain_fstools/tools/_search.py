"""Search plumbing shared by glob and grep: pick the engine, bound the results."""

from __future__ import annotations

import bisect
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from langchain_fstools.core import calls, paths
from langchain_fstools.search import engine
from langchain_fstools.search.contract import ListedFile, Listing

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.search.contract import FileHits, GrepRequest, SearchPart
    from langchain_fstools.tools._base import CallScope

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
    for part in scope.backend.search_parts(directory):
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
    return Listing(found, complete, total)


def grep(
    scope: CallScope, request: GrepRequest, deadline: float, sink: Callable[[FileHits], None]
) -> Effect[bool]:
    """Search file contents, each part natively when its backend can; True if finished."""
    complete = True
    for part in scope.backend.search_parts(request.directory):
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
    return complete


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


def engine_name(scope: CallScope) -> str:
    """Which engine served the call, for traces."""
    natives = {part.native is not None for part in scope.backend.search_parts("/")}
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
