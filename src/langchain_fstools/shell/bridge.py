"""The bridge inside the sandbox: loopback TCP to the proxy's Unix socket.

With allowed domains (`Sandbox(network=[...])`) a command's network namespace has only
`lo`. Bubblewrap starts `python -I -S bridge.py PORT SOCKET -- HELPER...`: this script
listens on `127.0.0.1:PORT`, starts a server (a grandchild, so the sandbox's init
adopts it and the command has no child it did not start), and replaces itself with the
rest of the line (the confinement helper, then the command), which finds the port
already listening. The server passes each connection's bytes both ways to the one Unix
socket `SOCKET`, where the host-side proxy (`shell.proxy`) decides what it may reach.

The bridge starts before the helper installs its seccomp filter (which refuses the
command Unix sockets) and connects to nothing but `SOCKET`, so it opens no other path
out. It makes itself non-dumpable: a command, which has no capabilities, can neither
trace it nor read its memory or descriptors. It dies with the sandbox's PID namespace.

Standard library only, light modules: it starts before each such command. `relay` is
also the host proxy's pump.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the bridge starts with every command
if TYPE_CHECKING:
    from typing import NoReturn

_CHUNK = 1 << 18
"""Bytes one splice or receive moves at most."""
_PR_SET_DUMPABLE = 4
_F_SETPIPE_SZ = 1031
_FAILED = 125


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Move bytes from `source` to `target` until `source` ends; then end `target`'s side.

    Zero-copy (`splice` through a pipe) where the kernel can, else receive and send.
    """
    try:
        try:
            _splice(source, target)
        except OSError as exc:
            if exc.errno not in {22, 95}:  # EINVAL, EOPNOTSUPP: no splice for these
                raise
            _copy(source, target)
    except OSError:
        _abort(source, target)
    else:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            _abort(source, target)


def _splice(source: socket.socket, target: socket.socket) -> None:
    read_end, write_end = os.pipe()
    try:
        try:
            import fcntl  # noqa: PLC0415 - only where splice is tried

            fcntl.fcntl(write_end, _F_SETPIPE_SZ, _CHUNK)
        except OSError:
            pass  # the default pipe size works too, with more calls
        given, taken = source.fileno(), target.fileno()
        while True:
            moved = os.splice(given, write_end, _CHUNK)
            if moved == 0:
                return
            while moved:
                moved -= os.splice(read_end, taken, moved)
    finally:
        os.close(read_end)
        os.close(write_end)


def _copy(source: socket.socket, target: socket.socket) -> None:
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while True:
        count = source.recv_into(buffer)
        if count == 0:
            return
        target.sendall(view[:count])


def _abort(*sockets: socket.socket) -> None:
    """End both directions of each socket (a peer reset one: the other side stops too)."""
    for each in sockets:
        try:  # noqa: SIM105 - contextlib costs the bridge's start-up time
            each.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def relay(first: socket.socket, second: socket.socket) -> None:
    """Pass bytes both ways between two connected sockets until both directions end.

    Closes both sockets when done.
    """
    other = threading.Thread(target=_pump, args=(second, first), daemon=True)
    other.start()
    try:
        _pump(first, second)
        other.join()
    finally:
        first.close()
        second.close()


def _serve_one(connection: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        upstream.close()
        connection.close()
        return
    relay(connection, upstream)


def serve(listener: socket.socket, path: str) -> NoReturn:
    """Accept connections on `listener` forever, each relayed to the socket at `path`."""
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(connection, path), daemon=True).start()


def _detach() -> None:
    """Make this process non-dumpable and let go of the command's standard streams."""
    import ctypes  # noqa: PLC0415 - only the serving child needs it

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    os.close(null)


def main(arguments: list[str]) -> NoReturn:
    """`PORT SOCKET -- ARGV...`: listen, fork the server, run ARGV."""
    try:
        port, path, separator, *argv = arguments
        if separator != "--" or not argv:
            raise ValueError  # noqa: TRY301 - one report below
        listener = socket.create_server(("127.0.0.1", int(port)))
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"sandbox: the proxy bridge cannot start: {exc or 'bad arguments'}\n")
        os._exit(_FAILED)
    child = os.fork()
    if child == 0:  # the server forks again and leaves: the command has no extra child
        try:
            if os.fork() == 0:
                _detach()
                serve(listener, path)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    listener.close()
    try:
        os.execvp(argv[0], argv)  # noqa: S606 - running the helper is the point
    except OSError as exc:
        sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["main", "relay", "serve"]
