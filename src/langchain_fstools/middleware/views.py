"""Backend views: a backend wrapped to see less or to remember more.

`BackendView` forwards every call to the backend it wraps, sync and async, so a view
overrides only what it changes. `GuardedBackend` hides and refuses paths a `PathGuard`
forbids: denied paths are missing from listings and searches and raise
`PermissionError` (with the virtual path) when named, so no tool can reach them,
whatever it does. The history recorder (`backends.recording`) is another view.

A view is built around the *unbound* backend and binds with it: `bind(runtime)` binds
the inner backend, then wraps the result for that one call.
"""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from langchain_fstools.backends.protocol import ABSENT, Backend, FileInfo
from langchain_fstools.core import paths
from langchain_fstools.errors import FsToolsError, PartialWrite, StaleApproval
from langchain_fstools.tools.targets import digest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from langchain_fstools.core.results import ExecutionResult, Write
    from langchain_fstools.search.contract import (
        FileHits,
        GrepRequest,
        Listing,
        NativeSearch,
        SearchPart,
    )

T = TypeVar("T")


class BackendView(Backend):
    """A backend that forwards every call to `inner`; subclasses change some."""

    def __init__(self, inner: Backend) -> None:
        """Wrap `inner`."""
        self.inner = inner
        self.supports_execute = inner.supports_execute

    @property
    def kind(self) -> str:  # type: ignore[override]  # a view reports its inner backend's kind
        """The wrapped backend's kind."""
        return self.inner.kind

    @property
    def traced_kind(self) -> str:
        """The wrapped backend's traced kind."""
        return self.inner.traced_kind

    def native_search(self) -> NativeSearch | None:
        """The wrapped backend's native search."""
        return self.inner.native_search()

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The wrapped backend's search parts."""
        return self.inner.search_parts(directory)

    def run_blocking(self, function: Callable[[], T]) -> T:
        """Run as the wrapped backend runs blocking work."""
        return self.inner.run_blocking(function)

    async def arun_blocking(self, function: Callable[[], T]) -> T:
        """Async `run_blocking`, as the wrapped backend does it."""
        return await self.inner.arun_blocking(function)

    def state_update(self) -> dict[str, Any]:
        """The wrapped backend's graph-state writes."""
        return self.inner.state_update()

    def stat(self, path: str) -> FileInfo:
        """Forwarded."""
        return self.inner.stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Forwarded."""
        return self.inner.read_bytes(path, start, size)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Forwarded."""
        return self.inner.write_bytes(path, data, expected_version=expected_version)

    def delete(self, path: str) -> None:
        """Forwarded."""
        self.inner.delete(path)

    def mkdir(self, path: str) -> None:
        """Forwarded."""
        self.inner.mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        return self.inner.list_dir(path)

    def exists(self, path: str) -> bool:
        """Forwarded."""
        return self.inner.exists(path)

    def move(self, source: str, destination: str) -> FileInfo:
        """Forwarded."""
        return self.inner.move(source, destination)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Forwarded."""
        return self.inner.walk(path)

    def resolve(self, path: str) -> str:
        """Forwarded."""
        return self.inner.resolve(path)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Forwarded."""
        return self.inner.execute(command, timeout=timeout, output_limit=output_limit)

    async def astat(self, path: str) -> FileInfo:
        """Forwarded."""
        return await self.inner.astat(path)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Forwarded."""
        return await self.inner.aread_bytes(path, start, size)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Forwarded."""
        return await self.inner.awrite_bytes(path, data, expected_version=expected_version)

    async def adelete(self, path: str) -> None:
        """Forwarded."""
        await self.inner.adelete(path)

    async def amkdir(self, path: str) -> None:
        """Forwarded."""
        await self.inner.amkdir(path)

    async def aresolve(self, path: str) -> str:
        """Forwarded."""
        return await self.inner.aresolve(path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        return await self.inner.alist_dir(path)

    async def aexists(self, path: str) -> bool:
        """Forwarded."""
        return await self.inner.aexists(path)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Forwarded."""
        return await self.inner.amove(source, destination)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Forwarded."""
        return await self.inner.aexecute(command, timeout=timeout, output_limit=output_limit)


class PathGuard(Protocol):
    """What one tool call may do with each canonical virtual path."""

    def visible(self, path: str) -> bool:
        """Whether the path may be named, stat'ed and listed."""

    def readable(self, path: str) -> bool:
        """Whether the file's content may be read (or searched)."""

    def writable(self, path: str) -> bool:
        """Whether the path may be written, deleted, created or moved."""

    def expectation(self, path: str) -> tuple[str, str | None] | None:
        """The approved change pinned at `path`, if any.

        Returns the file's version when the person saw it and the SHA-256 of the
        approved post-image (None: removed); None when nothing is pinned.
        """


class GuardedBackend(BackendView):
    """A backend whose every call passes a `PathGuard` first.

    Each path is checked as spelled (normalised) and as the inner backend resolves it
    (`Backend.resolve`: symlinks followed inside the workspace), at the moment of the
    call, so a link swapped after a decision cannot lead a call anywhere the guard has
    not allowed; the stricter answer wins. Precedence, per path:
        1. Not `visible`: absent from `list_dir`, `walk` and search results (a link
           whose target is hidden, too); `exists` is False; `stat` and every other
           call raise `PermissionError`.
        2. Visible but not `readable`: listed, but its bytes are neither read nor
           searched (`read_bytes` raises `PermissionError`; grep skips it).
        3. Not `writable`: `write_bytes`, `delete`, `mkdir` and `move` (either end)
           raise `PermissionError`.
        4. A change a person approved (`expectation`): `stat` of the file raises
           `StaleApproval` if it is no longer at the version the person saw, and a
           write must carry exactly the approved post-image (a removal must be
           approved as one), so approving applies exactly the previewed change.

    Args:
        inner: The backend to guard.
        guard_for: Builds the guard of one call from its runtime (at `bind`).
    """

    def __init__(self, inner: Backend, guard_for: Callable[[Any], PathGuard]) -> None:
        """Guard `inner` with the guard `guard_for(runtime)` of each call."""
        super().__init__(inner)
        self.guard_for = guard_for
        self.guard: PathGuard | None = None
        self._written: set[str] = set()

    def bind(self, runtime: Any) -> Backend:
        """Bind the inner backend, guarded by this call's guard."""
        bound = GuardedBackend(self.inner.bind(runtime), self.guard_for)
        bound.guard = self.guard_for(runtime)
        return bound

    def _spellings(self, path: str) -> tuple[str, str]:
        """The normalised path and what the inner backend resolves it to."""
        canonical = paths.normalize(path)
        return canonical, self.inner.resolve(canonical)

    def _check(self, path: str, allowed: Callable[[PathGuard, str], bool]) -> str:
        canonical, resolved = self._spellings(path)
        guard = self._guard()
        for spelling in {canonical, resolved}:
            if not guard.visible(spelling) or not allowed(guard, spelling):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), canonical)
        return canonical

    def _shown(self, directory: str, entries: Iterable[FileInfo]) -> Iterator[FileInfo]:
        """The entries whose path, and whose resolved target, are both visible.

        Entries below a linked `directory` are also checked at their place under its
        target; a linked entry is resolved on its own.
        """
        guard = self._guard()
        canonical, resolved = self._spellings(directory)
        for entry in entries:
            if not guard.visible(entry.path):
                continue
            if resolved != canonical and not guard.visible(
                _rebase(entry.path, canonical, resolved)
            ):
                continue
            if entry.link and not self._target_visible(entry.path, guard):
                continue
            yield entry

    def _target_visible(self, path: str, guard: PathGuard) -> bool:
        try:
            return guard.visible(self.inner.resolve(path))
        except (OSError, FsToolsError):
            return True  # a link leading nowhere or outside: listed as special, never opened

    def _guard(self) -> PathGuard:
        return self.guard if self.guard is not None else self.guard_for(None)

    def _pinned(self, path: str) -> tuple[str, str | None] | None:
        resolved = self.inner.resolve(paths.normalize(path))
        return None if resolved in self._written else self._guard().expectation(resolved)

    def _checked_stat(self, path: str, info: FileInfo | None) -> FileInfo:
        pinned = self._pinned(path)
        if pinned is not None and (ABSENT if info is None else info.version) != pinned[0]:
            raise StaleApproval(paths.normalize(path))
        if info is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), paths.normalize(path))
        return info

    def _check_write(self, path: str, data: bytes | None, expected_version: str | None) -> None:
        pinned = self._pinned(path)
        if pinned is not None:
            before, after = pinned
            wrong_data = after is None if data is not None else after is not None
            if wrong_data or (data is not None and digest(data) != after):
                raise StaleApproval(path)
            if expected_version is not None and expected_version != before:
                raise StaleApproval(path)
        self._written.add(self.inner.resolve(path))

    # ----- reads -------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of a visible path (checked against an approved change's version)."""
        canonical = self._check(path, _any)
        try:
            info: FileInfo | None = self.inner.stat(canonical)
        except FileNotFoundError:
            info = None
        return self._checked_stat(canonical, info)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a readable file."""
        return self.inner.read_bytes(self._check(path, _readable), start, size)

    def list_dir(self, path: str) -> list[FileInfo]:
        """The visible entries of a visible directory."""
        canonical = self._check(path, _any)
        return list(self._shown(canonical, self.inner.list_dir(canonical)))

    def exists(self, path: str) -> bool:
        """Whether a visible path exists (an invisible one never does)."""
        try:
            canonical = self._check(path, _any)
        except PermissionError:
            return False
        return self.inner.exists(canonical)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """The visible entries below a visible directory."""
        canonical = self._check(path, _any)
        return self._shown(canonical, self.inner.walk(canonical))

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The inner parts, each native search filtered by the guard.

        Parts walked by the pure-Python engine need no filter: it walks this view.
        """
        canonical = self._check(directory, _any)
        resolved = self.inner.resolve(canonical)
        guard = self._guard()

        def shown(path: str, *, searched: bool) -> bool:
            spellings = {path, _rebase(path, canonical, resolved)}
            return all(guard.visible(p) and (guard.readable(p) or not searched) for p in spellings)

        return [
            part
            if part.native is None
            else replace(part, native=_GuardedSearch(part.native, shown))
            for part in self.inner.search_parts(canonical)
        ]

    # ----- writes ------------------------------------------------------------------------

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write a writable file (exactly the approved post-image, if one is pinned)."""
        canonical = self._check(path, _writable)
        self._check_write(canonical, data, expected_version)
        return self.inner.write_bytes(canonical, data, expected_version=expected_version)

    def write_many(self, writes: Sequence[Write]) -> list[FileInfo]:
        """Write writable files as one batch (all checked before any is written).

        Each write is checked as `write_bytes` checks it: a pinned file must receive
        exactly the approved post-image, at the approved version.
        """
        guarded = self._checked_batch(writes)
        with as_given(writes):
            return self.inner.write_many(guarded)

    async def awrite_many(self, writes: Sequence[Write]) -> list[FileInfo]:
        """Async `write_many`."""
        guarded = self._checked_batch(writes)
        with as_given(writes):
            return await self.inner.awrite_many(guarded)

    def _checked_batch(self, writes: Sequence[Write]) -> list[Write]:
        guarded = [replace(w, path=self._check(w.path, _writable)) for w in writes]
        for write in guarded:
            self._check_write(write.path, write.data, write.expected_version)
        return guarded

    def delete(self, path: str) -> None:
        """Delete a writable path (an approved removal, if a change is pinned)."""
        canonical = self._check(path, _writable)
        self._check_write(canonical, None, None)
        self.inner.delete(canonical)

    def mkdir(self, path: str) -> None:
        """Create a writable directory."""
        self.inner.mkdir(self._check(path, _writable))

    def move(self, source: str, destination: str) -> FileInfo:
        """Move between two writable paths."""
        return self.inner.move(self._check(source, _writable), self._check(destination, _writable))

    # ----- async twins -------------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        canonical = self._check(path, _any)
        try:
            info: FileInfo | None = await self.inner.astat(canonical)
        except FileNotFoundError:
            info = None
        return self._checked_stat(canonical, info)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await self.inner.aread_bytes(self._check(path, _readable), start, size)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        canonical = self._check(path, _any)
        return list(self._shown(canonical, await self.inner.alist_dir(canonical)))

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        try:
            canonical = self._check(path, _any)
        except PermissionError:
            return False
        return await self.inner.aexists(canonical)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        canonical = self._check(path, _writable)
        self._check_write(canonical, data, expected_version)
        return await self.inner.awrite_bytes(canonical, data, expected_version=expected_version)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        canonical = self._check(path, _writable)
        self._check_write(canonical, None, None)
        await self.inner.adelete(canonical)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await self.inner.amkdir(self._check(path, _writable))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await self.inner.amove(
            self._check(source, _writable), self._check(destination, _writable)
        )


def _rebase(path: str, directory: str, resolved: str) -> str:
    """`path` below `directory`, placed below `resolved` (what the directory leads to)."""
    if directory == resolved or not paths.is_within(path, directory):
        return path
    suffix = path[len(directory) :].lstrip("/")
    return paths.join(resolved, suffix) if suffix else resolved


@contextlib.contextmanager
def as_given(writes: Sequence[Write]) -> Iterator[None]:
    """Re-raise a `PartialWrite` of rewritten `writes` naming their paths as given."""
    try:
        yield
    except PartialWrite as partial:
        written = tuple(w.path for w in writes[: len(partial.written)])
        raise PartialWrite(written, partial.cause) from partial.cause


def _any(_guard: PathGuard, _path: str) -> bool:
    return True


def _readable(guard: PathGuard, path: str) -> bool:
    return guard.readable(path)


def _writable(guard: PathGuard, path: str) -> bool:
    return guard.writable(path)


class _GuardedSearch:
    """A native search whose results leave out what the guard hides."""

    def __init__(self, native: NativeSearch, shown: Callable[..., bool]) -> None:
        self.native = native
        self.shown = shown

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        # Every file, not the newest only: hidden ones are dropped after the listing.
        del newest, excluded
        listing = self.native.list_files(directory, globs=globs, deadline=deadline)
        files = [f for f in listing.files if self.shown(f.path, searched=False)]
        return replace(listing, files=files)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        def keep(hits: FileHits) -> None:
            if self.shown(hits.path, searched=True):
                sink(hits)

        return self.native.grep(request, deadline=deadline, sink=keep)


__all__ = ["BackendView", "GuardedBackend", "PathGuard", "as_given"]
