"""The SSH backend's files: SFTP operations on paths confined to the root.

Paths are resolved on the server (`realpath`, with `lstat`/`readlink` for dangling
links and missing components) and must stay inside the root's real path; errors name
virtual paths only. Writes are atomic (see `SSHBackend`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import posixpath
import stat as stat_module
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import asyncssh

from langchain_fstools.backends.modes import kind_of, os_error, require_regular
from langchain_fstools.backends.protocol import ABSENT, EntryKind, FileInfo
from langchain_fstools.backends.ssh.connection import _LOST, _Connection
from langchain_fstools.backends.temporaries import temporary_name
from langchain_fstools.core import paths
from langchain_fstools.errors import InvalidPath, OutsideRoot, VersionConflict

if TYPE_CHECKING:
    from collections.abc import Iterator

_LINK_HOPS = 40
"""Symbolic links followed while resolving one path (Linux's MAXSYMLINKS)."""


class _Files(_Connection):
    """Path resolution and the SFTP file operations."""

    # ----- path resolution -----------------------------------------------------------------

    def _joined(self, virtual: str) -> str:
        return self._root if virtual == paths.ROOT else self._root.rstrip("/") + virtual

    def _confine(self, real: str, virtual: str) -> str:
        if real != self._root and not real.startswith(self._root.rstrip("/") + "/"):
            raise OutsideRoot(virtual)
        return real

    async def _resolve(self, virtual: str) -> str:
        """The real remote path of a virtual path (which may not exist), confined."""
        sftp = await self._session()
        real = await _real(sftp, self._joined(virtual), 0)
        return self._confine(real, virtual)

    async def _virtual_of(self, virtual: str) -> str:
        real = await self._resolve(virtual)
        return paths.ROOT if real == self._root else real[len(self._root.rstrip("/")) :]

    async def _entry(self, virtual: str) -> str:
        """The remote path of the entry itself: parent resolved, last component not."""
        if virtual == paths.ROOT:
            return self._root
        parent, name = virtual.rsplit("/", 1)
        return posixpath.join(await self._resolve(parent or paths.ROOT), name)

    async def _missing(self, virtual: str, real: str) -> OSError:
        """Why `real` does not exist: ENOENT, or ENOTDIR when a parent is a file."""
        sftp = await self._session()
        current = real
        while current not in (self._root, "/"):
            current = posixpath.dirname(current)
            try:
                attrs = await sftp.stat(current)
            except asyncssh.SFTPNoSuchFile:
                continue
            if not stat_module.S_ISDIR(attrs.permissions or 0):
                return os_error(NotADirectoryError, errno.ENOTDIR, virtual)
            break
        return os_error(FileNotFoundError, errno.ENOENT, virtual)

    async def _attrs(self, virtual: str, real: str) -> asyncssh.SFTPAttrs:
        """`stat` of a resolved path, with the errors a local `stat` would give."""
        sftp = await self._session()
        try:
            with _virtual_errors(virtual):
                return await sftp.stat(real)
        except FileNotFoundError:
            raise await self._missing(virtual, real) from None

    async def _attrs_or_none(self, virtual: str, real: str) -> asyncssh.SFTPAttrs | None:
        try:
            return await self._attrs(virtual, real)
        except FileNotFoundError:
            return None

    # ----- the operations ------------------------------------------------------------------

    async def _stat(self, virtual: str) -> FileInfo:
        return _info(virtual, await self._attrs(virtual, await self._resolve(virtual)))

    async def _exists(self, virtual: str) -> bool:
        try:
            await self._stat(virtual)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    async def _read(self, virtual: str, start: int, size: int | None) -> bytes:
        real = await self._resolve(virtual)
        attrs = await self._attrs(virtual, real)
        require_regular(virtual, attrs.permissions or 0)
        if start < 0 or (size is not None and size < 0):
            raise os_error(OSError, errno.EINVAL, virtual)
        wanted = max((attrs.size or 0) - start, 0)
        wanted = wanted if size is None else min(size, wanted)
        if not wanted:
            return b""
        sftp = await self._session()
        with _virtual_errors(virtual):
            async with sftp.open(real, "rb") as handle:
                data: bytes = await handle.read(wanted, start)
        return data

    async def _write(self, virtual: str, data: bytes, expected: str | None) -> FileInfo:
        if virtual == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, virtual)
        sftp = await self._session()
        real = await self._resolve(virtual)
        current = await self._attrs_or_none(virtual, real)
        if current is not None:
            require_regular(virtual, current.permissions or 0)
        directory, name = posixpath.split(real)
        await self._make_parents(virtual, directory, NotADirectoryError)
        temp = posixpath.join(directory, temporary_name(name))
        stamp = max(int(time.time()), (current.mtime or 0) + 1 if current else 0)
        mode = (current.permissions or 0) & 0o7777 if current else None
        try:
            with _virtual_errors(virtual):
                flags = asyncssh.FXF_WRITE | asyncssh.FXF_CREAT | asyncssh.FXF_EXCL
                private = asyncssh.SFTPAttrs(permissions=0o600) if current else asyncssh.SFTPAttrs()
                async with sftp.open(temp, flags, private, encoding=None) as handle:
                    await handle.write(data, 0)
                    await handle.fsync()
                    await handle.setstat(
                        asyncssh.SFTPAttrs(permissions=mode, atime=stamp, mtime=stamp)
                    )
                    written = await handle.stat()  # ours, whatever is renamed over it later
                await self._check_version(virtual, real, expected)
                await sftp.posix_rename(temp, real)
        except BaseException:
            with contextlib.suppress(asyncssh.Error, OSError):
                await sftp.remove(temp)
            raise
        return _info(virtual, written)

    async def _check_version(self, virtual: str, real: str, expected: str | None) -> None:
        if expected is None:
            return
        current = await self._attrs_or_none(virtual, real)
        actual = _version(current) if current is not None else None
        if actual != (None if expected == ABSENT else expected):
            raise VersionConflict(virtual, expected, actual)

    async def _make_parents(self, virtual: str, directory: str, blocked: type[OSError]) -> None:
        """`mkdir -p` of a resolved remote directory inside the root.

        Raises:
            OSError: `blocked` (errno to match), naming `virtual`, if a component is
                not a directory.
        """
        sftp = await self._session()
        code = errno.EEXIST if blocked is FileExistsError else errno.ENOTDIR
        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
            if stat_module.S_ISDIR((await sftp.stat(directory)).permissions or 0):
                return
        current = self._root
        for part in directory[len(self._root) :].strip("/").split("/"):
            current = posixpath.join(current, part)
            try:
                await sftp.mkdir(current)
            except asyncssh.SFTPError as exc:
                if isinstance(exc, _LOST):
                    raise
                try:
                    attrs = await sftp.stat(current)
                except asyncssh.SFTPNoSuchFile:
                    raise os_error(blocked, code, virtual) from None
                if not stat_module.S_ISDIR(attrs.permissions or 0):
                    raise os_error(blocked, code, virtual) from None

    async def _delete(self, virtual: str) -> None:
        if virtual == paths.ROOT:
            raise InvalidPath(virtual, "the workspace root cannot be deleted")
        sftp = await self._session()
        entry = await self._entry(virtual)
        try:
            with _virtual_errors(virtual):
                own = await sftp.lstat(entry)
        except FileNotFoundError:
            raise await self._missing(virtual, entry) from None
        if not stat_module.S_ISDIR(own.permissions or 0):
            with _virtual_errors(virtual):
                await sftp.remove(entry)
            return
        try:
            await sftp.rmdir(entry)
        except asyncssh.SFTPFailure:
            if await sftp.listdir(entry) != [".", ".."]:
                raise os_error(OSError, errno.ENOTEMPTY, virtual) from None
            raise os_error(OSError, errno.EIO, virtual) from None
        except asyncssh.SFTPError as exc:
            if isinstance(exc, _LOST):
                raise
            raise _osos_error(exc, virtual) from None

    async def _mkdir(self, virtual: str) -> None:
        real = await self._resolve(virtual)
        try:
            existing = await self._attrs_or_none(virtual, real)
        except NotADirectoryError:
            existing = None  # a parent is a file: reported below
        if existing is not None and not stat_module.S_ISDIR(existing.permissions or 0):
            raise os_error(FileExistsError, errno.EEXIST, virtual)
        await self._make_parents(virtual, real, FileExistsError)

    async def _list(self, virtual: str) -> list[FileInfo]:
        real = await self._resolve(virtual)
        attrs = await self._attrs(virtual, real)
        if not stat_module.S_ISDIR(attrs.permissions or 0):
            raise os_error(NotADirectoryError, errno.ENOTDIR, virtual)
        sftp = await self._session()
        with _virtual_errors(virtual):
            names = await sftp.readdir(real)
        entries = sorted(
            (name for name in names if name.filename not in (".", "..")),
            key=lambda name: str(name.filename),
        )
        described = await asyncio.gather(
            *(self._listed(paths.join(virtual, str(e.filename)), real, e.attrs) for e in entries)
        )
        return list(described)

    async def _listed(self, virtual: str, directory: str, own: asyncssh.SFTPAttrs) -> FileInfo:
        """An entry as listed: a symlink as its target with `link` set, or special."""
        if not stat_module.S_ISLNK(own.permissions or 0):
            return _info(virtual, own)
        sftp = await self._session()
        link = posixpath.join(directory, virtual.rsplit("/", 1)[1])
        try:
            target = await sftp.stat(self._confine(await _real(sftp, link, 0), virtual))
        except (OutsideRoot, asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied):
            mtime = float(own.mtime or 0)
            return FileInfo(virtual, EntryKind.SPECIAL, 0, mtime, _version(own), link=True)
        return replace(_info(virtual, target), link=True)

    async def _move(self, origin: str, target: str) -> FileInfo:
        sftp = await self._session()
        origin_entry = await self._entry(origin)
        try:
            with _virtual_errors(origin):
                await sftp.lstat(origin_entry)
        except FileNotFoundError:
            raise await self._missing(origin, origin_entry) from None
        target_entry = await self._entry(target)
        if origin != target:
            if paths.is_within(target, origin):
                raise os_error(OSError, errno.EINVAL, target)
            await self._make_parents(target, posixpath.dirname(target_entry), NotADirectoryError)
            with _virtual_errors(target):
                await sftp.posix_rename(origin_entry, target_entry)
        own = await sftp.lstat(target_entry)
        return await self._listed(target, posixpath.dirname(target_entry), own)


async def _real(sftp: asyncssh.SFTPClient, path: str, hops: int) -> str:
    """Resolve `path` on the server like `realpath`, letting the last part be missing.

    The server's `realpath` does most of the work; when it fails (a missing parent, a
    dangling link), the parent is resolved and a link in the last part followed here.
    """
    try:
        return str(await sftp.realpath(path))
    except asyncssh.SFTPNoSuchFile:
        pass
    parent, name = posixpath.split(path)
    if not name or parent == path:
        return path
    real_parent = await _real(sftp, parent, hops)
    candidate = posixpath.join(real_parent, name)
    try:
        attrs = await sftp.lstat(candidate)
    except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied):
        return candidate
    if stat_module.S_ISLNK(attrs.permissions or 0) and hops < _LINK_HOPS:
        target = str(await sftp.readlink(candidate))
        return await _real(sftp, posixpath.join(real_parent, target), hops + 1)
    return candidate


@contextlib.contextmanager
def _virtual_errors(virtual: str) -> Iterator[None]:
    """Re-raise an SFTP status as the matching `OSError`, naming the virtual path only."""
    try:
        yield
    except asyncssh.SFTPError as exc:
        if isinstance(exc, _LOST):
            raise
        raise _osos_error(exc, virtual) from None


def _osos_error(exc: asyncssh.SFTPError, virtual: str) -> OSError:
    if isinstance(exc, asyncssh.SFTPNoSuchFile):
        return os_error(FileNotFoundError, errno.ENOENT, virtual)
    if isinstance(exc, asyncssh.SFTPPermissionDenied):
        return os_error(PermissionError, errno.EACCES, virtual)
    if isinstance(exc, asyncssh.SFTPFileAlreadyExists):
        return os_error(FileExistsError, errno.EEXIST, virtual)
    return os_error(OSError, errno.EIO, virtual)


def _info(virtual: str, attrs: asyncssh.SFTPAttrs) -> FileInfo:
    mode = attrs.permissions or 0
    kind = kind_of(mode)
    size = (attrs.size or 0) if kind is EntryKind.FILE else 0
    return FileInfo(virtual, kind, size, float(attrs.mtime or 0), _version(attrs))


def _version(attrs: asyncssh.SFTPAttrs) -> str:
    """Whole-second mtime and size: all SFTP version 3 tells (see the class docstring)."""
    return f"{attrs.mtime or 0:x}-{attrs.size or 0:x}"
