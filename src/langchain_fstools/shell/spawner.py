"""The confined spawner: starts host-side programs (ripgrep) that read only beneath a root.

ripgrep opens what it walks by name, so a folder of the workspace swapped for a link
to `~/.aws` between rg's listing and its open (any process that may write in the
workspace can do that: a command with `sandbox=None` or under Landlock alone, an
editor, another program) sends rg outside the root. The cure is in the kernel: each
rg runs under a Landlock ruleset (`confine.read_only_ruleset`) that lets it read
files and list folders only beneath the workspace root, read and run only its own
executable and the loader's library folders, and write nowhere; a swapped link then
meets EACCES. Each run also gets a memory limit (`RLIMIT_DATA`, which counts heap
and thread stacks but not mapped files), so one huge line cannot take the machine.

Why a spawner process: Landlock and rlimits must be applied between `fork` and
`exec`, and the ways to do that from here cost too much (measured on a 2,000-file
repository, `rg -l` itself 7.6 ms): `subprocess`'s `preexec_fn` forks this whole
process instead of `vfork`ing it (+0.9 ms in a small process, +7 ms in one holding
300 MB, and unsafe beside threads), and the confinement helper as a prefix starts a
Python per search (+8 ms). So one small Python process, started once per process on
the first search (`python -I -S spawner.py FD`), receives each request over a Unix
socket (the program's arguments and memory limit; descriptors of the root, the
working folder, stdin/stdout/stderr and a status pipe), forks itself (a fork of a
small process is cheap) and in the child applies the limit and the ruleset (built
once per root and executable) before `exec`. It answers with the child's pidfd, so
the caller kills it at its deadline without a pid race, and writes its exit code to
the status pipe when it ends. Closing the socket (the caller exits) ends it, and it
kills what it started. Where the kernel lacks Landlock the limit still applies and
reads are not confined (`Spawner.confined` says which).
"""

from __future__ import annotations

import array
import contextlib
import errno
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

if __name__ == "__main__":  # the spawner process, isolated (-I -S): the package is beside it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_fstools.shell import confine

if TYPE_CHECKING:
    from collections.abc import Sequence

LOADER_FOLDERS = (
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
)
"""What a dynamically linked program reads before `main`: a spawned program may read
and run files beneath these (never list them), besides its own executable."""

_HEADER = struct.Struct("=I")
_REPLY = struct.Struct("=ii")
_STATUS = struct.Struct("=i")
_FDS = 5
"""Descriptors a request passes: cwd, stdout, stderr, status, and stdin if piped."""


class SpawnedProcess:
    """A program the spawner started: `subprocess.Popen`'s calls that `_Run` uses.

    Attributes:
        stdin: Its standard input, when one was asked for, else None (it reads /dev/null).
        stdout: Its standard output.
        stderr: Its standard error.
        returncode: Its exit code once known (`-N` for signal N), else None.
    """

    def __init__(
        self, pidfd: int, status: int, pipes: tuple[IO[bytes] | None, IO[bytes], IO[bytes]]
    ) -> None:
        """Own `pidfd`, the read end of the `status` pipe and the three pipes."""
        self._pidfd = pidfd
        self._status = status
        self.stdin, self.stdout, self.stderr = pipes
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if it has ended, else None, without waiting."""
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            return self.wait()
        return self.returncode

    def kill(self) -> None:
        """SIGKILL it (through its pidfd: never another process that took its pid)."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def wait(self) -> int:
        """Wait for it to end; its exit code (`-9` if the spawner went away first)."""
        if self.returncode is None:
            data = b""
            while len(data) < _STATUS.size and (chunk := os.read(self._status, _STATUS.size)):
                data += chunk
            self.returncode = _STATUS.unpack(data)[0] if len(data) == _STATUS.size else -9
            os.close(self._status)
            os.close(self._pidfd)
        return self.returncode


class Spawner:
    """The caller's end of one spawner process, confined to one root (see the module docstring).

    Args:
        root: An open descriptor of the folder programs may read beneath.
        executable: The program it starts (absolute path); only it may run.
        memory: Each program's `RLIMIT_DATA` in bytes, or None for no limit.

    Attributes:
        confined: Whether the kernel has Landlock, so programs read only beneath `root`.
    """

    def __init__(self, root: int, executable: str, memory: int | None) -> None:
        """Remember what to start; the process starts on the first `spawn`."""
        self._root = root
        self._executable = executable
        self._memory = memory
        self._lock = threading.Lock()
        self._channel: tuple[int, socket.socket, subprocess.Popen[bytes]] | None = None
        self.confined = False

    def spawn(self, argv: Sequence[str], *, cwd: int, stdin: bool = False) -> SpawnedProcess:
        """Start `argv` (its first item the executable) in the folder `cwd`.

        Args:
            argv: The executable and its arguments.
            cwd: An open descriptor of its working folder.
            stdin: Give it a pipe as standard input (else /dev/null).

        Raises:
            OSError: it could not start (its `exec` or the spawner's `posix_spawn` failed).
        """
        payload = json.dumps(list(argv)).encode()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        status_r, status_w = os.pipe()
        theirs = [cwd, stdout_w, stderr_w, status_w]
        ours = [stdout_r, stderr_r, status_r]
        if stdin:
            stdin_r, stdin_w = os.pipe()
            theirs.append(stdin_r)
            ours.append(stdin_w)
        try:
            with self._lock:
                reply, descriptors = self._exchange(payload, theirs)
        except BaseException:
            _close(ours)
            raise
        finally:
            _close(theirs[1:])
        pid, code = _REPLY.unpack(reply)
        if pid <= 0 or not descriptors:
            _close(ours + descriptors)
            raise OSError(code or errno.ECHILD, os.strerror(code or errno.ECHILD))
        pipes = (
            os.fdopen(ours[3], "wb", buffering=0) if stdin else None,
            os.fdopen(stdout_r, "rb", buffering=0),
            os.fdopen(stderr_r, "rb", buffering=0),
        )
        return SpawnedProcess(descriptors[0], status_r, pipes)

    def close(self) -> None:
        """End the spawner process (it kills what it started); a later `spawn` restarts it."""
        with self._lock:
            if self._channel is not None:
                _, channel, process = self._channel
                self._channel = None
                channel.close()
                process.wait()

    def _exchange(self, payload: bytes, descriptors: list[int]) -> tuple[bytes, list[int]]:
        """Send one request and read its reply, (re)starting the process if needed."""
        for attempt in range(2):
            channel = self._connected()
            try:
                channel.sendmsg(
                    [_HEADER.pack(len(payload)), payload],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", descriptors))],
                )
                return _receive_reply(channel)
            except OSError:
                self._channel = None  # it died (or was killed): start another once
                channel.close()
                if attempt:
                    raise
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def _connected(self) -> socket.socket:
        if self._channel is not None and self._channel[0] == os.getpid():
            return self._channel[1]
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        arguments = [str(theirs.fileno()), str(self._root), str(self._memory or 0)]
        try:
            process = subprocess.Popen(  # noqa: S603 - this interpreter, our script
                [sys.executable, "-I", "-S", _SCRIPT, *arguments, self._executable],
                pass_fds=[theirs.fileno(), self._root],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        hello = _receive_exactly(mine, 1)
        if hello not in (b"L", b"-"):
            mine.close()
            process.wait()
            raise OSError(errno.ECHILD, "the spawner did not start")
        self.confined = hello == b"L"
        self._channel = (os.getpid(), mine, process)
        return mine


_SCRIPT = os.path.realpath(__file__)


def available() -> bool:
    """Whether this system can run the spawner (Linux with pidfds)."""
    return sys.platform == "linux" and hasattr(os, "pidfd_open")


def _receive_exactly(channel: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = channel.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _receive_reply(channel: socket.socket) -> tuple[bytes, list[int]]:
    """The spawner's answer: (pid, errno) and the pidfd it passed, if any."""
    space = socket.CMSG_SPACE(array.array("i").itemsize)
    data, ancillary, _, _ = channel.recvmsg(_REPLY.size, space, socket.MSG_CMSG_CLOEXEC)
    descriptors = _descriptors(ancillary)
    if len(data) < _REPLY.size:
        data += _receive_exactly(channel, _REPLY.size - len(data))
    if len(data) < _REPLY.size:
        _close(descriptors)
        raise OSError(errno.ECHILD, "the spawner went away")
    return data, descriptors


def _descriptors(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    found = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            found.frombytes(data[: len(data) - len(data) % found.itemsize])
    return list(found)


def _close(descriptors: list[int]) -> None:
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptor)


# ----- the spawner process ----------------------------------------------------------


class _Server:
    """The loop of the spawner process: requests in, programs out, exit codes back.

    It confines itself before serving (what it starts inherits that), so it starts
    programs with `posix_spawn` (a `vfork`), not a `fork` of itself.
    """

    def __init__(self, channel: socket.socket, devnull: int) -> None:
        self.channel = channel
        self.devnull = devnull
        self.running: dict[int, tuple[int, int]] = {}  # pidfd: (pid, status write end)
        self.poller = select.poll()
        self.poller.register(channel, select.POLLIN)

    def run(self) -> None:
        while True:
            for descriptor, _ in self.poller.poll():
                if descriptor == self.channel.fileno():
                    if not self.serve_one():
                        return
                else:
                    self.reap(descriptor)

    def serve_one(self) -> bool:
        """Start one requested program; False when the caller has gone."""
        space = socket.CMSG_SPACE(_FDS * array.array("i").itemsize)
        try:
            header, ancillary, _, _ = self.channel.recvmsg(
                _HEADER.size, space, socket.MSG_CMSG_CLOEXEC
            )
        except OSError:
            return False
        descriptors = _descriptors(ancillary)
        header += _receive_exactly(self.channel, _HEADER.size - len(header)) if header else b""
        if len(header) < _HEADER.size or len(descriptors) not in (_FDS - 1, _FDS):
            _close(descriptors)
            return False
        argv = json.loads(_receive_exactly(self.channel, _HEADER.unpack(header)[0]))
        try:
            pid, pidfd = self.start(argv, descriptors)
        except OSError as exc:
            self.channel.sendall(_REPLY.pack(0, exc.errno or errno.EIO))
            _close(descriptors)
            return True
        self.running[pidfd] = (pid, descriptors[3])
        self.poller.register(pidfd, select.POLLIN)
        self.channel.sendmsg(
            [_REPLY.pack(pid, 0)],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pidfd]))],
        )
        _close(descriptors[:3] + descriptors[4:])
        return True

    def start(self, argv: list[str], fds: list[int]) -> tuple[int, int]:
        stdin = fds[4] if len(fds) == _FDS else self.devnull
        os.fchdir(fds[0])
        pid = os.posix_spawn(
            argv[0],
            argv,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, stdin, 0),
                (os.POSIX_SPAWN_DUP2, fds[1], 1),
                (os.POSIX_SPAWN_DUP2, fds[2], 2),
            ],
        )
        return pid, os.pidfd_open(pid)

    def reap(self, pidfd: int) -> None:
        pid, status = self.running.pop(pidfd)
        self.poller.unregister(pidfd)
        _, code = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            os.write(status, _STATUS.pack(os.waitstatus_to_exitcode(code)))
        _close([status, pidfd])

    def stop(self) -> None:
        """Kill and reap whatever is still running (the caller has gone)."""
        for pidfd in list(self.running):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            self.reap(pidfd)


def serve(arguments: list[str]) -> None:
    """Run the spawner process: `CHANNEL_FD ROOT_FD MEMORY EXECUTABLE` (see `Spawner`).

    Confines itself (the memory limit, then Landlock: reads beneath the root, the
    executable and the loader's folders), says whether Landlock applied (`L` or `-`),
    and serves the socket until it closes.
    """
    channel = socket.socket(fileno=int(arguments[0]))
    root, memory, executable = int(arguments[1]), int(arguments[2]), arguments[3]
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    ruleset = confine.read_only_ruleset(root, [executable, *LOADER_FOLDERS])
    os.close(root)
    if memory:
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    if ruleset is not None:
        confine.restrict_to(ruleset)
        os.close(ruleset)
    channel.sendall(b"L" if ruleset is not None else b"-")
    server = _Server(channel, devnull)
    try:
        server.run()
    finally:
        server.stop()


if __name__ == "__main__":
    serve(sys.argv[1:])


__all__ = ["LOADER_FOLDERS", "SpawnedProcess", "Spawner", "available", "serve"]
