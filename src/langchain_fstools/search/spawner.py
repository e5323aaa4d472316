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
Python per search (+8 ms). So a small Python process per root (`Spawner`, started on
the first search: `python -I -S spawner.py`) sets the memory limit and restricts
itself with Landlock once, then serves requests over a Unix socket: the arguments,
and descriptors of the working folder, stdout/stderr (and stdin) and a reply socket.
It starts each program with `posix_spawn` (a `vfork`: no copy of itself), which
inherits both. The caller does not wait for the answer: it reads the program's output
at once; the reply socket brings the pidfd (so the caller kills the program at its
deadline without a pid race) and then the exit code, read when needed. Spawning
through it costs about what `subprocess.Popen` costs (`bench/grep_confined.py`).
Closing the socket (the caller exits, `Spawner.close`) ends the process, which kills
what it started. Where the kernel lacks Landlock the limit still applies and reads
are not confined (`Spawner.confined` says which).
"""

from __future__ import annotations

import array
import contextlib
import errno
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import IO, TYPE_CHECKING

if __name__ == "__main__":  # the spawner process, isolated (-I -S): the package is beside it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_fstools.shell.sandbox import confine

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_SHUTDOWN_SECONDS = 5.0
"""How long closing a spawner waits for its process to end."""
_HEADER = struct.Struct("=I")
_STARTED = struct.Struct("=ii")
"""The first reply of a request: the pid (0 if it did not start) and an errno."""
_ENDED = struct.Struct("=i")
"""The second: the exit code (`-N` for signal N)."""
_FDS = 5
"""Descriptors a request passes: cwd, stdout, stderr, the reply socket, and stdin if piped."""


class SpawnedProcess:
    """A program the spawner started: `subprocess.Popen`'s calls that `_Run` uses.

    The spawner answers on a socket of this process's own: first the pid and pidfd
    (read when first needed, so the caller reads the program's output meanwhile), then
    the exit code.

    Attributes:
        stdin: Its standard input, when one was asked for, else None (it reads /dev/null).
        stdout: Its standard output.
        stderr: Its standard error.
        returncode: Its exit code once known (`-N` for signal N), else None.
    """

    def __init__(
        self, replies: socket.socket, pipes: tuple[IO[bytes] | None, IO[bytes], IO[bytes]]
    ) -> None:
        """Own the `replies` socket and the three pipes."""
        self._replies = replies
        self._pidfd: int | None = None
        self._failure: OSError | None = None
        self.stdin, self.stdout, self.stderr = pipes
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if it has ended, else None, without waiting."""
        pidfd = self._started()
        if pidfd is not None and select.select([pidfd], [], [], 0)[0]:
            return self._ended()
        return self.returncode

    def kill(self) -> None:
        """SIGKILL it (through its pidfd: never another process that took its pid)."""
        pidfd = self._started()
        if pidfd is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)

    def wait(self) -> int:
        """Wait for it to end; its exit code (`-9` if the spawner went away first).

        Raises:
            OSError: it never started (the error of its `exec`, or of the spawner).
        """
        self._started()
        if self._failure is not None:
            raise self._failure
        return self._ended()

    def _started(self) -> int | None:
        """Its pidfd, once the spawner said it started (None if it did not)."""
        if self._pidfd is None and self._failure is None and self.returncode is None:
            space = socket.CMSG_SPACE(array.array("i").itemsize)
            data, ancillary, _, _ = self._replies.recvmsg(
                _STARTED.size, space, socket.MSG_CMSG_CLOEXEC
            )
            descriptors = _descriptors(ancillary)
            pid, code = _STARTED.unpack(data) if len(data) == _STARTED.size else (0, 0)
            if pid > 0 and descriptors:
                self._pidfd = descriptors[0]
            else:
                _close(descriptors)
                code = code or errno.ECHILD  # no answer: the spawner went away
                self._failure = OSError(code, os.strerror(code))
                self.returncode = -signal.SIGKILL
                self._replies.close()
        return self._pidfd

    def _ended(self) -> int:
        if self.returncode is None:
            data = self._replies.recv(_ENDED.size)
            self.returncode = _ENDED.unpack(data)[0] if len(data) == _ENDED.size else -9
            self._replies.close()
            if self._pidfd is not None:
                os.close(self._pidfd)
        return self.returncode


class Spawner:
    """The caller's end of one spawner process, confined to one root (see the module docstring).

    A copy (or a pickle) is a new spawner of the same root, started on its first use.

    Args:
        root: Returns an open descriptor of the folder programs may read beneath
            (called when the process starts).
        executable: The program it starts (absolute path); only it may run.
        memory: Each program's `RLIMIT_DATA` in bytes, or None for no limit.

    Attributes:
        confined: Whether the kernel has Landlock, so programs read only beneath `root`.
    """

    def __init__(self, root: Callable[[], int], executable: str, memory: int | None) -> None:
        """Remember what to start; the process starts on the first `spawn`."""
        self._root = root
        self._executable = executable
        self._memory = memory
        self._lock = threading.Lock()
        self._channel: tuple[int, socket.socket, subprocess.Popen[bytes]] | None = None
        self.confined = False

    def spawn(self, argv: Sequence[str], *, cwd: int, stdin: bool = False) -> SpawnedProcess:
        """Start `argv` (its first item the executable) in the folder `cwd`.

        Returns as soon as the request is sent: a program that cannot start has no
        output, and its `wait` raises the error.

        Args:
            argv: The executable and its arguments.
            cwd: An open descriptor of its working folder.
            stdin: Give it a pipe as standard input (else /dev/null).

        Raises:
            OSError: the spawner could not be started or reached.
        """
        payload = b"\0".join(os.fsencode(argument) for argument in argv)
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        replies, theirs_replies = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        theirs = [cwd, stdout_w, stderr_w, theirs_replies.fileno()]
        ours = [stdout_r, stderr_r]
        if stdin:
            stdin_r, stdin_w = os.pipe()
            theirs.append(stdin_r)
            ours.append(stdin_w)
        try:
            with self._lock:
                self._send(payload, theirs)
        except BaseException:
            _close(ours)
            replies.close()
            raise
        finally:
            theirs_replies.close()
            _close([stdout_w, stderr_w, *theirs[4:]])
        pipes = (
            os.fdopen(ours[2], "wb", buffering=0) if stdin else None,
            os.fdopen(stdout_r, "rb", buffering=0),
            os.fdopen(stderr_r, "rb", buffering=0),
        )
        return SpawnedProcess(replies, pipes)

    def __reduce__(self) -> tuple[type[Spawner], tuple[Callable[[], int], str, int | None]]:
        """A copy is a spawner of the same root with a process of its own."""
        return (Spawner, (self._root, self._executable, self._memory))

    def close(self) -> None:
        """End the spawner process (it kills what it started); a later `spawn` restarts it."""
        with self._lock:
            if self._channel is not None:
                _, channel, process = self._channel
                self._channel = None
                _shut_down(channel, process)

    def _send(self, payload: bytes, descriptors: list[int]) -> None:
        """Send one request, (re)starting the process if needed."""
        for attempt in range(2):
            channel = self._connected()
            try:
                channel.sendmsg(
                    [_HEADER.pack(len(payload)), payload],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", descriptors))],
                )
            except OSError:
                self._channel = None  # it died (or was killed): start another once
                channel.close()
                if attempt:
                    raise
            else:
                return

    def _connected(self) -> socket.socket:
        if self._channel is not None and self._channel[0] == os.getpid():
            return self._channel[1]
        root = self._root()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        arguments = [str(theirs.fileno()), str(root), str(self._memory or 0)]
        try:
            process = subprocess.Popen(  # noqa: S603 - this interpreter, our script
                [sys.executable, "-I", "-S", _SCRIPT, *arguments, self._executable],
                pass_fds=[theirs.fileno(), root],
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
        weakref.finalize(self, _shut_down, mine, process)
        return mine


def _shut_down(channel: socket.socket, process: subprocess.Popen[bytes]) -> None:
    """Close a spawner's socket (it exits on it); reap it in a thread, never blocking.

    Also called by the garbage collector, which may run on an event loop.
    """
    channel.close()
    threading.Thread(target=_reap, args=(process,), daemon=True).start()


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(_SHUTDOWN_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
        self.running: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, replies)
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
        argv = [
            os.fsdecode(a)
            for a in _receive_exactly(self.channel, _HEADER.unpack(header)[0]).split(b"\0")
        ]
        replies = socket.socket(fileno=descriptors[3])
        try:
            pid, pidfd = self.start(argv, descriptors)
        except OSError as exc:
            with contextlib.suppress(OSError):
                replies.send(_STARTED.pack(0, exc.errno or errno.EIO))
            replies.close()
            _close(descriptors[:3] + descriptors[4:])
            return True
        with contextlib.suppress(OSError):  # the caller may have given up on it already
            replies.sendmsg(
                [_STARTED.pack(pid, 0)],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pidfd]))],
            )
        self.running[pidfd] = (pid, replies)
        self.poller.register(pidfd, select.POLLIN)
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
        pid, replies = self.running.pop(pidfd)
        self.poller.unregister(pidfd)
        _, code = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            replies.send(_ENDED.pack(os.waitstatus_to_exitcode(code)))
        replies.close()
        os.close(pidfd)

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
    ruleset = confine.read_only_ruleset(root, [executable, *confine.LOADER_FOLDERS])
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


__all__ = ["SpawnedProcess", "Spawner", "available", "serve"]
