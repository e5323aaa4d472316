"""The bridge inside the sandbox: hands each loopback connection to the host's proxy.

With allowed domains (`Sandbox(network=[...])`) a command's network namespace has only
`lo`. Bubblewrap starts `python -I -S bridge.py PORT SOCKET -- HELPER...`: this script
listens on `127.0.0.1:PORT`, connects to the Unix socket `SOCKET` and passes the
listening socket itself over it (`SCM_RIGHTS`), keeping no copy: the host-side proxy
(`shell.network.proxy`) accepts each connection in the sandbox's namespace, reads its
request and decides what it may reach, and a connection made before it accepts waits in
the backlog. The listener is passed, and closed here, before anything else runs, so no
process of the sandbox ever holds it: once the proxy ends, connections are refused at
once (a copy left in the sandbox, however briefly, would take them into a backlog
nobody accepts from, then reset them). Then it starts a server (a grandchild, so the
sandbox's init adopts it and the command has no child it did not start) that holds the
Unix connection open until the sandbox ends (its PID namespace with it), which tells
the proxy to close the listener; and it goes on with the rest of the line (the
confinement helper, then the command), which finds the port already listening: the
helper, a script on this same interpreter with the same flags, runs in this process as
it would after `exec` (same pid, a fresh `__main__` namespace), saving a second
interpreter's start; anything else is `exec`uted. No byte of a connection crosses the
bridge: a download crosses one relay, in the proxy.

The bridge starts before the helper installs its seccomp filter (which refuses the
command Unix sockets) and connects to nothing but `SOCKET`, so it opens no other path
out. The command cannot trace it or read its memory: Landlock keeps a sandboxed process
from tracing one outside its domain, and the server is non-dumpable from its start (the
command has no capability to override that). It dies with the sandbox's PID namespace.

Standard library only, and the lightest modules (`_socket`, not `socket`): it starts
before each such command.
"""

from __future__ import annotations

import _socket
import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the bridge starts with every command
if TYPE_CHECKING:
    from typing import NoReturn

MARKER = b"listener"
"""The bytes sent with the passed listener (a message carries at least one byte)."""

_PR_SET_DUMPABLE = 4
_FAILED = 125


def give(listener: _socket.socket, path: str) -> _socket.socket | None:
    """Pass `listener` to the proxy at `path`; the connection that keeps it served.

    None when the proxy is gone (its connections are then refused). The caller closes
    `listener` at once and before any command starts: from then on only the proxy holds
    it, so once the proxy ends a connection is refused, never taken into a backlog
    nobody accepts from.
    """
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
        rights = listener.fileno().to_bytes(4, sys.byteorder, signed=True)
        upstream.sendmsg([MARKER], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
    except OSError:
        upstream.close()
        return None
    return upstream


def hold(upstream: _socket.socket) -> NoReturn:
    """Keep the proxy's connection open until the proxy or the sandbox ends.

    The proxy closes the listener when this connection ends.
    """
    try:
        while upstream.recv(1):  # the proxy sends nothing: this returns when it ends
            pass
    except OSError:
        pass  # the proxy is gone
    os._exit(0)


def _undumpable() -> None:
    """Make this process, and what it forks, non-dumpable (`exec` makes it dumpable again).

    `ctypes` costs nothing more here: the helper, run in this process next, imports it.
    """
    import ctypes  # noqa: PLC0415 - the helper's own import, made early

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _detach() -> None:
    """Let go of the command's standard streams."""
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    os.close(null)


def listen(port: int) -> _socket.socket:
    """A socket listening on `127.0.0.1:port`, closed on exec."""
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    return listener


def main(arguments: list[str]) -> NoReturn:
    """`PORT SOCKET -- ARGV...`: listen, start the server, run ARGV."""
    try:
        port, path, separator, *argv = arguments
        if separator != "--" or not argv:
            raise ValueError  # noqa: TRY301 - one report below
        listener = listen(int(port))
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"sandbox: the proxy bridge cannot start: {exc or 'bad arguments'}\n")
        os._exit(_FAILED)
    upstream = give(listener, path)  # before the command: see `give`
    listener.close()
    _undumpable()  # before the fork: the server is never dumpable, not even at its start
    if upstream is not None:
        child = os.fork()
        if child == 0:  # the server forks again and leaves: the command has no extra child
            try:
                if os.fork() == 0:
                    _detach()
                    hold(upstream)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        upstream.close()
    if _same_interpreter(argv):  # the helper: run here, not in a second interpreter
        sys.argv = argv[3:]
        code = compile(_read(argv[3]), argv[3], "exec")  # as `python SCRIPT` would
        exec(code, {"__name__": "__main__", "__file__": argv[3], "__builtins__": __builtins__})  # noqa: S102
        os._exit(0)
    try:
        os.execvp(argv[0], argv)  # noqa: S606 - running the helper is the point
    except OSError as exc:
        sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
        os._exit(127)


def _read(path: str) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(descriptor, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _same_interpreter(argv: list[str]) -> bool:
    """Whether `argv` runs a script on this interpreter with this one's flags."""
    return (
        len(argv) > 3  # noqa: PLR2004 - interpreter, two flags, script
        and argv[1:3] == ["-I", "-S"]
        and argv[3].endswith(".py")
        and os.path.realpath(argv[0]) == os.path.realpath(sys.executable)
    )


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["MARKER", "give", "hold", "listen", "main"]
