"""A directory on a remote host, over SSH: files by SFTP, commands by exec channels."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import getpass
import io
import logging
import posixpath
import secrets
import shlex
import signal
import socket
import stat as stat_module
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar

import asyncssh

from langchain_fstools.backends.local import TEMP_SUFFIX
from langchain_fstools.backends.loop import LoopThread
from langchain_fstools.backends.modes import kind_of, os_error, require_regular
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.backends.ssh_search import HostPython, command, probe, program_input
from langchain_fstools.core import paths
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.errors import (
    InvalidPath,
    OutsideRoot,
    SSHAuthenticationFailed,
    SSHConnectionFailed,
    SSHHostKeyRejected,
    VersionConflict,
)
from langchain_fstools.search.contract import FileHits, InvalidPattern, ListedFile, Listing
from langchain_fstools.search.ripgrep import (
    COMMON_OPTIONS,
    first_error_line,
    parent_ignores,
    parse_content,
    parse_summaries,
    query_options,
    split_records,
    type_filter,
)
from langchain_fstools.shell.environment import CommandEnv, InheritEnv
from langchain_fstools.shell.output import OutputBuffer, reporter_if_listening

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence

    from langchain_fstools.search.contract import GrepRequest, NativeSearch

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_KNOWN_HOSTS: Final = "~/.ssh/known_hosts"
"""Where host keys are looked up unless `known_hosts` says otherwise."""

_LINK_HOPS = 40
"""Symbolic links followed while resolving one path (Linux's MAXSYMLINKS)."""

_STAT_BATCH = 512
"""SFTP stat requests in flight at once when collecting search results' mtimes."""

_COMMAND_CHANNELS = 6
"""Commands run at once per connection; the rest wait. OpenSSH allows 10 channels
(`MaxSessions`), one is the SFTP session, and timeouts need room for `kill`."""

_DRAIN_SECONDS = 1.0
"""How long output is still collected after a timed-out command was killed."""

_LOST = (
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
    asyncssh.SFTPConnectionLost,
    asyncssh.SFTPNoConnection,
    BrokenPipeError,
    ConnectionResetError,
)
"""What a dropped connection raises in the middle of an operation."""


# The command runs in a new session (so its own process group, id = its pid) started
# in the background of a small POSIX shell script; its first output line is that id,
# read off by the client so a timeout can kill the whole group from a second channel.
_INNER = 'printf "%s\\n" "$$"; exec sh -c "$1"'
# `wait`'s stderr is dropped so no shell reports the killed job in the output.
_WRAPPER = (
    'cd -- {cwd} || exit 1\nsetsid sh -c {inner} fstools {command} &\nwait "$!" 2>/dev/null\n'
)
# A command given input: a background job's stdin is /dev/null, so the channel's is
# handed over on descriptor 3.
_WRAPPER_WITH_INPUT = _WRAPPER.replace("&\n", "<&3 3<&- &\n").replace("\n", "\nexec 3<&0\n", 1)


class SSHBackend(Backend):
    """Files under `root_dir` on a remote host, which the model sees as `/`, over SSH.

    Files travel over one SFTP session; `execute` and the ripgrep fast path run over
    exec channels of the same connection. The connection is opened on first use, kept,
    and reopened by the next call after it drops. Every operation is a coroutine run
    on a private event-loop thread owned by the backend: the sync methods block on it,
    the async twins await it without blocking the caller's loop. Call `close()` (or use
    the backend as a context manager) to disconnect and stop the thread.

    Confinement: `root_dir` and every path are resolved on the server (SFTP
    `realpath`, with `lstat`/`readlink` for dangling links and missing components), and
    must stay inside the root's real path, or `OutsideRoot` is raised: `..`, symlinks
    (files, parents, chains, dangling links) that lead outside are refused; links that
    stay inside are followed. Errors name virtual paths only, never a remote path.

    Writes are atomic: a hidden `*.fstools-tmp` file next to the target is written,
    fsynced (`fsync@openssh.com`), given the old file's permission bits and renamed
    over the target with `posix-rename@openssh.com`. SFTP (version 3, as OpenSSH
    speaks it) gives whole-second mtimes and no inode, so the version token is mtime
    and size, and each write stamps an mtime at least one second later than the
    replaced file's: quick writes never share a token, but a burst of writes moves the
    mtime ahead of the clock, and a change made outside the tools within the same
    second and at the same size goes unnoticed. A conditional write compares versions
    just before the rename.

    Search: when the server has ripgrep (`rg_path`), glob and grep run it remotely with
    the local backend's command line and parsing, so results are identical. Otherwise,
    when it has Python 3.11+ (`python_path`), the tools' own engine is sent to it and
    walks the server's disk (see `backends.ssh_search`). With neither, the engine
    walks the tree over SFTP, call by call. Remote `grep`/`find` cannot apply nested
    `.gitignore` rules exactly, so they are never used. What the server has is asked
    once per connection.

    Commands (`execute`) run with the root as working directory through the login
    shell, which must be POSIX (`sh`, `bash`, `dash`, `zsh`), with `setsid` installed
    (util-linux): each command gets its own session, and at the deadline its whole
    process group is killed over a second channel. Commands get the environment the
    server gives the session (e.g. what sshd and `~/.ssh/environment` set), plus
    `env`; `inherit_env` narrows what passes through (see `shell.environment`).

    Host keys are checked against `known_hosts` (default `~/.ssh/known_hosts`);
    `known_hosts=None` turns checking off and must be chosen explicitly.

    Args:
        host: Host name or address of the SSH server.
        root_dir: The workspace directory on the server (absolute, or relative to the
            login directory). It must exist.
        port: The server's port. Default: 22.
        username: The user to log in as. Default: the local user name.
        client_keys: Private key files (or asyncssh keys) to offer. Default: the usual
            files in `~/.ssh` (`id_ed25519`, `id_ecdsa`, `id_rsa`, ...).
        passphrase: Passphrase of encrypted `client_keys`. Default: None.
        use_agent: Also offer the keys of the SSH agent at `$SSH_AUTH_SOCK`.
            Default: True.
        known_hosts: The known_hosts file, or None to accept any host key.
            Default: `~/.ssh/known_hosts` (a missing file trusts no host).
        use_ripgrep: Search with the server's ripgrep when it has one. Default: True.
        rg_path: Name or path of `rg` on the server. Default: `rg` (on the remote PATH).
        use_python: Search with the server's Python when it has no ripgrep.
            Default: True.
        python_path: Name or path of Python 3 on the server. Default: `python3`.
        connect_timeout: Seconds allowed to connect and log in. Default: 15.
        env: Variables set for every command, over inherited ones. Default: none.
        inherit_env: Which of the session's variables commands get: True (all), False
            (none) or a list of names. Default: True.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, SSHBackend

        backend = SSHBackend("build-box", username="dev", root_dir="/srv/repo")
        agent = create_agent(model, middleware=[FilesystemMiddleware(backend=backend)])
        ```
    """

    kind = "ssh"
    supports_execute = True

    def __init__(
        self,
        host: str,
        *,
        root_dir: str,
        port: int = 22,
        username: str | None = None,
        client_keys: Sequence[str | os.PathLike[str] | asyncssh.SSHKey] | None = None,
        passphrase: str | None = None,
        use_agent: bool = True,
        known_hosts: str | os.PathLike[str] | None = DEFAULT_KNOWN_HOSTS,
        use_ripgrep: bool = True,
        rg_path: str = "rg",
        use_python: bool = True,
        python_path: str = "python3",
        connect_timeout: float = 15.0,
        env: Mapping[str, str] | None = None,
        inherit_env: InheritEnv = True,
    ) -> None:
        """Remember how to connect; nothing is opened until the first call.

        Raises:
            ValueError: `root_dir` is empty, or `env`/`inherit_env` are malformed.
        """
        if not root_dir:
            raise ValueError("root_dir must name a directory on the server")
        self._env = CommandEnv.of(env, inherit_env)
        self._host = host
        self._port = port
        self._username = username or getpass.getuser()
        self._root_dir = root_dir
        self._client_keys = (
            None
            if client_keys is None
            else [
                k if isinstance(k, asyncssh.SSHKey) else Path(k).expanduser() for k in client_keys
            ]
        )
        self._passphrase = passphrase
        self._use_agent = use_agent
        self._known_hosts = known_hosts
        self._use_ripgrep = use_ripgrep
        self._rg_path = rg_path
        self._use_python = use_python
        self._python_path = python_path
        self._connect_timeout = connect_timeout
        self._loop = LoopThread(f"fstools-ssh-{host}")
        # Touched on the private loop only:
        self._connection: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._root = ""
        self._connecting: asyncio.Lock | None = None
        self._ever_connected = False
        self._has_ripgrep: bool | None = None
        self._has_python: bool | None = None
        self._python = python_path  # the interpreter the probe found
        self._command_slots: asyncio.Semaphore | None = None

    # ----- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Disconnect and stop the backend's event-loop thread (reopened on next use)."""
        with contextlib.suppress(RuntimeError):
            self._loop.run(self._drop())
        self._loop.close()
        self._connecting = self._command_slots = None  # bound to the stopped loop

    async def aclose(self) -> None:
        """Async `close`."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        """Use the backend in a `with` block that closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()

    # ----- capabilities ------------------------------------------------------------------

    def native_search(self) -> NativeSearch | None:
        """The server's ripgrep, else the engine run by the server's Python, else None.

        Each is tried only if `use_ripgrep` / `use_python` allow it. Whether it runs is
        asked once per connection (one round trip) and remembered.
        """
        if self._use_ripgrep and self._has_ripgrep is None:
            self._has_ripgrep = self._call(self._probe_ripgrep())
        if self._use_ripgrep and self._has_ripgrep:
            return _RemoteRipgrep(self._list_with_ripgrep, self._grep_with_ripgrep)
        if self._use_python and self._has_python is None:
            self._python = self._python_path
            found = probe(self._on_host, self._connect_timeout)
            self._python = found or self._python_path
            self._has_python = found is not None
        if self._use_python and self._has_python:
            return HostPython(self._on_host, self, self._python_broken)
        return None

    # ----- the core, sync and async --------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The virtual path of what `path` reaches: symlinks followed inside the root."""
        return self._call(self._virtual_of(paths.normalize(path)))

    async def aresolve(self, path: str) -> str:
        """Async `resolve`."""
        return await self._acall(self._virtual_of(paths.normalize(path)))

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`; symlinks inside the root report their target."""
        return self._call(self._stat(paths.normalize(path)))

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await self._acall(self._stat(paths.normalize(path)))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file, whole or `size` bytes from `start`.

        Devices, FIFOs and sockets are refused from their attributes, never opened.
        """
        return self._call(self._read(paths.normalize(path), start, size))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await self._acall(self._read(paths.normalize(path), start, size))

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Atomically replace a file's content: temporary file, fsync, posix-rename."""
        return self._call(self._write(paths.normalize(path), data, expected_version))

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return await self._acall(self._write(paths.normalize(path), data, expected_version))

    def delete(self, path: str) -> None:
        """Remove a file, a symlink (never its target), or an empty directory."""
        self._call(self._delete(paths.normalize(path)))

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await self._acall(self._delete(paths.normalize(path)))

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""
        self._call(self._mkdir(paths.normalize(path)))

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await self._acall(self._mkdir(paths.normalize(path)))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name; links listed as their targets.

        A link that leads outside the root, or nowhere, is a special entry.
        """
        return self._call(self._list(paths.normalize(path)))

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return await self._acall(self._list(paths.normalize(path)))

    def exists(self, path: str) -> bool:
        """Whether anything exists at `path`."""
        return self._call(self._exists(paths.normalize(path)))

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        return await self._acall(self._exists(paths.normalize(path)))

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename a file or directory with `posix-rename`, creating the target's parents."""
        return self._call(self._move(paths.normalize(source), paths.normalize(destination)))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await self._acall(self._move(paths.normalize(source), paths.normalize(destination)))

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, sorted; symlinked directories not entered."""
        for entry in self.list_dir(path):
            yield entry
            if entry.is_dir and not entry.link:
                yield from self.walk(entry.path)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run `command` on the server in the workspace root (see the class docstring)."""
        return self._call(self._execute(command, timeout, output_limit))

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced on the server
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`."""
        return await self._acall(self._execute(command, timeout, output_limit))

    # ----- running operations on the private loop ------------------------------------------

    def _call(self, operation: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(self._guarded(operation))

    async def _acall(self, operation: Coroutine[Any, Any, T]) -> T:
        return await self._loop.submit(self._guarded(operation))

    async def _guarded(self, operation: Coroutine[Any, Any, T]) -> T:
        """Run one operation; a dropped connection becomes `SSHConnectionFailed`."""
        try:
            return await operation
        except _LOST:
            logger.debug("lost the connection to %s; the next call reconnects", self._host)
            await self._drop()
            raise SSHConnectionFailed(self._host, "the connection was lost") from None

    async def _session(self) -> asyncssh.SFTPClient:
        """The SFTP session, connecting (again) if there is none or it dropped."""
        if self._sftp is not None and self._connection and not self._connection.is_closed():
            return self._sftp
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._sftp is None or self._connection is None or self._connection.is_closed():
                if self._connection is not None or self._ever_connected:
                    logger.debug("reconnecting to %s: the connection was closed", self._host)
                await self._drop()
                self._connection, self._sftp, self._root = await self._connect()
                self._ever_connected = True
                logger.debug("connected to %s:%s", self._host, self._port)
        return self._sftp

    async def _connect(self) -> tuple[asyncssh.SSHClientConnection, asyncssh.SFTPClient, str]:
        options: dict[str, Any] = {
            "port": self._port,
            "username": self._username,
            "known_hosts": _known_hosts(self._known_hosts),
            "connect_timeout": self._connect_timeout,
            "passphrase": self._passphrase,
        }
        if self._client_keys is not None:
            options["client_keys"] = [
                key if isinstance(key, asyncssh.SSHKey) else str(key) for key in self._client_keys
            ]
        if not self._use_agent:
            options["agent_path"] = None
        try:
            connection = await asyncssh.connect(self._host, **options)
        except asyncssh.HostKeyNotVerifiable:
            raise SSHHostKeyRejected(self._host) from None
        except asyncssh.PermissionDenied:
            raise SSHAuthenticationFailed(self._host, self._username) from None
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            raise SSHConnectionFailed(self._host, _connect_reason(exc)) from None
        try:
            sftp = await connection.start_sftp_client(path_errors="surrogateescape")
            root = await sftp.realpath(self._root_dir)
            attrs = await sftp.stat(root)
        except asyncssh.SFTPError as exc:
            connection.close()
            reason = "no SFTP service" if isinstance(exc, _LOST) else "root_dir is missing"
            raise SSHConnectionFailed(self._host, reason) from None
        except (asyncssh.Error, OSError):
            connection.close()
            raise SSHConnectionFailed(self._host, "no SFTP service") from None
        if not stat_module.S_ISDIR(attrs.permissions or 0):
            connection.close()
            raise SSHConnectionFailed(self._host, "root_dir is not a directory")
        return connection, sftp, root

    async def _drop(self) -> None:
        connection, self._connection, self._sftp = self._connection, None, None
        self._has_ripgrep = self._has_python = None  # another connection may differ
        if connection is not None:
            connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.wait_closed(), 2)

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
        temp = posixpath.join(directory, _temp_name(name))
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
                await self._check_version(virtual, real, expected)
                await sftp.posix_rename(temp, real)
        except BaseException:
            with contextlib.suppress(asyncssh.Error, OSError):
                await sftp.remove(temp)
            raise
        return _info(virtual, await self._attrs(virtual, real))

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

    # ----- commands ------------------------------------------------------------------------

    async def _execute(self, command: str, seconds: float, output_limit: int) -> ExecutionResult:
        buffer = OutputBuffer(output_limit)
        reporter = reporter_if_listening()
        output = buffer.add
        if reporter is not None:

            def output(data: bytes, *, stderr: bool = False) -> None:
                buffer.add(data, stderr=stderr)
                reporter.add(data, stderr=stderr)

        await self._session()
        try:
            code, timed_out = await self._run(
                command, self._root, seconds, output, environment=self._env
            )
        finally:
            if reporter is not None:
                reporter.flush()
        return ExecutionResult(buffer.text(), code, timed_out, buffer.dropped_bytes)

    async def _run(
        self,
        command: str,
        cwd: str,
        seconds: float,
        output: Callable[..., None],
        *,
        environment: CommandEnv | None = None,
        stdin: bytes | None = None,
    ) -> tuple[int | None, bool]:
        """Run `command` in `cwd` in its own process group; kill the group after `seconds`.

        Args:
            command: A POSIX shell command line.
            cwd: Remote working directory.
            seconds: Time allowed before the group is killed.
            output: Called as `output(data, stderr=...)` with each chunk, in order.
            environment: The command's environment. Default: the session's.
            stdin: The command's input. Default: none (`/dev/null`).

        Returns:
            The exit status (128 + signal if killed by one; None on timeout) and
            whether the time ran out.
        """
        if self._command_slots is None:
            self._command_slots = asyncio.Semaphore(_COMMAND_CHANNELS)
        async with self._command_slots:
            return await self._run_now(command, cwd, seconds, output, environment, stdin)

    async def _run_now(  # noqa: PLR0917 - `_run`'s arguments
        self,
        command: str,
        cwd: str,
        seconds: float,
        output: Callable[..., None],
        environment: CommandEnv | None,
        stdin: bytes | None,
    ) -> tuple[int | None, bool]:
        await self._session()
        connection = self._connection
        if connection is None:
            raise SSHConnectionFailed(self._host, "the connection was lost")
        wrapper = (_WRAPPER if stdin is None else _WRAPPER_WITH_INPUT).format(
            cwd=shlex.quote(cwd), inner=shlex.quote(_INNER), command=shlex.quote(command)
        )
        prefix = environment.shell_prefix() if environment is not None else ""
        script = f"exec {prefix}sh -c {shlex.quote(wrapper)}"  # POSIX sh, any login shell
        try:
            process = await connection.create_process(script, encoding=None)
        except asyncssh.ChannelOpenError:  # e.g. the server's MaxSessions: keep the connection
            raise SSHConnectionFailed(self._host, "the server refused a new channel") from None
        if stdin:
            process.stdin.write(stdin)
        process.stdin.write_eof()
        group = _GroupId()
        collecting = asyncio.ensure_future(_collect(process, group, output))
        finished = False
        try:
            await asyncio.wait_for(asyncio.shield(collecting), max(seconds, 0.0))
            finished = True
        except TimeoutError:
            pass
        finally:
            if not finished:  # the deadline, or the caller gave up: end the whole group
                await self._kill(connection, group.value)
                with contextlib.suppress(TimeoutError, *_LOST):
                    await asyncio.wait_for(asyncio.shield(collecting), _DRAIN_SECONDS)
                collecting.cancel()
                process.close()
        return (_exit_code(process), False) if finished else (None, True)

    @staticmethod
    async def _kill(connection: asyncssh.SSHClientConnection, group: int | None) -> None:
        if group is None:
            return
        with contextlib.suppress(asyncssh.Error, OSError):
            await connection.run(f"kill -KILL -- -{group}", check=False)

    # ----- search with the server's Python ----------------------------------------------------

    def _on_host(
        self, build: Callable[[str], dict[str, Any]], seconds: float
    ) -> tuple[bytes, bool]:
        """Run the search program (`ssh_search.HostRun`): its stdout, and if it timed out."""
        return self._call(self._run_program(build, seconds))

    async def _run_program(
        self, build: Callable[[str], dict[str, Any]], seconds: float
    ) -> tuple[bytes, bool]:
        await self._session()
        out = bytearray()

        def take(data: bytes, *, stderr: bool = False) -> None:
            if not stderr:  # a crash's traceback names host paths: never kept
                out.extend(data)

        request = program_input(build(self._root))
        # Run from "/": nothing in the workspace is on the path of the host's Python.
        _, timed_out = await self._run(command(self._python), "/", seconds, take, stdin=request)
        return bytes(out), timed_out

    def _python_broken(self) -> None:
        self._has_python = False

    # ----- search with the server's ripgrep --------------------------------------------------

    async def _probe_ripgrep(self) -> bool:
        await self._session()
        found: list[bytes] = []
        code, _ = await self._run(
            f"{shlex.quote(self._rg_path)} --version",
            self._root,
            self._connect_timeout,
            lambda data, stderr: found.append(data) if not stderr else None,
        )
        return code == 0 and b"ripgrep" in b"".join(found)

    def _list_with_ripgrep(
        self, directory: str, globs: tuple[tuple[str, ...], ...], deadline: float
    ) -> Listing:
        return self._call(self._rg_list(directory, globs, deadline))

    def _grep_with_ripgrep(
        self, request: GrepRequest, deadline: float
    ) -> tuple[list[FileHits], bool]:
        return self._call(self._rg_grep(request, deadline))

    async def _rg_output(
        self, arguments: list[str], cwd: str, deadline: float, separator: bytes
    ) -> tuple[bytes, bytes, int | None, bool]:
        out, err = bytearray(), bytearray()

        def take(data: bytes, *, stderr: bool = False) -> None:
            (err if stderr else out).extend(data)

        command = shlex.join([self._rg_path, *arguments])
        code, timed_out = await self._run(command, cwd, deadline - time.monotonic(), take)
        data = bytes(out)
        if timed_out:  # the last record may be cut short
            data = data[: data.rfind(separator) + 1]
        return data, bytes(err), code, timed_out

    async def _rg_list(
        self, directory: str, globs: tuple[tuple[str, ...], ...], deadline: float
    ) -> Listing:
        cwd = await self._resolve(directory)
        arguments = [
            "--files",
            "--null",
            *COMMON_OPTIONS,
            *parent_ignores(directory),
            *type_filter(globs),
        ]
        data, _, _, timed_out = await self._rg_output(arguments, cwd, deadline, b"\0")
        keep = compile_glob_groups(globs)
        relatives = [
            relative
            for raw in split_records(io.BytesIO(data), b"\0")
            if keep(relative := raw.decode("utf-8", "surrogateescape"))
        ]
        mtimes = await self._mtimes([posixpath.join(cwd, relative) for relative in relatives])
        found = [
            ListedFile(paths.join(directory, relative), mtime)
            for relative, mtime in zip(relatives, mtimes, strict=True)
            if mtime is not None
        ]
        return Listing(found, not timed_out)

    async def _rg_grep(self, request: GrepRequest, deadline: float) -> tuple[list[FileHits], bool]:
        target = await self._resolve(request.directory)
        single_file = stat_module.S_ISREG(
            (await self._attrs(request.directory, target)).permissions or 0
        )
        cwd = posixpath.dirname(target) if single_file else target
        arguments = [*COMMON_OPTIONS, *parent_ignores(request.directory), *query_options(request)]
        if single_file:
            arguments += ["--", posixpath.basename(target)]
        base = paths.parent(request.directory) if single_file else request.directory
        wanted = compile_glob_groups(() if single_file else request.globs)
        separator = b"\0" if request.mode == "files_with_matches" else b"\n"
        data, errors, code, timed_out = await self._rg_output(arguments, cwd, deadline, separator)
        found: list[FileHits] = []

        def keep(hits: FileHits) -> None:
            if wanted(hits.path[len(base) :].lstrip("/")):
                found.append(hits)

        stream = io.BytesIO(data)
        if request.mode == "content":
            delivered = parse_content(stream, base, _unknown_mtime, keep)
        else:
            delivered = parse_summaries(stream, request, base, _unknown_mtime, keep)
        if code == 2 and not delivered and errors.strip():  # noqa: PLR2004 - rg's error status
            raise InvalidPattern(first_error_line(errors.decode("utf-8", "replace")))
        remote = [posixpath.join(cwd, hits.path[len(base) :].lstrip("/")) for hits in found]
        results: list[FileHits] = []
        for hits, mtime in zip(found, await self._mtimes(remote), strict=True):
            if mtime is not None:
                hits.mtime = mtime
            elif request.mode != "content":  # as local rg: a vanished file is dropped
                continue
            results.append(hits)
        return results, not timed_out

    async def _mtimes(self, remote_paths: list[str]) -> list[float | None]:
        """Modification times of many remote files, pipelined over the SFTP session."""
        sftp = await self._session()

        async def one(path: str) -> float | None:
            try:
                return float((await sftp.stat(path)).mtime or 0)
            except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied):
                return None

        mtimes: list[float | None] = []
        for start in range(0, len(remote_paths), _STAT_BATCH):
            batch = remote_paths[start : start + _STAT_BATCH]
            mtimes += await asyncio.gather(*(one(path) for path in batch))
        return mtimes


@dataclass(frozen=True)
class _RemoteRipgrep:
    """`NativeSearch` adapter: runs the backend's remote ripgrep, sinks in the caller."""

    lister: Callable[[str, tuple[tuple[str, ...], ...], float], Listing]
    searcher: Callable[[GrepRequest, float], tuple[list[FileHits], bool]]

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """`rg --files` on the server, with mtimes from SFTP (every file: `newest` unused)."""
        del newest, excluded
        return self.lister(directory, globs, deadline)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Run rg on the server; each file's hits are handed to `sink` in this thread."""
        found, complete = self.searcher(request, deadline)
        for hits in found:
            sink(hits)
        return complete


class _GroupId:
    """Reads the process-group id line off the front of a command's stdout."""

    def __init__(self) -> None:
        self.value: int | None = None
        self.pending = b""
        self._done = False

    def take(self, chunk: bytes) -> bytes:
        """Consume the id from `chunk` while it is still arriving; return the rest."""
        if self._done:
            return chunk
        self.pending += chunk
        line, newline, rest = self.pending.partition(b"\n")
        if not newline:
            return b""
        self._done = True
        self.pending = b""
        if line.isdigit():
            self.value = int(line)
            return rest
        return line + newline + rest

    def flush(self) -> bytes:
        """Output that ended before a whole first line arrived."""
        pending, self.pending, self._done = self.pending, b"", True
        return pending


async def _collect(
    process: asyncssh.SSHClientProcess[bytes], group: _GroupId, output: Callable[..., None]
) -> None:
    """Hand a command's stdout (without the group id line) and stderr to `output`."""

    async def pump_stdout() -> None:
        while chunk := await process.stdout.read(1 << 16):
            if rest := group.take(chunk):
                output(rest, stderr=False)
        if group.pending:
            output(group.flush(), stderr=False)

    async def pump_stderr() -> None:
        while chunk := await process.stderr.read(1 << 16):
            output(chunk, stderr=True)

    await asyncio.gather(pump_stdout(), pump_stderr())
    await process.wait_closed()


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


def _unknown_mtime(relative: str) -> float:
    """Placeholder mtime while parsing; the real ones come in one SFTP batch after."""
    del relative
    return 0.0


def _known_hosts(setting: str | os.PathLike[str] | None) -> object:
    if setting is None:
        return None
    path = Path(setting).expanduser()
    if not path.exists():
        return asyncssh.import_known_hosts("")
    return str(path)


def _connect_reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "the connection timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host name"
    if isinstance(exc, asyncssh.DisconnectError):
        return "the server closed the connection"
    return "network error"


def _exit_code(process: asyncssh.SSHClientProcess[bytes]) -> int | None:
    if process.exit_status is not None and process.exit_status >= 0:
        return process.exit_status
    if process.exit_signal:
        name = process.exit_signal[0]
        with contextlib.suppress(KeyError):
            return 128 + signal.Signals[f"SIG{name}"].value
    return None


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


def _temp_name(name: str) -> str:
    stem = name.encode("utf-8", "surrogateescape")[:200].decode("utf-8", "ignore")
    return f".{stem}.{secrets.token_hex(6)}{TEMP_SUFFIX}"


__all__ = ["DEFAULT_KNOWN_HOSTS", "SSHBackend"]
