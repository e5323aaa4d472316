"""POSIX file modes and errors in the terms of the backend contract.

Shared by the backends that see real file modes (local disk, SFTP) and by every
backend that raises a POSIX error for a virtual path.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

from langchain_fstools.core.results import EntryKind
from langchain_fstools.errors import SpecialFile

SPECIAL_KINDS = (
    (stat_module.S_ISFIFO, "FIFO"),
    (stat_module.S_ISCHR, "character device"),
    (stat_module.S_ISBLK, "block device"),
    (stat_module.S_ISSOCK, "socket"),
)
"""Tests of a mode for the special files that are listed but never opened, with names."""


def os_error(cls: type[OSError], code: int, path: str) -> OSError:
    """The error a POSIX filesystem gives for `code`, carrying the virtual `path`."""
    return cls(code, os.strerror(code), path)


def kind_of(mode: int) -> EntryKind:
    """What a file mode names: a regular file, a directory, or a special file."""
    if stat_module.S_ISREG(mode):
        return EntryKind.FILE
    if stat_module.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    return EntryKind.SPECIAL


def require_regular(path: str, mode: int) -> None:
    """Refuse to open anything but a regular file.

    Raises:
        IsADirectoryError: `mode` is a directory's.
        SpecialFile: a device, FIFO or socket.
    """
    if stat_module.S_ISDIR(mode):
        raise os_error(IsADirectoryError, errno.EISDIR, path)
    if not stat_module.S_ISREG(mode):
        kind = next((name for test, name in SPECIAL_KINDS if test(mode)), "special file")
        raise SpecialFile(path, kind)


__all__ = ["SPECIAL_KINDS", "kind_of", "os_error", "require_regular"]
