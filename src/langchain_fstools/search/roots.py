"""The folder (or file) a glob or grep starts from: what it must be, checked once.

A search path must exist and be a directory or a regular file (a glob's, a directory).
The tools check it with a `stat` before they search, unless the search itself checks
it in the same run (`checks_root`, a sandbox's search: one round trip instead of two),
which then raises what this check raises. A backend that wraps a native search (a
guard, a mount) passes that on (`WrappedSearch`).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

from langchain_fstools.core import calls
from langchain_fstools.core.results import EntryKind
from langchain_fstools.errors import SpecialFile

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.results import FileInfo
    from langchain_fstools.search.contract import NativeSearch


def checked_root(path: str, *, listing: bool) -> Effect[FileInfo]:
    """Stat the canonical virtual `path`: a directory, or (unless `listing`) a file.

    Raises:
        FileNotFoundError: nothing is there (an `OSError` as the backend names it).
        SpecialFile: a device, FIFO or socket (named as the backend names it).
        NotADirectoryError: `listing` and `path` is a file.
    """
    info = yield from calls.stat(path)
    if info.kind is EntryKind.SPECIAL:
        yield from calls.read_bytes(info.path, 0, 0)  # raises, naming the kind
        raise SpecialFile(info.path, "special file")
    if listing and not info.is_dir:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), info.path)
    return info


def checks_root(native: object) -> bool:
    """Whether a native search checks its root as `checked_root` does, in its own run."""
    return getattr(native, "checks_root", False) is True


class WrappedSearch:
    """A native search seen through a backend's wrapper, which checks its root as it does.

    Attributes:
        native: The wrapped native search.
    """

    def __init__(self, native: NativeSearch) -> None:
        """Wrap `native`."""
        self.native = native

    @property
    def checks_root(self) -> bool:
        """Whether the wrapped search checks its root itself (`checks_root`)."""
        return checks_root(self.native)


__all__ = ["WrappedSearch", "checked_root", "checks_root"]
