"""Atomic multi-file writes on local disk: staged, journaled, renamed, synced.

`LocalBackend.write_many` and the commit of a command's change set both end here. A
batch stages every file first (a temporary file beside its target, written and, with
durability, fsynced side by side), so a batch that does not fit on the disk changes
nothing; a batch of two changes or more is journaled (`backends.journal`) before
its first visible step, so a process killed in its middle leaves an intent record that
the next call on the workspace finishes or undoes (`settle`). Versions are checked and
files renamed under the folder locks every writer of this package takes
(`backends.write_locks`); each directory touched is then fsynced once. The steps of a
single file (temporary names, owner and mode, the modification time, the version check)
are `backends.disk_operations`', shared with a sandbox's helper.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat as stat_module
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.beneath import LISTING
from langchain_fstools.backends.file_versions import later_than, version_of
from langchain_fstools.backends.journal import (
    Folder,
    Intent,
    Journal,
    Placement,
    Removal,
    Steps,
    Target,
    give_mode,
    make_folder,
    modes_last,
    staging_place,
)
from langchain_fstools.backends.modes import os_error, require_regular
from langchain_fstools.backends.write_locks import directories_locked
from langchain_fstools.core import paths
from langchain_fstools.core.sparse_files import copy_sparse
from langchain_fstools.errors import DiskFull, PartialWrite, VersionConflict

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.backends.beneath import Beneath, Place
    from langchain_fstools.core.results import Deletion, FileInfo, Write

_SYNC_THREADS = 16
"""Most fsyncs a batch write runs at once (the filesystem commits them together)."""

_OPEN_TEMPS = 256
"""Most temporary files, and most replaced files, a batch write holds open at once."""


_T = TypeVar("_T")


class AtomicWrites:
    """Batches of writes and removals beneath one root, all or nothing (module docstring).

    Args:
        beneath: The root, held open.
        durable: Fsync files and directories (survive power loss); False skips the
            syncs (survive a killed process only).
        lock_timeout: Seconds a batch waits for other writers of its folders.
    """

    def __init__(self, beneath: Beneath, *, durable: bool, lock_timeout: float) -> None:
        """Open the journal of the root (read on the first `settle`)."""
        self._beneath = beneath
        self._root = beneath.root
        self._journal = Journal(beneath.root, durable=durable)
        self._durable = durable
        self._lock_timeout = lock_timeout

    def write_many(
        self, writes: Sequence[Write], deletions: Sequence[Deletion], receipt: str | None
    ) -> list[FileInfo]:
        """`LocalBackend.write_many`: files by their bytes, and removals, as one batch."""
        self.settle()
        removals = sorted(
            (self._removal(deletion) for deletion in deletions),
            key=lambda removal: removal.path.count("/"),
            reverse=True,
        )
        entries = [BatchEntry(w.path, w.expected_version, data=w.data) for w in writes]
        return self.write(entries, Steps(removals, receipt=receipt))

    def committed(self, receipt: str) -> bool:
        """Whether a batch given `receipt` took effect (a cut one is finished or undone first)."""
        self.settle()
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

    def settle(self) -> None:
        """Finish or undo the commits a killed process left (`Journal.recover`)."""
        self._journal.recover(self._beneath, version_of)

    def write(self, entries: Sequence[BatchEntry], steps: Steps | None = None) -> list[FileInfo]:
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
            return self._write_staged(entries, steps, intent, staged, directories, made=made)
        finally:
            for descriptor in directories.values():
                os.close(descriptor)

    def _stage_all(
        self,
        entries: Sequence[BatchEntry],
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
                self._make_folder(folder.path)
            for start in range(0, len(entries), _OPEN_TEMPS):
                chunk = range(start, min(start + _OPEN_TEMPS, len(entries)))
                self._stage_and_sync(
                    entries, virtuals, chunk, intent, staged=staged, directories=directories
                )
        except BaseException as exc:
            _discard(staged)
            self._remove_made(made)
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
        entries: Sequence[BatchEntry],
        steps: Steps,
        intent: Intent | None,
        staged: Sequence[_Staged],
        directories: dict[str, int],
        *,
        made: Sequence[Folder],
    ) -> list[FileInfo]:
        """Journal the staged batch, then take its visible steps (`_apply`).

        A failure before any visible step (a version found changed under the locks)
        leaves nothing: the `made` folders go again.
        """
        if intent is not None:
            placements = [
                Placement(e.virtual, paths.join(e.folder, e.temp), e.follow) for e in staged
            ]
            self._journal.commit(intent, replace(steps, placements=placements))
        replaced: list[int] = []
        placed: list[tuple[str, int, os.stat_result]] = []
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
                self._remove_made(made)
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
        placed: list[tuple[str, int, os.stat_result]],
        removed: list[str],
    ) -> list[FileInfo]:
        """Take `steps` (the removals onto `removed`), rename the staged files onto `placed`."""
        for removal in steps.removals:
            self._remove_entry(removal)
            removed.append(removal.path)
        for folder in steps.folders:
            if folder.added:
                self._make_folder(folder.path)
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
        if self._durable:
            synced = {d: v for v, d, _ in placed} | {e.directory: e.virtual for e in staged}
            _sync_all([(v, d) for d, v in synced.items()], disk_operations.fsync_directory)
        for path, mode in modes_last(steps.folders):
            with paths.virtual_errors(path):
                give_mode(self._beneath, path, mode)
        return [disk_operations.file_info(v, status) for v, _, status in placed]

    def _rename(
        self, entry: _Staged, directories: dict[str, int], replaced: list[int]
    ) -> tuple[str, int, os.stat_result]:
        """Rename `entry`'s temporary onto its target; the target's path, directory and status.

        A folder missing when the temporary was staged is made now (once: the batch
        holds it in `directories`). The status is taken under the batch's folder locks,
        so it is the file this write made, never one another writer renamed over it since
        (whose version a later edit would take for this content's).
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
        return entry.virtual, directory, _stat_virtual(entry.virtual, directory, name)

    def _stage_and_sync(
        self,
        entries: Sequence[BatchEntry],
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
            if self._durable:
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
        self, entry: BatchEntry, virtual: str, tag: str | None, directories: dict[str, int]
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

    def _remove_made(self, made: Sequence[Folder]) -> None:
        """Remove the new folders a batch made, deepest first, while they are empty."""
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                self._remove_entry(Removal(folder.path, None))

    def _make_folder(self, path: str) -> None:
        """Make an added folder (its mode comes after the files: `modes_last`)."""
        with paths.virtual_errors(path):
            make_folder(self._beneath, path)


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
    directory: int, name: str, tag: str | None, entry: BatchEntry, previous: os.stat_result | None
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
class BatchEntry:
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
            copy_sparse(source, descriptor)  # a sparse file stays sparse
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


def _new_bytes(entry: BatchEntry) -> int:
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


__all__ = ["AtomicWrites", "BatchEntry"]
