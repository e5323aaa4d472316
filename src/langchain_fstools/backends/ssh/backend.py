"""A directory on a remote host, over SSH: files by SFTP, commands by exec channels."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import asyncssh

from langchain_fstools.backends.loop import LoopThread
from langchain_fstools.backends.ssh.connection import DEFAULT_KNOWN_HOSTS
from langchain_fstools.backends.ssh.files import _Files
from langchain_fstools.backends.ssh.remote_processes import SSHProcesses, _Processes
from langchain_fstools.backends.ssh.search import _Search
from langchain_fstools.core import paths
from langchain_fstools.shell.sandbox.environment import CommandEnv
from langchain_fstools.shell.session.session import session_key

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator, Mapping, Sequence

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.backends.ssh.remote_processes import RemoteProcess
    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.shell.sandbox.environment import InheritEnv
    from langchain_fstools.shell.session.shell_state import ShellState


class SSHBackend(_Processes, _Search, _Files):
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
    walks the server's disk (see `backends.ssh.search`). With neither, the engine
    walks the tree over SFTP, call by call. Remote `grep`/`find` cannot apply nested
    `.gitignore` rules exactly, so they are never used. What the server has is asked
    once per connection.

    Commands (`execute`) run with the root as working directory through the login
    shell, which must be POSIX (`sh`, `bash`, `dash`, `zsh`), with `setsid` installed
    (util-linux): each command gets its own session, and at the deadline its whole
    process group is killed over a second channel. Commands get the environment the
    server gives the session (e.g. what sshd and `~/.ssh/environment` set), plus
    `env`; `inherit_env` narrows what passes through (see `shell.sandbox.environment`).

    A shell that remembers: where the server has bash, commands run with it, and `cd`
    and `export` carry from one command to the next of the same session (the thread
    the tools' call belongs to; `shell.session.session.session_key`); the result says the
    directory when it changed (see `backends.ssh.exec`). Without bash they run with
    `sh` and nothing carries.

    Background processes (`processes`, `execute(background=True)`, `yield_after`): each
    session runs a small supervisor with the server's Python 3 (`python_path`) over one
    exec channel of its own (so each session holds one of the server's `MaxSessions`
    channels); a server without Python 3 refuses them with a sentence saying so. Every
    process ends with its session: on `kill`, after `IDLE_LIMIT` seconds unread and
    unwritten, on `close()`, and when the connection drops (see
    `backends.ssh.remote_processes`). SSH commands write straight to the server's disk,
    with no copy-on-write view: what a command or a background process changes is not
    reviewed before it lands.

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
        self._python_compiled = False  # whether it runs our bytecode (the probe says)
        self._command_slots: asyncio.Semaphore | None = None
        self._states = {}
        self._tables = {}

    # ----- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """End the sessions' processes, disconnect, and stop the event-loop thread.

        Everything is reopened on next use.
        """
        with contextlib.suppress(RuntimeError):
            self._loop.run(self._end_sessions())
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

    def command_network(self) -> bool:
        """Commands run unconfined on the server: they have its network."""
        return True

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run `command` on the server where the session's shell is (see the class docstring)."""
        return self._call(self._execute(command, timeout, output_limit, session_key.get()))

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced on the server
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`."""
        return await self._acall(self._execute(command, timeout, output_limit, session_key.get()))

    def processes(self) -> SSHProcesses:
        """The background processes of the current session, run on the server."""
        key = session_key.get()

        def start(command: str, **options: object) -> RemoteProcess:
            return self._call(self._start_process(key, command, **options))  # type: ignore[arg-type]

        def update(state: ShellState) -> None:
            self._states[key] = state

        def accepts(port: int) -> bool:
            return self._call(self._port_listens(key, port))

        return SSHProcesses(lambda: self._tables.get(key), start, update, accepts)


__all__ = ["SSHBackend"]
