"""Local disk, confined to one root directory."""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools.backends import paths
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.backends.ripgrep import RipgrepSearch, find_ripgrep
from langchain_fstools.errors import InvalidPath, OutsideRoot, SpecialFile, VersionConflict

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.backends.search import NativeSearch

TEMP_SUFFIX = ".fstools-tmp"
"""Suffix of the temporary files atomic writes rename into place."""

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_SPECIAL_KINDS = (
    (stat_module.S_ISFIFO, "FIFO"),
    (stat_module.S_ISCHR, "character device"),
    (stat_module.S_ISBLK, "block device"),
    (stat_module.S_ISSOCK, "socket"),
)


def _kind_of(mode: int) -> EntryKind:
    if stat_module.S_ISREG(mode):
        return EntryKind.FILE
    if stat_module.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    return EntryKind.SPECIAL


def _special_name(mode: int) -> str:
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), "special file")


def _version(result: os.stat_result) -> str:
    return f"{result.st_mtime_ns:x}-{result.st_size:x}-{result.st_ino:x}"


@contextlib.contextmanager
def _virtual_errors(path: str) -> Iterator[None]:
    """Re-raise OS errors with the virtual path instead of the host path."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None or isinstance(exc, OutsideRoot | SpecialFile | VersionConflict):
            raise
        raise type(exc)(exc.errno, os.strerror(exc.errno), path) from None


class LocalBackend(Backend):
    """Files on local disk under `root_dir`, which the model sees as `/`.

    Every path is resolved on the host (symlinks in any component included) and must
    stay inside the root; a path that would leave it raises `OutsideRoot`, whatever
    route it takes (`..`, a symlinked file or parent directory, a dangling link). Links
    that stay inside the root are followed. Errors carry virtual paths only.

    Writes are atomic: a temporary file in the same directory is written, fsynced,
    given the old file's permission bits, and renamed over the target; a writer killed
    midway leaves the old content. Devices, FIFOs and sockets are never opened.

    A process that swaps a directory for a symlink between the check and the open can
    still win that race (reads open with `O_NOFOLLOW` on the last component only);
    the agent's own tools cannot create symlinks.

    Args:
        root_dir: The workspace directory. It must exist.

    Example:
        ```python
        from langchain_fstools import FileToolkit, LocalBackend

        tools = FileToolkit(LocalBackend("./repo")).get_tools()
        ```
    """

    kind = "local"

    def __init__(self, root_dir: str | os.PathLike[str], *, use_ripgrep: bool = True) -> None:
        """Confine the backend to `root_dir`; raises ValueError if it is not a directory.

        Args:
            root_dir: The workspace directory.
            use_ripgrep: Search with ripgrep when `rg` is available. Default: True.
        """
        root = os.path.realpath(os.fspath(root_dir))
        if not os.path.isdir(root):
            raise ValueError("root_dir must be an existing directory")
        self._root = root
        self._umask = _current_umask()
        executable = find_ripgrep() if use_ripgrep else None
        self._ripgrep = RipgrepSearch(executable, self.host_path) if executable else None

    def native_search(self) -> NativeSearch | None:
        """The ripgrep search of the root, when `rg` exists and `use_ripgrep` is set."""
        return self._ripgrep

    # ----- path resolution -------------------------------------------------------------

    def host_path(self, path: str) -> Path:
        """Return the confined host path of a virtual path (for fast paths such as rg).

        Never show the result to a model.

        Raises:
            OutsideRoot: the path, with symlinks followed, leaves the root.
        """
        return Path(self._resolve(paths.normalize(path)))

    def _resolve(self, virtual: str) -> str:
        host = os.path.realpath(os.path.join(self._root, virtual.lstrip("/")))
        if not self._inside(host):
            raise OutsideRoot(virtual)
        return host

    def _entry(self, virtual: str) -> str:
        """The host path of the entry itself: parent resolved, last component not."""
        if virtual == paths.ROOT:
            return self._root
        parent = self._resolve(paths.parent(virtual))
        return os.path.join(parent, virtual.rsplit("/", 1)[-1])

    def _inside(self, host: str) -> bool:
        return host == self._root or host.startswith(self._root + os.sep)

    # ----- the core --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`, symlinks inside the root followed."""
        virtual = paths.normalize(path)
        with _virtual_errors(virtual):
            result = os.stat(self._resolve(virtual))
        return self._info(virtual, result)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file; never opens devices, FIFOs or sockets."""
        virtual = paths.normalize(path)
        with _virtual_errors(virtual):
            host = self._resolve(virtual)
            mode = os.stat(host).st_mode
            self._require_regular(virtual, mode)
            descriptor = os.open(host, _READ_FLAGS)
            try:
                self._require_regular(virtual, os.fstat(descriptor).st_mode)
                if size is not None:
                    return os.pread(descriptor, size, start)
                chunks: list[bytes] = []
                offset = start
                while chunk := os.pread(descriptor, 1 << 20, offset):
                    chunks.append(chunk)
                    offset += len(chunk)
                return b"".join(chunks)
            finally:
                os.close(descriptor)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Atomically replace a file's content (temp file, fsync, rename)."""
        virtual = paths.normalize(path)
        if virtual == paths.ROOT:
            raise _error(IsADirectoryError, errno.EISDIR, virtual)
        with _virtual_errors(virtual):
            host = self._resolve(virtual)
            current = _lstat_or_none(host)
            if current is not None and stat_module.S_ISDIR(current.st_mode):
                raise _error(IsADirectoryError, errno.EISDIR, virtual)
            if current is not None:
                self._require_regular(virtual, current.st_mode)
            directory = os.path.dirname(host)
            self._make_parents(virtual, directory)
            mode = stat_module.S_IMODE(current.st_mode) if current else 0o666 & ~self._umask
            descriptor, temp = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(host)}.", suffix=TEMP_SUFFIX
            )
            try:
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
                self._check_version(virtual, host, expected_version)
                os.replace(temp, host)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            _fsync_directory(directory)
            return self._info(virtual, os.stat(host))

    def delete(self, path: str) -> None:
        """Remove a file, a symlink, or an empty directory."""
        virtual = paths.normalize(path)
        if virtual == paths.ROOT:
            raise InvalidPath(virtual, "the workspace root cannot be deleted")
        with _virtual_errors(virtual):
            entry = self._entry(virtual)
            if stat_module.S_ISDIR(os.lstat(entry).st_mode):
                os.rmdir(entry)
            else:
                os.unlink(entry)

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""
        virtual = paths.normalize(path)
        with _virtual_errors(virtual):
            host = self._resolve(virtual)
            existing = _lstat_or_none(host)
            if existing is not None and not stat_module.S_ISDIR(existing.st_mode):
                raise _error(FileExistsError, errno.EEXIST, virtual)
            self._make_parents(virtual, host)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name.

        A symlink is listed as what it points to; one that leads outside the root, or
        nowhere, is listed as a special entry (visible, never opened).
        """
        virtual = paths.normalize(path)
        with _virtual_errors(virtual):
            host = self._resolve(virtual)
            with os.scandir(host) as scan:
                names = sorted(entry.name for entry in scan)
        return [self._listed(paths.join(virtual, name)) for name in names]

    # ----- optional fast paths ---------------------------------------------------------

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename within the root (`os.replace`), creating the destination's parents."""
        origin, target = paths.normalize(source), paths.normalize(destination)
        with _virtual_errors(origin):
            origin_host = self._entry(origin)
            os.lstat(origin_host)
        with _virtual_errors(target):
            target_host = self._entry(target)
            self._make_parents(target, os.path.dirname(target_host))
            os.replace(origin_host, target_host)
            return self._info(target, os.stat(self._resolve(target)))

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, sorted; symlinked directories not entered."""
        for entry in self.list_dir(path):
            yield entry
            if entry.is_dir and not entry.link:
                yield from self.walk(entry.path)

    # ----- helpers -----------------------------------------------------------------------

    def _info(self, virtual: str, result: os.stat_result) -> FileInfo:
        kind = _kind_of(result.st_mode)
        size = result.st_size if kind is EntryKind.FILE else 0
        return FileInfo(virtual, kind, size, result.st_mtime, _version(result))

    def _listed(self, virtual: str) -> FileInfo:
        entry = self._entry(virtual)
        link = os.path.islink(entry)
        try:
            info = self._info(virtual, os.stat(self._resolve(virtual)))
        except (OutsideRoot, OSError):
            result = os.lstat(entry)
            return FileInfo(virtual, EntryKind.SPECIAL, 0, result.st_mtime, _version(result), link)
        return replace(info, link=True) if link else info

    @staticmethod
    def _require_regular(virtual: str, mode: int) -> None:
        if stat_module.S_ISDIR(mode):
            raise _error(IsADirectoryError, errno.EISDIR, virtual)
        if not stat_module.S_ISREG(mode):
            raise SpecialFile(virtual, _special_name(mode))

    def _make_parents(self, virtual: str, directory: str) -> None:
        """`mkdir -p`, reporting a file in the way as POSIX does."""
        missing: list[str] = []
        current = directory
        while not os.path.isdir(current):
            if os.path.lexists(current):
                raise _error(NotADirectoryError, errno.ENOTDIR, virtual)
            missing.append(current)
            current = os.path.dirname(current)
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder)

    def _check_version(self, virtual: str, host: str, expected: str | None) -> None:
        if expected is None:
            return
        current = _lstat_or_none(host)
        actual = _version(os.stat(host)) if current is not None else None
        wanted = None if expected == ABSENT else expected
        if actual != wanted:
            raise VersionConflict(virtual, expected, actual)


def _error(cls: type[OSError], code: int, virtual: str) -> OSError:
    return cls(code, os.strerror(code), virtual)


def _lstat_or_none(host: str) -> os.stat_result | None:
    try:
        return os.lstat(host)
    except FileNotFoundError:
        return None


def _fsync_directory(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _current_umask() -> int:
    """Read the process umask without changing it (Linux), else by set-and-restore."""
    with contextlib.suppress(OSError, ValueError), Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["TEMP_SUFFIX", "LocalBackend"]
