"""A branch's changes as an overlay layer, so commands run in the branch see them.

A command in a branch runs on the base's copy-on-write view with the branch's changes
laid between the workspace and the command's upper layer (`shell.sandbox.overlay.Layer`):
written files and created directories as they are, deletions as whiteouts. The command
sees the branch; what it changes lands in its own upper layer, which the branch takes
in (`BranchBackend.commit`), so one branch's build never appears in another's.
"""

from __future__ import annotations

import os
import stat as stat_module
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langchain_fstools.core import paths
from langchain_fstools.errors import ExecutionUnsupported

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_fstools.core.changesets import ChangedEntry, ChangeKind
    from langchain_fstools.shell.sandbox.overlay import LowerTree

_BRANCH = "branch"


@dataclass(frozen=True, slots=True)
class Proposed:
    """One change a branch holds (`BranchBackend.proposed`).

    Attributes:
        path: The virtual path.
        kind: Added, modified or deleted, against the base the branch started from.
        entry: A file or a directory.
        before: The base's bytes when the branch first touched it (None: absent, or
            a directory).
        after: The branch's bytes (None: deleted).
    """

    path: str
    kind: ChangeKind
    entry: ChangedEntry
    before: bytes | None
    after: bytes | None


@dataclass
class BranchLayer:
    """The changes of a branch, built into a host folder as an overlay layer.

    Args:
        changes: The branch's changes (`BranchBackend.proposed`).
    """

    changes: Sequence[Proposed]
    folder: str = field(default="", init=False)

    def build(self, folder: str) -> None:
        """Write the changes into `folder`: files, directories, whiteouts.

        Raises:
            ExecutionUnsupported: a whiteout cannot be made here (no right to make
                device nodes), so the deletions could not be shown.
        """
        self.folder = folder
        deleted = [c.path for c in self.changes if c.after is None]
        for change in self.changes:
            if any(paths.is_within(change.path, d) and change.path != d for d in deleted):
                continue  # the whiteout above hides it
            host = self._host(change.path)
            os.makedirs(os.path.dirname(host), mode=0o755, exist_ok=True)
            if change.after is None:
                try:
                    os.mknod(host, stat_module.S_IFCHR, os.makedev(0, 0))
                except PermissionError:
                    raise ExecutionUnsupported(_BRANCH) from None
            elif change.entry == "directory":
                os.makedirs(host, mode=0o755, exist_ok=True)
            else:
                with open(host, "wb") as file:
                    file.write(change.after)

    def lower(self, workspace: LowerTree) -> LowerTree:
        """This layer over `workspace`, as the command saw it."""
        return _Layered(self, workspace, {c.path: c for c in self.changes})

    def _host(self, virtual: str) -> str:
        return os.path.join(self.folder, virtual.lstrip("/"))


@dataclass(frozen=True)
class _Layered:
    """The workspace with a branch's layer over it (`LowerTree`)."""

    layer: BranchLayer
    workspace: LowerTree
    changes: dict[str, Proposed]

    def _hidden(self, virtual: str) -> bool:
        """Whether the branch deleted `virtual` or a folder above it."""
        path = virtual
        while True:
            change = self.changes.get(path)
            if change is not None:
                return change.after is None
            if path == paths.ROOT:
                return False
            path = paths.parent(path)

    def lstat(self, virtual: str) -> os.stat_result | None:
        if virtual in self.changes and self.changes[virtual].after is not None:
            return _unchanged(os.lstat(self.layer._host(virtual)))  # noqa: SLF001
        if self._hidden(virtual):
            return None
        return self.workspace.lstat(virtual)

    def names(self, virtual: str) -> list[str]:
        found: set[str] = set()
        if not self._hidden(virtual):
            low = self.workspace.lstat(virtual)
            if low is not None and stat_module.S_ISDIR(low.st_mode):
                found.update(self.workspace.names(virtual))
        host = self.layer._host(virtual)  # noqa: SLF001
        if os.path.isdir(host):
            found.update(os.listdir(host))
        return sorted(n for n in found if self.lstat(paths.join(virtual, n)) is not None)

    def readlink(self, virtual: str) -> str:
        return self.workspace.readlink(virtual)

    def same_bytes(self, virtual: str, upper: str) -> bool:
        change = self.changes.get(virtual)
        if change is None or change.after is None:
            return self.workspace.same_bytes(virtual, upper)
        with open(upper, "rb") as file:
            return file.read() == change.after

    def version(self, result: os.stat_result) -> str:
        return self.workspace.version(result)


def _unchanged(result: os.stat_result) -> os.stat_result:
    """`result` with no inode change time: never changed while the command ran.

    The layer was built just before the command started, and no one but its branch
    writes it.
    """
    extra = {"st_atime_ns": result.st_atime_ns, "st_mtime_ns": result.st_mtime_ns}
    return os.stat_result((*tuple(result)[:9], 0), {**extra, "st_ctime": 0.0, "st_ctime_ns": 0})


__all__ = ["BranchLayer", "Proposed"]
