"""What only root may read under system folders, kept current for each command's start.

Uid 0 inside the sandbox keeps the owner's permission bits, so a root agent's commands
get every root-only file and folder under `/etc` and `/var` masked
(`shell.sandbox.sandbox.root_only_paths`). Walking those trees takes tens of
milliseconds; a command's start may take a fraction of one. So `RootOnly` lists each
folder once and lists it again only once it changed:

1. Where the kernel has inotify, every folder listed is watched (entries created,
   removed, renamed, or their mode or owner changed: `chmod` included); a command's
   start reads the events that came since and lists again only the folders they
   name, or all of them if the queue overflowed. When none came and every folder is
   watched, the last answer stands (a few microseconds).
2. A folder that cannot be watched (no inotify, the watch limit reached) is listed
   again when its inode or modification time moved, or when it was listed less than
   `RACY_NS` after it changed (a change within the same clock tick leaves its time as
   it was); there a file made root-only by `chmod` alone is found once its folder
   changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import stat as stat_module
import struct
import threading
import time
from dataclasses import dataclass
from typing import Final

RACY_NS: Final = 2_000_000_000
"""How long after an unwatched folder changed its listing is not trusted (a file
system's clock tick is coarse; two seconds covers FAT's too)."""

_OTHERS_ENTER: Final = stat_module.S_IROTH | stat_module.S_IXOTH
"""What a folder grants everyone when anyone may list and enter it."""
_IN_NONBLOCK: Final = os.O_NONBLOCK
_IN_CLOEXEC: Final = os.O_CLOEXEC
_IN_EVENTS: Final = 0x4 | 0x100 | 0x200 | 0x40 | 0x80 | 0x400 | 0x800
"""IN_ATTRIB, IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO, IN_DELETE_SELF, IN_MOVE_SELF."""
_IN_ONLYDIR: Final = 0x01000000
_IN_DONT_FOLLOW: Final = 0x02000000
_IN_Q_OVERFLOW: Final = 0x4000
_EVENT: Final = struct.Struct("iIII")
"""`struct inotify_event` before its name: wd, mask, cookie, len."""


@dataclass(frozen=True)
class _Listing:
    """What one listing of a folder found."""

    watched: bool
    """Whether inotify tells its changes (else its stamp is compared)."""
    stamp: tuple[int, int, int] | None
    """Its device, inode and modification time when listed; None: listed too soon after
    it changed to be trusted (listed again next time)."""
    closed: list[str]
    """Its entries only their owner may read."""
    open_folders: list[str]
    """Its folders open to all (listed in turn)."""


class RootOnly:
    """The root-only paths below `tops`, each folder listed again only once it changed."""

    def __init__(self, tops: tuple[str, ...]) -> None:
        """Watch nothing yet: the first `paths` lists every folder."""
        self.tops = tops
        self._lock = threading.Lock()
        self._listed: dict[str, _Listing] = {}
        self._watched: dict[int, str] = {}
        self._inotify: int | None = None
        self._found: list[str] | None = None
        """The last answer, while every folder is watched and none changed since."""
        self._unwatched = False
        """Whether the last listing met a folder that is not watched (or is missing)."""

    def paths(self) -> list[str]:
        """Every root-only path below `tops` now, none beneath another."""
        with self._lock:
            if self._inotify is None:
                self._inotify = _inotify_init()
            changed = self._changed()
            if changed:  # a folder replaced below a changed one is listed again too
                self._found = None
                self._listed = {
                    folder: listing
                    for folder, listing in self._listed.items()
                    if not any(folder == c or folder.startswith(c + "/") for c in changed)
                }
            if self._found is not None:
                return list(self._found)
            found: list[str] = []
            self._unwatched = False
            for top in self.tops:
                self._visit(top, found)
            self._found = None if self._unwatched else list(found)
            return found

    def _changed(self) -> list[str]:
        """The watched folders the kernel said changed since the last call (all: overflow)."""
        fd = self._inotify
        changed: list[str] = []
        while fd is not None and fd >= 0:
            try:
                data = os.read(fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    changed += self._listed
                elif wd in self._watched:
                    changed.append(self._watched[wd])
        return changed

    def _visit(self, folder: str, found: list[str]) -> None:
        seen = self._listed.get(folder)
        if seen is None or not seen.watched:
            try:
                result = os.lstat(folder)
            except OSError:
                self._unwatched = True  # nothing tells when it is made
                return
            stamp = (result.st_dev, result.st_ino, result.st_mtime_ns)
            if seen is None or seen.stamp != stamp:
                watched = self._watch(folder)  # before listing: a change after it is told
                racy = time.time_ns() - result.st_mtime_ns < RACY_NS
                seen = self._listed[folder] = _Listing(
                    watched, None if racy else stamp, *_list(folder)
                )
            self._unwatched = self._unwatched or not seen.watched
        found += seen.closed
        for inner in seen.open_folders:
            self._visit(inner, found)

    def _watch(self, folder: str) -> bool:
        """Watch `folder` for changes of its entries; False where it cannot be watched."""
        fd = self._inotify
        if fd is None or fd < 0:
            return False
        flags = _IN_EVENTS | _IN_ONLYDIR | _IN_DONT_FOLLOW
        wd = int(_libc().inotify_add_watch(fd, os.fsencode(folder), flags))
        if wd < 0:
            return False
        self._watched[wd] = folder
        return True


def _list(folder: str) -> tuple[list[str], list[str]]:
    """The entries of `folder` only their owner may read, and the folders open to all."""
    closed: list[str] = []
    open_folders: list[str] = []
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return [], []
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat_module.S_ISDIR(mode):
            (open_folders if mode & _OTHERS_ENTER == _OTHERS_ENTER else closed).append(entry.path)
        elif stat_module.S_ISREG(mode) and not mode & stat_module.S_IROTH:
            closed.append(entry.path)
    return closed, open_folders


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _inotify_init() -> int:
    """A non-blocking inotify descriptor, or -1 where the kernel gives none."""
    with contextlib.suppress(AttributeError, OSError):
        return int(_libc().inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    return -1


__all__ = ["RACY_NS", "RootOnly"]
