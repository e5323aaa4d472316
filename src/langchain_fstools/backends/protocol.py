"""The backend contract: storage only, no presentation.

A backend stores bytes under virtual paths (see `paths`). It implements a small
required core; everything else has a default built on that core, which a backend may
override with a fast path that gives the same outcome (the conformance suite checks).

Required core (abstract, sync):
    1. `stat`        size, mtime, kind and an opaque version token of one path.
    2. `read_bytes`  the bytes of a file, or of a byte range of it.
    3. `write_bytes` an atomic whole-file write, optionally conditional on a version.
    4. `delete`      remove a file or an empty directory.
    5. `mkdir`       create a directory and its parents.
    6. `list_dir`    the entries of one directory, sorted by name.

Optional, with defaults on the core: `exists`, `move`, `walk`, `write_many` (a batch of
writes and deletions, which a backend may make with fewer syncs, or as one commit),
`list_page` (one page of a directory's entries, after a name: a backend that can list
without loading the whole directory overrides it), `read_checked` (a read that fails
unless the file is still at a version: a backend that learns the version with the bytes
makes it one request), and `resolve` (the canonical path the backend will actually
open for a path: symlinks followed inside the workspace; a backend without symlinks
resolves a path to itself).

Capability: `execute` runs a shell command in the workspace; backends that can set
`supports_execute = True` and override it (the default raises `ExecutionUnsupported`).
A backend that runs commands on a copy-on-write view also overrides `execute_changes`
(the command's changes returned, not committed) and `commit` (apply them); by default
`execute_changes` is `execute`, whose command wrote in place.

Every method has an `a`-prefixed async twin. The defaults run the sync method in a
worker thread; a backend with a real async transport overrides them.

Backends raise built-in `OSError` subclasses carrying the virtual path as `filename`,
and the typed errors of `langchain_fstools.errors`. They never format text for a model.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangeReview
from langchain_fstools.core.results import Deletion, EntryKind, ExecutionResult, FileInfo, Write
from langchain_fstools.errors import ExecutionUnsupported, PartialWrite, VersionConflict
from langchain_fstools.shell.sandbox.protected import refusal

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator, Sequence

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.search.contract import NativeSearch
    from langchain_fstools.shell.sandbox.overlay import Layer
    from langchain_fstools.shell.session.background import Processes

from langchain_fstools.search.contract import SearchPart

T = TypeVar("T")

ABSENT: Final = ""
"""`expected_version` value meaning "the file must not exist yet"."""


class Backend(ABC):
    """Storage for the file tools. Subclass and implement the required core.

    Class attributes describe capabilities, so tools never need `isinstance` checks.
    """

    kind: ClassVar[str] = "custom"
    """Short name of the backend family, reported in tool metadata and traces."""

    @property
    def traced_kind(self) -> str:
        """The kind traces name: the backend the user chose.

        `kind`, unless a wrapper the package added around it says otherwise.
        """
        return self.kind

    supports_execute: bool = False
    """Whether the backend can run shell commands (see `execute`). Default: False.

    A class attribute for most backends; a composite sets it per instance."""

    shares_namespace: ClassVar[bool] = False
    """Whether every instance stores into one namespace (`StateBackend`: the graph
    state's `files` channel), so that a mount of it keeps whole paths rather than paths
    relative to its mount, which two such mounts would share (see `CompositeBackend`).
    Default: False."""

    calls_may_block: ClassVar[bool] = True
    """Whether a core call can wait on something outside this process (a disk, a
    database, a network). Calls bounded by a deadline run on a worker thread so they
    can be abandoned; a backend whose calls never wait (graph state in memory) sets
    this to False and is called directly. Default: True."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass whose `execute` the tools would never call.

        The `execute` tool runs commands through `execute_changes`, which by default
        calls `execute`; a subclass overriding `execute` below a class whose
        `execute_changes` runs commands by itself (`LocalBackend`) would be skipped
        silently, so it is a `TypeError`.
        """
        super().__init_subclass__(**kwargs)
        runs, changes = _owner(cls, "execute"), _owner(cls, "execute_changes")
        if changes is not Backend and runs is not changes and issubclass(runs, changes):
            raise TypeError(
                f"{cls.__name__} overrides execute, which the execute tool would not call:"
                f" it calls execute_changes, and {changes.__name__}'s runs commands itself;"
                " override execute_changes too (its result with changes=None: the command"
                " wrote in place; see 'Writing your own' in"
                " docs/backends.md)"
            )

    def native_search(self) -> NativeSearch | None:
        """A fast search giving the pure-Python engine's answers, if the backend has one.

        Default: None (the tools walk the backend through its core calls).
        """
        return None

    def storage_key(self) -> Hashable:
        """Where this backend keeps its files, as a value equal for backends sharing them.

        Two backends with equal keys see one set of files under the same paths, so
        `CompositeBackend` refuses to re-root two mounts (or a mount and its default)
        onto one: they would hold each other's files. Default: this instance (another
        backend never shares its files).
        """
        return ("instance", id(self))

    def storage_overlaps(self, key: Hashable) -> bool:
        """Whether this backend's storage and the one `key` names hold each other's files.

        Default: the keys are equal. A backend whose storages nest (a store namespace
        inside another) also says so for one inside the other.
        """
        return self.storage_key() == key

    def search_parts(self, directory: str) -> list[SearchPart]:
        """How to search below `directory`: which part each native search covers.

        Default: one part, this backend's `native_search()` (or None: walk it).
        """
        return [SearchPart(directory, self.native_search())]

    def run_blocking(self, function: Callable[[], T]) -> T:
        """Run a blocking function (a native search); its async twin uses a thread."""
        return function()

    # ----- binding to a graph run ---------------------------------------------------

    def bind(self, runtime: Any) -> Backend:
        """Return the backend to use for one tool call.

        Backends whose data lives in graph state return a view over
        `runtime.state` that records its writes; others return themselves.

        Args:
            runtime: The injected `ToolRuntime`, or None outside a graph.
        """
        del runtime
        return self

    def state_update(self) -> dict[str, Any]:
        """Graph-state writes made through this (bound) backend, for a `Command`."""
        return {}

    # ----- required core ------------------------------------------------------------

    @abstractmethod
    def stat(self, path: str) -> FileInfo:
        """Return the metadata of `path`.

        Raises:
            FileNotFoundError: nothing exists at `path`.
        """

    @abstractmethod
    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Return the bytes of a file, or `size` bytes from offset `start`.

        Reading past the end returns what there is (possibly nothing).

        Raises:
            FileNotFoundError: no such file.
            IsADirectoryError: `path` is a directory.
            SpecialFile: `path` is a device, FIFO or socket.
        """

    @abstractmethod
    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Replace the whole content of a file atomically, creating parents.

        Readers see the old content or the new one, never a mix.

        Args:
            path: The file to write.
            data: The new content.
            expected_version: If given, the write happens only when the file's current
                version equals it; `ABSENT` requires that the file does not exist.

        Returns:
            The file's metadata after the write.

        Raises:
            VersionConflict: the file's version is not `expected_version`.
            IsADirectoryError: `path` is a directory.
        """

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove a file or an empty directory.

        Raises:
            FileNotFoundError: nothing exists at `path`.
            OSError: a directory that is not empty (errno ENOTEMPTY).
        """

    @abstractmethod
    def mkdir(self, path: str) -> None:
        """Create a directory and any missing parents; an existing one is fine.

        Raises:
            FileExistsError: `path` or a parent is a file.
        """

    @abstractmethod
    def list_dir(self, path: str) -> list[FileInfo]:
        """Return the entries directly inside a directory, sorted by name.

        Raises:
            FileNotFoundError: no such directory.
            NotADirectoryError: `path` is a file.
        """

    # ----- optional, defaults on the core -------------------------------------------

    def exists(self, path: str) -> bool:
        """Whether anything exists at `path` (False below a file, too)."""
        try:
            self.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """One page of a directory's entries: those of `list_dir` named after `after`.

        A listing in pages starts with `after=None` and passes the name of the last
        entry of each page as the next `after`; a page shorter than `limit` is the last.
        Default: `list_dir`, cut (a backend that can stop early overrides this and
        `alist_page`).

        Args:
            path: The directory.
            after: Only entries whose name sorts after this one. Default: None (from
                the first entry).
            limit: Most entries returned (at least 1).

        Returns:
            At most `limit` entries directly inside `path`, sorted by name.

        Raises:
            ValueError: `limit` is below 1.
            FileNotFoundError, NotADirectoryError: as `list_dir`.
        """
        return page_of(self.list_dir(path), after, limit)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """What `read_bytes` returns, provided the file is at `expected_version`.

        A reader that keeps what it learnt of one file version (a line index) reads
        that version again without a `stat` first. Default: `read_bytes`, then `stat`
        (a backend whose read brings the version, as an object store's GET does,
        overrides this and `aread_checked` with one request).

        Raises:
            VersionConflict: the file is at another version.
            FileNotFoundError, IsADirectoryError, SpecialFile: as `read_bytes`.
        """
        return calls.run(_read_then_check(path, start, size, expected_version), self)

    def resolve(self, path: str) -> str:
        """The canonical virtual path that a call on `path` reaches, links followed.

        Symlinks are followed inside the workspace exactly as the backend follows them
        when it performs a call; a missing last component is kept as spelled. Permission
        checks decide on this form as well as on the spelling. Default: the normalised
        path itself (a backend without symlinks).

        Raises:
            InvalidPath: `paths.normalize` refuses the path.
            OutsideRoot: the path, with links followed, leaves the workspace.
        """
        return paths.normalize(path)

    def move(self, source: str, destination: str) -> FileInfo:
        """Move a file; the destination is replaced if it exists.

        Default: write a copy, then delete the source.
        """
        info = self.write_bytes(destination, self.read_bytes(source))
        self.delete(source)
        return info

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Write several files and remove entries, each atomically, as one batch.

        Paths must be distinct (a move is a write of the new path and a deletion of the
        old). The batch is not atomic as a whole: a caller that needs all or nothing
        undoes the paths `PartialWrite` names. A backend may override this to sync once
        per batch instead of once per file, or to make the whole batch one commit
        (`LocalBackend` and `SandboxBackend` journal it: all or nothing even across a
        crash).

        Default: `write_bytes` for each write, in order, then for each deletion `stat`
        (its version checked) and `delete`.

        Args:
            writes: The writes, each optionally conditional on a version.
            deletions: The entries removed, each optionally conditional on a version.
                Default: none.
            receipt: A name a backend that commits a batch whole keeps with it, all or
                nothing with the batch, so that `committed(receipt)` tells whether it
                took effect even after a crash. Default: None (the default batch keeps
                no receipt).

        Returns:
            Each file's metadata after the batch, in the order of `writes`.

        Raises:
            PartialWrite: a step failed after others took effect; it names those paths
                (written or removed) and carries the error as `cause`.
            VersionConflict, OSError: as `write_bytes` and `delete`, when nothing was
                changed.
        """
        del receipt
        return calls.run(_write_each(writes, deletions), self)

    def committed(self, receipt: str) -> bool:
        """Whether a batch `write_many` was given `receipt` for took effect.

        Default: False (no receipts kept: the caller finds out from the files).
        """
        del receipt
        return False

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Yield every entry below `path`, depth first, each directory sorted by name.

        Default: recursive `list_dir`.
        """
        for entry in self.list_dir(path):
            yield entry
            if entry.is_dir:
                yield from self.walk(entry.path)

    # ----- capability: running commands -----------------------------------------------

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run a shell command with the workspace root as working directory.

        The command runs in its own process group; at the deadline the whole group is
        killed and the call returns what it collected. Output goes through
        `execution.OutputBuffer(output_limit)`.

        Args:
            command: The command line, run by a POSIX shell.
            timeout: Seconds before the command is killed.
            output_limit: Most bytes of output kept (head and tail).

        Raises:
            ExecutionUnsupported: this backend cannot run commands (the default).
        """
        del command, timeout, output_limit
        raise ExecutionUnsupported(self.kind)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Run a command as `execute` does, returning what it changed uncommitted.

        A backend that runs commands on a copy-on-write view returns the command's
        change set as `ExecutionResult.changes`; the caller commits it (`commit`) or
        discards it. `layer`: changes the command sees laid over the workspace (a
        branch's). Default: `execute` (the command wrote in place; `changes` is None),
        and no layer (`ExecutionUnsupported`).
        """
        if layer is not None:
            raise ExecutionUnsupported("branch")
        return self.execute(command, timeout=timeout, output_limit=output_limit)

    def command_root(self) -> str | None:
        """Where commands see the workspace (a host path the model may be told), or None.

        Default: None (commands, if any, are not told where the workspace is).
        """
        return None

    def command_network(self) -> bool | tuple[str, ...] | None:
        """The network commands have; None when not known, or when no command runs.

        False: none; True: the host's; a tuple: the host names they may reach (allowed
        domains). Default: None (the model is not told).
        """
        return None

    def processes(self) -> Processes | None:
        """The background processes of the current sandbox session, or None.

        Default: None (no background processes; `execute` runs each command to its end).
        """
        return None

    def contains_commands(self) -> bool:
        """Whether commands run on a copy-on-write view with no network (`execute_changes`).

        Then nothing a command does lasts until its change set is committed. May block
        the first time (a backend may probe its sandbox). Default: False.
        """
        return False

    def contains_background(self) -> bool:
        """Whether background processes are contained as commands are (`processes`).

        Then what one changes is reviewed before it lasts; else the tools ask before
        starting one, or writing to one, in `default` mode. May block as
        `contains_commands` does. Default: `contains_commands()`.
        """
        return self.contains_commands()

    def hides_from_commands(self) -> bool:
        """Whether commands can be kept from workspace paths (`shell.sandbox.unreadable`).

        Then what a permission rule keeps from reads is masked in each command's view;
        where not, such a rule makes every command ask first (`Policy.decide`). May
        block the first time (a backend may probe its sandbox). Default: False.
        """
        return False

    def judge_changes(self, changes: ChangeSet) -> ChangeReview:
        """Whether a command's change set may be committed, must be refused, or asks.

        Default: refused when it makes a change no command may make by itself
        (`shell.sandbox.protected`: what git or this program runs later, credentials); a
        permission layer (`GuardedBackend`) adds its rules and the paths to ask about.
        """
        found = refusal(changes, changes.host_code)
        if found is None:
            return ChangeReview()
        return ChangeReview(("protected", found.path, found.reason))

    async def ajudge_changes(self, changes: ChangeSet) -> ChangeReview:
        """Async `judge_changes` (it reads no storage)."""
        return self.judge_changes(changes)

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Apply a change set `execute_changes` returned, or nothing of it.

        Raises:
            ExecutionUnsupported: this backend returns no change sets (the default).
        """
        del changes
        raise ExecutionUnsupported(self.kind)

    # ----- async twins ----------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await asyncio.to_thread(self.stat, path)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await asyncio.to_thread(self.read_bytes, path, start, size)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`. Default: `aread_bytes`, then `astat`."""
        return await calls.arun(_read_then_check(path, start, size, expected_version), self)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return await asyncio.to_thread(
            lambda: self.write_bytes(path, data, expected_version=expected_version)
        )

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`. Default: `awrite_bytes` for each write, then each deletion."""
        del receipt
        return await calls.arun(_write_each(writes, deletions), self)

    async def acommitted(self, receipt: str) -> bool:
        """Async `committed`."""
        return await asyncio.to_thread(self.committed, receipt)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await asyncio.to_thread(self.delete, path)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await asyncio.to_thread(self.mkdir, path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return await asyncio.to_thread(self.list_dir, path)

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Async `list_page`. Default: `alist_dir` (the backend's own async listing), cut."""
        return page_of(await self.alist_dir(path), after, limit)

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        return await asyncio.to_thread(self.exists, path)

    async def aresolve(self, path: str) -> str:
        """Async `resolve`."""
        return await asyncio.to_thread(self.resolve, path)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await asyncio.to_thread(self.move, source, destination)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`."""
        return await asyncio.to_thread(
            lambda: self.execute(command, timeout=timeout, output_limit=output_limit)
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
        return await asyncio.to_thread(
            lambda: self.execute_changes(
                command, timeout=timeout, output_limit=output_limit, layer=layer
            )
        )

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`."""
        return await asyncio.to_thread(self.commit, changes)

    async def arun_blocking(self, function: Callable[[], T]) -> T:
        """Async `run_blocking`: in a worker thread."""
        return await asyncio.to_thread(function)


def page_of(entries: list[FileInfo], after: str | None, limit: int) -> list[FileInfo]:
    """The page `list_page` answers from a whole sorted listing: after `after`, `limit` long.

    Raises:
        ValueError: `limit` is below 1.
    """
    check_limit(limit)
    if after is not None:
        entries = [entry for entry in entries if entry.name > after]
    return entries[:limit]


def check_limit(limit: int) -> None:
    """Refuse a page `limit` below 1 (`list_page`'s contract)."""
    if limit < 1:
        raise ValueError(f"a page holds at least 1 entry, not {limit}")


def _read_then_check(
    path: str, start: int, size: int | None, expected_version: str
) -> Effect[bytes]:
    """`read_bytes`, then `stat`: the bytes, if the file is still at `expected_version`.

    The `stat` comes after the read, so a change before or during the read shows.
    """
    data = yield from calls.read_bytes(path, start, size)
    actual = (yield from calls.stat(path)).version
    if actual != expected_version:
        raise VersionConflict(path, expected_version, actual)
    return data


def _write_each(writes: Sequence[Write], deletions: Sequence[Deletion]) -> Effect[list[FileInfo]]:
    """Each write, then each deletion, in order; `PartialWrite` once one has taken effect."""
    done: list[FileInfo] = []
    removed: list[str] = []
    try:
        for write in writes:
            info = yield from calls.write_bytes(
                write.path, write.data, expected_version=write.expected_version
            )
            done.append(info)
        for deletion in deletions:
            yield from _delete_checked(deletion)
            removed.append(deletion.path)
    except Exception as exc:
        if not done and not removed:
            raise
        written = tuple(w.path for w in writes[: len(done)])
        raise PartialWrite((*written, *removed), exc) from exc
    return done


def _delete_checked(deletion: Deletion) -> Effect[None]:
    """`delete`, provided the entry is at the deletion's expected version (if any)."""
    if deletion.expected_version is not None:
        actual = (yield from calls.stat(deletion.path)).version
        if actual != deletion.expected_version:
            raise VersionConflict(deletion.path, deletion.expected_version, actual)
    yield from calls.delete(deletion.path)


def _owner(cls: type, name: str) -> type:
    """The class of `cls`'s method resolution order that defines `name`."""
    return next(klass for klass in cls.__mro__ if name in vars(klass))


__all__ = [
    "ABSENT",
    "Backend",
    "Deletion",
    "EntryKind",
    "FileInfo",
    "Write",
    "check_limit",
    "page_of",
]
