"""What a command changed in the workspace, before anything of it is committed.

A command that runs on a copy-on-write view of the workspace (see `shell.sandbox.overlay`)
leaves the workspace as it was; what it wrote, deleted, linked or made executable is
described here as a `ChangeSet`, whose new contents wait in a private folder until the
backend commits them (`Backend.commit`) or the set is discarded. Plain data, plus the
folder's removal (`remove_folder`), whatever modes the command left in it, and its removal
off the caller's path (`remove_folder_later`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

ChangedEntry = Literal["file", "directory", "link"]
"""What a changed path is after the command (before it, for a deletion)."""


class ChangeKind(StrEnum):
    """How a path changed; the value is the letter a summary shows (as `git status -s`)."""

    ADDED = "A"
    MODIFIED = "M"
    DELETED = "D"


@dataclass(frozen=True, slots=True)
class Change:
    """One path the command changed.

    Attributes:
        path: The virtual path.
        kind: Added, modified or deleted.
        entry: A file, a directory or a symbolic link (what it was, when deleted).
        mode: The permission bits after the change (None for a deletion or a link).
        size: Bytes of the new content (0 for directories, links and deletions).
        target: Where a new link points, as the command wrote it.
        before: The workspace's version of the path when the set was read (None
            where nothing was there), so the commit fails if it changed since.
        stale: Whether the path also changed in the workspace while the command ran.
        old_mode: The workspace's permission bits before a modification (None otherwise).
        dropped: Permission bits the command set that are not committed (set-uid,
            set-gid; on a new entry, group and world write bits the umask masks).
    """

    path: str
    kind: ChangeKind
    entry: ChangedEntry
    mode: int | None = None
    size: int = 0
    target: str | None = None
    before: str | None = None
    stale: bool = False
    old_mode: int | None = None
    dropped: int = 0


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Everything one command changed, in path order, and where the new contents wait.

    Attributes:
        changes: The changes, parents before children.
        source: The private host folder holding the new contents (never shown).
        host_code: Virtual paths of code the host runs later (a virtualenv inside the
            workspace, say), which no command may change (see `shell.sandbox.protected`).
        left_out: Virtual paths the command made that are not part of the set: empty
            files named as files masked in its view, and empty folders with a mask's
            mode (what copying them leaves).
        special: Virtual paths of FIFOs, sockets and devices the command made, which
            are not part of the set either.
        unreadable: A workspace folder the agent's user may not look into, where the
            command changed something: what it changed there cannot be compared with
            the workspace, so the set is never committed (`changes` is empty then).
    """

    changes: tuple[Change, ...]
    source: str
    host_code: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    special: tuple[str, ...] = ()
    unreadable: str | None = None

    def discard(self) -> None:
        """Remove the waiting contents (after a commit, or instead of one): `source` is free now."""
        remove_folder_later(self.source)

    def __bool__(self) -> bool:
        """Whether the command changed anything."""
        return bool(self.changes) or self.unreadable is not None

    def to_record(self) -> dict[str, Any]:
        """The set as JSON-ready data (`from_record` reads it back)."""
        return {
            "changes": [asdict(change) for change in self.changes],
            "source": self.source,
            "host_code": list(self.host_code),
            "left_out": list(self.left_out),
            "special": list(self.special),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ChangeSet:
        """The set `to_record` gave."""
        changes = tuple(
            Change(**{**change, "kind": ChangeKind(change["kind"])}) for change in record["changes"]
        )
        left_out = tuple(record.get("left_out", ()))
        special = tuple(record.get("special", ()))
        return cls(changes, record["source"], tuple(record["host_code"]), left_out, special)


@dataclass(frozen=True, slots=True)
class ChangeReview:
    """What a review of a change set found (`Backend.judge_changes`).

    Attributes:
        refused: Why nothing may be committed, if so: the reason (`protected`,
            `denied`), the first path, and for a protected path why in a few words.
        asks: The paths a person must approve before the set is committed.
    """

    refused: tuple[str, str, str] | None = None
    asks: tuple[str, ...] = ()


def remove_folder(path: str) -> None:
    """Remove the folder `path` and all below it, if it exists, never failing.

    A command may leave folders it cannot read or change (`chmod 000`) in its upper
    layer; as their owner, the agent opens them (`u+rwx`) and goes on.
    """
    shutil.rmtree(path, onerror=_opening)


def remove_folder_later(path: str) -> None:
    """`remove_folder`, with the folder gone from `path` at once and removed on a background thread.

    Removing even an empty view's four folders costs a millisecond, on the path of every
    command. The folder is renamed aside (`.discarded-<name>`, beside it) and removed
    later; where it cannot be renamed, it is removed here. Removals left when the
    process exits run before it ends (the executor's threads are joined at exit).
    """
    folder = Path(path)
    aside = folder.with_name(f".discarded-{folder.name}")
    try:
        folder.rename(aside)
    except OSError:
        remove_folder(path)
        return
    _remover(os.getpid()).submit(remove_folder, str(aside))


def removals_settled(timeout: float = 60.0) -> None:
    """Wait until the folders discarded so far in this process are removed (at most `timeout` s)."""
    with contextlib.suppress(TimeoutError):
        _remover(os.getpid()).submit(int).result(timeout)


@functools.cache
def _remover(process: int) -> ThreadPoolExecutor:
    """The thread removing discarded folders, started once per process (a fork starts its own)."""
    del process
    return ThreadPoolExecutor(1, thread_name_prefix="fstools-discard")


def _opening(function: object, path: str, _error: object) -> None:
    """`rmtree`'s error handler: open the folders in the way, then remove `path` again.

    Only a folder that was not open already is opened, so a failure of another kind
    is not tried again.
    """
    del function
    target = Path(path)
    with contextlib.suppress(OSError):
        opened = False
        for folder in (target.parent, target):
            mode = folder.lstat().st_mode
            if stat.S_ISDIR(mode) and mode & stat.S_IRWXU != stat.S_IRWXU:
                folder.chmod(stat.S_IMODE(mode) | stat.S_IRWXU)
                opened = True
        if not opened:
            return
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(path, onerror=_opening)
        else:
            target.unlink()


__all__ = ["Change", "ChangeKind", "ChangeReview", "ChangeSet", "ChangedEntry", "remove_folder"]
