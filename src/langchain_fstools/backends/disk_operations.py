"""File operations on a disk, walked beneath a root directory: one body, two callers.

`LocalBackend` runs them on this machine's disk, and a sandbox's helper
(`backends.sandbox.helper`, which ships this module) on the sandbox's: stat, read,
list, walk, resolve, delete, mkdir, move, and the steps every atomic write takes
(a temporary file created exclusively beside its target, given the replaced file's
owner and mode and a precise modification time, then checked against its expected
version). How a batch of writes is made all-or-nothing differs by caller (a journal
on local disk, `backends.local.atomic_writes`; kept hard links in the helper), so the
batches stay with them.

Every path is a canonical virtual path, walked beneath the root's directory descriptor
(`backends.beneath`), so a symlink that leads outside the root is `OutsideRoot`; every
error is a built-in `OSError` subclass naming the virtual path, never a host path.

Standard library only, and no `typing` at run time: the sandbox's helper imports this
on every run and pays for what it loads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
from dataclasses import replace

from langchain_fstools.backends.beneath import LISTING
from langchain_fstools.backends.file_versions import later_than, version_of
from langchain_fstools.backends.modes import kind_of, os_error, require_regular
from langchain_fstools.backends.temporaries import temporary_name
from langchain_fstools.core import paths
from langchain_fstools.core.results import EntryKind, FileInfo
from langchain_fstools.errors import InvalidPath, OutsideRoot, VersionConflict

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Final, TypeVar

    from langchain_fstools.backends.beneath import Beneath, Place

    T = TypeVar("T")

READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a regular file is opened to be read: never through a link, never blocking."""

TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a temporary file is created: exclusively, never through a link."""


# ----- what an entry is -------------------------------------------------------------------


def file_info(virtual: str, status: os.stat_result) -> FileInfo:
    """The `FileInfo` of an entry's own `stat` result (a directory's size is 0)."""
    kind = kind_of(status.st_mode)
    size = status.st_size if kind is EntryKind.FILE else 0
    return FileInfo(virtual, kind, size, status.st_mtime, version_of(status))


def existing(place: Place) -> os.stat_result:
    """The `lstat` of the entry a walk reached; `FileNotFoundError` if there is none."""
    if place.info is None:
        raise os_error(FileNotFoundError, errno.ENOENT, place.virtual)
    return place.info


def describe(beneath: Beneath, virtual: str, directory: int, name: str) -> FileInfo:
    """The entry `name` in `directory` as listed: a symlink as its target, with `link` set.

    A link that leads outside the root or nowhere is a special entry: its target is
    never examined further.
    """
    own = os.stat(name, dir_fd=directory, follow_symlinks=False)
    if not stat_module.S_ISLNK(own.st_mode):
        return file_info(virtual, own)
    try:
        with beneath.place(virtual) as place:
            target = existing(place)
    except (OutsideRoot, OSError):
        return FileInfo(virtual, EntryKind.SPECIAL, 0, own.st_mtime, version_of(own), link=True)
    return replace(file_info(virtual, target), link=True)


# ----- reading ----------------------------------------------------------------------------


def stat(beneath: Beneath, virtual: str) -> FileInfo:
    """Metadata of `virtual`; a symlink inside the root reports its target."""
    with paths.virtual_errors(virtual), beneath.place(virtual) as place:
        return file_info(virtual, existing(place))


def read(
    beneath: Beneath,
    virtual: str,
    start: int = 0,
    size: int | None = None,
    expected: str | None = None,
) -> bytes:
    """Bytes of a regular file, whole or `size` bytes from `start`.

    Decides from `stat` before opening, opens with `O_NOFOLLOW | O_NONBLOCK` and checks
    the open descriptor again, so devices, FIFOs and sockets are refused without
    blocking. Memory is bounded by what is asked for.

    Raises:
        OSError: `start` or `size` is negative (errno EINVAL, as `pread` says).
        VersionConflict: `expected` is given and the file is at another version.
    """
    with paths.virtual_errors(virtual), beneath.place(virtual) as place:
        require_regular(virtual, existing(place).st_mode)
        if start < 0 or (size is not None and size < 0):
            raise os_error(OSError, errno.EINVAL, virtual)
        descriptor = os.open(place.name, READ_FLAGS, dir_fd=place.directory)
        try:
            status = os.fstat(descriptor)
            require_regular(virtual, status.st_mode)
            if expected is not None and version_of(status) != expected:
                raise VersionConflict(virtual, expected, version_of(status))
            wanted = max(status.st_size - start, 0)
            return pread(descriptor, start, wanted if size is None else min(size, wanted))
        finally:
            os.close(descriptor)


def open_directory(beneath: Beneath, virtual: str) -> int:
    """A descriptor of the directory `virtual` resolves to, opened for listing."""
    with paths.virtual_errors(virtual), beneath.place(virtual) as place:
        return os.open(place.name, LISTING, dir_fd=place.directory)


def entries(
    beneath: Beneath, virtual: str, descriptor: int, after: str | None = None
) -> Iterator[FileInfo]:
    """The entries of the directory open at `descriptor`, sorted by name, after `after`.

    One removed since the scan is left out.
    """
    with paths.virtual_errors(virtual):
        with os.scandir(descriptor) as scan:
            names = sorted(entry.name for entry in scan)
        for name in names:
            if after is not None and name <= after:
                continue
            with contextlib.suppress(FileNotFoundError):
                yield describe(beneath, paths.join(virtual, name), descriptor, name)


def walk(beneath: Beneath, virtual: str, descriptor: int) -> Iterator[FileInfo]:
    """Every entry below the directory open at `descriptor`, depth first, sorted.

    Each directory is opened relative to its parent, never through a link (symlinked
    directories are not entered); one replaced or removed meanwhile is skipped.
    """
    for info in list(entries(beneath, virtual, descriptor)):
        yield info
        if info.is_dir and not info.link:
            try:
                inner = os.open(info.name, LISTING, dir_fd=descriptor)
            except OSError:  # replaced or removed since the scan
                continue
            try:
                yield from walk(beneath, info.path, inner)
            finally:
                os.close(inner)


def resolve(beneath: Beneath, virtual: str) -> str:
    """The virtual path of what `virtual` reaches: symlinks followed inside the root."""
    with paths.virtual_errors(virtual), beneath.place(virtual, partial=True) as place:
        return place.virtual


# ----- changing ---------------------------------------------------------------------------


def delete(beneath: Beneath, virtual: str) -> None:
    """Remove a file, a symlink (never its target), or an empty directory.

    Raises:
        InvalidPath: `virtual` is the root.
    """
    if virtual == paths.ROOT:
        raise InvalidPath(virtual, "the workspace root cannot be deleted")
    with paths.virtual_errors(virtual), beneath.place(virtual, follow=False) as place:
        if stat_module.S_ISDIR(existing(place).st_mode):
            os.rmdir(place.name, dir_fd=place.directory)
        else:
            os.unlink(place.name, dir_fd=place.directory)


def mkdir(beneath: Beneath, virtual: str) -> None:
    """Create a directory and its parents; an existing directory is fine.

    Raises:
        FileExistsError: `virtual` or one of its parents is a file.
    """
    with paths.virtual_errors(virtual):
        try:
            place = beneath.place(virtual, create=True)
        except NotADirectoryError:  # a parent is a file
            raise os_error(FileExistsError, errno.EEXIST, virtual) from None
        with place:
            if place.info is None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(place.name, dir_fd=place.directory)
                place.info = os.stat(place.name, dir_fd=place.directory)
            if not stat_module.S_ISDIR(place.info.st_mode):
                raise os_error(FileExistsError, errno.EEXIST, virtual)


def move(beneath: Beneath, origin: str, target: str, *, durable: bool = True) -> FileInfo:
    """Rename a file or a directory tree as POSIX `rename` does, creating parents.

    A file replaces a file, a directory replaces an empty directory, and a symlink is
    moved as a link (on either side, the link itself is renamed or replaced). Errors
    are the kernel's: `EINVAL` for a move into itself, `ENOTEMPTY` onto a non-empty
    directory or an ancestor, `EISDIR`/`ENOTDIR` for kind mismatches. `durable` syncs
    both directories.
    """
    with paths.virtual_errors(origin):
        start = beneath.place(origin, follow=False)
    with start:
        with paths.virtual_errors(origin):
            existing(start)
        with paths.virtual_errors(target):
            if origin == target:
                return describe(beneath, target, start.directory, start.name)
            if paths.is_within(target, origin):
                raise os_error(OSError, errno.EINVAL, target)
            if target == paths.ROOT:  # by path, rename(2) finds the root not empty
                raise os_error(OSError, errno.ENOTEMPTY, target)
            with beneath.place(target, follow=False, create=True) as end:
                os.replace(
                    start.name, end.name, src_dir_fd=start.directory, dst_dir_fd=end.directory
                )
                if durable:
                    for directory in {start.directory, end.directory}:
                        fsync_directory(directory)
                return describe(beneath, target, end.directory, end.name)


# ----- the steps of an atomic write -------------------------------------------------------


def file_slot(virtual: str, place: Place) -> os.stat_result | None:
    """What a write through `place` would replace: a regular file, or nothing.

    Raises:
        IsADirectoryError: `place` is the root or a directory.
        SpecialFile: a device, FIFO or socket is there.
    """
    current = place.info
    if place.name == ".":
        raise os_error(IsADirectoryError, errno.EISDIR, virtual)
    if current is not None:
        require_regular(virtual, current.st_mode)
    return current


def create_temp(directory: int, name: str, tag: str | None, *, private: bool) -> tuple[int, str]:
    """Create `.{name}.{tag}.fstools-tmp` exclusively in the directory open at `directory`.

    A replacement starts private (0o600) until the old file's mode is copied; a new
    file is created 0o666, which the kernel narrows by the umask. Returns the open
    descriptor and the name.
    """
    mode = 0o600 if private else 0o666
    return exclusively(name, tag, lambda temp: os.open(temp, TEMP_FLAGS, mode, dir_fd=directory))


def exclusively(name: str, tag: str | None, make: Callable[[str], T]) -> tuple[T, str]:
    """`make(temp)` under the `.{name}.{tag}.fstools-tmp` name (see `temporary_name`).

    Without a tag, a random one, and another while the name is taken. `make` must
    fail with `FileExistsError` where the name exists (an exclusive create).
    """
    while True:
        temp = temporary_name(name, tag)
        try:
            return make(temp), temp
        except FileExistsError:
            if tag is not None:
                raise


def copy_owner_and_mode(descriptor: int, original: os.stat_result) -> None:
    """Give the temporary file the replaced file's owner (when allowed) and mode."""
    own = os.fstat(descriptor)
    if (own.st_uid, own.st_gid) != (original.st_uid, original.st_gid):
        with contextlib.suppress(PermissionError):
            os.fchown(descriptor, original.st_uid, original.st_gid)
    os.fchmod(descriptor, stat_module.S_IMODE(original.st_mode))


def stamp(descriptor: int, previous: os.stat_result | None) -> None:
    """Set a precise modification time, later than the replaced file's.

    The kernel stamps files with a coarse clock and reuses freed inode numbers, so two
    quick same-size writes could otherwise share a version token.
    """
    now = later_than(previous)
    os.utime(descriptor, ns=(now, now))


def check_version(virtual: str, directory: int, name: str, expected: str | None) -> None:
    """Raise `VersionConflict` unless `name` is at `expected` ("": absent; None: any).

    The entry is looked at itself, never through a link: a link swapped in is a conflict.
    """
    if expected is None:
        return
    try:
        current = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        current = None
    actual = version_of(current) if current is not None else None
    if actual != (expected or None):
        raise VersionConflict(virtual, expected, actual)


# ----- descriptors ------------------------------------------------------------------------


def pread(descriptor: int, start: int, size: int) -> bytes:
    """Read at most `size` bytes from `start`, never allocating more than that."""
    parts: list[bytes] = []
    done = 0
    while done < size and (chunk := os.pread(descriptor, size - done, start + done)):
        parts.append(chunk)
        done += len(chunk)
    return b"".join(parts)


def write_all(descriptor: int, data: bytes) -> None:
    """Write all of `data` to `descriptor` (a write may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def fsync_directory(directory: int) -> None:
    """Sync the directory open at `directory` (a lookup descriptor cannot be synced)."""
    descriptor = os.open(".", LISTING, dir_fd=directory)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


__all__ = [
    "READ_FLAGS",
    "TEMP_FLAGS",
    "check_version",
    "copy_owner_and_mode",
    "create_temp",
    "delete",
    "describe",
    "entries",
    "exclusively",
    "existing",
    "file_info",
    "file_slot",
    "fsync_directory",
    "mkdir",
    "move",
    "open_directory",
    "pread",
    "read",
    "resolve",
    "stamp",
    "stat",
    "walk",
    "write_all",
]
