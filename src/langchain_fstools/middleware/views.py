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

from langchain_fstools.backends.protocol import Backend, FileInfo
from langchain_fstools.core import paths
from langchain_fstools.errors import PartialWrite

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

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


class GuardedBackend(BackendView):
    """A backend whose every call passes a `PathGuard` first.

    Precedence, per path (the guard sees canonical virtual paths):
        1. Not `visible`: absent from `list_dir`, `walk` and search results;
           `exists` is False; `stat` and every other call raise `PermissionError`.
        2. Visible but not `readable`: listed, but its bytes are neither read nor
           searched (`read_bytes` raises `PermissionError`; grep skips it).
        3. Not `writable`: `write_bytes`, `delete`, `mkdir` and `move` (either end)
           raise `PermissionError`.

    Args:
        inner: The backend to guard.
        guard_for: Builds the guard of one call from its runtime (at `bind`).
    """

    def __init__(self, inner: Backend, guard_for: Callable[[Any], PathGuard]) -> None:
        """Guard `inner` with the guard `guard_for(runtime)` of each call."""
        super().__init__(inner)
        self.guard_for = guard_for
        self.guard: PathGuard | None = None

    def bind(self, runtime: Any) -> Backend:
        """Bind the inner backend, guarded by this call's guard."""
        bound = GuardedBackend(self.inner.bind(runtime), self.guard_for)
        bound.guard = self.guard_for(runtime)
        return bound

    def _check(self, path: str, allowed: Callable[[PathGuard, str], bool]) -> str:
        canonical = paths.normalize(path)
        guard = self._guard()
        if not guard.visible(canonical) or not allowed(guard, canonical):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), canonical)
        return canonical

    def _shown(self, entries: list[FileInfo]) -> list[FileInfo]:
        guard = self._guard()
        return [e for e in entries if guard.visible(e.path)]

    def _guard(self) -> PathGuard:
        return self.guard if self.guard is not None else self.guard_for(None)

    # ----- reads -------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of a visible path."""
        return self.inner.stat(self._check(path, _any))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a readable file."""
        return self.inner.read_bytes(self._check(path, _readable), start, size)

    def list_dir(self, path: str) -> list[FileInfo]:
        """The visible entries of a visible directory."""
        return self._shown(self.inner.list_dir(self._check(path, _any)))

    def exists(self, path: str) -> bool:
        """Whether a visible path exists (an invisible one never does)."""
        try:
            canonical = self._check(path, _any)
        except PermissionError:
            return False
        return self.inner.exists(canonical)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """The visible entries below a visible directory."""
        guard = self._guard()
        return (e for e in self.inner.walk(self._check(path, _any)) if guard.visible(e.path))

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The inner parts, each native search filtered by the guard.

        Parts walked by the pure-Python engine need no filter: it walks this view.
        """
        guard = self._guard()
        return [
            part
            if part.native is None
            else replace(part, native=_GuardedSearch(part.native, guard))
            for part in self.inner.search_parts(directory)
        ]

    # ----- writes ------------------------------------------------------------------------

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write a writable file."""
        canonical = self._check(path, _writable)
        return self.inner.write_bytes(canonical, data, expected_version=expected_version)

    def write_many(self, writes: Sequence[Write]) -> list[FileInfo]:
        """Write writable files as one batch (all checked before any is written)."""
        guarded = [replace(w, path=self._check(w.path, _writable)) for w in writes]
        with as_given(writes):
            return self.inner.write_many(guarded)

    async def awrite_many(self, writes: Sequence[Write]) -> list[FileInfo]:
        """Async `write_many`."""
        guarded = [replace(w, path=self._check(w.path, _writable)) for w in writes]
        with as_given(writes):
            return await self.inner.awrite_many(guarded)

    def delete(self, path: str) -> None:
        """Delete a writable path."""
        self.inner.delete(self._check(path, _writable))

    def mkdir(self, path: str) -> None:
        """Create a writable directory."""
        self.inner.mkdir(self._check(path, _writable))

    def move(self, source: str, destination: str) -> FileInfo:
        """Move between two writable paths."""
        return self.inner.move(self._check(source, _writable), self._check(destination, _writable))

    # ----- async twins -------------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await self.inner.astat(self._check(path, _any))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await self.inner.aread_bytes(self._check(path, _readable), start, size)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return self._shown(await self.inner.alist_dir(self._check(path, _any)))

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
        return await self.inner.awrite_bytes(canonical, data, expected_version=expected_version)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await self.inner.adelete(self._check(path, _writable))

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await self.inner.amkdir(self._check(path, _writable))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await self.inner.amove(
            self._check(source, _writable), self._check(destination, _writable)
        )


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

    def __init__(self, native: NativeSearch, guard: PathGuard) -> None:
        self.native = native
        self.guard = guard

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
        files = [f for f in listing.files if self.guard.visible(f.path)]
        return replace(listing, files=files)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        def keep(hits: FileHits) -> None:
            if self.guard.visible(hits.path) and self.guard.readable(hits.path):
                sink(hits)

        return self.native.grep(request, deadline=deadline, sink=keep)


__all__ = ["BackendView", "GuardedBackend", "PathGuard", "as_given"]
