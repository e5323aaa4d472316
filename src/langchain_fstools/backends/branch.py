"""A branch: a copy-on-write view of any backend, merged back with a three-way merge.

`BranchBackend(base)` reads through to `base` until the branch first writes or deletes
a path; from then on the path is the branch's, kept in memory with the base version
(and bytes) it had at that moment: its merge base. Writes and deletions never reach
`base` before `merge`. Listings, globs and greps see the base plus the branch, with
the branch's deletions hidden: a folder whose files the branch changed is searched by
walking the view, the rest with the base's native search (which cannot see the branch),
those folders left out of it. Reads of paths the branch never touched go straight to
the base, so they cost what reads outside the branch do.
Inside the branch, versions work as on any backend: a branch file's version is a hash
of its bytes, so read-before-write and the staleness check hold within the branch.

`merge` applies the branch to the base, file by file, by these rules (the base version
compared is the one the branch recorded when it first touched the file):

1. Only the branch changed the file (the base is still at the recorded version): the
   branch's content, or its deletion, is applied as is, conditional on that version.
2. Both changed it: a three-way, line-based merge (`formats.merge`) of the recorded
   base bytes, the base's current bytes and the branch's. A file both created (absent
   when the branch created it, present now) merges the same way from an empty base.
   Text that is not UTF-8 cannot be merged and is a conflict; so is a clean line merge
   whose result has a syntax error neither side has (with the `syntax` extra).
3. The branch deleted a file the base changed since, or changed a file the base
   deleted since: a conflict. So when one branch writes a file anew (or edits it) and
   another deletes it, whichever merges first wins and the second merge is a conflict
   for that file, in either order. A file both deleted is deleted once; a file the
   branch created and deleted again is no change; a file both left with the same
   bytes is no change either.
4. A rename (`move`) in a branch is a deletion of the old path and a creation of the
   new one, each merged by the rules above: when the base changed the old file since,
   the rename is a conflict (its deletion would lose the base's change).
5. Directories the branch created are created; one it deleted is deleted if the base
   added nothing to it since (else a conflict).

A merge with a conflict commits nothing and returns each conflicting file (with the
conflicting hunks: base, the base's current text, the branch's); the branch keeps its
changes, so the caller can resolve them and merge again. A clean merge commits every
file and deletion as one batch of the base (`write_many`, each conditional on the
version planned from; on local disk one journaled commit, whole even across a crash),
then the directories it made or removed; if any step fails, the steps already taken are
undone and the error is raised, so the base holds all of the merge or none of it. After
a clean merge the branch is empty again.

A branch is bounded, since it is kept in memory: at most `max_files` paths changed
(files and directories written, created or deleted) and `max_bytes` bytes held (the
branch's contents plus the base versions kept as merge bases). A change that would take
the branch past either raises `BranchFull` and leaves the branch as it was; changes that
do not grow it (rewriting a file no larger, deleting a file it created) are always taken.

A branch binds with its base: `bind(runtime)` binds the base for one tool call and
shares the branch's changes, so a branch of `StateBackend` keeps its changes across
calls and its merge writes into the bound state (`state_update` reports them).

Commands run in a branch where the base runs them on a copy-on-write view (`LocalBackend`
in its sandbox): the branch's changes are laid over the workspace under the command's
view (`backends.local.branch_layer`), and what the command changed is taken into the branch
(`commit`), not the workspace: it reaches the base with the merge. Elsewhere `execute`
in a branch is unsupported. Background processes do not run in a branch.
"""

from __future__ import annotations

import errno
import functools
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_fstools.backends.local.branch_layer import BranchLayer, Proposed
from langchain_fstools.backends.modes import os_error
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangedEntry, ChangeKind
from langchain_fstools.core.records import DIRECTORY_VERSION, content_version
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.errors import BranchFull, ExecutionUnsupported, PartialWrite, VersionConflict
from langchain_fstools.formats import syntax
from langchain_fstools.formats.merge import Hunk, merge
from langchain_fstools.search.contract import SearchPart
from langchain_fstools.shell.sandbox.overlay import upper_path

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Mapping

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.search.contract import NativeSearch
    from langchain_fstools.shell.sandbox.overlay import Layer


_MOST_WALKED = 64
"""Above this many changed folders below a search, the search walks the whole view
(the native searches' lists of left-out folders would grow past their use)."""

DEFAULT_MAX_FILES = 10_000
"""The most paths a branch changes unless told otherwise."""
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""The most bytes a branch holds unless told otherwise (256 MiB)."""


@dataclass(slots=True)
class _Touched:
    """A path the branch wrote, created or deleted.

    Attributes:
        data: The branch's bytes (empty for a directory); None: deleted in the branch.
        kind: File or directory (what it was, when deleted).
        version: The branch's version of it.
        mtime: When the branch last changed it.
        origin: The base's version when the branch first touched it (`ABSENT`: none).
        origin_data: The base's bytes then (None: absent, or a directory).
    """

    data: bytes | None
    kind: EntryKind
    version: str
    mtime: float
    origin: str
    origin_data: bytes | None


@dataclass(slots=True)
class _Changes:
    """What a branch holds, shared by the branch and its bound views."""

    touched: dict[str, _Touched] = field(default_factory=dict)
    held: int = 0
    """The bytes held: every touched path's `data` and `origin_data`."""

    def clear(self) -> None:
        """Forget every change (after a merge)."""
        self.touched.clear()
        self.held = 0


def _held(touched: _Touched | None) -> int:
    """The bytes one touched path holds."""
    if touched is None:
        return 0
    return len(touched.data or b"") + len(touched.origin_data or b"")


@dataclass(frozen=True, slots=True)
class FileConflict:
    """One file a merge could not apply.

    Attributes:
        path: The virtual path.
        reason: One sentence saying why.
        hunks: The conflicting hunks of a line merge (`ours`: the base's current text,
            `theirs`: the branch's); empty for a creation/deletion conflict.
    """

    path: str
    reason: str
    hunks: tuple[Hunk, ...] = ()


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What `BranchBackend.merge` did.

    Attributes:
        merged: The paths committed to the base (empty when there are conflicts).
        conflicts: The files that could not be merged; nothing was committed if any.
        present: The files the base held as the branch left them already, so nothing
            was committed for them: both sides made the change, or this merge was
            applied before (by a worker killed before its result was saved).
    """

    merged: tuple[str, ...] = ()
    conflicts: tuple[FileConflict, ...] = ()
    present: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """Whether the merge committed (there was no conflict)."""
        return not self.conflicts


@dataclass(frozen=True, slots=True)
class _Step:
    """One planned change of the base: `data` at `path` (None: delete), from `before`."""

    path: str
    data: bytes | None
    version: str
    before: bytes | None


Side = Literal["branch", "base"]
"""Which side of a conflicting file a merge takes whole."""


class BranchBackend(Backend):
    """A copy-on-write branch of `base`, kept in memory until `merge`.

    Args:
        base: The backend the branch reads through to and merges into.
        max_files: The most paths the branch may change (written, created or deleted
            files and directories). Default: 10,000.
        max_bytes: The most bytes the branch may hold (its contents plus the base
            versions it keeps as merge bases). Default: 256 MiB.

    Raises:
        ValueError: a limit that is not a positive integer.

    Example:
        ```python
        branch = BranchBackend(LocalBackend("/srv/project"))
        tools = FileToolkit(branch).get_tools()   # the agent edits the branch
        result = branch.merge()                   # then the base, all or nothing
        if not result.clean:
            print([c.path for c in result.conflicts])
        ```
    """

    kind = "branch"

    def __init__(
        self,
        base: Backend,
        *,
        max_files: int = DEFAULT_MAX_FILES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        """Branch `base` (nothing is copied)."""
        for name, value in (("max_files", max_files), ("max_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, not {value!r}"
                raise ValueError(msg)
        self.base = base
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.supports_execute = base.supports_execute
        self._changes = _Changes()

    @property
    def traced_kind(self) -> str:
        """The base's kind: the backend the user chose."""
        return self.base.traced_kind

    def storage_key(self) -> Hashable:
        """The branch's own changes (two branches of one base never share them)."""
        return ("branch", id(self._changes))

    def bind(self, runtime: Any) -> BranchBackend:
        """This branch over the base bound for one call, sharing the branch's changes."""
        bound = BranchBackend(
            self.base.bind(runtime), max_files=self.max_files, max_bytes=self.max_bytes
        )
        bound._changes = self._changes
        return bound

    def state_update(self) -> dict[str, Any]:
        """The base's graph-state writes: a merge's, as branch writes stay in the branch."""
        return self.base.state_update()

    @property
    def changed(self) -> tuple[str, ...]:
        """The paths the branch wrote, created or deleted, sorted."""
        return tuple(sorted(self._changes.touched))

    # ----- search ---------------------------------------------------------------------

    def _dirty(self) -> set[str]:
        """The directories whose own entries the branch changed (files, deleted folders)."""
        return {
            paths.parent(path)
            for path, touched in self._changes.touched.items()
            if touched.kind is EntryKind.FILE or touched.data is None
        }

    def native_search(self) -> NativeSearch | None:
        """The base's native search while the branch is empty; else None (walk the view)."""
        return None if self._changes.touched else self.base.native_search()

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The base's parts, less the folders the branch changed, which walk the view.

        A folder whose own files the branch wrote or deleted is walked through the view
        (the base's native search cannot see the branch), its subtree with it; the rest
        keeps the base's parts and engines, so a branch that changed a few files searches
        almost as fast as its base.
        """
        directory = paths.normalize(directory)
        dirty = self._dirty()
        if directory in dirty or directory in self._changes.touched:
            return [SearchPart(directory, None)]
        walked = _outermost(d for d in dirty if paths.is_within(d, directory))
        if len(walked) > _MOST_WALKED:
            return [SearchPart(directory, None)]
        parts = [
            replace(part, excluded=(*part.excluded, *_inside(walked, part.directory)))
            for part in self.base.search_parts(directory)
            if not any(paths.is_within(part.directory, d) for d in walked)
        ]
        return parts + [SearchPart(d, None) for d in walked]

    def run_blocking(self, function: Callable[[], Any]) -> Any:
        """Run a native search the way the base does."""
        return self.base.run_blocking(function)

    async def arun_blocking(self, function: Callable[[], Any]) -> Any:
        """Async `run_blocking`, the way the base does."""
        return await self.base.arun_blocking(function)

    # ----- the view, one body for sync and async (effects over the base) -----------------

    def _lookup(self, path: str) -> Effect[FileInfo | None]:
        """What the view holds at a normalised path, or None."""
        touched = self._changes.touched.get(path)
        if touched is not None:
            return None if touched.data is None else _info(path, touched)
        try:
            return (yield from calls.stat(path))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _stat(self, path: str) -> Effect[FileInfo]:
        path = paths.normalize(path)
        info = yield from self._lookup(path)
        if info is None:
            raise (yield from self._missing(path))
        return info

    def _missing(self, path: str) -> Effect[OSError]:
        """The error for a path missing from the view: below a file, or just not there."""
        if (yield from self._missing_parents(path)) is None:
            return os_error(NotADirectoryError, errno.ENOTDIR, path)
        return os_error(FileNotFoundError, errno.ENOENT, path)

    def _missing_parents(self, path: str) -> Effect[list[str] | None]:
        """The parents of `path` missing from the view, nearest first; None below a file."""
        missing: list[str] = []
        parent = paths.parent(path)
        while parent != paths.ROOT:
            info = yield from self._lookup(parent)
            if info is not None:
                return missing if info.is_dir else None
            missing.append(parent)
            parent = paths.parent(parent)
        return missing

    def _read(self, path: str, start: int, size: int | None, version: str | None) -> Effect[bytes]:
        path = paths.normalize(path)
        touched = self._changes.touched.get(path)
        if touched is None:
            try:
                if version is None:
                    return (yield from calls.read_bytes(path, start, size))
                return (yield from calls.read_checked(path, start, size, expected_version=version))
            except (FileNotFoundError, NotADirectoryError):
                raise (yield from self._missing(path)) from None
        if touched.data is None:
            raise (yield from self._missing(path))
        if touched.kind is EntryKind.DIRECTORY:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if version is not None and version != touched.version:
            raise VersionConflict(path, version, touched.version)
        return touched.data[start:] if size is None else touched.data[start : start + size]

    def _touch(self, path: str, data: bytes | None, kind: EntryKind) -> Effect[None]:
        """Record a change of `path`, with its merge base when it is the first."""
        known = self._changes.touched.get(path)
        if known is None:
            info = yield from self._lookup(path)
            origin_data = None
            if info is not None and info.is_file:
                origin_data = yield from calls.read_bytes(path)
            origin = ABSENT if info is None else info.version
            known = _Touched(None, kind, "", 0.0, origin, origin_data)
        else:
            origin_data = known.origin_data
        growth = len(data or b"") + len(origin_data or b"") - _held(self._changes.touched.get(path))
        self._check_room(path, growth)
        known.data, known.kind, known.mtime = data, kind, time.time()
        known.version = DIRECTORY_VERSION if kind is EntryKind.DIRECTORY else _version(data)
        self._changes.held += growth
        self._changes.touched[path] = known

    def _check_room(self, path: str, growth: int) -> None:
        """Raise `BranchFull` if changing `path` would grow the branch past a limit."""
        new = path not in self._changes.touched
        if new and len(self._changes.touched) >= self.max_files:
            raise BranchFull(path, "files", self.max_files)
        if growth > 0 and self._changes.held + growth > self.max_bytes:
            raise BranchFull(path, "bytes", self.max_bytes)

    def _parents(self, path: str) -> Effect[None]:
        """Create the missing parents of `path` in the branch.

        Raises:
            NotADirectoryError: a parent is a file.
        """
        missing = yield from self._missing_parents(path)
        if missing is None:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        for directory in reversed(missing):
            yield from self._touch(directory, b"", EntryKind.DIRECTORY)

    def _write(self, path: str, data: bytes, expected_version: str | None) -> Effect[FileInfo]:
        path = paths.normalize(path)
        info = yield from self._lookup(path)
        if info is not None and info.is_dir:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        actual = ABSENT if info is None else info.version
        if expected_version is not None and expected_version != actual:
            raise VersionConflict(path, expected_version, actual or None)
        yield from self._parents(path)
        yield from self._touch(path, data, EntryKind.FILE)
        return _info(path, self._changes.touched[path])

    def _delete(self, path: str) -> Effect[None]:
        info = yield from self._stat(path)
        if info.is_dir and (yield from self._list(info.path)):
            raise os_error(OSError, errno.ENOTEMPTY, info.path)
        yield from self._touch(info.path, None, info.kind)

    def _mkdir(self, path: str) -> Effect[None]:
        path = paths.normalize(path)
        info = yield from self._lookup(path)
        if info is not None:
            if not info.is_dir:
                raise os_error(FileExistsError, errno.EEXIST, path)
            return
        try:
            yield from self._parents(path)
        except NotADirectoryError:
            raise os_error(FileExistsError, errno.EEXIST, path) from None
        if path != paths.ROOT:
            yield from self._touch(path, b"", EntryKind.DIRECTORY)

    def _list(self, path: str) -> Effect[list[FileInfo]]:
        path = paths.normalize(path)
        info = yield from self._stat(path)
        if not info.is_dir:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        try:
            entries = {e.path: e for e in (yield from calls.list_dir(path))}
        except (FileNotFoundError, NotADirectoryError):
            entries = {}
        for touched_path, touched in self._changes.touched.items():
            if touched_path == path or paths.parent(touched_path) != path:
                continue
            if touched.data is None:
                entries.pop(touched_path, None)
            else:
                entries[touched_path] = _info(touched_path, touched)
        return sorted(entries.values(), key=lambda e: e.name)

    def _resolve(self, path: str) -> Effect[str]:
        path = paths.normalize(path)
        if path in self._changes.touched:
            return path
        return (yield from calls.resolve(path))

    # ----- the backend methods ----------------------------------------------------------

    def _through(self, path: str) -> str | None:
        """`path` normalised when the branch never touched it (the base answers), else None.

        The sync reads ask the base directly for such a path, which is what the view's
        effects do too, without driving them (reads in a branch cost what reads outside
        it do); a path the base has not got takes the view's way, for the view's error.
        """
        path = paths.normalize(path)
        return None if path in self._changes.touched else path

    def stat(self, path: str) -> FileInfo:
        """Metadata in the view: the branch's for a path it touched, else the base's."""
        through = self._through(path)
        if through is not None:
            try:
                return self.base.stat(through)
            except (FileNotFoundError, NotADirectoryError):
                pass
        return calls.run(self._stat(path), self.base)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes in the view."""
        through = self._through(path)
        if through is not None:
            try:
                return self.base.read_bytes(through, start, size)
            except (FileNotFoundError, NotADirectoryError):
                pass
        return calls.run(self._read(path, start, size, None), self.base)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Bytes in the view, provided the file is at `expected_version`."""
        return calls.run(self._read(path, start, size, expected_version), self.base)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write into the branch (the base is untouched until `merge`)."""
        return calls.run(self._write(path, data, expected_version), self.base)

    def delete(self, path: str) -> None:
        """Delete in the branch: hidden from the view, deleted from the base at `merge`."""
        calls.run(self._delete(path), self.base)

    def mkdir(self, path: str) -> None:
        """Create a directory in the branch."""
        calls.run(self._mkdir(path), self.base)

    def list_dir(self, path: str) -> list[FileInfo]:
        """The base's entries with the branch's changes applied, sorted by name."""
        return calls.run(self._list(path), self.base)

    def resolve(self, path: str) -> str:
        """A path the branch touched resolves to itself; others as the base resolves them."""
        through = self._through(path)
        if through is not None:
            return self.base.resolve(through)
        return calls.run(self._resolve(path), self.base)

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await calls.arun(self._stat(path), self.base)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await calls.arun(self._read(path, start, size, None), self.base)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`."""
        return await calls.arun(self._read(path, start, size, expected_version), self.base)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return await calls.arun(self._write(path, data, expected_version), self.base)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await calls.arun(self._delete(path), self.base)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await calls.arun(self._mkdir(path), self.base)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return await calls.arun(self._list(path), self.base)

    async def aresolve(self, path: str) -> str:
        """Async `resolve`."""
        return await calls.arun(self._resolve(path), self.base)

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        return (await calls.arun(self._lookup(paths.normalize(path)), self.base)) is not None

    # ----- commands ---------------------------------------------------------------------

    def hides_from_commands(self) -> bool:
        """The base's (its commands run there, the branch's files searched too)."""
        return self.base.hides_from_commands()

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Run `command` on the base's view with the branch laid over the workspace.

        Raises:
            ExecutionUnsupported: the base gives commands no copy-on-write view.
        """
        if layer is not None:
            raise ExecutionUnsupported(self.kind)
        layered = BranchLayer(self.proposed())
        return self.base.execute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layered
        )

    async def aexecute_changes(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Async `execute_changes`."""
        if layer is not None:
            raise ExecutionUnsupported(self.kind)
        layered = BranchLayer(self.proposed())
        return await self.base.aexecute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layered
        )

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Take a command's change set into the branch (the workspace is not touched)."""
        return calls.run(self._taking(changes), self.base)

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`."""
        return await calls.arun(self._taking(changes), self.base)

    def _taking(self, changes: ChangeSet) -> Effect[list[FileInfo]]:
        """Apply a change set to the branch: new content, new folders, then deletions.

        Raises:
            OSError: the command made a link, which a branch cannot hold (nothing of
                the set was taken).
        """
        link = next((c for c in changes.changes if c.entry == "link"), None)
        if link is not None and link.kind is not ChangeKind.DELETED:
            raise os_error(OSError, errno.EPERM, link.path)
        taken: list[FileInfo] = []
        for change in changes.changes:
            if change.kind is ChangeKind.DELETED:
                continue
            if change.entry == "directory":
                yield from self._mkdir(change.path)
                continue
            host = upper_path(changes, change.path)
            data = yield from calls.blocking(functools.partial(_host_bytes, host))
            taken.append((yield from self._write(change.path, data, None)))
        for change in reversed(changes.changes):
            if change.kind is ChangeKind.DELETED and (yield from self._lookup(change.path)):
                yield from self._delete(change.path)
        return taken

    # ----- merging ----------------------------------------------------------------------

    def proposed(self) -> tuple[Proposed, ...]:
        """What a merge would apply, as the branch sees it, in path order."""
        found: list[Proposed] = []
        for path in self.changed:
            touched = self._changes.touched[path]
            if touched.data is None and touched.origin == ABSENT:
                continue  # created and deleted again: no change
            if touched.data is None:
                kind = ChangeKind.DELETED
            elif touched.origin == ABSENT:
                kind = ChangeKind.ADDED
            else:
                kind = ChangeKind.MODIFIED
            entry: ChangedEntry = "directory" if touched.kind is EntryKind.DIRECTORY else "file"
            found.append(Proposed(path, kind, entry, touched.origin_data, touched.data))
        return tuple(found)

    def merge(self, *, receipt: str | None = None) -> MergeResult:
        """Apply the branch to the base, all or nothing (rules in the module docstring).

        Args:
            receipt: A name for this merge, unique to the branch: a merge the base
                kept a receipt of (`Backend.committed`; local disk does, even when its
                worker died after the commit) is not applied again, whatever the files
                hold now; its paths are reported present. Default: None.

        Returns:
            The committed paths, or the conflicts (and then nothing was committed).

        Raises:
            VersionConflict, OSError: the base changed while the merge was committed;
                the steps already taken were undone.
        """
        return calls.run(self.merging(receipt=receipt), self.base)

    async def amerge(self, *, receipt: str | None = None) -> MergeResult:
        """Async `merge`."""
        return await calls.arun(self.merging(receipt=receipt), self.base)

    def over(self, base: Backend) -> BranchBackend:
        """This branch (its changes shared) over another view or binding of its base."""
        moved = BranchBackend(base, max_files=self.max_files, max_bytes=self.max_bytes)
        moved._changes = self._changes
        return moved

    def snapshot(self) -> dict[str, Any]:
        """The branch's changes as plain data (bytes, strings, numbers), for graph state.

        `restored` makes the branch again, over a base, from what this returns.
        """
        return {
            "max_files": self.max_files,
            "max_bytes": self.max_bytes,
            "touched": {
                path: [t.data, t.kind.value, t.version, t.mtime, t.origin, t.origin_data]
                for path, t in self._changes.touched.items()
            },
        }

    @classmethod
    def restored(cls, base: Backend, snapshot: Mapping[str, Any]) -> BranchBackend:
        """The branch `snapshot` holds, over `base`.

        Raises:
            ValueError: `snapshot` is not what `snapshot()` returns.
        """
        try:
            branch = cls(base, max_files=snapshot["max_files"], max_bytes=snapshot["max_bytes"])
            for path, (data, kind, version, mtime, origin, origin_data) in snapshot[
                "touched"
            ].items():
                touched = _Touched(data, EntryKind(kind), version, mtime, origin, origin_data)
                branch._changes.touched[path] = touched
                branch._changes.held += _held(touched)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a branch snapshot: {exc!r}") from None
        return branch

    def merging(
        self, sides: Mapping[str, Side] | None = None, *, receipt: str | None = None
    ) -> Effect[MergeResult]:
        """`merge` as an effect over the base; `sides` settles files by hand.

        Args:
            sides: For a file a merge found in conflict, which side to take whole:
                `"branch"` (the branch's content, or its deletion, over whatever the
                base holds now) or `"base"` (the branch's change of it is dropped).
            receipt: As `merge`'s.
        """
        if receipt is not None and (yield from calls.committed(receipt)):
            done = tuple(sorted(self._changes.touched))
            self._changes.clear()
            return MergeResult(present=done)
        sides = sides or {}
        steps: list[_Step] = []
        present: list[str] = []
        conflicts: list[FileConflict] = []
        directories: list[tuple[str, bool]] = []
        for path in sorted(self._changes.touched):
            touched = self._changes.touched[path]
            side = sides.get(path)
            if side == "base":
                continue
            if side == "branch" and touched.kind is EntryKind.FILE:
                yield from _plan_taken(path, touched, steps)
                continue
            if touched.kind is EntryKind.DIRECTORY:
                conflict = yield from self._plan_directory(path, touched, directories)
            else:
                conflict = yield from _plan_file(path, touched, steps, present)
            if conflict is not None:
                conflicts.append(conflict)
        if conflicts:
            return MergeResult(conflicts=tuple(conflicts))
        yield from _commit(steps, directories, receipt)
        self._changes.clear()
        return MergeResult(merged=tuple(step.path for step in steps), present=tuple(present))

    def _plan_directory(
        self, path: str, touched: _Touched, directories: list[tuple[str, bool]]
    ) -> Effect[FileConflict | None]:
        """Plan a created (True) or deleted (False) directory; a conflict if it cannot be."""
        if touched.data is not None:
            directories.append((path, True))
            return None
        try:
            left = yield from calls.list_dir(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        ours = {p for p, t in self._changes.touched.items() if t.data is None}
        if any(entry.path not in ours for entry in left):
            return FileConflict(path, _DIRECTORY_FILLED)
        directories.append((path, False))
        return None


_DIRECTORY_FILLED = "The branch deleted this directory; the base has added files to it since."
_DELETED_CHANGED = "The branch deleted this file; the base has changed it since."
_CHANGED_DELETED = "The branch changed this file; the base has deleted it since."
_BINARY = "Both the branch and the base changed this file, which is not UTF-8 text to merge."
_LINES = "Both the branch and the base changed the same lines of this file."


def _plan_file(
    path: str, touched: _Touched, steps: list[_Step], present: list[str]
) -> Effect[FileConflict | None]:
    """Plan one file's step by the merge rules; a conflict if it cannot be merged.

    A file the base holds as the branch left it already goes to `present`.
    """
    try:
        current: FileInfo | None = yield from calls.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        current = None
    version = ABSENT if current is None else current.version
    if version == touched.origin:
        if touched.data is not None or touched.origin != ABSENT:
            steps.append(_Step(path, touched.data, version, touched.origin_data))
        return None
    if touched.data is None:
        if touched.origin == ABSENT or current is None:
            if touched.origin != ABSENT:  # the branch deleted it, and it is gone
                present.append(path)
            return None
        return FileConflict(path, _DELETED_CHANGED)
    if current is None or not current.is_file:
        return FileConflict(path, _CHANGED_DELETED)
    now = yield from calls.read_bytes(path)
    if now == touched.data:
        present.append(path)
        return None
    return _plan_lines(path, touched, _Step(path, now, version, now), steps)


def _broken_by_merge(path: str, ours: str, theirs: str, merged: str) -> str | None:
    """Why a clean line merge cannot stand: a syntax error neither side has (or None).

    Checked with the `syntax` extra only, for the languages it knows.
    """
    language = syntax.language_for(path, merged) if syntax.available() else None
    if language is None:
        return None
    new = syntax.introduced_errors(ours, merged, language)
    if not new or not syntax.introduced_errors(theirs, merged, language):
        return None
    return (
        "Both changed this file and the lines merged, but the result has a syntax error"
        f" at line {new[0].line} that neither side has."
    )


def _plan_taken(path: str, touched: _Touched, steps: list[_Step]) -> Effect[None]:
    """Plan the branch's side of a file whole, over what the base holds now."""
    try:
        current: FileInfo | None = yield from calls.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        current = None
    if current is None and touched.data is None:
        return
    before = (yield from calls.read_bytes(path)) if current is not None else None
    version = ABSENT if current is None else current.version
    steps.append(_Step(path, touched.data, version, before))


def _plan_lines(
    path: str, touched: _Touched, current: _Step, steps: list[_Step]
) -> FileConflict | None:
    """Plan the three-way merge of a file both changed (`current`: the base's now)."""
    try:
        texts = [(b or b"").decode() for b in (touched.origin_data, current.data, touched.data)]
    except UnicodeDecodeError:
        return FileConflict(path, _BINARY)
    merged = merge(*texts)
    if merged.text is None:
        return FileConflict(path, _LINES, merged.conflicts)
    broken = _broken_by_merge(path, texts[1], texts[2], merged.text)
    if broken is not None:
        return FileConflict(path, broken)
    steps.append(_Step(path, merged.text.encode(), current.version, current.before))
    return None


def _commit(
    steps: list[_Step], directories: list[tuple[str, bool]], receipt: str | None
) -> Effect[None]:
    """Commit the planned steps as one batch (writes and deletions), or undo those taken.

    The batch carries the merge's `receipt`; the directories the branch created or
    deleted follow it.
    """
    writes = [
        Write(s.path, s.data, expected_version=s.version) for s in steps if s.data is not None
    ]
    deletions = [Deletion(s.path, s.version) for s in steps if s.data is None]
    done: list[_Step] = []
    try:
        try:
            yield from calls.write_many(writes, deletions, receipt=receipt)
        except PartialWrite as partial:
            done += [s for s in steps if s.path in set(partial.written)]
            raise partial.cause from None
        done += steps
        for path, created in directories:
            yield from (calls.mkdir(path) if created else calls.delete(path))
    except Exception:
        yield from _undo(done)
        raise


def _undo(done: list[_Step]) -> Effect[None]:
    """Put back what the base held before each step taken, newest first."""
    for step in reversed(done):
        if step.before is None:
            yield from calls.delete(step.path)
        else:
            yield from calls.write_bytes(step.path, step.before)


def _outermost(directories: Iterable[str]) -> list[str]:
    """The directories not below another of them, sorted."""
    kept: list[str] = []
    for directory in sorted(directories):
        if not any(paths.is_within(directory, outer) for outer in kept):
            kept.append(directory)
    return kept


def _inside(directories: list[str], parent: str) -> tuple[str, ...]:
    """The `directories` strictly below `parent`."""
    return tuple(d for d in directories if d != parent and paths.is_within(d, parent))


def _host_bytes(host: str) -> bytes:
    """A new content waiting in a change set's upper layer."""
    return Path(host).read_bytes()


def _version(data: bytes | None) -> str:
    """The branch's version of a file's bytes (a hash: equal bytes, equal version)."""
    return content_version("file", data or b"")


def _info(path: str, touched: _Touched) -> FileInfo:
    size = 0 if touched.data is None or touched.kind is EntryKind.DIRECTORY else len(touched.data)
    return FileInfo(path, touched.kind, size, touched.mtime, touched.version)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILES",
    "BranchBackend",
    "FileConflict",
    "MergeResult",
    "Proposed",
    "Side",
]
