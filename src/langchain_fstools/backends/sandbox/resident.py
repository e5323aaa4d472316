"""The resident helper: a server in the sandbox that forks one worker per file operation.

A helper run costs about as much as the provider's `execute` itself: Python's start,
the loader and the imports. The first run that finds no server (the client below falls
through to the loader) starts one after it answered (`start`): the loader's process forks
itself, detached (a session of its own, standard streams on `/dev/null`, the working
directory `/`), so it already holds the shipped modules and what the operations import.
It serves requests from a FIFO in the private folder until it has had none for its idle
limit (`IDLE_LIMIT`), and each request runs in a worker forked for it: `helper.main` in
a process of its own, as before, so the helper's locks, its journal and the concurrency of
calls are unchanged, and the worker's standard output is the reply.

Where it lives, beside the program's digest (a new version of the package has its own):

    <folder>/run-<digest>.lock   held (`flock`) by the server while it lives: one server
    <folder>/run-<digest>/in     the FIFO of requests (mode 0600)
    <folder>/run-<digest>/pid    the server's process id, written once the FIFO is open

The client is the `execute` command itself (`client`), POSIX `sh` with builtins but for
`mkfifo` and `cat`: it checks that the folder, the run folder and the FIFO are ours and
no links, that the process the pid file names is our server (its name in
`/proc/<pid>/stat`, not a zombie), makes a FIFO for the reply, writes one line to the
server's FIFO (shorter than `PIPE_BUF`, so it arrives whole; a longer request goes in
a private file first), and reads the reply with `cat`. The server opens the reply FIFO
for writing before it forks the worker and closes its own end, so a worker that dies
gives the client an end of file, never a wait. When any check fails the client prints
`NO_SERVER` and runs the loader itself in the same `execute`, which starts a server for
next time. A server that finds the folder no longer private answers `REFUSED` and ends.

Each worker has the operation's deadline as an alarm: at the provider's timeout it is
killed as the provider would kill the helper it started, and what it left is the next
request's to settle (the journal's record, a temporary name, a command's record). Its
environment is the client's (`/proc/<client pid>/environ`), so a recorded command run by
a worker sees the variables the provider gave that `execute`, as from a helper run.

The server ends after `IDLE_LIMIT` seconds without a request: it removes its pid file
first (new clients fall back), serves what arrives for `GRACE` more seconds (clients
that checked before), then removes its FIFO and run folder. A server that is killed
leaves its run folder; the next client finds no live server behind the pid and falls
back, and the loader's start replaces it. A client whose request a server killed in the
instant after the client's checks never reads waits until the provider's timeout.

Standard library only, run with the sandbox's Python like `helper`; `client` runs on
this side.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat as stat_module

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Final

IDLE_LIMIT: Final = 600.0
"""Seconds a server waits for a request before it ends (`SandboxBackend(resident_idle=...)`)."""

GRACE: Final = 2.0
"""Seconds an ending server still serves the clients that found it before its pid file went."""

REPLY_WAIT: Final = 5.0
"""Seconds the server waits for a client to open its reply FIFO (it does right away)."""

LINE_LIMIT: Final = 4000
"""Longest request written on the server's FIFO (below `PIPE_BUF`, 4096 on Linux, so one
write arrives whole); a longer one goes through a private file."""

NO_SERVER: Final = "<fstools-no-server>"
"""What the client prints before it runs the loader itself."""

REFUSED: Final = "<fstools-resident-refused>"
"""What a server answers when the folder is no longer private; it then ends."""

SPILLED: Final = "="
"""First character of a request line's argument naming a private file that holds it
(base64, as the line would): the worker reads it and removes it."""

_NAME_LENGTH: Final = 15
"""The longest process name Linux keeps (`/proc/<pid>/comm`)."""


def served(op: str) -> bool:
    """Whether the resident server runs `op`.

    Background processes are started by a helper run of their own: they outlive it.
    """
    return not op.startswith("process_")


def name(digest: str) -> str:
    """The server's process name: it tells a live server from another process."""
    return ("fstools-" + digest)[:_NAME_LENGTH]


# ----- the client (this side) --------------------------------------------------------------------


def client(  # noqa: PLR0917 - one command's parts
    folder: str,
    digest: str,
    argument: str,
    loader: Sequence[str],
    nonce: str,
    timeout: int,
    idle: float,
) -> str:
    """The `execute` command that asks the server, or runs `loader` and starts one.

    Args:
        folder: The private folder.
        digest: The program's digest.
        argument: The request (base64, or `@<name>` of a request file).
        loader: The loader's command before its arguments (`python3 -I -S -c LOADER`).
        nonce: A name no other request uses (its reply FIFO and request file).
        timeout: The operation's deadline in seconds (the worker's alarm).
        idle: The idle limit a server started by this command gets.
    """
    request, spill, spilled = f"$r {timeout} $$ $a", "", ""
    if len(argument) + len(nonce) + 48 > LINE_LIMIT:
        request = f"$r {timeout} $$ {SPILLED}q-{nonce}"
        spill, spilled = f'printf %s "$a" > "$f/q-{nonce}" && ', f' "$f/q-{nonce}"'
    quoted = shlex.quote
    return (
        f"f={quoted(folder)} s={quoted(f'{folder}/run-{digest}')} a={quoted(argument)}"
        f" r=r-{nonce}\n"
        'if { test -d "$f" && test -O "$f" && ! test -h "$f" && test -O "$s" && ! test -h "$s"'
        ' && ! test -h "$s/in" && test -p "$s/in" && test -O "$s/in" && read p < "$s/pid"'
        ' && read x c t y < "/proc/$p/stat" && test "$c" = '
        + quoted(f"({name(digest)})")
        + ' && test "$t" != Z && mkfifo -m 600 "$f/$r"; } 2>/dev/null; then\n'
        f'  {spill}printf "%s\\n" "{request}" 1<>"$s/in" && exec cat "$f/$r"\n'
        f'  rm -f "$f/$r"{spilled}\n'
        "fi\n"
        f"echo {quoted(NO_SERVER)}\n"
        f'exec {shlex.join(loader)} "$f" {quoted(digest)} "$a" {idle:g}\n'
    )


# ----- the server (the sandbox's side) -----------------------------------------------------------


def start(folder: str, digest: str, idle: float, main: Callable[[str, str], None]) -> None:
    """Start the server for `digest`, detached, unless one runs; return once it serves.

    Args:
        folder: The private folder (the loader checked it).
        digest: The program's digest.
        idle: Seconds the server waits for a request before it ends.
        main: What a worker runs: `helper.main(argument, folder)`.
    """
    import fcntl  # noqa: PLC0415 - only a start pays for it

    place = os.path.join(folder, "run-" + digest)
    try:
        lock = os.open(
            place + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        ready, told = os.pipe()
        child = os.fork()
    except OSError:  # a server holds the lock, or no process can be made
        os.close(lock)
        return
    if child:
        for descriptor in (lock, told):  # the server keeps the lock through its own
            os.close(descriptor)
        os.waitpid(child, 0)
        os.read(ready, 1)  # its FIFO and pid file are there, or it ended
        os.close(ready)
        return
    try:
        os.close(ready)
        os.setsid()
        if not os.fork():
            _detach()
            _Server(folder, digest, place, lock, main).run(idle, told)
    finally:
        os._exit(0)


def _detach() -> None:
    """Standard streams on `/dev/null`, in `/`: the `execute` that started it can end."""
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    os.close(null)
    os.chdir("/")


def _private(path: str) -> bool:
    """Whether `path` is a directory of ours that no one else may enter, and no link."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return (
        stat_module.S_ISDIR(status.st_mode)
        and status.st_uid == os.geteuid()
        and not status.st_mode & 0o77
    )


class _Server:
    """The loop: one line a request, one worker a request (module docstring)."""

    def __init__(
        self, folder: str, digest: str, place: str, lock: int, main: Callable[[str, str], None]
    ) -> None:
        self.folder = folder
        self.digest = digest
        self.place = place
        self.lock = lock
        self.main = main
        self.requests = -1

    def run(self, idle: float, started: int) -> None:
        """Make the FIFO and the pid file, say so on `started`, serve until idle, clean up."""
        import select  # noqa: PLC0415 - only the server waits
        import signal  # noqa: PLC0415 - the same
        import time  # noqa: PLC0415 - the same

        with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
            comm.write(name(self.digest))
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
        fifo, pid = os.path.join(self.place, "in"), os.path.join(self.place, "pid")
        try:
            try:
                self._make(fifo, pid)
            finally:
                os.close(started)  # `start` returns
            pending = b""
            ending = 0.0
            while True:
                wait = idle if not ending else max(ending - time.monotonic(), 0.0)
                ready, _, _ = select.select([self.requests], [], [], wait)
                if not ready:
                    if ending:
                        return
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(pid)  # new clients fall back; those that found it are served
                    ending = time.monotonic() + GRACE
                    continue
                pending += os.read(self.requests, 65536)
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if not self._answer(line.decode("ascii", "replace")):
                        return
        finally:
            for path in (pid, fifo):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            with contextlib.suppress(OSError):
                os.rmdir(self.place)

    def _make(self, fifo: str, pid: str) -> None:
        """The run folder, a new FIFO, then the pid file that tells clients it is open."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.place, 0o700)
        if not _private(self.folder) or not _private(self.place):
            raise PermissionError(errno.EPERM, "not private", self.place)
        for path in (fifo, pid):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.mkfifo(fifo, 0o600)
        self.requests = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        temporary = f"{pid}.{os.getpid()}"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(descriptor, b"%d\n" % os.getpid())
        finally:
            os.close(descriptor)
        os.replace(temporary, pid)

    def _answer(self, line: str) -> bool:
        """Fork a worker for one request line; False when the server must end."""
        reply_name, seconds, client, argument = [*line.split(" ", 3), "", "", ""][:4]
        if not reply_name.startswith("r-") or "/" in reply_name:
            return True
        if not seconds.isdigit() or not client.isdigit():
            return True
        reply = _open_reply(os.path.join(self.folder, reply_name))
        if reply is None:
            return True
        try:
            if not _private(self.folder):
                with contextlib.suppress(OSError):
                    os.write(reply, REFUSED.encode() + b"\n")
                return False
            try:
                worker = os.fork()
            except OSError:  # no process can be made: the client reads an end of file
                return True
            if not worker:
                self._work(reply, int(seconds), int(client), argument)
        finally:
            os.close(reply)
        return True

    def _work(self, reply: int, seconds: int, client: int, argument: str) -> None:
        """The worker: the reply FIFO as standard output, the deadline as an alarm.

        Its environment is the client's (`/proc/<client>/environ`, the provider's
        `execute`'s), which a recorded command inherits, as from a helper run.
        """
        import signal  # noqa: PLC0415 - already loaded by `run`

        try:
            _take_environment(client)
            os.close(self.requests)
            os.close(self.lock)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.dup2(reply, 1)
            os.close(reply)
            if seconds:
                signal.alarm(seconds)
            if argument.startswith(SPILLED):
                path = os.path.join(self.folder, os.path.basename(argument[1:]))
                with open(path, "rb") as file:
                    argument = file.read().decode("ascii")
                os.unlink(path)
            self.main(argument, self.folder)
        finally:
            os._exit(0)


def _take_environment(client: int) -> None:
    """Make the client's environment this process's `os.environ` (kept if unreadable)."""
    try:
        with open(f"/proc/{client}/environ", "rb") as file:
            found = file.read()
    except OSError:
        return
    os.environ.clear()
    for entry in found.split(b"\0"):
        key, equals, value = entry.partition(b"=")
        if equals and key:
            os.environb[key] = value


def _open_reply(path: str) -> int | None:
    """The client's reply FIFO, opened for writing once the client reads it, and removed.

    The client opens it right after its request; a client that never does (it was
    killed) is given up after `REPLY_WAIT` seconds.
    """
    import time  # noqa: PLC0415 - loaded by `run`

    until = time.monotonic() + REPLY_WAIT
    try:
        while True:
            try:
                descriptor = os.open(
                    path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
                )
            except OSError as error:
                if error.errno != errno.ENXIO or time.monotonic() > until:
                    return None
                time.sleep(0.0005)
                continue
            status = os.fstat(descriptor)
            if not stat_module.S_ISFIFO(status.st_mode) or status.st_uid != os.geteuid():
                os.close(descriptor)
                return None
            os.set_blocking(descriptor, True)
            return descriptor
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


__all__ = ["GRACE", "IDLE_LIMIT", "LINE_LIMIT", "NO_SERVER", "REFUSED", "client", "served", "start"]
