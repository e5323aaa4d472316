"""A command's copy-on-write view of the workspace, and reading back what it changed.

Inside bubblewrap the workspace is an overlay (`--overlay-src <root> --overlay <upper>
<work> <root>`, at the workspace's own host path): the real workspace is the lower
layer, read-only to the command, and every write, deletion, rename, mode change, link
and new directory lands in a private upper layer on the host. When the command has
ended (its whole PID namespace with it), `read_changes` walks the upper layer and
compares each entry with the workspace to build a `ChangeSet`:

1. A whiteout (a character device 0/0) deletes what the workspace has there (a whole
   tree for a directory).
2. A directory that the overlay marks opaque (`user.overlay.opaque`) replaced the
   workspace's: whatever the workspace has below it that the upper layer does not is
   deleted.
3. A regular file, link or directory in the upper layer adds or modifies that path,
   unless it equals the workspace's (same type, bytes, mode, link target): opening a
   file for writing copies it up without changing it.

Modes are part of a change, as committed (`kept_mode`): set-uid and set-gid bits are
never kept, and a new entry's group and world write bits are dropped as the host's
umask drops them; the change says which bits were dropped (`Change.dropped`), and a
file's waiting content gets the mode kept, so the commit applies what the set says. An
empty new folder with the mode of a mask's tmpfs (`drwxrwxrwt`: what copying a folder
holding masked mount points leaves) is taken for a mask artifact and never enters the set
(`ChangeSet.left_out` names it: a command's own such folder is not told apart). A masked
file cannot be read at all (a device on a `nodev` mount: `EACCES`), so a copy of it
fails loudly; an empty new file named as a file masked in the command's view
(`Overlay.masking`) is what a copy that made its output before the read failed leaves,
and never enters the set either (`ChangeSet.left_out` names it, for the result to say).

What the kernel allows in a user namespace shapes what a command sees (and the docs
state): without `redirect_dir`, `rename(2)` of a directory that existed before the
command fails with `EXDEV` (`mv` then copies, Python's `os.rename` fails); copy-up
breaks hard links (each name is committed as a file of its own); FIFOs, sockets and
devices a command creates are not committed (`ChangeSet.special` names them).

Whether a path also changed in the workspace while the command ran is told by its
inode change time (`st_ctime`, which no program can set) against the command's start,
as the file systems stamp it (`stamp`): kernels with multigrain timestamps (6.13 and
later) may stamp a change ahead of the coarse clock, so a file written just before the
command would otherwise look changed while it ran. A change in the same clock tick as
the start is not told apart from one before it; the commit's version check still
catches a change made after the set was read.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import stat as stat_module
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Protocol

from langchain_fstools.core import paths
from langchain_fstools.core.changesets import Change, ChangedEntry, ChangeKind, ChangeSet

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

_OPAQUE_XATTRS: Final = ("user.overlay.opaque", "trusted.overlay.opaque")
"""Where overlayfs marks an opaque directory: `user.` in a user namespace."""

_COMPARE_CHUNK: Final = 1 << 20

_CLOCK_REALTIME_COARSE: Final = 5
"""Linux's clock of inode times (Python names it only from 3.13 on)."""

_NEVER_KEPT: Final = stat_module.S_ISUID | stat_module.S_ISGID
"""Mode bits no command's change keeps."""

_WRITABLE_BY_OTHERS: Final = stat_module.S_IWGRP | stat_module.S_IWOTH

_MASK_FOLDER: Final = 0o1777
"""The mode of the tmpfs a mask mounts over a folder (`drwxrwxrwt`)."""


class LowerTree(Protocol):
    """The real workspace, as the backend reaches it (confined, never following links out)."""

    def lstat(self, virtual: str) -> os.stat_result | None:
        """The entry at `virtual` itself (a link not followed), or None."""

    def names(self, virtual: str) -> list[str]:
        """The names in the directory at `virtual`."""

    def readlink(self, virtual: str) -> str:
        """Where the link at `virtual` points."""

    def same_bytes(self, virtual: str, upper: str) -> bool:
        """Whether the file at `virtual` holds the bytes of the host file `upper`."""

    def version(self, result: os.stat_result) -> str:
        """The version token the backend gives an entry with this `lstat`."""


class Layer(Protocol):
    """Changes laid over the workspace under a command's view (a branch's, say)."""

    def build(self, folder: str) -> None:
        """Write the layer into the empty host `folder` as an overlay layer.

        Files and directories as they are; a deletion as a whiteout (a character
        device 0/0), which hides the workspace's entry.
        """

    def lower(self, workspace: LowerTree) -> LowerTree:
        """What the command saw below its upper layer: this layer over `workspace`."""


def stamp(folder: str) -> int:
    """Now, as a file system stamps a change (`st_ctime`) made here: in ns.

    Never before the coarse clock, and, with multigrain timestamps (whose stamps are
    ordered across files), never before the ctime of any change made earlier.
    """
    marker = tempfile.mkdtemp(prefix=".stamp-", dir=folder)
    try:
        return _stamp_of(marker)
    finally:
        os.rmdir(marker)


def _stamp_of(made: str) -> int:
    """`stamp`, from the folder `made` just made (its ctime is the file system's "now")."""
    return max(os.stat(made).st_ctime_ns, time.clock_gettime_ns(_CLOCK_REALTIME_COARSE))


@dataclass(frozen=True)
class Overlay:
    """The private upper and work folders of one command's copy-on-write view.

    Attributes:
        folder: The private host folder holding `upper/` and `work/`.
        started_ns: When the command started, as the file systems stamp it (`stamp`).
    """

    folder: str
    started_ns: int
    masks: tuple[str, ...] = ()
    """The real paths masked in the command's view (`masking`)."""

    @classmethod
    def create(cls, parent: str | None = None) -> Overlay:
        """Make the private folders (mode 0700, in `parent` or the host's temporary folder)."""
        folder = tempfile.mkdtemp(prefix="fstools-cow-", dir=parent)
        os.mkdir(os.path.join(folder, "upper"), 0o755)
        work = os.path.join(folder, "work")
        os.mkdir(work, 0o700)
        return cls(folder, _stamp_of(work))

    def masking(self, *masks: Iterable[str]) -> Overlay:
        """This view, told the real paths masked in its command's view (the session's, its own)."""
        return replace(self, masks=tuple(itertools.chain(*masks)))

    @property
    def upper(self) -> str:
        """The upper layer: everything the command changed."""
        return os.path.join(self.folder, "upper")

    @property
    def work(self) -> str:
        """Overlayfs's work folder (on the upper layer's file system)."""
        return os.path.join(self.folder, "work")

    def bwrap_args(self, workspace: str) -> list[str]:
        """Bubblewrap's arguments that mount the view at the workspace's own path."""
        return ["--overlay-src", workspace, "--overlay", self.upper, self.work, workspace]

    def read_changes(self, lower: LowerTree, host_code: Sequence[str] = ()) -> ChangeSet:
        """What the command changed, compared with the workspace `lower` (see the module).

        `host_code`: what the set carries as code the host runs (`shell.sandbox.protected`).
        """
        scan = _Scan(self.upper, lower, self.started_ns, _masked_files(self.masks))
        try:
            found = list(scan.directory(paths.ROOT, self.upper))
        except PermissionError as refused:  # the workspace's side: `LowerTree.lstat`
            return ChangeSet((), self.folder, unreadable=str(refused.filename))
        return ChangeSet(
            tuple(found),
            self.folder,
            tuple(host_code),
            tuple(scan.left_out),
            tuple(scan.special),
        )


def upper_path(changes: ChangeSet, virtual: str) -> str:
    """The host path of `virtual`'s new content in a change set's upper layer."""
    return os.path.join(changes.source, "upper", virtual.lstrip("/"))


@dataclass(frozen=True)
class _Scan:
    upper: str
    lower: LowerTree
    started_ns: int
    masked: Callable[[str], bool]
    left_out: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)

    @functools.cached_property
    def umask(self) -> int:
        """The host's umask, read once a new entry needs it (most commands add none)."""
        return host_umask()

    def directory(self, virtual: str, host: str, *, replaced: bool = False) -> Iterator[Change]:
        """The changes below directory `virtual`, whose upper copy is at `host`.

        `replaced`: the directory hides the workspace's (opaque, or new over a file).
        """
        names = sorted(_names(host))
        if replaced:
            low = self.lower.lstat(virtual)
            if low is not None and stat_module.S_ISDIR(low.st_mode):
                for name in sorted(set(self.lower.names(virtual)) - set(names)):
                    yield from self.deleted(paths.join(virtual, name))
        for name in names:
            yield from self.entry(paths.join(virtual, name), os.path.join(host, name), replaced)

    def entry(self, virtual: str, host: str, replaced: bool) -> Iterator[Change]:  # noqa: FBT001
        result = os.lstat(host)
        mode = result.st_mode
        low = self.lower.lstat(virtual)
        if stat_module.S_ISCHR(mode) and result.st_rdev == 0:  # a whiteout
            if low is not None:
                yield from self.deleted(virtual, low)
            return
        if stat_module.S_ISDIR(mode):
            yield from self.changed_directory(virtual, host, result, low, replaced=replaced)
        elif stat_module.S_ISLNK(mode):
            target = os.readlink(host)
            if low is None or not stat_module.S_ISLNK(low.st_mode):
                yield from self.replacing(virtual, low, "link", target=target)
            elif self.lower.readlink(virtual) != target:
                yield self.change(virtual, ChangeKind.MODIFIED, "link", low, target=target)
        elif stat_module.S_ISREG(mode):
            yield from self.changed_file(virtual, host, result, low)
        else:  # FIFOs, sockets and devices are not committed: the result says so
            self.special.append(virtual)

    def changed_file(
        self, virtual: str, host: str, result: os.stat_result, low: os.stat_result | None
    ) -> Iterator[Change]:
        bits = stat_module.S_IMODE(result.st_mode)
        if low is None and result.st_size == 0 and self.masked(os.path.basename(host)):
            self.left_out.append(virtual)  # a copy of a masked file, made before its read failed
            return
        if low is None or not stat_module.S_ISREG(low.st_mode):
            yield from self.replacing(virtual, low, "file", mode=bits, size=result.st_size)
        elif (
            stat_module.S_IMODE(low.st_mode) != kept_mode(bits)
            or low.st_size != result.st_size
            or not self.lower.same_bytes(virtual, host)
        ):
            yield self.change(
                virtual, ChangeKind.MODIFIED, "file", low, mode=bits, size=result.st_size
            )

    def changed_directory(
        self,
        virtual: str,
        host: str,
        result: os.stat_result,
        low: os.stat_result | None,
        *,
        replaced: bool,
    ) -> Iterator[Change]:
        bits = stat_module.S_IMODE(result.st_mode)
        if low is None or not stat_module.S_ISDIR(low.st_mode):
            if bits == _MASK_FOLDER and not os.listdir(host):
                self.left_out.append(virtual)  # what copying a mask's empty tmpfs leaves
                return
            yield from self.replacing(virtual, low, "directory", mode=bits)
            yield from self.directory(virtual, host, replaced=True)
            return
        if stat_module.S_IMODE(low.st_mode) != kept_mode(bits):
            yield self.change(virtual, ChangeKind.MODIFIED, "directory", low, mode=bits)
        yield from self.directory(virtual, host, replaced=replaced or _opaque(host))

    def replacing(
        self,
        virtual: str,
        low: os.stat_result | None,
        entry: ChangedEntry,
        *,
        mode: int | None = None,
        size: int = 0,
        target: str | None = None,
    ) -> Iterator[Change]:
        """A new entry where the workspace has none, or one of another type.

        A folder replaced, or replacing something, is the old entry deleted and the new
        one added; a file and a link replace each other in place.
        """
        if low is not None and (stat_module.S_ISDIR(low.st_mode) or entry == "directory"):
            yield from self.deleted(virtual, low)
            low = None
        kind = ChangeKind.ADDED if low is None else ChangeKind.MODIFIED
        yield self.change(virtual, kind, entry, low, mode=mode, size=size, target=target)

    def deleted(self, virtual: str, low: os.stat_result | None = None) -> Iterator[Change]:
        """The workspace's entry at `virtual` deleted, with everything below it."""
        low = low if low is not None else self.lower.lstat(virtual)
        if low is None:
            return
        entry = _entry(low.st_mode)
        yield self.change(virtual, ChangeKind.DELETED, entry, low)
        if entry == "directory":
            for name in sorted(self.lower.names(virtual)):
                yield from self.deleted(paths.join(virtual, name))

    def change(
        self,
        virtual: str,
        kind: ChangeKind,
        entry: ChangedEntry,
        low: os.stat_result | None,
        *,
        mode: int | None = None,
        size: int = 0,
        target: str | None = None,
    ) -> Change:
        umask = self.umask if kind is ChangeKind.ADDED else None
        kept = None if mode is None else kept_mode(mode, umask)
        dropped = 0 if mode is None or kept is None else mode & ~kept
        if dropped and entry == "file" and kept is not None:  # the content gets the kept mode
            os.chmod(os.path.join(self.upper, virtual.lstrip("/")), kept)
        if low is None:
            return Change(virtual, kind, entry, kept, size, target, dropped=dropped)
        stale = low.st_ctime_ns > self.started_ns
        same_type = kind is ChangeKind.MODIFIED and _entry(low.st_mode) == entry
        old_mode = stat_module.S_IMODE(low.st_mode) if same_type else None
        version = self.lower.version(low)
        return Change(virtual, kind, entry, kept, size, target, version, stale, old_mode, dropped)


def kept_mode(bits: int, umask: int | None = None) -> int:
    """The permission bits a change keeps of `bits` (see the module docstring).

    `umask`: for a new entry, the host's umask, whose group and world write bits are
    dropped (None: the entry modifies the workspace's).
    """
    kept = bits & ~_NEVER_KEPT
    return kept if umask is None else kept & ~(umask & _WRITABLE_BY_OTHERS)


def host_umask() -> int:
    """This process's umask, read without setting it (Linux's `/proc`; else 022)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def open_upper(host: str) -> int:
    """A read-only descriptor of the upper layer's file `host` (a link is not followed).

    A command may have left it unreadable (`chmod 000`): as its owner, the agent lets
    itself read it for the open, and puts the command's mode back at once.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(host, flags)
    except PermissionError:
        mode = stat_module.S_IMODE(os.lstat(host).st_mode)
        os.chmod(host, mode | stat_module.S_IRUSR)
        try:
            return os.open(host, flags)
        finally:
            os.chmod(host, mode)


def _masked_files(masks: Sequence[str]) -> Callable[[str], bool]:
    """Whether a name is that of a file masked in the command's view.

    Asked only about an empty new file: the names are tabled at the first question,
    and whether a mask of that name is a file looked at then.
    """

    @functools.cache
    def by_name() -> dict[str, list[str]]:
        table: dict[str, list[str]] = {}
        for mask in masks:
            table.setdefault(os.path.basename(mask), []).append(mask)
        return table

    return lambda name: any(os.path.isfile(mask) for mask in by_name().get(name, ()))


def _names(host: str) -> list[str]:
    """The names in the upper folder `host`, which a command may have made unreadable.

    As its owner, the agent opens it (`u+rwx`) to read it; the mode the change records
    is the one the command left (read before).
    """
    try:
        return os.listdir(host)
    except PermissionError:
        os.chmod(host, stat_module.S_IMODE(os.lstat(host).st_mode) | stat_module.S_IRWXU)
        return os.listdir(host)


def _entry(mode: int) -> ChangedEntry:
    if stat_module.S_ISDIR(mode):
        return "directory"
    if stat_module.S_ISLNK(mode):
        return "link"
    return "file"


def _opaque(host: str) -> bool:
    for name in _OPAQUE_XATTRS:
        with contextlib.suppress(OSError):
            if os.getxattr(host, name, follow_symlinks=False) == b"y":
                return True
    return False


def files_equal(first: int, second: int) -> bool:
    """Whether two open files hold the same bytes (read in chunks from the start)."""
    offset = 0
    while True:
        one = os.pread(first, _COMPARE_CHUNK, offset)
        other = os.pread(second, _COMPARE_CHUNK, offset)
        if one != other:
            return False
        if not one:
            return True
        offset += len(one)


__all__ = [
    "Layer",
    "LowerTree",
    "Overlay",
    "files_equal",
    "host_umask",
    "kept_mode",
    "open_upper",
    "stamp",
    "upper_path",
]
