"""The version token of a file on a POSIX disk, and the mtime a write stamps.

One scheme for every backend that writes a real disk by temporary file and rename:
`LocalBackend` on this machine and `SandboxBackend`'s helper inside a sandbox (which
ships this module), so a token means the same thing on both. Standard library only.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    import os


def version_of(result: os.stat_result) -> str:
    """Changes with the content: mtime, size, and the inode (each write renames)."""
    return f"{result.st_mtime_ns:x}-{result.st_size:x}-{result.st_ino:x}"


def later_than(previous: os.stat_result | None) -> int:
    """Now, in nanoseconds, or just after `previous`'s modification time if that is later.

    A write stamps this on its temporary file: the kernel stamps files with a coarse
    clock and reuses freed inode numbers, so two quick same-size writes could otherwise
    share a version token.
    """
    now = time.time_ns()
    return now if previous is None else max(now, previous.st_mtime_ns + 1)


__all__ = ["later_than", "version_of"]
