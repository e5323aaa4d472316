"""A backend seen at a mount: it stores paths relative to its mount directory.

`CompositeBackend` wraps each re-rooted mount in a `Rerooted` view (deepagents'
convention): with `"/workspace/"` mounted from `LocalBackend(root)`, the workspace path
`/workspace/todo.txt` is `/todo.txt` to the backend, so `root/todo.txt` on disk, and
every answer (metadata, listings, search hits, error paths) names the workspace path
again.

Release 0.1 handed a mounted backend whole paths, so what it stored below `/memories/` is
kept as `/memories/...` and, re-rooted, is out of sight. A mount re-rooted by default
(no `reroot=` for it) therefore checks once, at its first miss, whether its backend holds
the mount directory under its whole path, and if so warns (`FutureWarning`) with the two
ways out: `reroot={mount: False}`, or moving the files. One request per mount, and only
after a miss; a mount whose `reroot` was chosen is never checked.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any

from langchain_fstools.backends.view import BackendView
from langchain_fstools.core import paths
from langchain_fstools.errors import PartialWrite
from langchain_fstools.search.roots import WrappedSearch

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.results import Deletion, FileInfo, Write
    from langchain_fstools.search.contract import (
        FileHits,
        GrepRequest,
        Listing,
        NativeSearch,
        SearchPart,
    )


class LayoutCheck:
    """Whether a mount re-rooted by default has still to look for release 0.1's layout.

    Shared by a `Rerooted` view and the views `bind` makes of it, so a mount is checked
    once however many runs bind it.
    """

    def __init__(self) -> None:
        """A check not made yet."""
        self.pending = True


class Rerooted(BackendView):
    """`inner` with its root at `mount`: `mount + p` outside is `p` inside.

    Only paths at or below `mount` reach it (the composite routes them).
    """

    def __init__(self, inner: Backend, mount: str, *, check: LayoutCheck | None = None) -> None:
        """Show `inner` at the canonical directory `mount` (e.g. "/workspace").

        Args:
            inner: The mounted backend.
            mount: The canonical mount directory.
            check: The once-per-mount look for release 0.1's whole paths at the first miss
                (`warn_if_whole_paths`), for a mount re-rooted by default. Default: none.
        """
        super().__init__(inner)
        self.mount = mount
        self.check = check

    def inward(self, path: str) -> str:
        """The inner path of workspace `path`."""
        path = paths.normalize(path)
        return path[len(self.mount) :] or paths.ROOT

    def outward(self, path: str) -> str:
        """The workspace path of inner `path`."""
        return self.mount if path == paths.ROOT else self.mount + path

    def _info(self, info: FileInfo) -> FileInfo:
        return replace(info, path=self.outward(info.path))

    @contextlib.contextmanager
    def named_outward(self) -> Iterator[None]:
        """Errors leave with workspace paths in them."""
        try:
            yield
        except Exception as exc:
            self._rename_paths(exc)
            raise

    def _rename_paths(self, exc: BaseException) -> None:
        """Spell the paths an inner error names as the workspace does, in place.

        The paths are OSError filenames, `path` fields and `PartialWrite`'s.
        """
        if isinstance(exc, OSError):
            if isinstance(exc.filename, str):
                exc.filename = self.outward(exc.filename)
            if isinstance(exc.filename2, str):
                exc.filename2 = self.outward(exc.filename2)
        elif isinstance(exc, PartialWrite):
            exc.written = tuple(self.outward(p) for p in exc.written)
            self._rename_paths(exc.cause)
        elif is_dataclass(exc) and "path" in {f.name for f in fields(exc)}:
            named: Any = exc
            if isinstance(named.path, str):
                named.path = self.outward(named.path)

    def bind(self, runtime: Any) -> Backend:
        """The bound inner backend, at the same mount, sharing the layout check."""
        return Rerooted(self.inner.bind(runtime), self.mount, check=self.check)

    # ----- release 0.1's layout ----------------------------------------------------------

    def warn_if_whole_paths(self) -> None:
        """After a miss: warn, once, if the backend holds the mount under its whole path."""
        if self.check is not None and self.check.pending:
            try:
                held = self.inner.exists(self.mount)
            except Exception:  # noqa: BLE001 - the check never replaces the miss it follows
                return  # no answer: the next miss asks again
            self._conclude(holds_whole_paths=held)

    async def awarn_if_whole_paths(self) -> None:
        """Async `warn_if_whole_paths`."""
        if self.check is not None and self.check.pending:
            try:
                held = await self.inner.aexists(self.mount)
            except Exception:  # noqa: BLE001 - the check never replaces the miss it follows
                return  # no answer: the next miss asks again
            self._conclude(holds_whole_paths=held)

    def _conclude(self, *, holds_whole_paths: bool) -> None:
        """The check answered: it is not made again, and warns if 0.1's layout is there."""
        if self.check is None or not self.check.pending:
            return
        self.check.pending = False
        if holds_whole_paths:
            warnings.warn(whole_paths_warning(self.mount, self.inner.kind), FutureWarning, 2)

    # ----- search ----------------------------------------------------------------------

    def native_search(self) -> NativeSearch | None:
        """The inner native search, speaking workspace paths."""
        native = self.inner.native_search()
        return None if native is None else _RerootedSearch(native, self)

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The inner parts, their directories and native searches in workspace paths."""
        with self.named_outward():
            parts = self.inner.search_parts(self.inward(directory))
        return [
            replace(
                part,
                directory=self.outward(part.directory),
                native=None if part.native is None else _RerootedSearch(part.native, self),
                excluded=tuple(self.outward(e) for e in part.excluded),
            )
            for part in parts
        ]

    # ----- sync ------------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Inner `stat`."""
        with self.named_outward():
            return self._info(self.inner.stat(self.inward(path)))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Inner `read_bytes`."""
        with self.named_outward():
            return self.inner.read_bytes(self.inward(path), start, size)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Inner `read_checked`."""
        inner = self.inward(path)
        with self.named_outward():
            return self.inner.read_checked(inner, start, size, expected_version=expected_version)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Inner `write_bytes`."""
        inner = self.inward(path)
        with self.named_outward():
            return self._info(
                self.inner.write_bytes(inner, data, expected_version=expected_version)
            )

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Inner `write_many` (its own batch)."""
        inner = [replace(write, path=self.inward(write.path)) for write in writes]
        removed = [replace(deletion, path=self.inward(deletion.path)) for deletion in deletions]
        with self.named_outward():
            return [
                self._info(info) for info in self.inner.write_many(inner, removed, receipt=receipt)
            ]

    def delete(self, path: str) -> None:
        """Inner `delete`."""
        with self.named_outward():
            self.inner.delete(self.inward(path))

    def mkdir(self, path: str) -> None:
        """Inner `mkdir`."""
        with self.named_outward():
            self.inner.mkdir(self.inward(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Inner `list_dir`."""
        with self.named_outward():
            return [self._info(e) for e in self.inner.list_dir(self.inward(path))]

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """Inner `list_page` (names are the same inside and out)."""
        inner = self.inward(path)
        with self.named_outward():
            return [self._info(e) for e in self.inner.list_page(inner, after=after, limit=limit)]

    def exists(self, path: str) -> bool:
        """Inner `exists`."""
        with self.named_outward():
            return self.inner.exists(self.inward(path))

    def move(self, source: str, destination: str) -> FileInfo:
        """Inner `move`."""
        inner = self.inward(source), self.inward(destination)
        with self.named_outward():
            return self._info(self.inner.move(*inner))

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Inner `walk`."""
        inner = self.inward(path)
        with self.named_outward():
            entries = self.inner.walk(inner)
            yield from (self._info(entry) for entry in entries)

    def resolve(self, path: str) -> str:
        """Inner `resolve`."""
        with self.named_outward():
            return self.outward(self.inner.resolve(self.inward(path)))

    # ----- async -----------------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Inner `astat`."""
        with self.named_outward():
            return self._info(await self.inner.astat(self.inward(path)))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Inner `aread_bytes`."""
        with self.named_outward():
            return await self.inner.aread_bytes(self.inward(path), start, size)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Inner `aread_checked`."""
        inner = self.inward(path)
        with self.named_outward():
            return await self.inner.aread_checked(
                inner, start, size, expected_version=expected_version
            )

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Inner `awrite_bytes`."""
        inner = self.inward(path)
        with self.named_outward():
            return self._info(
                await self.inner.awrite_bytes(inner, data, expected_version=expected_version)
            )

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Inner `awrite_many`."""
        inner = [replace(write, path=self.inward(write.path)) for write in writes]
        removed = [replace(deletion, path=self.inward(deletion.path)) for deletion in deletions]
        with self.named_outward():
            infos = await self.inner.awrite_many(inner, removed, receipt=receipt)
            return [self._info(info) for info in infos]

    async def adelete(self, path: str) -> None:
        """Inner `adelete`."""
        with self.named_outward():
            await self.inner.adelete(self.inward(path))

    async def amkdir(self, path: str) -> None:
        """Inner `amkdir`."""
        with self.named_outward():
            await self.inner.amkdir(self.inward(path))

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Inner `alist_dir`."""
        with self.named_outward():
            return [self._info(e) for e in await self.inner.alist_dir(self.inward(path))]

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Inner `alist_page`."""
        inner = self.inward(path)
        with self.named_outward():
            page = await self.inner.alist_page(inner, after=after, limit=limit)
        return [self._info(e) for e in page]

    async def aexists(self, path: str) -> bool:
        """Inner `aexists`."""
        with self.named_outward():
            return await self.inner.aexists(self.inward(path))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Inner `amove`."""
        inner = self.inward(source), self.inward(destination)
        with self.named_outward():
            return self._info(await self.inner.amove(*inner))

    async def aresolve(self, path: str) -> str:
        """Inner `aresolve`."""
        with self.named_outward():
            return self.outward(await self.inner.aresolve(self.inward(path)))


class _RerootedSearch(WrappedSearch):
    """An inner native search asked and answered in workspace paths."""

    def __init__(self, native: NativeSearch, view: Rerooted) -> None:
        super().__init__(native)
        self.view = view

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """Inner `list_files`, its files in workspace paths."""
        view = self.view
        with view.named_outward():
            listing = self.native.list_files(
                view.inward(directory),
                globs=globs,
                deadline=deadline,
                newest=newest,
                excluded=tuple(view.inward(e) for e in excluded),
            )
        files = [replace(f, path=view.outward(f.path)) for f in listing.files]
        return replace(listing, files=files)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Inner `grep`, each file's hits handed on under its workspace path."""
        view = self.view

        def outward(hits: FileHits) -> None:
            sink(replace(hits, path=view.outward(hits.path)))

        inner = replace(request, directory=view.inward(request.directory))
        with view.named_outward():
            return self.native.grep(inner, deadline=deadline, sink=outward)


def whole_paths_warning(mount: str, kind: str) -> str:
    """What a mount re-rooted by default says when its backend holds 0.1's whole paths."""
    named = f"{mount}/"
    return (
        f"the {kind} backend mounted at {named} holds {named} under its whole path, as"
        f" release 0.1 stored a mount's files; mounts now see paths relative to them"
        f" ({named}a.md is /a.md to the backend), so those files are out of sight. Pass"
        f" reroot={{{named!r}: False}} to CompositeBackend to read them where they are, or"
        f" move them (docs/backends.md, 'Moving from whole paths') and pass"
        f" reroot={{{named!r}: True}}, which also ends this check"
    )


__all__ = ["LayoutCheck", "Rerooted", "whole_paths_warning"]
