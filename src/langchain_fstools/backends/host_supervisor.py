"""A supervisor of background processes on another machine, over one JSON-lines channel.

`backends.ssh.remote_processes` sends this file's source to an SSH host's Python 3 as
`python3 -I -S -c SOURCE IDLE_LIMIT` over one exec channel per session; nothing is
installed there. In a deepagents sandbox, the helper's process keeper
(`backends.sandbox.process_helper`) runs it in a child, over two pipes. It imports only
the standard library and runs on Python 3.7 or newer. It speaks JSON lines: requests on
its standard input, answers and events on its standard output. First it says
`{"ready": true, "pid": P, "bash": B}` (B: whether the host has bash, which commands
then run with). Requests carry an `id` the answer repeats:

- `{"op": "start", "proc": K, "command": C, "cwd": D, "fallback_cwd": R, "env": E,
  "terminal": T, "limit": N, "remember": M}`: run `C` with the shell in `D` (else `R`)
  with the environment `E` (None: the supervisor's own), in a process group of its own,
  its input a pipe (or a pseudo-terminal, `T`), its output kept in a window of `N`
  bytes (the head and tail of what came since the last read). With `M`, the command's
  descriptor 1023 is a temporary file, sent back (base64) with its end: the shell
  state `shell.session.shell_state` records there. Answer `{"id": I, "pid": P}`.
- `{"op": "write", "proc": K, "data": B64}`: feed its input; `{"op": "read", "proc": K}`:
  the window, emptied (`head`, `dropped`, `tail`: `[stream, B64]` chunks), with
  `running`, `status`, `ended_by`; `{"op": "kill", "proc": K}`: end its group;
  `{"op": "list"}`: every process.
- `{"op": "watch", "proc": K, "pattern": P, "watch": W}`: whether a line of its output
  (either stream; the unread window's and, until one matches, what comes) matches the
  regex `P`. Answer `{"matched": true}` when the window holds one, `{"matched": false,
  "ended": true}` when its output ended without one, else `{"matched": false}` and
  later the event `{"event": "line", "proc": K, "watch": W, "matched": M}` (M false:
  its output ended first); `{"op": "unwatch", "proc": K}` stops the watch.
- `{"op": "accepts", "port": N}`: whether a socket of the host listens on TCP port `N`
  (`/proc/net/tcp` and `tcp6`; where those are missing, a connection to `127.0.0.1`,
  then `::1`, within `PROBE_TIMEOUT`). Answer `{"accepts": A}`.

Errors answer `{"id": I, "error": why}`. When a process ends, the event `{"event":
"exit", "proc": K, "status": S, "ended_by": W, "record": B64}` follows its last output
(`S` is `128 + N` for signal N; `W` is "kill", "idle" or None). When the process that
led a group ends, the rest of the group is killed too. A process nobody read or wrote
for `IDLE_LIMIT` seconds is killed (`ended_by` "idle"), and a supervisor with nothing
running, no output unread and no request for as long exits (the next start opens
another): an ended process's last output waits for its read. When the
standard input ends (the channel or the connection closed) or a hang-up or termination
signal arrives, every group is killed and the supervisor exits.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import fcntl
import json
import os
import pty
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import time
import typing

STATE_FD = 1023
"""The descriptor a remembering command writes its state to (`shell.session.shell_state`)."""

_TICK = 1.0
_READ_SIZE = 65536
_DRAIN_READS = 64
"""Reads of an ended process's output before its end is told (more comes with the next)."""
PROBE_TIMEOUT = 0.5
"""Seconds a connection probe of a port may take (loopback answers at once)."""
_LISTEN = "0A"
"""The state of a listening socket in `/proc/net/tcp`."""


class Window:
    """The output since the last read: its head and its tail, the middle counted as dropped.

    Args:
        limit: Bytes kept (half head, half tail).
    """

    def __init__(self, limit: int) -> None:
        """Start empty."""
        self.limit = max(limit, 2)
        self.head: list[list[str]] = []
        self.head_size = 0
        self.tail: collections.deque[tuple[str, bytes]] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, data: bytes, stream: str) -> None:
        """Keep `data` (from `stream`, "out" or "err")."""
        room = self.limit // 2 - self.head_size
        if room > 0:
            piece = data[:room]
            self.head.append([stream, _text(piece)])
            self.head_size += len(piece)
            data = data[room:]
        if not data:
            return
        self.tail.append((stream, data))
        self.tail_size += len(data)
        room = self.limit - self.limit // 2
        while self.tail_size > room:
            excess = self.tail_size - room
            first_stream, first = self.tail[0]
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_size -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = (first_stream, first[excess:])
                self.tail_size -= excess
                self.dropped += excess

    def streams(self) -> dict[str, bytes]:
        """The kept output of each stream, its chunks joined (the middle dropped)."""
        chunks = [(stream, base64.b64decode(data)) for stream, data in self.head]
        kept: dict[str, bytes] = {}
        for stream, data in [*chunks, *self.tail]:
            kept[stream] = kept.get(stream, b"") + data
        return kept

    @property
    def unread(self) -> bool:
        """Whether it holds output nobody read yet."""
        return bool(self.head or self.tail or self.dropped)

    def take(self) -> dict[str, object]:
        """What was kept, as the read answer carries it; the window starts again empty."""
        taken: dict[str, object] = {
            "head": self.head,
            "dropped": self.dropped,
            "tail": [[stream, _text(data)] for stream, data in self.tail],
        }
        self.head, self.head_size, self.dropped = [], 0, 0
        self.tail, self.tail_size = collections.deque(), 0
        return taken


class Process:
    """One background process: its group, its output window, its input."""

    def __init__(self, ident: str, popen: subprocess.Popen[bytes], limit: int) -> None:
        """Keep `popen` as `ident`."""
        self.ident = ident
        self.popen = popen
        self.window = Window(limit)
        self.stdin: int | None = None
        self.pending = b""
        self.outputs: dict[int, str] = {}
        self.active = time.monotonic()
        self.status: int | None = None
        self.ended_by: str | None = None
        self.record: str | None = None
        self.watch: Watch | None = None

    @property
    def running(self) -> bool:
        """Whether its leader has yet to be reaped."""
        return self.status is None

    def kill(self, reason: str) -> None:
        """End its whole process group, saying why."""
        if self.running:
            if self.ended_by is None:
                self.ended_by = reason
            with contextlib.suppress(OSError):
                os.killpg(self.popen.pid, signal.SIGKILL)


class Watch:
    """A wait for a line of output matching `pattern`, told as event `ident`.

    Args:
        ident: The watch's id, which its event repeats.
        pattern: The regex a line is searched with.
        partial: The stream's unended last line, as kept so far (per stream).
    """

    def __init__(self, ident: object, pattern: re.Pattern[str], partial: dict[str, bytes]) -> None:
        """Watch from the current output on."""
        self.ident = ident
        self.pattern = pattern
        self.pending = partial

    def matches(self, data: bytes, stream: str) -> bool:
        """Whether `data` (from `stream`) completes or starts a matching line."""
        *lines, self.pending[stream] = (self.pending.get(stream, b"") + data).split(b"\n")
        return _matching(self.pattern, [*lines, self.pending[stream]])


class Supervisor:
    """The loop: requests in, output and ends out."""

    def __init__(self, idle_limit: float) -> None:
        """Prepare the selector, the signal pipe and the shell."""
        self.idle_limit = idle_limit
        self.selector = selectors.DefaultSelector()
        self.processes: dict[str, Process] = {}
        self.requests = b""
        self.active = time.monotonic()
        self.ending = False
        self.bash = shutil.which("bash")
        # bash reads ~/.bashrc under sshd unless told not to (`backends.ssh.exec`)
        self.shell = [self.bash, "--norc"] if self.bash else ["/bin/sh"]
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, _ignore)
        for number in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(number, self._stop)
        self.selector.register(wake_r, selectors.EVENT_READ, ("wake", None))
        self.selector.register(0, selectors.EVENT_READ, ("requests", None))

    def _stop(self, *_: object) -> None:
        self.ending = True

    def send(self, message: dict[str, object]) -> None:
        """Write one JSON line to the channel (the supervisor ends if it is gone)."""
        data = (json.dumps(message) + "\n").encode()
        try:
            while data:
                data = data[os.write(1, data) :]
        except OSError:
            self.ending = True

    def run(self) -> None:
        """Serve until the channel ends; then kill every group."""
        self.send({"ready": True, "pid": os.getpid(), "bash": self.bash is not None})
        while not self.ending:
            for key, mask in self.selector.select(_TICK):
                kind, process = key.data
                if kind == "wake":
                    with contextlib.suppress(OSError):
                        os.read(key.fd, 4096)
                elif kind == "requests":
                    self._requests()
                elif kind == "input" and mask & selectors.EVENT_WRITE:
                    self._flush(process)
                else:
                    self._output(process, key.fd)
            self._reap()
            self._idle()
        for process in self.processes.values():
            process.kill("session")
        for process in self.processes.values():
            with contextlib.suppress(Exception):
                process.popen.wait(5)
            _remove(process.record)

    # ----- requests ----------------------------------------------------------------

    def _requests(self) -> None:
        chunk = os.read(0, _READ_SIZE)
        self.active = time.monotonic()
        if not chunk:
            self.ending = True
            return
        self.requests += chunk
        while b"\n" in self.requests:
            line, _, self.requests = self.requests.partition(b"\n")
            request = json.loads(line)
            try:
                answer = self._answer(request)
            except (OSError, ValueError, KeyError) as exc:
                answer = {"error": str(exc)}
            answer["id"] = request.get("id")
            self.send(answer)

    def _answer(self, request: dict[str, object]) -> dict[str, object]:
        op = request.get("op")
        if op == "start":
            return self._start(request)
        if op == "list":
            return {"processes": [_standing(p) for p in self.processes.values()]}
        if op == "accepts":
            return {"accepts": _accepts(int(str(request["port"])))}
        process = self.processes.get(str(request.get("proc")))
        if process is None:
            raise KeyError("no such process")
        process.active = time.monotonic()
        return self._process_answer(process, op, request)

    def _process_answer(
        self, process: Process, op: object, request: dict[str, object]
    ) -> dict[str, object]:
        if op == "read":
            return {**process.window.take(), **_standing(process)}
        if op == "kill":
            process.kill("kill")
            return {}
        if op == "watch":
            return self._watch(process, request)
        if op == "unwatch":
            process.watch = None
            return {}
        if op == "write":
            if not process.running or process.stdin is None:
                return {"error": "ended"}
            process.pending += base64.b64decode(str(request["data"]))
            self._flush(process)
            return {}
        raise ValueError(f"unknown op {op!r}")

    def _watch(self, process: Process, request: dict[str, object]) -> dict[str, object]:
        """Answer a watch from the window; watch what comes when it holds no such line."""
        try:
            pattern = re.compile(str(request["pattern"]))
        except re.error as bad:
            raise ValueError(f"not a regex here ({bad})") from None
        kept = process.window.streams()
        if _matching(pattern, [line for data in kept.values() for line in data.split(b"\n")]):
            return {"matched": True}
        if not process.outputs:
            return {"matched": False, "ended": True}
        partial = {stream: data.rsplit(b"\n", 1)[-1] for stream, data in kept.items()}
        process.watch = Watch(request.get("watch"), pattern, partial)
        return {"matched": False}

    def _tell_watch(self, process: Process, *, matched: bool) -> None:
        """Tell the watch of `process` its outcome, and end it."""
        watch, process.watch = process.watch, None
        if watch is not None:
            self.send(
                {"event": "line", "proc": process.ident, "watch": watch.ident, "matched": matched}
            )

    def _start(self, request: dict[str, object]) -> dict[str, object]:
        ident = str(request["proc"])
        terminal = bool(request.get("terminal"))
        cwd = str(request.get("cwd") or "/")
        if not os.path.isdir(cwd):
            cwd = str(request.get("fallback_cwd") or "/")
        env = request.get("env")
        passed: tuple[int, ...] = ()
        record = None
        if request.get("remember"):
            handle, record = tempfile.mkstemp(prefix="fstools-state-")
            os.dup2(handle, STATE_FD)
            os.close(handle)
            passed = (STATE_FD,)
        ours = theirs = -1
        if terminal:
            ours, theirs = pty.openpty()
        streams: dict[str, object] = (
            {"stdin": theirs, "stdout": theirs, "stderr": theirs, "preexec_fn": _controlling}
            if terminal
            else {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        )
        try:
            popen = subprocess.Popen(  # noqa: S603 - the shell runs the agent's command
                [*self.shell, "-c", str(request["command"])],
                cwd=cwd,
                env=dict(env) if isinstance(env, dict) else None,
                start_new_session=True,
                pass_fds=passed,
                **streams,  # type: ignore[call-overload]
            )
        except OSError:
            _remove(record)
            if terminal:
                os.close(ours)
            raise
        finally:
            if passed:
                os.close(STATE_FD)
            if terminal:
                os.close(theirs)
        process = Process(ident, popen, int(str(request.get("limit") or _READ_SIZE)))
        process.record = record
        self._attach(process, ours if terminal else None)
        self.processes[ident] = process
        return {"pid": popen.pid}

    # ----- processes ------------------------------------------------------------------

    def _attach(self, process: Process, terminal: int | None) -> None:
        """Read the output of a started process, and keep its input (non-blocking)."""
        popen = process.popen
        if terminal is not None:
            process.outputs[terminal] = "out"
            process.stdin = os.dup(terminal)
        else:
            process.outputs[_own(popen.stdout)] = "out"
            process.outputs[_own(popen.stderr)] = "err"
            process.stdin = _own(popen.stdin)
        for fd in (*process.outputs, process.stdin):
            os.set_blocking(fd, False)
        for fd in process.outputs:
            self.selector.register(fd, selectors.EVENT_READ, ("output", process))

    def _output(self, process: Process, fd: int) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # a pseudo-terminal whose other end closed: EIO
            data = b""
        if not data:
            self._close_output(process, fd)
            return
        stream = process.outputs[fd]
        process.window.add(data, stream)
        if process.watch is not None and process.watch.matches(data, stream):
            self._tell_watch(process, matched=True)

    def _close_output(self, process: Process, fd: int) -> None:
        self.selector.unregister(fd)
        del process.outputs[fd]
        if fd != process.stdin:
            _close(fd)
        if not process.outputs:
            self._tell_watch(process, matched=False)

    def _flush(self, process: Process) -> None:
        fd = process.stdin
        if fd is None:
            return
        try:
            while process.pending:
                process.pending = process.pending[os.write(fd, process.pending) :]
        except BlockingIOError:
            pass
        except OSError:  # the process closed its input
            process.pending = b""
        waiting = fd in self.selector.get_map()
        if process.pending and not waiting:
            self.selector.register(fd, selectors.EVENT_WRITE, ("input", process))
        elif not process.pending and waiting:
            self.selector.unregister(fd)

    def _reap(self) -> None:
        for process in self.processes.values():
            if not process.running:
                continue
            code = process.popen.poll()
            if code is None:
                continue
            process.status = code if code >= 0 else 128 - code
            with contextlib.suppress(OSError):  # what the command left behind in its group
                os.killpg(process.popen.pid, signal.SIGKILL)
            for fd in list(process.outputs):  # what it wrote before it ended
                for _ in range(_DRAIN_READS):
                    if fd not in process.outputs or not _readable(fd):
                        break
                    self._output(process, fd)
            self._end_input(process)
            self.send(
                {
                    "event": "exit",
                    "proc": process.ident,
                    "status": process.status,
                    "ended_by": process.ended_by,
                    "record": _record(process.record),
                }
            )
            process.record = None

    def _end_input(self, process: Process) -> None:
        fd, process.stdin, process.pending = process.stdin, None, b""
        if fd is None:
            return
        if fd in self.selector.get_map():
            self.selector.unregister(fd)
        _close(fd)

    def _idle(self) -> None:
        now = time.monotonic()
        for process in self.processes.values():
            if process.running and now - process.active > self.idle_limit:
                process.kill("idle")
        holding = any(p.running or p.window.unread for p in self.processes.values())
        if not holding and now - self.active > self.idle_limit:
            self.ending = True  # nothing running, nothing unread: the channel goes back


def _standing(process: Process) -> dict[str, object]:
    return {
        "proc": process.ident,
        "running": process.running,
        "status": process.status,
        "ended_by": process.ended_by,
    }


def _matching(pattern: re.Pattern[str], lines: list[bytes]) -> bool:
    """Whether one of `lines` (UTF-8, a carriage return at the end dropped) matches."""
    return any(pattern.search(line.decode("utf-8", "replace").rstrip("\r")) for line in lines)


def _accepts(port: int) -> bool:
    """Whether a socket of the host listens on TCP `port` (see the module docstring)."""
    tables = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as opened:
            tables.append(opened.read())
    if tables:
        wanted = format(port, "04X")
        for table in tables:
            for row in table.splitlines()[1:]:
                fields = row.split()
                if fields[1].rsplit(":", 1)[1] == wanted and fields[3] == _LISTEN:
                    return True
        return False
    for host in ("127.0.0.1", "::1"):
        with contextlib.suppress(OSError), socket.create_connection((host, port), PROBE_TIMEOUT):
            return True
    return False


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _readable(fd: int) -> bool:
    with selectors.DefaultSelector() as probe:
        probe.register(fd, selectors.EVENT_READ)
        return bool(probe.select(0))


def _record(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return _text(handle.read())
    except OSError:
        return None
    finally:
        _remove(path)


def _remove(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _own(stream: typing.IO[bytes] | None) -> int:
    """A descriptor of our own for a pipe `Popen` opened (its file object closed)."""
    assert stream is not None  # noqa: S101 - pipes asked for
    fd = os.dup(stream.fileno())
    stream.close()
    return fd


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _controlling() -> None:
    """In a terminal's process: make the pseudo-terminal its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _ignore(*_: object) -> None:
    """SIGCHLD only wakes the loop (through the wakeup descriptor)."""


def main() -> None:
    """Serve the channel: `python3 -c SOURCE IDLE_LIMIT`."""
    idle = float(sys.argv[1]) if len(sys.argv) > 1 else 1800.0
    Supervisor(idle).run()


if __name__ == "__main__":
    main()
