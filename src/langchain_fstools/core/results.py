"""The values backend calls take and return: file metadata, command results, writes.

Plain data shared by every layer (backends return them, tools read them).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from langchain_fstools.core.changesets import ChangeSet


class EntryKind(StrEnum):
    """What a path names."""

    FILE = "file"
    DIRECTORY = "directory"
    SPECIAL = "special"
    """A device, FIFO or socket: listed, never opened."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """Metadata of one path.

    Attributes:
        path: The canonical virtual path.
        kind: File, directory or special file.
        size: Size in bytes (0 for directories).
        mtime: Modification time, seconds since the epoch.
        version: Opaque token that changes whenever the content changes. Two equal
            tokens for one path mean the content did not change in between.
        link: Whether the path itself is a symbolic link (reported by `list_dir`;
            search does not follow links).
    """

    path: str
    kind: EntryKind
    size: int
    mtime: float
    version: str
    link: bool = False

    @property
    def name(self) -> str:
        """The last path component (empty for the root)."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def is_dir(self) -> bool:
        """Whether this names a directory."""
        return self.kind is EntryKind.DIRECTORY

    @property
    def is_file(self) -> bool:
        """Whether this names a regular file."""
        return self.kind is EntryKind.FILE


@dataclass(frozen=True, slots=True)
class Write:
    """One file write of a batch (`Backend.write_many`).

    Attributes:
        path: The file to write.
        data: Its new content.
        expected_version: If given, the write happens only when the file's version
            equals it; `ABSENT` (`""`) requires that the file does not exist.
    """

    path: str
    data: bytes
    expected_version: str | None = None


@dataclass(frozen=True, slots=True)
class Deletion:
    """One removal of a batch (`Backend.write_many`): a file, or an empty directory.

    A move is a `Write` of the new path (`ABSENT` expected) and a `Deletion` of the old.

    Attributes:
        path: The entry to remove.
        expected_version: If given, the removal happens only when the entry's version
            equals it. Default: None (whatever is there).
    """

    path: str
    expected_version: str | None = None


@dataclass(frozen=True, slots=True)
class LimitHit:
    """A sandbox limit a command hit.

    Attributes:
        name: The `Limits` field: `memory`, `processes`, `cpu_seconds`, `file_size` or
            `changed_bytes`; or `shell_state`, the fixed bound on the state a command
            leaves the next (`shell.session.shell_state.STATE_LIMIT`).
        value: What it was set to (bytes, a count or seconds).
    """

    name: str
    value: int


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    """What one command did.

    Attributes:
        output: Standard output and standard error interleaved as produced; each
            stderr line starts with `[stderr] `. Decoded as UTF-8 with replacement.
        exit_code: The command's exit status; None when it was killed at its deadline.
            A command ended by a signal reports `128 + signal`, as shells do.
        timed_out: Whether the deadline passed and the command was killed.
        dropped_bytes: Bytes cut from the middle of the output by the cap.
        changes: What a command run on a copy-on-write view changed, not yet
            committed (`Backend.execute_changes`); None where it wrote in place.
        directory: Where the shell ended, when that is not where it started (the
            next command of the session starts there); None otherwise.
        process_id: The background process the command became (it ran past its
            `yield_after`, or was started in the background); None otherwise.
        limit: The sandbox limit the command hit (a process was killed at it, or a
            fork refused), or None.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    dropped_bytes: int = 0
    changes: ChangeSet | None = None
    directory: str | None = None
    process_id: str | None = None
    limit: LimitHit | None = None


__all__ = ["Deletion", "EntryKind", "ExecutionResult", "FileInfo", "LimitHit", "Write"]
