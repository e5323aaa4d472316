"""Background processes in the sandbox: a keeper that outlives the helper's runs.

Operations of the sandbox's helper (`backends.sandbox.helper` ships and runs them, one
`execute` each; `backends.sandbox.kept_processes` is the host's side). A helper run lasts
one operation, so a background process needs something that stays: the first
`process_start` forks a keeper, detached (a session of its own, its input and output
`/dev/null`, so the provider's `execute` returns), which

- runs the SSH backend's supervisor (`backends.host_supervisor`, the same code) in a
  child, speaking JSON lines with it over two pipes: each process in a process group of
  its own, started in the workspace with the shell, its output kept in a window of
  `limit` bytes (the head and tail since the last read, the middle counted), killed
  when nobody read or wrote it for `idle` seconds;
- listens on `processes.sock` in the helper's private folder: each later operation
  connects, sends one request line and gets one answer line.

Requests: `start` (`command`, `cwd`, `limit`, `most`: refused with `"limit"` when `most`
processes run already; the keeper numbers processes `p1`, `p2`, ... for every worker
alike), `read`, `write` (`data` base64), `kill`, `list` (every process with its command,
start time and standing), `wait` (`seconds`: answered when the process ends or then),
`accepts` (`port`: whether the sandbox's loopback accepts connections there), `forget`
(an ended process left out of later lists) and
`close` (the supervisor's input ends: it kills every group and exits, and so does the
keeper). When the supervisor exits by itself (nothing ran or waited to be read for
`idle` seconds), the keeper removes its socket and exits; the next start forks another.
A sandbox that is gone takes its keeper and processes with it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import selectors
import socket
import time
from typing import TYPE_CHECKING, Any

from langchain_fstools import errors

if TYPE_CHECKING:
    from langchain_fstools.backends.sandbox.command_helper import Disk

Reply = tuple[Any, bytes]

SOCKET = "processes.sock"
"""The keeper's socket, in the helper's private folder."""

_SPAWN_LOCK = "processes.lock"
_READY_SECONDS = 10.0
"""How long a start waits for a keeper it forked to listen."""
_READ = 65536


# ----- the operations (in a helper run) --------------------------------------------------------


def start(disk: Disk, request: dict[str, Any], data: bytes) -> Reply:
    """`process_start`: start `request["command"]` in the workspace; its id and standing."""
    del data
    asked = {**request, "op": "start", "cwd": disk.beneath.root}
    answer = _ask(disk.folder, asked, idle=float(request.get("idle", 1800.0)))
    if answer.get("error") == "limit":
        raise errors.ProcessLimit(int(request["most"]))
    return _checked(answer), b""


def read(disk: Disk, ident: str, data: bytes) -> Reply:
    """`process_read`: the output window since the last read (emptied), and the standing."""
    del data
    return _checked(_ask(disk.folder, {"op": "read", "proc": ident})), b""


def write(disk: Disk, ident: str, data: bytes) -> Reply:
    """`process_write`: feed `data` to the process's input."""
    text = base64.b64encode(data).decode("ascii")
    return _checked(_ask(disk.folder, {"op": "write", "proc": ident, "data": text})), b""


def kill(disk: Disk, ident: str, data: bytes) -> Reply:
    """`process_kill`: end the process's group."""
    del data
    return _checked(_ask(disk.folder, {"op": "kill", "proc": ident})), b""


def wait(disk: Disk, ident: str, seconds: float, data: bytes) -> Reply:
    """`process_wait`: the standing once the process ended, or after `seconds`."""
    del data
    return _checked(_ask(disk.folder, {"op": "wait", "proc": ident, "seconds": seconds})), b""


def forget(disk: Disk, ident: str, data: bytes) -> Reply:
    """`process_forget`: leave an ended process out of later lists."""
    del data
    return _ask(disk.folder, {"op": "forget", "proc": ident}, spawn=False, absent={}), b""


def listing(disk: Disk, data: bytes) -> Reply:
    """`process_list`: every process the keeper started (none without a keeper)."""
    del data
    return _checked(_ask(disk.folder, {"op": "list"}, spawn=False, absent={"processes": []})), b""


def accepts(disk: Disk, port: int, data: bytes) -> Reply:
    """`process_accepts`: whether the sandbox's loopback accepts connections on `port`."""
    del disk, data
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", int(port))) == 0, b""


def close(disk: Disk, data: bytes) -> Reply:
    """`process_close`: end every process and the keeper (nothing to do without one)."""
    del data
    return _ask(disk.folder, {"op": "close"}, spawn=False, absent={}), b""


def _checked(answer: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        raise errors.InvalidArgument("process_id", str(answer["error"]))
    return answer


def _ask(
    folder: str,
    request: dict[str, Any],
    *,
    spawn: bool = True,
    idle: float = 1800.0,
    absent: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Send `request` to the keeper; its answer.

    Without a keeper, a start forks one (`spawn`); other requests get `absent`, or an
    error saying the process ended with the keeper.
    """
    os.chdir(folder)  # the socket by its short name: an AF_UNIX path is at most 107 bytes
    connection = _connected()
    if connection is None and spawn and request["op"] == "start":
        connection = _spawned(idle)
    if connection is None:
        if absent is not None:
            return absent
        return {"error": f"{request.get('proc')} has ended: the sandbox's processes ended"}
    with connection:
        connection.sendall(json.dumps(request).encode() + b"\n")
        received = b""
        while not received.endswith(b"\n"):
            chunk = connection.recv(_READ)
            if not chunk:
                return {"error": "the sandbox's processes ended while asked"}
            received += chunk
    answer: dict[str, Any] = json.loads(received)
    return answer


def _connected() -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(SOCKET)
    except (FileNotFoundError, ConnectionRefusedError):
        connection.close()
        return None
    return connection


def _spawned(idle: float) -> socket.socket | None:
    """Fork a keeper (once, under a lock: two starts fork one) and connect to it."""
    import fcntl  # noqa: PLC0415 - only a start that forks needs it

    lock = os.open(_SPAWN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        connection = _connected()
        if connection is not None:
            return connection
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SOCKET)  # a keeper's that died
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(SOCKET)
        listening.listen(16)
        child = os.fork()
        if child == 0:  # pragma: no cover - the keeper's side, measured by its effects
            _detached(listening, idle)
        os.waitpid(child, 0)
        listening.close()
        until = time.monotonic() + _READY_SECONDS
        while (connection := _connected()) is None and time.monotonic() < until:
            time.sleep(0.02)
        return connection
    finally:
        os.close(lock)


def _detached(listening: socket.socket, idle: float) -> None:  # pragma: no cover
    """In the forked child: leave the session, fork the keeper, exit."""
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = listening.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 16)
        Keeper(listening, idle).run()
    finally:
        os._exit(0)


# ----- the keeper ------------------------------------------------------------------------------


class Keeper:  # pragma: no cover - runs detached in the sandbox; tested through the backend
    """The socket's loop: requests in, the supervisor's answers and ends out (module doc).

    Args:
        listening: The bound, listening socket.
        idle: Seconds after which the supervisor ends an unread, unwritten process.
    """

    def __init__(self, listening: socket.socket, idle: float) -> None:
        """Start the supervisor in a child, speaking over two pipes."""
        to_read, self.to_supervisor = os.pipe()
        self.from_supervisor, to_write = os.pipe()
        self.child = os.fork()
        if self.child == 0:
            _supervise(listening, to_read, to_write, idle)
        for fd in (to_read, to_write):
            os.close(fd)
        self.listening = listening
        self.selector = selectors.DefaultSelector()
        self.selector.register(listening, selectors.EVENT_READ, None)
        self.selector.register(self.from_supervisor, selectors.EVENT_READ, "supervisor")
        self.numbered = 0
        self.next_id = 0
        self.started: dict[str, dict[str, Any]] = {}
        self.ended: dict[str, dict[str, Any]] = {}
        self.pending: dict[int, tuple[socket.socket, dict[str, Any]]] = {}
        self.waiting: list[tuple[socket.socket, str, float]] = []
        self.closing: list[socket.socket] = []
        self.answers = b""
        self.done = False

    def run(self) -> None:
        """Serve until the supervisor exits; then answer who waits, and remove the socket."""
        try:
            while not self.done:
                for key, _ in self.selector.select(self._tick()):
                    if key.data is None:
                        self._accept()
                    elif key.data == "supervisor":
                        self._answers()
                    else:
                        self._request(key.fileobj, key.data)  # type: ignore[arg-type]
                self._expire()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(SOCKET)
            for connection, _ in self.pending.values():
                _answer(connection, {"error": "the sandbox's processes ended"})
            for connection, ident, _ in self.waiting:
                _answer(connection, self._standing(ident))
            for connection in self.closing:
                _answer(connection, {"closed": True})
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.child, 0)

    def _tick(self) -> float:
        if not self.waiting:
            return 1.0
        return max(0.0, min(until for _, _, until in self.waiting) - time.monotonic())

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            connection, _ = self.listening.accept()
            self.selector.register(connection, selectors.EVENT_READ, [b""])

    def _request(self, connection: socket.socket, buffer: list[bytes]) -> None:
        try:
            chunk = connection.recv(_READ)
        except OSError:  # the asking run died: nobody to answer
            chunk = b""
            buffer[0] = b""
        buffer[0] += chunk
        if chunk and not buffer[0].endswith(b"\n"):
            return
        self.selector.unregister(connection)
        try:
            request = json.loads(buffer[0])
        except ValueError:  # empty (it hung up) or not ours
            connection.close()
            return
        op = request.get("op")
        if op == "list":
            rows = [self._standing(ident) for ident in self.started]
            _answer(connection, {"processes": rows})
        elif op == "wait":
            ident = str(request.get("proc"))
            if ident not in self.started or ident in self.ended:
                _answer(connection, self._standing(ident))
            else:
                until = time.monotonic() + float(request.get("seconds", 0))
                self.waiting.append((connection, ident, until))
        elif op == "forget":  # a command that ended within its `yield_after`
            self.started.pop(str(request.get("proc")), None)
            _answer(connection, {})
        elif op == "close":
            self.closing.append(connection)
            with contextlib.suppress(OSError):
                os.close(self.to_supervisor)
        elif op == "start":
            self._start(connection, request)
        else:
            self._forward(connection, request)

    def _start(self, connection: socket.socket, request: dict[str, Any]) -> None:
        running = sum(1 for ident in self.started if ident not in self.ended)
        if running >= int(request.get("most", 8)):
            _answer(connection, {"error": "limit"})
            return
        self.numbered += 1
        ident = f"p{self.numbered}"
        self.started[ident] = {
            "command": request["command"],
            "started": time.time(),
            "limit": int(request["limit"]),
        }
        forwarded = {
            "op": "start",
            "proc": ident,
            "command": request["command"],
            "cwd": request["cwd"],
            "fallback_cwd": request["cwd"],
            "env": None,
            "terminal": bool(request.get("terminal")),
            "limit": int(request["limit"]),
            "remember": False,
        }
        self._forward(connection, forwarded)

    def _forward(self, connection: socket.socket, request: dict[str, Any]) -> None:
        self.next_id += 1
        self.pending[self.next_id] = (connection, request)
        line = json.dumps({**request, "id": self.next_id}).encode() + b"\n"
        try:
            while line:
                line = line[os.write(self.to_supervisor, line) :]
        except OSError:
            del self.pending[self.next_id]
            _answer(connection, {"error": "the sandbox's processes ended"})

    def _answers(self) -> None:
        chunk = os.read(self.from_supervisor, _READ)
        if not chunk:
            self.done = True
            return
        self.answers += chunk
        while b"\n" in self.answers:
            line, _, self.answers = self.answers.partition(b"\n")
            message = json.loads(line)
            if message.get("event") == "exit":
                self.ended[message["proc"]] = message
                self._expire(ended=message["proc"])
                continue
            found = self.pending.pop(message.get("id"), None)
            if found is None:
                continue
            connection, request = found
            if "error" in message and request["op"] == "start":
                self.started.pop(request["proc"], None)
            if request["op"] == "start" and "error" not in message:
                message = {**message, **self._standing(request["proc"])}
            if request["op"] == "read":
                message = {**self._standing(request["proc"]), **message}
            _answer(connection, message)

    def _expire(self, ended: str | None = None) -> None:
        now = time.monotonic()
        kept = []
        for connection, ident, until in self.waiting:
            if ident == ended or until <= now:
                _answer(connection, self._standing(ident))
            else:
                kept.append((connection, ident, until))
        self.waiting = kept

    def _standing(self, ident: str) -> dict[str, Any]:
        started = self.started.get(ident)
        if started is None:
            return {"error": f"{ident} is not a process of this sandbox"}
        end = self.ended.get(ident)
        return {
            "proc": ident,
            **started,
            "running": end is None,
            "status": None if end is None else end.get("status"),
            "ended_by": None if end is None else end.get("ended_by"),
        }


def _supervise(
    listening: socket.socket, to_read: int, to_write: int, idle: float
) -> None:  # pragma: no cover - the supervisor's child
    """In the keeper's child: the SSH supervisor on the pipes, then exit."""
    try:
        listening.close()
        os.dup2(to_read, 0)
        os.dup2(to_write, 1)
        os.closerange(3, 1 << 16)
        from langchain_fstools.backends import host_supervisor  # noqa: PLC0415

        host_supervisor.Supervisor(idle).run()
    finally:
        os._exit(0)


def _answer(connection: socket.socket, message: dict[str, Any]) -> None:  # pragma: no cover
    with contextlib.suppress(OSError), connection:
        connection.sendall(json.dumps(message).encode() + b"\n")


__all__ = [
    "SOCKET",
    "Keeper",
    "accepts",
    "close",
    "forget",
    "kill",
    "listing",
    "read",
    "start",
    "wait",
    "write",
]
