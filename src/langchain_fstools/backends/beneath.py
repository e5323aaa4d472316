"""Paths walked beneath a root directory descriptor, so no host path is resolved twice.

`LocalBackend` never hands the kernel a host path for a file operation. It holds the
root open and walks a virtual path one component at a time, each opened relative to the
directory before it with `O_NOFOLLOW`; the operation itself (open, create, rename,
remove, stat) then names only the last component, relative to the directory reached.
A symlink met on the way is judged as the backend's contract says (followed when its
target, resolved, lies inside the root) and the walk restarts from the root descriptor
along the target's link-free spelling; a link that leads out is `OutsideRoot`.

Why this closes the race: whatever another process swaps in between two steps (a
directory for a symlink to `/etc`, at any moment), every step starts from a descriptor
already inside the root and refuses to follow a link it has not judged. A swap makes
the call fail or land on another path inside the root, never outside it.

Where the kernel has `openat2` (Linux 5.6+), the directories of a path are first opened
in one call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (`backends.openat2`): what it
reaches is what the walk would, and it refuses any link, so a path with a link (or a
missing folder) on the way is walked component by component as above. The kernel's own
`RESOLVE_BENEATH` resolution of links is not used: it refuses absolute symlinks, which
this backend follows when they point inside the root.

Limit: a directory that another process moves out of the root while a call holds it
open is still written in: only a process that can move directories out of the root
can do that, and such a process can write there itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
import threading
import weakref
from collections import deque
from dataclasses import dataclass

from langchain_fstools.backends.host_paths import is_inside, real_path
from langchain_fstools.backends.openat2 import open_directory_beneath
from langchain_fstools.errors import OutsideRoot

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Final, Self

_DIRECTORY: Final = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How each directory on the way is opened: for lookups only, never through a link."""

LISTING: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a directory is opened to be listed or synced (a lookup descriptor cannot)."""

MAX_HOPS: Final = 40
"""Most symlinks one walk follows, as Linux's `MAXSYMLINKS`; more is `ELOOP`."""


@dataclass(slots=True)
class Place:
    """A directory held open inside the root, and one name in it.

    `name` is `"."` for the root itself. Close the place (or use it as a context
    manager) when done; the root's own descriptor is never closed.
    """

    directory: int
    """Descriptor of the directory holding `name` (`O_PATH`: for `*at` calls)."""
    name: str
    virtual: str
    """The virtual path the place resolves to (symlinks followed as asked)."""
    info: os.stat_result | None
    """The entry's own `lstat` when the walk ended, or None if it did not exist."""
    owned: bool

    def close(self) -> None:
        """Release the directory descriptor (unless it is the root's)."""
        if self.owned:
            self.owned = False
            os.close(self.directory)

    def __enter__(self) -> Self:
        """The place itself."""
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the place."""
        self.close()


class Beneath:
    """The root directory, held open, and walks beneath it.

    Args:
        root: The root's real host path (symlinks already resolved).
        fast: Open a path's folders in one `openat2` call where the kernel has it
            (`backends.openat2`); False walks every component, sparing a short-lived
            process (a sandbox's helper) the loading of `ctypes`. Default: True.
    """

    def __init__(self, root: str, *, fast: bool = True) -> None:
        """Remember the root; it is opened on first use (a constructor may run on a loop)."""
        self.root = root
        self.fast = fast
        self._descriptor: int | None = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[Beneath], tuple[str]]:
        """Copies and pickles name the same root and open their own descriptor."""
        return (Beneath, (self.root,))  # `fast` keeps its default: only helpers turn it off

    def descriptor(self) -> int:
        """The root's descriptor, opened once and closed with this object."""
        if self._descriptor is None:
            with self._lock:
                if self._descriptor is None:
                    descriptor = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                    weakref.finalize(self, os.close, descriptor)
                    self._descriptor = descriptor
        return self._descriptor

    def place(
        self, virtual: str, *, follow: bool = True, create: bool = False, partial: bool = False
    ) -> Place:
        """Walk to the directory holding the entry a canonical virtual path names.

        Args:
            virtual: A normalized virtual path (`paths.normalize`).
            follow: Follow the last component when it is a symlink (inside the root).
            create: Create missing directories on the way (not the last component).
            partial: Where a directory on the way is missing (or is a file), stop there and
                give the rest of the path as `name` (for naming what a path would resolve
                to, and where a change set's temporary is staged).

        Raises:
            OutsideRoot: a symlink on the way leads outside the root.
            OSError: a component is missing or not a directory, or links loop.
        """
        walk = _Walk(self, partial=partial)
        try:
            return walk.run(virtual, follow=follow, create=create)
        except BaseException:
            walk.close()
            raise


class _Walk:
    """One walk: the stack of directories opened from the root, and their names."""

    def __init__(self, beneath: Beneath, *, partial: bool) -> None:
        self._beneath = beneath
        self._root = beneath.descriptor()
        self._stack: list[int] = []
        self._names: list[str] = []
        self._partial = partial

    def run(self, virtual: str, *, follow: bool, create: bool) -> Place:
        parts = [part for part in virtual.split("/") if part]
        directory = None
        if len(parts) > 1 and self._beneath.fast:  # in one call: no link, nothing missing
            directory = open_directory_beneath(self._root, "/".join(parts[:-1]))
        if directory is not None:
            self._stack.append(directory)
            self._names.extend(parts[:-1])
            parts = parts[-1:]
        pending = deque(parts)
        try:
            return self._run(virtual, pending, follow=follow, create=create)
        except _Missing:  # only when partial: the rest is named as spelled
            return self._place("/".join(pending), None)

    def _run(self, virtual: str, pending: deque[str], *, follow: bool, create: bool) -> Place:
        hops = 0
        while pending:
            name = pending.popleft()
            if name == "..":  # never in a canonical path or a link-free realpath
                raise OutsideRoot(virtual)
            if not pending:
                info = self._lstat(name)
                if not (follow and info is not None and stat_module.S_ISLNK(info.st_mode)):
                    return self._place(name, info)
            elif self._enter(name, create=create, pending=pending):
                continue
            hops += 1
            if hops > MAX_HOPS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), virtual)
            pending.extendleft(reversed(self._follow(name, virtual)))
        return self._place_of_current()

    def _enter(self, name: str, *, create: bool, pending: deque[str]) -> bool:
        """Open directory `name` onto the stack; False when it is a symlink to follow."""
        try:
            descriptor = os.open(name, _DIRECTORY, dir_fd=self._current())
        except FileNotFoundError:
            if self._partial:
                pending.appendleft(name)
                raise _Missing from None
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made by someone else meanwhile
                os.mkdir(name, dir_fd=self._current())
            descriptor = os.open(name, _DIRECTORY, dir_fd=self._current())
        except NotADirectoryError:
            if _is_link(name, self._current()):
                return False
            if self._partial:  # a file where a folder will be (a change set replaces it)
                pending.appendleft(name)
                raise _Missing from None
            raise
        self._stack.append(descriptor)
        self._names.append(name)
        return True

    def _follow(self, name: str, virtual: str) -> list[str]:
        """The link `name`'s target as components from the root; the walk restarts there.

        The target is resolved as `os.path.realpath` resolves it (from the link's
        directory); the result only spells where to walk, from the root descriptor.
        """
        target = os.readlink(name, dir_fd=self._current())
        resolved = real_path(os.path.join(self._beneath.root, *self._names, target))
        if not is_inside(self._beneath.root, resolved):
            raise OutsideRoot(virtual)
        self.close()
        relative = os.path.relpath(resolved, self._beneath.root)
        return [part for part in relative.split(os.sep) if part not in ("", os.curdir)]

    def _current(self) -> int:
        return self._stack[-1] if self._stack else self._root

    def _lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self._current(), follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _place(self, name: str, info: os.stat_result | None) -> Place:
        """The place of `name` in the current directory; the walk's other descriptors close."""
        directory = self._current()
        owned = bool(self._stack)
        if owned:
            self._stack.pop()
        virtual = "/" + "/".join([*self._names, name])
        self.close()
        return Place(directory, name, virtual, info, owned)

    def _place_of_current(self) -> Place:
        """The place of the directory reached last (the root: `"."` in itself)."""
        if not self._stack:
            info = os.stat(".", dir_fd=self._root, follow_symlinks=False)
            return Place(self._root, ".", "/", info, owned=False)
        name = self._names.pop()
        os.close(self._stack.pop())
        return self._place(name, self._lstat(name))

    def close(self) -> None:
        """Close every directory the walk holds."""
        while self._stack:
            os.close(self._stack.pop())
        self._names.clear()


class _Missing(Exception):
    """A directory on the way does not exist (a partial walk stops there)."""


def _is_link(name: str, directory: int) -> bool:
    try:
        return stat_module.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


__all__ = ["LISTING", "MAX_HOPS", "Beneath", "Place"]
