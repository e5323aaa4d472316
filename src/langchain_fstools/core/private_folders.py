"""Folders on this machine that only this user can use.

What waits on this machine for a later request (a change set for a person's approval, a
stopped call's branch) lives in the temporary folder, which every local user can write:
a folder another user made first (or a link they planted there) would let them read or
replace what waits. So each such folder is per user (`<tmp>/<name>-<uid>`), made with
mode 0700, and checked after: it must be a real folder this user owns that no one else
can enter, or it is refused (`PermissionError`), never used.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # `typing` is not imported: a sandbox's helper imports `is_private`
if TYPE_CHECKING:
    from pathlib import Path


def private_folder(name: str) -> Path:
    """This user's folder `<tmp>/<name>-<uid>`, made if missing.

    Raises:
        PermissionError: it exists, but is not a folder this user owns with no access
            for group and others (another user made it, or it is a link).
    """
    import tempfile  # noqa: PLC0415 - a sandbox's helper, which imports `is_private`, spares these
    from pathlib import Path  # noqa: PLC0415 - the same

    folder = Path(tempfile.gettempdir(), f"{name}-{os.getuid()}")
    folder.mkdir(mode=0o700, exist_ok=True)
    if not is_private(folder):
        raise PermissionError(errno.EPERM, "not this user's private folder", str(folder))
    return folder


def is_private(folder: str | os.PathLike[str]) -> bool:
    """Whether `folder` is a real folder (not a link) this user owns that no one else may use.

    Raises:
        OSError: it cannot be looked at (`FileNotFoundError` when missing).
    """
    found = os.lstat(folder)
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077


__all__ = ["is_private", "private_folder"]
