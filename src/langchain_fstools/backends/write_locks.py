"""Directory locks that make a local write's version check and its rename one step.

A conditional write on local disk checks the target's version, then renames a
temporary file over it. Two writers that read the same version would both pass the
check and the second rename would silently win. Every writer of this package (any
thread, any process) therefore checks and renames while holding an exclusive `flock`
on the target's directory. A lock on the file itself would not do: the rename replaces
the file, and with it the inode the lock was on. The directory stays.

`flock` locks belong to an open file description, so two threads of one process that
each open the directory exclude each other as two processes do, and the kernel drops
the lock when its holder dies (a killed writer blocks nobody). A batch locks its
directories in one order (device, then inode), so two batches never deadlock. The
lock is held only from the check to the last rename (temporary files are written and
synced before it is taken), so a writer waits at most for other writers' renames, and
readers never wait.

Writers that do not use this package (an editor, `git checkout`) take no lock: the
version is still checked just before the rename, so a change they made earlier is
caught, but one landing between that check and the rename is not. Nor is a directory
this process cannot read (mode `-wx`) locked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time

from langchain_fstools.backends.beneath import LISTING
from langchain_fstools.errors import WriteLockTimeout

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Final

DEFAULT_LOCK_TIMEOUT: Final = 10.0
"""Seconds a write waits for other writers of its folders, by default."""

_FIRST_WAIT: Final = 0.0005
"""Seconds of the first wait for a held lock; each next wait doubles, up to `_LONGEST_WAIT`."""

_LONGEST_WAIT: Final = 0.01


@contextlib.contextmanager
def directories_locked(directories: Mapping[int, str], timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on each directory, taken in one global order.

    Args:
        directories: Descriptors of the directories (`O_PATH` will do), each with the
            virtual path of a file written in it (named in a timeout error).
        timeout: Seconds to wait for all the locks together.

    Raises:
        WriteLockTimeout: another writer held one of them for `timeout` seconds.
    """
    opened: list[tuple[int, str]] = []
    try:
        for directory, virtual in directories.items():
            descriptor = _open(directory)
            if descriptor is not None:
                opened.append((descriptor, virtual))
        deadline = time.monotonic() + timeout
        for descriptor, virtual in _in_lock_order(opened):
            _lock(descriptor, virtual, deadline, timeout)
        yield
    finally:
        for descriptor, _ in opened:
            os.close(descriptor)  # closing the last descriptor of it releases the lock


def _open(directory: int) -> int | None:
    """A descriptor of the directory open at `directory` that `flock` accepts.

    None for a directory this process may search and write but not read (`flock`
    needs a readable descriptor): writes there are checked without the lock.
    """
    try:
        return os.open(".", LISTING, dir_fd=directory)
    except PermissionError:
        return None


def _in_lock_order(opened: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """One directory once, ordered by device and inode (the same order in every writer)."""
    if len(opened) < 2:  # noqa: PLR2004 - one lock has no order
        return opened
    unique: dict[tuple[int, int], tuple[int, str]] = {}
    for descriptor, virtual in opened:
        result = os.fstat(descriptor)
        unique.setdefault((result.st_dev, result.st_ino), (descriptor, virtual))
    return [unique[key] for key in sorted(unique)]


def _lock(descriptor: int, virtual: str, deadline: float, timeout: float) -> None:
    """Take the lock, waiting with growing pauses until `deadline`."""
    wait = _FIRST_WAIT
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in {errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR}:
                raise
        else:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise WriteLockTimeout(virtual, timeout)
        time.sleep(min(wait, left))
        wait = min(wait * 2, _LONGEST_WAIT)


__all__ = ["DEFAULT_LOCK_TIMEOUT", "directories_locked"]
