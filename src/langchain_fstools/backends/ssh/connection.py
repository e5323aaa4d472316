"""The SSH backend's connection: opened on first use, kept, reopened after a drop.

Every operation is a coroutine run on the backend's private event-loop thread; a
connection lost in the middle of one is dropped and reported as `SSHConnectionFailed`,
and the next call reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import stat as stat_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import asyncssh

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.errors import (
    SSHAuthenticationFailed,
    SSHConnectionFailed,
    SSHHostKeyRejected,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Coroutine

    from langchain_fstools.backends.loop import LoopThread

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_KNOWN_HOSTS: Final = "~/.ssh/known_hosts"
"""Where host keys are looked up unless `known_hosts` says otherwise."""


_LOST = (
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
    asyncssh.SFTPConnectionLost,
    asyncssh.SFTPNoConnection,
    BrokenPipeError,
    ConnectionResetError,
)
"""What a dropped connection raises in the middle of an operation."""


class _Connection(Backend):
    """The connection the backend's parts share, and the loop its operations run on."""

    _host: str
    _port: int
    _username: str
    _root_dir: str
    _client_keys: list[Path | asyncssh.SSHKey] | None
    _passphrase: str | None
    _use_agent: bool
    _known_hosts: str | os.PathLike[str] | None
    _connect_timeout: float
    _loop: LoopThread
    # Touched on the private loop only:
    _connection: asyncssh.SSHClientConnection | None
    _sftp: asyncssh.SFTPClient | None
    _root: str
    _connecting: asyncio.Lock | None
    _ever_connected: bool
    _has_ripgrep: bool | None
    _has_python: bool | None

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
