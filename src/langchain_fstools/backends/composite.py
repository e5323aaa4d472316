"""CompositeBackend: mount other backends at directories of one workspace."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langchain_fstools.backends.mounted import LayoutCheck, Rerooted
from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo, check_limit
from langchain_fstools.core import paths
from langchain_fstools.errors import NotInMount
from langchain_fstools.search.roots import WrappedSearch

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

    from langchain_fstools.core.changesets import ChangeReview, ChangeSet
    from langchain_fstools.core.results import Deletion, ExecutionResult, Write
    from langchain_fstools.search.contract import (
        FileHits,
        GrepRequest,
        Listing,
        NativeSearch,
        SearchPart,
    )
    from langchain_fstools.shell.sandbox.overlay import Layer
    from langchain_fstools.shell.session.background import Processes

MOUNT_VERSION = "mount"


def _chosen_reroots(
    routes: Mapping[str, Backend], *, reroot: bool | Mapping[str, bool] | None
) -> dict[str, bool]:
    """The mounts whose re-rooting `reroot` decides, canonical, and how.

    Raises:
        ValueError: `reroot` names a directory that is not a mount.
    """
    if reroot is None:
        return {}
    if isinstance(reroot, bool):
        return {paths.normalize(prefix): reroot for prefix in routes}
    mounts = {paths.normalize(prefix) for prefix in routes}
    chosen = {paths.normalize(prefix): bool(value) for prefix, value in reroot.items()}
    strays = sorted(set(chosen) - mounts)
    if strays:
        raise ValueError(
            f"reroot names {', '.join(m + '/' for m in strays)}, which is not a mount;"
            f" the mounts are {', '.join(sorted(m + '/' for m in mounts))}"
        )
    return chosen


def _refuse_shared_roots(default: Backend, routes: Mapping[str, Backend]) -> None:
    """Refuse re-rooted mounts that keep their files where another root does.

    Raises:
        ValueError: two re-rooted mounts, or one and the default, share their storage, or
            one's is inside the other's (`Backend.storage_overlaps`).
    """
    roots: list[tuple[Backend, str]] = [(default, "the default backend")]
    for mount, backend in sorted(routes.items()):
        if not isinstance(backend, Rerooted):
            continue
        inner = backend.inner
        for other, name in roots:
            if inner.storage_overlaps(other.storage_key()) or other.storage_overlaps(
                inner.storage_key()
            ):
                raise ValueError(
                    f"the mount {mount}/ would keep its files where {name} keeps them"
                    " (one folder, store namespace or bucket prefix, or one inside the"
                    " other), so each would see the other's files; give it a storage of"
                    f" its own, or pass reroot={{{mount + '/'!r}: False}} to keep whole"
                    " paths there"
                )
        roots.append((inner, f"the mount {mount}/"))


class CompositeBackend(Backend):
    """One workspace made of several backends: a default, and mounts by directory.

    A mount such as `{"/workspace/": LocalBackend(root)}` sends every path in that
    directory to its backend, which sees it relative to the mount (deepagents'
    convention): `/workspace/todo.txt` is `/todo.txt` to the backend, `root/todo.txt`
    on disk, and every result names `/workspace/todo.txt` again. A backend whose
    instances share one namespace (`StateBackend`: the graph state's `files` channel)
    keeps whole paths instead, so two state mounts, or a state mount over a state
    default, never collide; `reroot` decides per mount. Mounts may nest (`/memories/`
    and `/memories/user/`): the longest mount containing a path wins. Listing a mount
    point or any directory above one shows the mount's directory even before it holds
    anything; searches cover every mount below the searched directory, each part with
    its own native search where it has one, merged under one limit. A path missing
    below a mount raises `NotInMount`, naming the backend it was looked for in.
    Commands run on the default backend.

    Args:
        default: Where every path outside a mount goes.
        routes: Mount point (a directory, e.g. `"/memories/"` or `"/memories/user/"`)
            → backend.

    Example:
        ```python
        from langchain_fstools import CompositeBackend, LocalBackend, StateBackend

        backend = CompositeBackend(
            StateBackend(), {"/workspace/": LocalBackend("./repo")}
        )  # /workspace/README.md is ./repo/README.md
        ```
    """

    kind = "composite"

    def __init__(
        self,
        default: Backend,
        routes: Mapping[str, Backend],
        *,
        reroot: bool | Mapping[str, bool] | None = None,
        traced_as: str | None = None,
        hidden_while_empty: Collection[str] = (),
    ) -> None:
        """Mount `routes` over `default`.

        Args:
            default: The backend of every path no mount holds.
            routes: Mount directory -> backend (`{"/memories/": StoreBackend(...)}`).
            reroot: Whether a mounted backend sees paths relative to its mount
                (`/memories/a.md` stored as `/a.md`): True or False for every mount,
                or per mount (`{"/memories/": False}`; mounts not named take the
                default). Default: re-rooted, except backends that share a namespace
                (`StateBackend`), which keep whole paths. `False` keeps whole paths,
                as release 0.1 stored them. A mount re-rooted by default warns
                (`FutureWarning`, once) at its first miss if its backend holds the
                mount directory under its whole path, release 0.1's layout.
            traced_as: The kind traces name (see `Backend.traced_kind`), for a composite
                that only adds mounts of its own to a user's backend (as
                `FilesystemMiddleware` adds `/large_tool_results/`). Default: "composite".
            hidden_while_empty: Mounts a listing shows only once they hold something
                (the MCP server's `/large_tool_results/`). Default: none.

        Raises:
            TypeError: a part is not a backend instance (e.g. the class `StateBackend`).
            ValueError: the root `/` as a mount, a `reroot` entry for no mount, or a
                re-rooted mount whose storage another root uses, or holds, or is held in
                (`Backend.storage_overlaps`); a namespace computed from the run is checked
                when the composite is bound to one (`bind`).
        """
        for part in (default, *routes.values()):
            if not isinstance(part, Backend):
                kind = f"the class {part.__name__}" if isinstance(part, type) else repr(part)
                raise TypeError(f"CompositeBackend needs backend instances, not {kind}")
        self.default = default
        self._traced_as = traced_as
        self.routes: dict[str, Backend] = {}
        chosen = _chosen_reroots(routes, reroot=reroot)
        for prefix, backend in routes.items():
            mount = paths.normalize(prefix)
            if mount == paths.ROOT:
                raise ValueError(f"mount {prefix!r} must be a directory below '/', like '/name/'")
            rerooted = chosen.get(mount, not backend.shares_namespace)
            # Re-rooted by default: the first miss looks for 0.1's whole paths, once.
            check = None if mount in chosen else LayoutCheck()
            self.routes[mount] = Rerooted(backend, mount, check=check) if rerooted else backend
        _refuse_shared_roots(default, self.routes)
        self.hidden_while_empty = frozenset(paths.normalize(p) for p in hidden_while_empty)
        self.supports_execute = default.supports_execute

    # ----- routing ---------------------------------------------------------------------

    def _mount(self, path: str) -> str | None:
        """The longest mount containing canonical `path`, or None (the default's)."""
        while path != paths.ROOT:
            if path in self.routes:
                return path
            path = paths.parent(path)
        return None

    def _backend(self, path: str) -> Backend:
        mount = self._mount(path)
        return self.default if mount is None else self.routes[mount]

    @contextlib.contextmanager
    def _looking_in(self, path: str, *, check_layout: bool = True) -> Iterator[None]:
        """A `FileNotFoundError` below a mount becomes `NotInMount`, naming its backend.

        A mount re-rooted by default first looks, once, for release 0.1's whole paths
        (`Rerooted.warn_if_whole_paths`), unless `check_layout` is False (an async caller
        awaits `awarn_if_whole_paths` instead).
        """
        try:
            yield
        except NotInMount:
            raise
        except FileNotFoundError as exc:
            mount = self._mount(path)
            if mount is None:
                raise
            backend = self.routes[mount]
            if check_layout and isinstance(backend, Rerooted):
                backend.warn_if_whole_paths()
            missing = exc.filename if isinstance(exc.filename, str) else path
            raise NotInMount(missing, mount + "/", backend.kind) from exc

    def _mounts_below(self, directory: str) -> list[str]:
        """Mounts strictly inside canonical `directory`, sorted."""
        return sorted(m for m in self.routes if m != directory and paths.is_within(m, directory))

    def _holds_mount(self, path: str) -> bool:
        """Whether `path` is a mount point or a directory above one."""
        return path in self.routes or bool(self._mounts_below(path))

    def bind(self, runtime: Any) -> Backend:
        """Bind every part to the run.

        Raises:
            ValueError: bound, two re-rooted mounts keep their files in one place (two
                namespace functions gave one namespace, or nested ones).
        """
        bound = CompositeBackend(self.default.bind(runtime), {}, traced_as=self._traced_as)
        bound.routes = {mount: backend.bind(runtime) for mount, backend in self.routes.items()}
        bound.hidden_while_empty = self.hidden_while_empty
        _refuse_shared_roots(bound.default, bound.routes)  # namespace functions, now resolved
        return bound

    @property
    def traced_kind(self) -> str:
        """`traced_as` when given, else "composite"."""
        return self._traced_as or self.kind

    def state_update(self) -> dict[str, Any]:
        """The graph-state writes of every part, channel by channel."""
        merged: dict[str, Any] = {}
        for part in (self.default, *self.routes.values()):
            for channel, update in part.state_update().items():
                merged[channel] = {**merged.get(channel, {}), **update}
        return merged

    def native_search(self) -> None:
        """No single native search: see `search_parts`."""

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The owner's part, then each mount below `directory`, each without the mounts in it."""
        directory = paths.normalize(directory)
        inside = self._mounts_below(directory)
        parts = [
            replace(p, excluded=(*p.excluded, *inside))
            for p in self._backend(directory).search_parts(directory)
        ]
        for mount in inside:
            backend = self.routes[mount]
            mounted = backend.search_parts(mount)
            # A walk sees a missing mount as empty; a native search needs its directory.
            # (Only then is there a sync call here, which an async-only store would refuse.)
            if any(p.native is not None for p in mounted) and not backend.exists(mount):
                continue
            nested = tuple(self._mounts_below(mount))
            parts += [replace(p, excluded=(*p.excluded, *nested)) for p in mounted]
        return [
            p if p.native is None else replace(p, native=_MountedSearch(p.native, self._looking_in))
            for p in parts
        ]

    # ----- the core ----------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata from the owning part; a mount point (or a parent of one) is a directory."""
        path = paths.normalize(path)
        try:
            with self._looking_in(path):
                return self._backend(path).stat(path)
        except FileNotFoundError:
            if self._holds_mount(path):
                return FileInfo(path, EntryKind.DIRECTORY, 0, 0.0, MOUNT_VERSION)
            raise

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes from the owning part."""
        path = paths.normalize(path)
        with self._looking_in(path):
            return self._backend(path).read_bytes(path, start, size)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Bytes from the owning part, at `expected_version`."""
        path = paths.normalize(path)
        owner = self._backend(path)
        with self._looking_in(path):
            return owner.read_checked(path, start, size, expected_version=expected_version)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`, on the owning part's own async call."""
        path = paths.normalize(path)
        owner = self._backend(path)
        try:
            with self._looking_in(path, check_layout=False):
                return await owner.aread_checked(
                    path, start, size, expected_version=expected_version
                )
        except NotInMount:
            if isinstance(owner, Rerooted):
                await owner.awarn_if_whole_paths()
            raise

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write through the owning part."""
        path = paths.normalize(path)
        if self._holds_mount(path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        return self._backend(path).write_bytes(path, data, expected_version=expected_version)

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """One batch through the owning part when a single part owns every path."""
        owner, canonical, removed = self._batch_owner(writes, deletions)
        if owner is None:
            return super().write_many(canonical, removed)
        return owner.write_many(canonical, removed, receipt=receipt)

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`."""
        owner, canonical, removed = self._batch_owner(writes, deletions)
        if owner is None:
            return await super().awrite_many(canonical, removed)
        return await owner.awrite_many(canonical, removed, receipt=receipt)

    def committed(self, receipt: str) -> bool:
        """Whether a part kept the receipt (the batch's owner did, if it committed)."""
        return any(part.committed(receipt) for part in (self.default, *self.routes.values()))

    async def acommitted(self, receipt: str) -> bool:
        """Async `committed`."""
        parts = (self.default, *self.routes.values())
        return any([await part.acommitted(receipt) for part in parts])

    def _batch_owner(
        self, writes: Sequence[Write], deletions: Sequence[Deletion]
    ) -> tuple[Backend | None, list[Write], list[Deletion]]:
        """The part owning every path (None if several do); the writes and deletions canonical.

        Raises:
            IsADirectoryError: a path is a mount point or lies above one.
        """
        canonical = [replace(write, path=paths.normalize(write.path)) for write in writes]
        removed = [replace(d, path=paths.normalize(d.path)) for d in deletions]
        owners: dict[int, Backend] = {}
        for path in [w.path for w in canonical] + [d.path for d in removed]:
            if self._holds_mount(path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            owner = self._backend(path)
            owners[id(owner)] = owner
        if len(owners) == 1:
            return next(iter(owners.values())), canonical, removed
        return None, canonical, removed

    def delete(self, path: str) -> None:
        """Delete through the owning part."""
        path = paths.normalize(path)
        with self._looking_in(path):
            self._backend(path).delete(path)

    def mkdir(self, path: str) -> None:
        """Create a directory in the owning part."""
        path = paths.normalize(path)
        self._backend(path).mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries from the owning part, with the directories leading to mounts below."""
        path = paths.normalize(path)
        children = self._children(path)
        return self._listing(path, None, children, lambda owner: owner.list_dir(path))

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """A page of `list_dir`: the owning part's page, with the mount directories in it.

        The part is asked for one entry more per mount directory in `path`, so a page
        stays full when a mount hides an entry of the part or is itself hidden.
        """
        check_limit(limit)
        path = paths.normalize(path)
        children = self._children(path)
        return self._listing(
            path,
            after,
            children,
            lambda owner: owner.list_page(path, after=after, limit=limit + len(children)),
        )[:limit]

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Async `list_page` (in a worker thread, as `alist_dir`)."""
        return await asyncio.to_thread(lambda: self.list_page(path, after=after, limit=limit))

    def _listing(
        self,
        path: str,
        after: str | None,
        children: list[str],
        listed: Callable[[Backend], list[FileInfo]],
    ) -> list[FileInfo]:
        """The owner's entries `listed`, with the mount `children` named after `after`."""
        try:
            with self._looking_in(path):
                entries = listed(self._backend(path))
        except FileNotFoundError:
            if not (children or path in self.routes):
                raise
            entries = []
        if not children:
            return entries
        shown = {e.path: e for e in entries}
        for child in children:
            if after is not None and child.rsplit("/", 1)[-1] <= after:
                continue
            if child in self.hidden_while_empty and self._is_empty(child):
                shown.pop(child, None)
            elif child in self.routes or child not in shown:
                shown[child] = self.stat(child)
        return [shown[p] for p in sorted(shown, key=lambda p: p.rsplit("/", 1)[-1])]

    def _children(self, path: str) -> list[str]:
        """The entries of directory `path` that are mounts or lead to mounts, sorted."""
        children = {
            paths.join(path, mount[len(path) :].lstrip("/").split("/", 1)[0])
            for mount in self._mounts_below(path)
        }
        return sorted(children)

    def _is_empty(self, mount: str) -> bool:
        """Whether the mount `mount` holds nothing yet."""
        try:
            return not self.routes[mount].list_dir(mount)
        except FileNotFoundError:
            return True

    def resolve(self, path: str) -> str:
        """The owning part's resolution."""
        path = paths.normalize(path)
        return self._backend(path).resolve(path)

    async def aresolve(self, path: str) -> str:
        """Async `resolve`."""
        path = paths.normalize(path)
        return await self._backend(path).aresolve(path)

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename within one part; across parts, copy then delete."""
        source, destination = paths.normalize(source), paths.normalize(destination)
        owner = self._backend(source)
        with self._looking_in(source):
            if owner is self._backend(destination):
                return owner.move(source, destination)
            return super().move(source, destination)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Commands run on the default backend."""
        return self.default.execute(command, timeout=timeout, output_limit=output_limit)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`, on the default backend."""
        return await self.default.aexecute(command, timeout=timeout, output_limit=output_limit)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Commands run on the default backend."""
        return self.default.execute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layer
        )

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """A command's changes are the default backend's (its commands ran there)."""
        return self.default.commit(changes)

    def judge_changes(self, changes: ChangeSet) -> ChangeReview:
        """Judged as the default backend judges (its commands ran there)."""
        return self.default.judge_changes(changes)

    def processes(self) -> Processes | None:
        """The default backend's (its commands run there)."""
        return self.default.processes()

    def contains_commands(self) -> bool:
        """Whether the default backend, where commands run, contains them."""
        return self.default.contains_commands()

    def contains_background(self) -> bool:
        """Whether the default backend, where processes run, contains them."""
        return self.default.contains_background()

    def hides_from_commands(self) -> bool:
        """Whether the default backend, where commands run, can hide paths from them."""
        return self.default.hides_from_commands()

    def command_root(self) -> str | None:
        """Where commands, run on the default backend, see the workspace."""
        return self.default.command_root()

    def command_network(self) -> bool | tuple[str, ...] | None:
        """The network of commands, run on the default backend."""
        return self.default.command_network()

    async def aexecute_changes(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Async `execute_changes`, on the default backend."""
        return await self.default.aexecute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layer
        )

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`, on the default backend."""
        return await self.default.acommit(changes)


class _MountedSearch(WrappedSearch):
    """A part's native search whose missing paths below a mount name its backend."""

    def __init__(
        self,
        native: NativeSearch,
        looking_in: Callable[[str], contextlib.AbstractContextManager[None]],
    ) -> None:
        super().__init__(native)
        self.looking_in = looking_in

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """The part's `list_files`; a missing path below a mount is `NotInMount`."""
        with self.looking_in(directory):
            return self.native.list_files(
                directory, globs=globs, deadline=deadline, newest=newest, excluded=excluded
            )

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """The part's `grep`; a missing path below a mount is `NotInMount`."""
        with self.looking_in(request.directory):
            return self.native.grep(request, deadline=deadline, sink=sink)


__all__ = ["CompositeBackend"]
