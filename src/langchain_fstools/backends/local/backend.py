"""Local disk, confined to one root directory."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import functools
import logging
import os
import shutil
import stat as stat_module
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeVar, cast, get_args

from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.beneath import LISTING, Beneath, Place
from langchain_fstools.backends.file_versions import later_than, version_of
from langchain_fstools.backends.host_paths import is_inside, real_path
from langchain_fstools.backends.local.journal import (
    Folder,
    Intent,
    Journal,
    Placement,
    Removal,
    Steps,
    Target,
    staging_place,
)
from langchain_fstools.backends.local.local_processes import LocalProcesses
from langchain_fstools.backends.modes import os_error, require_regular
from langchain_fstools.backends.protocol import ABSENT, Backend, FileInfo
from langchain_fstools.backends.write_locks import DEFAULT_LOCK_TIMEOUT, directories_locked
from langchain_fstools.core import paths
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet, remove_folder
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.errors import (
    ChangesNotCommitted,
    CommandRefused,
    DiskFull,
    ExecutionUnsupported,
    OutsideRoot,
    PartialWrite,
    SandboxUnavailable,
    VersionConflict,
)
from langchain_fstools.search.ripgrep import MEMORY_LIMIT, RipgrepSearch, find_ripgrep
from langchain_fstools.search.spawner import SpawnedProcess, Spawner, available
from langchain_fstools.shell.sandbox.environment import MINIMAL_ENV, CommandEnv, InheritEnv
from langchain_fstools.shell.sandbox.overlay import Overlay, files_equal, open_upper, upper_path
from langchain_fstools.shell.sandbox.protected import host_code_paths
from langchain_fstools.shell.sandbox.sandbox import DEFAULT_SANDBOX, Confinement, Sandbox
from langchain_fstools.shell.sandbox.unreadable import commands_unreadable, unreadable_paths
from langchain_fstools.shell.session.output import reporter_if_listening
from langchain_fstools.shell.session.session import Session, SessionEnded, Sessions

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence

    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.search.contract import NativeSearch
    from langchain_fstools.shell.sandbox.overlay import Layer, LowerTree
    from langchain_fstools.shell.session.background import Background

logger = logging.getLogger(__name__)


Durability = Literal["fsync", "rename"]
"""How far a write is made durable: through power loss (`fsync`) or process death only."""

DURABILITIES: Final = get_args(Durability)

_SYNC_THREADS = 16
"""Most fsyncs a batch write runs at once (the filesystem commits them together)."""

_OPEN_TEMPS = 256
"""Most temporary files, and most replaced files, a batch write holds open at once."""

_COPY_CHUNK: Final = 1 << 24
"""Bytes one `sendfile` call copies into a file committed from a change set."""

_T = TypeVar("_T")

_LEAST_SEARCH_MEMORY = 32 << 20
"""The smallest `search_memory_limit`: rg's spawner process lives under it too."""


class LocalBackend(Backend):
    """Files on local disk under `root_dir`, which the model sees as `/`.

    Confinement: every virtual path passes `paths.normalize` and is walked beneath the
    root's directory descriptor, one component at a time, each opened relative to the
    one before with `O_NOFOLLOW` (see `backends.beneath`); the open, create, rename or
    remove then names only the last component, relative to the directory reached. A
    symlink on the way is followed only when its target, resolved, lies inside the
    root, and the walk continues from the root descriptor. So `..`, a symlinked file or
    parent directory, a chain of links and a dangling link that leads outside are all
    refused with `OutsideRoot`, for reads and writes alike; links that stay inside are
    followed (a write through one updates its target, and the link survives). No host
    path is resolved twice: a process that swaps a directory for a symlink to the
    outside at any moment (a command run by `execute`, or anyone who can write in the
    workspace) makes a call fail or land elsewhere inside the root, never outside it.
    An absolute host path given as a path is just a virtual path under the root. Errors
    are built-in `OSError` subclasses re-raised with the virtual path only: no host
    path ever appears in an exception.

    Writes are atomic: a hidden temporary file in the target's directory is written,
    fsynced, given the old file's owner and permission bits (a new file gets the
    umask default) and renamed over the target, then the directory is fsynced. A
    writer killed midway leaves the old content (and possibly a stale
    `*.fstools-tmp` file, which listings show as it is). A batch (`write_many`, used
    by `apply_patch`, and `commit`) writes and fsyncs every temporary file at once,
    checks every expected version, renames them all, then fsyncs each directory
    once: each file still holds its old or its new content at any moment, and a
    batch that does not fit on the disk changes nothing (`DiskFull`). A batch is
    journaled (`backends.local.journal`): a process killed in its middle leaves an
    intent record, and the next call on the workspace, from any process, finishes
    the batch or undoes it and removes its temporary files. `durability="rename"`
    skips the syncs: a killed process still leaves old or new content, a power cut
    may lose recent writes. A conditional write compares versions and renames while
    holding a lock on the target's folder that every writer of this package takes (any
    thread, any process; see `backends.write_locks`), so of two writers that read one
    version exactly one succeeds; a program that does not take the lock (an editor)
    can still slip in between the check and the rename. The version token combines
    mtime, size and inode; each write stamps a precise mtime later than the replaced
    file's, so quick same-size writes never share a token. Devices, FIFOs and sockets
    are listed as special entries and never opened; reads never block.

    Limits: a directory that another process moves out of the root while a call
    holds it open is still written in (only a process that can write outside can do
    that). The ripgrep fast path (`host_path`) hands `rg` resolved host paths, and
    runs it confined (`search.spawner`): it reads only beneath the root (Landlock, where
    the kernel has it), so a folder swapped for a link out of the root while it walks
    is refused, and it has a memory limit (`search_memory_limit`).

    Running commands is opt-in (`execute=True`): without it the backend cannot run
    commands and the toolkit offers no `execute` tool. Commands run through bash (or
    `/bin/sh` without bash) with the root as working directory, in their own process
    group; everything they started is killed when they end or at their deadline (see
    `shell.session.process`). Inside a command, `/` is the machine's
    root, not the workspace; wherever the root's host path appears in the output it is
    replaced by `/`, the workspace's virtual name. Commands run in an OS sandbox by
    default (`Sandbox()`, see `shell.sandbox.sandbox`): the host read-only, the workspace
    writable, a private `/tmp`, credential folders masked, no capabilities, no
    network. Where no sandbox can start, `execute` refuses (`SandboxUnavailable`);
    `sandbox=None` is the unsafe opt-out: a command can then do whatever this process
    may do. Commands get only `PATH`, `HOME`, `LANG`, `TERM` and `TMPDIR`, plus `env`
    (see `shell.sandbox.environment`); with `sandbox=None`, this process's environment.

    Args:
        root_dir: The workspace directory. It must exist.
        use_ripgrep: Search with ripgrep when `rg` is available. Default: True.
        search_memory_limit: Bytes one ripgrep run may allocate (`RLIMIT_DATA`), or
            None for no limit; a search that reaches it fails saying so. Default:
            `MEMORY_LIMIT` (1 GiB).
        execute: Let the agent run shell commands in the workspace. Default: False.
        sandbox: The OS sandbox of commands: a `Sandbox` (network, extra writable,
            read-only or hidden paths), `"bwrap"` (bubblewrap only), or None to run
            commands unconfined (unsafe). Default: `Sandbox()`.
        env: Variables set for every command, over inherited ones. Default: none.
        inherit_env: Which of this process's variables commands get: True (all),
            False (none) or a list of names; inside a sandbox, names that look like
            secrets are never inherited (pass them in `env`). Default: `MINIMAL_ENV`,
            True with `sandbox=None`.
        durability: `"fsync"` makes every write survive power loss; `"rename"` skips
            the syncs, so a write survives a killed process (old or new content,
            never a mix) but a power cut may lose it. Default: `"fsync"`.
        lock_timeout: Seconds a write waits for other writers of the same folders
            before it fails with `WriteLockTimeout`. Default: 10.

    Example:
        ```python
        from langchain_fstools import FileToolkit, LocalBackend

        tools = FileToolkit(LocalBackend("./repo")).get_tools()

        # with execute: commands in the default sandbox (workspace writable, no network)
        tools = FileToolkit(LocalBackend("./repo", execute=True)).get_tools()
        ```
    """

    kind = "local"

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        use_ripgrep: bool = True,
        search_memory_limit: int | None = MEMORY_LIMIT,
        execute: bool = False,
        sandbox: Sandbox | Literal["bwrap"] | None = DEFAULT_SANDBOX,
        env: Mapping[str, str] | None = None,
        inherit_env: InheritEnv | None = None,
        durability: Durability = "fsync",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        """Confine the backend to `root_dir`.

        Args:
            root_dir: The workspace directory.
            use_ripgrep: Search with ripgrep when `rg` is available. Default: True.
            search_memory_limit: Bytes one ripgrep run may allocate, or None.
                Default: `MEMORY_LIMIT` (1 GiB).
            execute: Let the agent run shell commands in the workspace. Default: False.
            sandbox: The OS sandbox of commands, or None (unsafe). Default: `Sandbox()`.
            env: Variables set for every command. Default: none.
            inherit_env: True, False or the names of the variables commands inherit.
                Default: `MINIMAL_ENV`, True with `sandbox=None`.
            durability: `"fsync"` (writes survive power loss) or `"rename"` (writes
                survive a killed process only, without syncs). Default: `"fsync"`.
            lock_timeout: Seconds a write waits for other writers of its folders.
                Default: 10.

        Raises:
            ValueError: `root_dir` is not an existing directory, `sandbox` is unknown
                or a non-default one is given without `execute=True`,
                or `env`/`inherit_env` are malformed or given without `execute=True`,
                or `durability` is unknown, or `lock_timeout` is not positive,
                or `search_memory_limit` is not a positive number of bytes (or None).
        """
        if durability not in DURABILITIES:
            raise ValueError(f"unknown durability {durability!r}; choose from {list(DURABILITIES)}")
        if not lock_timeout > 0:
            raise ValueError(
                f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}"
            )
        if search_memory_limit is not None and (
            isinstance(search_memory_limit, bool)
            or not isinstance(search_memory_limit, int)
            or search_memory_limit < _LEAST_SEARCH_MEMORY
        ):
            raise ValueError(
                "search_memory_limit must be a number of bytes of at least"
                f" {_LEAST_SEARCH_MEMORY} (32 MiB), or None, not {search_memory_limit!r}"
            )
        self._search_memory_limit = search_memory_limit
        self._durability: Durability = durability
        self._lock_timeout = lock_timeout
        # Not `real_path`: a graph factory may build this on an event loop, where
        # `langgraph dev` refuses `os.readlink`; `os.path.realpath` only lstats.
        root = os.path.realpath(os.fspath(root_dir))
        if not os.path.isdir(root):
            what = "is a file" if os.path.exists(root) else "does not exist"
            raise ValueError(
                f"root_dir must be an existing directory, but {os.fspath(root_dir)!r} ({root})"
                f" {what}: create it first (os.makedirs) or pass another directory"
            )
        if sandbox == "bwrap":
            sandbox = Sandbox(method="bwrap")
        if sandbox is not None and not isinstance(sandbox, Sandbox):
            raise ValueError(f"unknown sandbox {sandbox!r}; pass a Sandbox(...), 'bwrap' or None")
        if sandbox not in {None, DEFAULT_SANDBOX} and not execute:
            raise ValueError("a sandbox is for commands: pass execute=True with it")
        if (env is not None or inherit_env is not None) and not execute:
            raise ValueError("env and inherit_env are for commands: pass execute=True with them")
        if inherit_env is None:
            inherit_env = True if sandbox is None else MINIMAL_ENV
        self._env = CommandEnv.of(env, inherit_env)
        self.supports_execute = execute
        self._root = root
        self._beneath = Beneath(root)
        self._journal = Journal(root, durable=durability == "fsync")
        self._sandbox = sandbox if execute else None
        # Found on the first command (it starts bubblewrap once to check it works).
        self._confinement: Confinement | None = None
        self._sessions = Sessions()
        self._use_ripgrep = use_ripgrep
        # Looked up on first use (PATH lookups block: a graph factory may build this
        # backend on an event loop, while searches and commands run in a thread there).
        self._ripgrep: RipgrepSearch | Literal["unresolved"] | None = "unresolved"

    @property
    def sandbox(self) -> Sandbox | None:
        """The OS sandbox commands run in, or None (no commands, or unconfined)."""
        return self._sandbox

    def storage_key(self) -> Hashable:
        """The root directory: two backends on one folder share its files."""
        return ("local", self._root)

    def native_search(self) -> NativeSearch | None:
        """The ripgrep search of the root, when `rg` exists and `use_ripgrep` is set.

        The first call looks `rg` up (a blocking PATH search): the tools ask from the
        sync path or a worker thread.
        """
        if self._ripgrep == "unresolved":
            executable = find_ripgrep() if self._use_ripgrep else None
            self._ripgrep = None
            if executable is not None and available():
                spawner = Spawner(self._beneath.descriptor, executable, self._search_memory_limit)
                self._ripgrep = RipgrepSearch(
                    executable,
                    self.host_path,
                    start=functools.partial(_start_confined, spawner),
                    memory_limit=self._search_memory_limit,
                )
            elif executable is not None:
                self._ripgrep = RipgrepSearch(executable, self.host_path)
            logger.debug(
                "LocalBackend searches with %s",
                f"ripgrep ({executable})" if executable else "the Python engine",
            )
        return self._ripgrep

    def host_path(self, path: str) -> Path:
        """Return the confined host path of a virtual path, for fast paths such as rg.

        The result is for the process only: never show it to a model.

        Args:
            path: A virtual path.

        Returns:
            The real host path (symlinks resolved), guaranteed inside the root.

        Raises:
            OutsideRoot: the path, with symlinks followed, leaves the root.
            InvalidPath: `paths.normalize` refuses the path.
        """
        return Path(self._resolve(paths.normalize(path)))

    # ----- the core --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`; symlinks inside the root report their target."""
        self._settle()
        return disk_operations.stat(self._beneath, paths.normalize(path))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file, whole or `size` bytes from `start`.

        Decides from `stat` before opening, opens with `O_NOFOLLOW | O_NONBLOCK` and
        checks the open descriptor again, so devices, FIFOs and sockets are refused
        without blocking. Memory is bounded by what is asked for.

        Raises:
            OSError: `start` or `size` is negative (errno EINVAL, as `pread` says).
        """
        self._settle()
        return disk_operations.read(self._beneath, paths.normalize(path), start, size)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Atomically replace a file's content: temporary file, fsync, rename."""
        try:
            return self.write_many([Write(path, data, expected_version)])[0]
        except PartialWrite as partial:  # the rename happened, the directory sync failed
            raise partial.cause from None

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Replace several files and remove entries, as one commit, with one round of syncs.

        Every deletion's version is checked, every temporary file is written (and, with
        `durability="fsync"`, fsynced, all at once), then every expected version is
        checked, then the deletions are made (deepest first), the files renamed into
        place and each directory touched fsynced once. A conflict, or any failure before
        the first visible step (a full disk), changes nothing. Two changes or more are
        journaled (`backends.local.journal`): a process killed once every file is staged
        leaves the whole batch (the next call on the workspace finishes it), one killed
        before leaves none of it. A `receipt` is kept with the commit, in its journal,
        once it took effect (`committed`).

        Raises:
            DiskFull: the new files do not fit on the disk (nothing was changed).
            PartialWrite: a removal, a rename or a directory sync failed after others
                took effect.
        """
        self._settle()
        removals = sorted(
            (self._removal(deletion) for deletion in deletions),
            key=lambda removal: removal.path.count("/"),
            reverse=True,
        )
        entries = [_Entry(w.path, w.expected_version, data=w.data) for w in writes]
        return self._write_batch(entries, Steps(removals, receipt=receipt))

    def committed(self, receipt: str) -> bool:
        """Whether a batch given `receipt` took effect (a cut one is finished or undone first)."""
        self._settle()
        return self._journal.receipt(receipt) is not None

    def _removal(self, deletion: Deletion) -> Removal:
        """The journal's removal of `deletion`, whose entry must be there at its version."""
        virtual = paths.normalize(deletion.path)
        with paths.virtual_errors(virtual), self._beneath.place(virtual, follow=False) as place:
            info = disk_operations.existing(place)
        if stat_module.S_ISDIR(info.st_mode):
            return Removal(virtual, None)
        actual = version_of(info)
        if deletion.expected_version not in (None, actual):
            raise VersionConflict(virtual, deletion.expected_version, actual)
        return Removal(virtual, actual)

    def _settle(self) -> None:
        """Finish or undo the commits a killed process left (`Journal.recover`)."""
        self._journal.recover(self._beneath, version_of)

    def _write_batch(self, entries: Sequence[_Entry], steps: Steps | None = None) -> list[FileInfo]:
        """`write_many` of files given by their bytes, by a source file, or links.

        `steps`' removals and folders are taken first, after everything is staged. Its
        new folders are made before the files are staged, so they are staged in place
        (empty folders are all a reader may see meanwhile); they go again if staging fails.
        A new folder at or below a removed entry waits for its removal (a visible step).
        """
        steps = steps or Steps()
        virtuals = [e.path if e.canonical else paths.normalize(e.path) for e in entries]
        removed = [r.path for r in steps.removals]
        made = [
            Folder(f.path, added=True, mode=None)
            for f in steps.folders
            if f.added and not any(paths.is_within(f.path, gone) for gone in removed)
        ]  # a folder where the set removes an entry (`a.txt` becoming `a.txt/`) is made later
        intent = None
        if len(entries) > 1 or steps.removals or steps.folders or steps.receipt:
            targets = [Target(v, e.follow) for v, e in zip(virtuals, entries, strict=True)]
            intent = self._journal.begin(targets, [f.path for f in made])
        staged: list[_Staged] = []
        directories: dict[str, int] = {}
        try:
            self._stage_all(entries, virtuals, made, intent, staged=staged, directories=directories)
            return self._write_staged(entries, steps, intent, staged, directories)
        finally:
            for descriptor in directories.values():
                os.close(descriptor)

    def _stage_all(
        self,
        entries: Sequence[_Entry],
        virtuals: Sequence[str],
        made: Sequence[Folder],
        intent: Intent | None,
        *,
        staged: list[_Staged],
        directories: dict[str, int],
    ) -> None:
        """Make the `made` folders and stage every entry onto `staged`.

        On failure none is left, nor the folders, nor `intent`'s record.
        """
        try:
            for folder in made:
                self._commit_directory(folder)
            for start in range(0, len(entries), _OPEN_TEMPS):
                chunk = range(start, min(start + _OPEN_TEMPS, len(entries)))
                self._stage_and_sync(
                    entries, virtuals, chunk, intent, staged=staged, directories=directories
                )
        except BaseException as exc:
            _discard(staged)
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    self._remove_entry(Removal(folder.path, None))
            if intent is not None:
                self._journal.end(intent)
            if isinstance(exc, OSError) and exc.errno in {errno.ENOSPC, errno.EDQUOT}:
                free = os.statvfs(self._root)
                needed = sum(_new_bytes(entry) for entry in entries)
                path = exc.filename if isinstance(exc.filename, str) else paths.ROOT
                raise DiskFull(path, needed, free.f_bavail * free.f_frsize) from None
            raise

    def _write_staged(
        self,
        entries: Sequence[_Entry],
        steps: Steps,
        intent: Intent | None,
        staged: Sequence[_Staged],
        directories: dict[str, int],
    ) -> list[FileInfo]:
        """Journal the staged batch, then take its visible steps (`_apply`)."""
        if intent is not None:
            placements = [
                Placement(e.virtual, paths.join(e.folder, e.temp), e.follow) for e in staged
            ]
            self._journal.commit(intent, replace(steps, placements=placements))
        replaced: list[int] = []
        placed: list[tuple[str, int, str]] = []
        removed: list[str] = []
        try:
            infos = self._apply(
                steps, staged, directories, replaced=replaced, placed=placed, removed=removed
            )
        except Exception as exc:
            _discard(staged[len(placed) :])
            if intent is not None:
                self._journal.end(intent)
            if not placed and not removed:
                raise
            written = (*removed, *(e.path for e in entries[: len(placed)]))
            raise PartialWrite(written, exc) from exc
        except BaseException:
            if intent is not None:
                self._journal.release(intent)  # the next call finishes the batch
            raise
        finally:
            _release_later(replaced)
        if intent is not None:
            self._journal.finish(intent)
        return infos

    def _apply(
        self,
        steps: Steps,
        staged: Sequence[_Staged],
        directories: dict[str, int],
        *,
        replaced: list[int],
        placed: list[tuple[str, int, str]],
        removed: list[str],
    ) -> list[FileInfo]:
        """Take `steps` (the removals onto `removed`), rename the staged files onto `placed`."""
        for removal in steps.removals:
            self._remove_entry(removal)
            removed.append(removal.path)
        for folder in steps.folders:
            self._commit_directory(folder)
        with directories_locked(
            {entry.directory: entry.virtual for entry in staged}, self._lock_timeout
        ):
            for entry in staged:
                with paths.virtual_errors(entry.virtual):
                    disk_operations.check_version(
                        entry.virtual, entry.directory, entry.name, entry.expected_version
                    )
            for entry in staged:
                with paths.virtual_errors(entry.virtual):
                    placed.append(self._rename(entry, directories, replaced))
        if self._durability == "fsync":
            synced = {d: v for v, d, _ in placed} | {e.directory: e.virtual for e in staged}
            _sync_all([(v, d) for d, v in synced.items()], disk_operations.fsync_directory)
        return [disk_operations.file_info(v, _stat_virtual(v, d, name)) for v, d, name in placed]

    def _rename(
        self, entry: _Staged, directories: dict[str, int], replaced: list[int]
    ) -> tuple[str, int, str]:
        """Rename `entry`'s temporary onto its target; the target's path, directory and name.

        A folder missing when the temporary was staged is made now (once: the batch
        holds it in `directories`).
        """
        directory, name = entry.directory, entry.name
        if entry.missing:
            name = entry.virtual.rpartition("/")[2]
            held = directories.get(paths.parent(entry.virtual))
            if held is None:
                place = self._beneath.place(entry.virtual, follow=entry.follow, create=True)
                held = _shared_directory(place, paths.parent(place.virtual), directories)
                name = place.name
            directory = held
        elif entry.replaces:
            _hold(entry, replaced)
        os.replace(entry.temp, name, src_dir_fd=entry.directory, dst_dir_fd=directory)
        return entry.virtual, directory, name

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`, in a worker thread."""
        return await asyncio.to_thread(lambda: self.write_many(writes, deletions, receipt=receipt))

    def _stage_and_sync(
        self,
        entries: Sequence[_Entry],
        virtuals: Sequence[str],
        numbers: range,
        intent: Intent | None,
        *,
        staged: list[_Staged],
        directories: dict[str, int],
    ) -> None:
        """Stage entries `numbers` onto `staged`, fsync them together, close their descriptors."""
        chunk: list[_Staged] = []
        try:
            for number in numbers:
                tag = intent.tag(number) if intent is not None else None
                chunk.append(self._stage(entries[number], virtuals[number], tag, directories))
            if self._durability == "fsync":
                files = [(e.virtual, e.descriptor) for e in chunk if e.descriptor >= 0]
                _sync_all(files, _fsync_descriptor)
                if any(entries[number].move for number in numbers):  # moved in unsynced
                    _sync_filesystem(chunk[0].directory)
        finally:
            staged.extend(chunk)
            for done in chunk:
                if done.descriptor >= 0:
                    os.close(done.descriptor)

    def _stage(
        self, entry: _Entry, virtual: str, tag: str | None, directories: dict[str, int]
    ) -> _Staged:
        """Make a temporary file (or link) for the target; a file's descriptor stays open.

        The temporary is made in the target's directory, or in its deepest existing
        ancestor where that is missing (see `journal.staging_place`): staging makes no
        folder. The directory is held in `directories` (one descriptor per directory
        of the batch), so the rename starts where the temporary file was made. A
        replaced file's owner and mode go to the new one, unless the entry has a mode.
        """
        if virtual == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, virtual)
        with paths.virtual_errors(virtual):
            place = staging_place(self._beneath, virtual, follow=entry.follow)
            folder = place.virtual[: len(place.virtual) - len(place.name)].rstrip("/") or "/"
            directory = _shared_directory(place, folder, directories)
            current = place.info
            name = place.name.rpartition("/")[2]
            descriptor = -1
            if entry.link is not None or entry.move:
                temp = _create_temp_entry(directory, name, tag, entry, current)
            else:
                if current is not None and entry.follow:
                    require_regular(virtual, current.st_mode)
                descriptor, temp = disk_operations.create_temp(
                    directory, name, tag, private=current is not None
                )
                try:
                    if current is not None and stat_module.S_ISREG(current.st_mode):
                        disk_operations.copy_owner_and_mode(descriptor, current)
                    entry.fill(descriptor)
                    if entry.mode is not None:
                        os.fchmod(descriptor, entry.mode)
                    disk_operations.stamp(descriptor, current)
                except BaseException:
                    os.close(descriptor)
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=directory)
                    raise
        return _Staged(
            virtual,
            place.name,
            directory,
            temp,
            descriptor,
            entry.expected,
            replaces=current is not None,
            folder=folder,
            follow=entry.follow,
        )

    def delete(self, path: str) -> None:
        """Remove a file, a symlink (never its target), or an empty directory.

        Raises:
            InvalidPath: `path` is the root.
        """
        disk_operations.delete(self._beneath, paths.normalize(path))

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine.

        Raises:
            FileExistsError: `path` or one of its parents is a file.
        """
        disk_operations.mkdir(self._beneath, paths.normalize(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name.

        A symlink is listed as what it points to, with `link` set; one that leads
        outside the root, or nowhere, is listed as a special entry (visible, never
        opened).
        """
        virtual = paths.normalize(path)
        self._settle()
        descriptor = disk_operations.open_directory(self._beneath, virtual)
        try:
            return list(disk_operations.entries(self._beneath, virtual, descriptor))
        finally:
            os.close(descriptor)

    # ----- optional fast paths ---------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The virtual path of what `path` reaches: symlinks followed inside the root."""
        return disk_operations.resolve(self._beneath, paths.normalize(path))

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename a file or a directory tree as POSIX `rename` does, creating parents.

        A file replaces a file, a directory replaces an empty directory, and a symlink
        is moved as a link (on either side, the link itself is renamed or replaced).
        Errors are the kernel's: `EINVAL` for a move into itself, `ENOTEMPTY` onto a
        non-empty directory or an ancestor, `EISDIR`/`ENOTDIR` for kind mismatches.
        """
        origin, target = paths.normalize(source), paths.normalize(destination)
        durable = self._durability == "fsync"
        return disk_operations.move(self._beneath, origin, target, durable=durable)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, sorted; symlinked directories not entered.

        Walks to `path` once, then opens each directory relative to its parent, never
        through a link; one replaced or removed meanwhile is skipped.
        """
        virtual = paths.normalize(path)
        self._settle()
        descriptor = disk_operations.open_directory(self._beneath, virtual)
        try:
            yield from disk_operations.walk(self._beneath, virtual, descriptor)
        finally:
            os.close(descriptor)

    # ----- capability: running commands --------------------------------------------------

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run `command` with bash in the root, bounded by `timeout` and `output_limit`.

        On a copy-on-write view, what the command changed is committed when it ends,
        but for a change no command may make by itself (`judge_changes`), which keeps
        the whole set out (`execute_changes` leaves all of it to the caller).

        Raises:
            ExecutionUnsupported: the backend was made without `execute=True`.
            SandboxUnavailable: no OS sandbox can start here (the reason says why).
            ChangesNotCommitted: the command changed what git or this program runs
                later, or credentials; nothing it changed was committed.
            OSError: the shell (or bwrap) could not be started; names `/` only.
        """
        result = self.execute_changes(command, timeout=timeout, output_limit=output_limit)
        if result.changes is not None:
            try:
                refused = self.judge_changes(result.changes).refused
                if refused is not None:
                    raise ChangesNotCommitted(*refused, result.output)
                self.commit(result.changes)
            finally:
                result.changes.discard()
        return replace(result, changes=None)

    def execute_changes(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None = None,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Run `command` as `execute` does, on a copy-on-write view where the sandbox has one.

        What the command changed is then returned as `changes`, not yet committed:
        `commit` applies it, `ChangeSet.discard` drops it. Without a view (Landlock
        alone, `workspace="direct"`, `sandbox=None`) the command wrote in place and
        `changes` is None. A command still running after `yield_after` seconds moves
        to the background (`process_id`; see `processes`). `layer` (a branch's
        changes) is laid over the workspace under the command's view; the change set
        is then what the command changed over the layer.

        Raises:
            ExecutionUnsupported: no commands here, or a layer without a view.
        """
        if not self.supports_execute:
            raise ExecutionUnsupported(self.kind)
        confinement = self._confinement_prepared()
        session = self._sessions.current(confinement.session)
        overlay = self._view(session)
        if layer is not None and overlay is None:
            raise ExecutionUnsupported("branch")  # commands would write in place
        try:
            layered = None
            if layer is not None and overlay is not None:
                layered = os.path.join(overlay.folder, "layer")
                os.mkdir(layered, 0o700)
                layer.build(layered)
            overlay, args = self._masked_view(session, overlay, layered)
            result, background = self._run(
                session,
                command,
                overlay,
                layered,
                args,
                timeout=timeout,
                output_limit=output_limit,
                yield_after=yield_after,
            )
            if background is not None:
                background.view = overlay
                return result
            if overlay is None:
                return result
            if result.limit is not None and result.limit.name == "changed_bytes":
                remove_folder(overlay.folder)  # nothing of it is kept
                return result
            lower: LowerTree = _Lower(self._beneath)
            if layer is not None:
                lower = layer.lower(lower)
            changes = overlay.read_changes(lower, self._host_code)
            return replace(result, changes=changes)
        except BaseException:
            if overlay is not None:
                remove_folder(overlay.folder)
            raise

    def processes(self) -> LocalProcesses | None:
        """The background processes of the current sandbox session (None without execute)."""
        if not self.supports_execute:
            return None
        confinement = self._confinement_prepared()
        session = self._sessions.current(confinement.session)
        return LocalProcesses(
            session,
            start_view=lambda: self._view(session),
            command_args=lambda: self._command_args(session),
            workspace=self._root,
            lower=_Lower(self._beneath),
            host_code=self._host_code,
            run=self.execute_changes,
        )

    def _view(self, session: Session) -> Overlay | None:
        """A fresh copy-on-write view in `session`'s folder, or None (commands write in place)."""
        assert self._confinement is not None  # noqa: S101 - prepared by the caller
        return Overlay.create(session.plan.folder) if self._confinement.copy_on_write else None

    def _command_args(self, session: Session, layered: str | None = None) -> dict[str, object]:
        """What a command of `session` gets: the shell, environment, masks and read-only paths.

        Found at its start: the sandbox's masks (`Confinement.command_masks`) and what
        the permission rules deny reading in the workspace now, and in the `layered`
        folder laid over it (`_unreadable`).
        """
        assert self._confinement is not None  # noqa: S101 - prepared by the caller
        masks, read_only = self._confinement.command_masks(session.plan)
        masks += self._unreadable(self._confinement, layered)
        env = self._env.build(os.environ, secrets=self._sandbox is None)
        return {"interpreter": find_shell(), "env": env, "masks": masks, "read_only": read_only}

    def _masked_view(
        self, session: Session, overlay: Overlay | None, layered: str | None
    ) -> tuple[Overlay | None, Mapping[str, object]]:
        """A command's arguments (`_command_args`), and its view told what they mask."""
        args = self._command_args(session, layered)
        if overlay is not None:
            overlay = overlay.masking(session.plan.masked, cast("list[str]", args["masks"]))
        return overlay, args

    def _unreadable(self, confinement: Confinement, layered: str | None) -> list[str]:
        """Real paths of the entries this call's commands must not see, now.

        The workspace's, and those of a layer laid over it (`layered`, a branch's
        files), each where the command's view shows it.

        Raises:
            CommandRefused: there is one, and no mount namespace to hide it in (Landlock
                alone, or `sandbox=None`): the command would read it.
        """
        unreadable = commands_unreadable.get()
        if unreadable is None:
            return []
        found = unreadable_paths(self._root, unreadable)
        if layered is not None:
            found += unreadable_paths(layered, unreadable)
        if found and confinement.bwrap is None:
            raise CommandRefused(
                "unreadable",
                f"{unreadable.why(found[0])} keeps {found[0]} from reads, and commands can be"
                " kept from it only with bubblewrap, which this machine cannot run",
            )
        real = [os.path.realpath(os.path.join(self._root, path.lstrip("/"))) for path in found]
        # a denied link to the workspace or a folder above it hides nothing it holds
        return [path for path in dict.fromkeys(real) if not is_inside(path, self._root)]

    def close(self) -> None:
        """End the sandbox sessions of this backend's commands (and every process in them)."""
        self._sessions.close()

    def command_root(self) -> str | None:
        """The workspace's real host path, where commands see it (None without execute)."""
        return self._root if self.supports_execute else None

    def command_network(self) -> bool | tuple[str, ...] | None:
        """None without execute; True unconfined (`sandbox=None`); else the sandbox's."""
        if not self.supports_execute:
            return None
        if self._sandbox is None:
            return True
        domains = self._sandbox.domains
        return domains.names if domains is not None else bool(self._sandbox.network)

    def contains_commands(self) -> bool:
        """Whether commands run on a copy-on-write view with no network.

        True with bubblewrap working here, `workspace="copy-on-write"` and no network;
        probes the sandbox the first time.
        """
        if not self.supports_execute or self._sandbox is None or self._sandbox.network:
            return False
        try:
            confinement = self._confinement_prepared()
        except SandboxUnavailable:
            return False
        return confinement.copy_on_write

    def hides_from_commands(self) -> bool:
        """Whether commands get a mount namespace to mask paths in (bubblewrap).

        Not with Landlock alone or `sandbox=None`; probes the sandbox the first time.
        """
        if not self.supports_execute or self._sandbox is None:
            return False
        try:
            confinement = self._confinement_prepared()
        except SandboxUnavailable:
            return False
        return confinement.bwrap is not None

    def _confinement_prepared(self) -> Confinement:
        if self._confinement is None:
            self._confinement = Confinement.prepare(self._sandbox, self._root)
        return self._confinement

    @functools.cached_property
    def _host_code(self) -> tuple[str, ...]:
        """Virtual paths of code this process runs later, found once (`shell.sandbox.protected`)."""
        confinement = self._confinement
        executables = [find_ripgrep(), confinement.bwrap if confinement is not None else None]
        return tuple(host_code_paths(self._root, executables))

    def _run(
        self,
        session: Session,
        command: str,
        overlay: Overlay | None,
        layered: str | None,
        args: Mapping[str, object],
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None,
    ) -> tuple[ExecutionResult, Background | None]:
        view = None if overlay is None else [self._root, overlay.upper, overlay.work]
        if view is not None and layered is not None:
            view.append(layered)
        reporter = reporter_if_listening()
        try:
            before = session.state.cwd
            result, after, background = session.run(
                command,
                timeout=timeout,
                output_limit=output_limit,
                view=view,
                on_output=reporter.add if reporter is not None else None,
                yield_after=yield_after,
                **args,  # type: ignore[arg-type]
            )
        except SessionEnded as exc:  # the sandbox could not start, or ended: say why
            raise SandboxUnavailable(str(exc.strerror or exc)) from None
        except OSError as exc:
            code = exc.errno if exc.errno is not None else errno.EIO
            raise type(exc)(code, str(exc.strerror or exc), paths.ROOT) from None
        finally:
            if reporter is not None:
                reporter.flush()
        moved = replace(result, directory=after.cwd if after.cwd != before else None)
        return moved, background

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Apply a command's change set to the workspace, or nothing of it.

        Every path must still be as it was when the set was read (its `before`
        version; absent for an addition): that is checked for all of them first, and
        again for each file and link as it is renamed into place, under the folder
        locks every writer takes. Every file and link is staged first, so a set that
        does not fit on the disk changes nothing; then, journaled (see
        `backends.local.journal`), deletions (deepest first), new directories and mode
        changes, and the files and links renamed into place (see `write_many`).

        Returns:
            What each added or modified file and link now is.

        Raises:
            VersionConflict: a path changed since (nothing is committed when found
                before the first change; a writer that slips in later stops the rest).
            DiskFull: the set does not fit on the disk (nothing is committed).
        """
        self._settle()
        deleted = {c.path for c in changes.changes if c.kind is ChangeKind.DELETED}
        for change in changes.changes:
            if not (change.kind is ChangeKind.ADDED and change.path in deleted):
                self._check_before(change)  # an entry replacing a deleted one: checked by it
        removals = [
            Removal(c.path, None if c.entry == "directory" else c.before)
            for c in sorted(
                (c for c in changes.changes if c.kind is ChangeKind.DELETED),
                key=lambda c: c.path.count("/"),
                reverse=True,
            )
        ]
        folders: list[Folder] = []
        batch: list[_Entry] = []
        move = os.stat(changes.source).st_dev == os.stat(self._root).st_dev
        for change in changes.changes:
            if change.kind is ChangeKind.DELETED:
                continue
            if change.entry == "directory":
                folders.append(Folder(change.path, change.kind is ChangeKind.ADDED, change.mode))
                continue
            expected = change.before if change.before is not None else ABSENT
            committed = _Entry(change.path, expected, follow=False, canonical=True)
            if change.entry == "link":
                batch.append(replace(committed, link=change.target))
                continue
            source = upper_path(changes, change.path)
            batch.append(replace(committed, source=source, move=move, mode=change.mode))
        return self._write_batch(batch, Steps(removals, folders))

    def _check_before(self, change: Change) -> None:
        """`VersionConflict` unless `change.path` is still what the change set found."""
        if change.entry == "directory" and change.kind is not ChangeKind.ADDED:
            return  # a directory's version changes with its entries: its files are checked
        with paths.virtual_errors(change.path):
            try:
                with self._beneath.place(change.path, follow=False) as place:
                    current = place.info
            except (FileNotFoundError, NotADirectoryError):
                current = None
        actual = version_of(current) if current is not None else None
        if actual != change.before:
            raise VersionConflict(change.path, change.before or ABSENT, actual)

    def _remove_entry(self, removal: Removal) -> None:
        """Remove an entry (gone already: nothing to do); a file only at its version."""
        with (
            paths.virtual_errors(removal.path),
            self._beneath.place(removal.path, follow=False) as place,
        ):
            if place.info is None:
                return
            if stat_module.S_ISDIR(place.info.st_mode):
                os.rmdir(place.name, dir_fd=place.directory)
                return
            actual = version_of(place.info)
            if removal.version is not None and actual != removal.version:
                raise VersionConflict(removal.path, removal.version, actual)
            os.unlink(place.name, dir_fd=place.directory)

    def _commit_directory(self, folder: Folder) -> None:
        """Create an added directory, or give a directory its new mode."""
        with (
            paths.virtual_errors(folder.path),
            self._beneath.place(folder.path, follow=False, create=True) as place,
        ):
            if folder.added and place.info is None:
                os.mkdir(place.name, 0o700, dir_fd=place.directory)
            if folder.mode is not None:
                os.chmod(place.name, folder.mode, dir_fd=place.directory, follow_symlinks=False)

    # ----- helpers -----------------------------------------------------------------------

    def _resolve(self, virtual: str) -> str:
        """The real host path of a canonical virtual path, for `host_path` only.

        `OutsideRoot` if it leaves the root. File operations never use it: they walk
        beneath the root's descriptor (`backends.beneath`).
        """
        host = real_path(os.path.join(self._root, virtual.lstrip("/")))
        if not is_inside(self._root, host):
            raise OutsideRoot(virtual)
        return host


@functools.cache
def find_shell() -> str:
    """The `bash` on PATH, else `/bin/sh`; looked up once, when the first command runs."""
    return shutil.which("bash") or "/bin/sh"


@dataclass(frozen=True)
class _Lower:
    """The workspace as a change set is compared with it: walked beneath the root."""

    beneath: Beneath

    def lstat(self, virtual: str) -> os.stat_result | None:
        try:
            with self.beneath.place(virtual, follow=False) as place:
                return place.info
        except (OSError, OutsideRoot):
            return None

    def names(self, virtual: str) -> list[str]:
        with self.beneath.place(virtual, follow=False) as place:
            descriptor = os.open(place.name, LISTING, dir_fd=place.directory)
        try:
            return os.listdir(descriptor)
        finally:
            os.close(descriptor)

    def readlink(self, virtual: str) -> str:
        with self.beneath.place(virtual, follow=False) as place:
            return os.readlink(place.name, dir_fd=place.directory)

    def same_bytes(self, virtual: str, upper: str) -> bool:
        with self.beneath.place(virtual, follow=False) as place:
            lower = os.open(place.name, disk_operations.READ_FLAGS, dir_fd=place.directory)
        try:
            new = open_upper(upper)
            try:
                return files_equal(lower, new)
            finally:
                os.close(new)
        finally:
            os.close(lower)

    def version(self, result: os.stat_result) -> str:
        return version_of(result)


def _start_confined(spawner: Spawner, command: list[str], cwd: Path, stdin: bool) -> SpawnedProcess:  # noqa: FBT001 - the `RipgrepSearch.start` signature
    """Start rg through `spawner`, in the folder `cwd` (opened here, read beneath the root)."""
    directory = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return spawner.spawn(command, cwd=directory, stdin=stdin)
    finally:
        os.close(directory)


def _shared_directory(place: Place, key: str, directories: dict[str, int]) -> int:
    """The batch's descriptor of `place`'s directory (whose virtual path is `key`).

    The first one opened is kept.
    """
    held = directories.get(key)
    if held is None:
        if place.owned:
            place.owned = False  # the batch closes it
            held = directories[key] = place.directory
        else:
            held = place.directory  # the root's own descriptor, never closed
    else:
        place.close()
    return held


def _create_temp_entry(
    directory: int, name: str, tag: str | None, entry: _Entry, previous: os.stat_result | None
) -> str:
    """Make `entry`'s link, or move its private source file in, under a temporary name.

    A file is moved by a hard link and the removal of its old name, so an existing
    name is never replaced; it gets a modification time of its own (as `_stamp`
    gives). The caller syncs it.
    """
    link, source = entry.link, entry.source
    if link is not None:
        return disk_operations.exclusively(
            name, tag, lambda temp: os.symlink(link, temp, dir_fd=directory)
        )[1]
    assert source is not None  # noqa: S101 - a move has a source
    _, temp = disk_operations.exclusively(
        name, tag, lambda temp: os.link(source, temp, dst_dir_fd=directory, follow_symlinks=False)
    )
    os.unlink(source)
    now = later_than(previous)
    os.utime(temp, ns=(now, now), dir_fd=directory, follow_symlinks=False)
    return temp


def _sync_filesystem(directory: int) -> None:
    """Flush the whole filesystem holding `directory` (`syncfs`), else every filesystem."""
    descriptor = os.open(".", LISTING, dir_fd=directory)
    try:
        if _libc().syncfs(descriptor) != 0:
            os.sync()
    finally:
        os.close(descriptor)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One target of a batch: a file's bytes, a file copied from `source`, or a link."""

    path: str
    expected: str | None
    data: bytes = b""
    source: str | None = None
    """A private host file whose bytes the target gets (instead of `data`)."""
    move: bool = False
    """Rename `source` into place (on the same filesystem) rather than copy it."""
    mode: int | None = None
    """The permission bits the target gets (default: a replaced file's, or the umask's)."""
    link: str | None = None
    """Make the target a symbolic link to this (the file fields are unused)."""
    follow: bool = True
    """Write through a link at the target (False: replace the link itself)."""
    canonical: bool = False
    """The path is canonical already: a change set's, which may hold any bytes a name can."""

    def fill(self, descriptor: int) -> None:
        """Write the content into the new file open at `descriptor`."""
        if self.source is None:
            disk_operations.write_all(descriptor, self.data)
            return
        source = os.open(self.source, disk_operations.READ_FLAGS)
        try:
            offset = 0
            while copied := os.sendfile(descriptor, source, offset, _COPY_CHUNK):
                offset += copied
        finally:
            os.close(source)


@dataclass(frozen=True, slots=True)
class _Staged:
    """A write whose temporary file is written, waiting for its rename."""

    virtual: str
    name: str
    """The target's name in `directory`."""
    directory: int
    """Descriptor of the target's directory (held by the batch)."""
    temp: str
    """The temporary file's name in `directory`."""
    descriptor: int
    expected_version: str | None
    replaces: bool
    """Whether a file is already at the target (the rename replaces it)."""
    folder: str
    """The virtual path of `directory`."""
    follow: bool
    """Whether a link at the target is written through (else replaced)."""

    @property
    def missing(self) -> bool:
        """Whether the target's folder did not exist when staged (`name` is a path from there)."""
        return "/" in self.name


def _new_bytes(entry: _Entry) -> int:
    """Bytes of new content that staging `entry` writes (a move and a link write none)."""
    if entry.link is not None or entry.move:
        return 0
    if entry.source is None:
        return len(entry.data)
    with contextlib.suppress(OSError):
        return os.stat(entry.source).st_size
    return 0


def _discard(staged: Sequence[_Staged]) -> None:
    """Remove the temporary files of writes that will not be renamed."""
    for entry in staged:
        with contextlib.suppress(OSError):
            os.unlink(entry.temp, dir_fd=entry.directory)


def _stat_virtual(virtual: str, directory: int, name: str) -> os.stat_result:
    with paths.virtual_errors(virtual):
        return os.stat(name, dir_fd=directory, follow_symlinks=False)


def _sync_all(targets: Sequence[tuple[str, _T]], sync: Callable[[_T], None]) -> None:
    """Run `sync` on every target, up to `_SYNC_THREADS` at once.

    Concurrent fsyncs let the filesystem commit them in one journal transaction, where
    a loop would wait for one commit per file. The first failure is raised, naming the
    virtual path paired with its target.
    """
    if len(targets) == 1:
        virtual, target = targets[0]
        with paths.virtual_errors(virtual):
            sync(target)
        return
    if not targets:
        return
    pool = _io_threads(os.getpid())
    futures = [(virtual, pool.submit(sync, target)) for virtual, target in targets]
    for virtual, future in futures:
        with paths.virtual_errors(virtual):
            future.result()


@functools.cache
def _io_threads(process: int) -> ThreadPoolExecutor:
    """The threads that fsync side by side and release replaced files, started once per process.

    Starting a thread costs up to a millisecond; keyed by process id, so a forked child
    (which inherits the pool but not its threads) starts its own.
    """
    del process
    return ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="fstools-io")


def _hold(entry: _Staged, held: list[int]) -> None:
    """Open the file about to be replaced, onto `held`, so the rename does not free it.

    Renaming over a file frees its blocks inside the `rename` call when nothing holds
    the file open, which costs more than the rename (on a filesystem mounted with
    `discard`, several times more). Held open, the old inode is freed when
    `_release_later` closes it, off the caller's path. Best effort: a file that cannot
    be opened is freed by the rename as before.
    """
    if len(held) >= _OPEN_TEMPS:  # never hold many descriptors the process may need
        _release_later(held)
    with contextlib.suppress(OSError):
        held.append(os.open(entry.name, disk_operations.READ_FLAGS, dir_fd=entry.directory))


def _release_later(descriptors: list[int]) -> None:
    """Close `descriptors` on the background threads (freeing the files they hold); empty it."""
    if descriptors:
        _io_threads(os.getpid()).submit(_close_all, tuple(descriptors))
        descriptors.clear()


def _close_all(descriptors: Sequence[int]) -> None:
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptor)


def _fsync_descriptor(descriptor: int) -> None:
    os.fsync(descriptor)


__all__ = ["DURABILITIES", "Durability", "LocalBackend"]
