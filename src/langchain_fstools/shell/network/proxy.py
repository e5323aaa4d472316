"""The sandbox's HTTP proxy: commands reach the allowed domains, and nothing else.

`Sandbox(network=[...])` starts one `DomainProxy` per backend, on its first command. It
listens on a Unix socket in a private (0700) temporary folder, which bubblewrap mounts
read-only into each sandbox at `SANDBOX_FOLDER`; each session's bridge (`shell.network.bridge`)
passes it the socket listening on the command's `127.0.0.1:PORT` (over the Unix
socket, once), and the proxy accepts the command's connections from it directly, in
the sandbox's network namespace, until the bridge's Unix connection ends. The command's
environment names that port in `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (and their
lower-case forms), which pip, git, curl, npm and most HTTP clients honour.

What it serves, one request per connection (accepted from a passed listener, or the
Unix connection itself when nothing was passed):
- `CONNECT host:port` (HTTPS and any TLS): a tunnel, the bytes passed unread both ways.
- A request in absolute form (`GET http://host[:port]/path HTTP/1.1`): sent on to the
  host in origin form, its `Host` header the URL's (so a shared front end cannot be
  asked for another site), with `Connection: close` and without the `Proxy-*` headers;
  the response streams back, then the connection ends.
A host not on the list, an address not listed itself, or a port not allowed gets
`403 Forbidden` with one line saying why and how to allow it (`AllowedDomains.refusal`);
a name that does not resolve or a host that does not answer gets `502 Bad Gateway`;
anything else (a request in origin form, a malformed line) `400 Bad Request`. The proxy
resolves names itself, so commands need no DNS, and their network namespace has none.

The proxy is a process of its own (on this interpreter, standard library and this
package only): a thread per passed listener, and per connection and direction one
moving bytes with `splice` (blocking, through a pipe: the bytes stay in the kernel),
taken from a pool of idle threads (starting one costs more than a small request);
it stops with `close`, when the `DomainProxy` is garbage-collected, or when the agent's
process ends, and its folder is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from typing import TYPE_CHECKING, Final

from langchain_fstools.shell.network import bridge

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.shell.network.domains import AllowedDomains

PORT: Final = 3128
"""Where the bridge listens inside the sandbox (its network namespace is its own)."""

SANDBOX_FOLDER: Final = "/tmp/.fstools-proxy"  # noqa: S108 - inside the sandbox's private /tmp
"""Where the proxy's folder is mounted inside the sandbox."""

SOCKET_NAME: Final = "proxy.sock"

NO_PROXY: Final = "localhost,127.0.0.1,::1"
"""What commands reach without the proxy: their own loopback."""

_HEAD_LIMIT = 64 * 1024
"""Most bytes of a request line and headers."""
_HEAD_TIMEOUT = 30.0
"""Seconds a client has to send its request line and headers."""
_CONNECT_TIMEOUT = 30.0
"""Seconds to reach an allowed host."""
_DROPPED = ("proxy-connection", "proxy-authorization", "connection", "keep-alive", "host")
_CHUNK = 1 << 20
"""Bytes one splice moves at most (as much as the pipe holds)."""
_BUFFER = 1 << 18
"""Bytes one receive moves at most, where the kernel cannot splice."""
_PIPE_SIZES = (1 << 20, 1 << 18)
"""The pipe sizes a relay asks for, in order (above `/proc/sys/fs/pipe-max-size` is
refused, and so is any above the default once the user's pipes hold too much): a
larger pipe moves a download in fewer calls (a 1 MiB pipe spent 0.4 ms less processor
time on 10 MB than a 256 KiB one, a tenth of the relay's)."""
_ACCEPT_PAUSE = 100
"""Milliseconds a passed listener rests after accepting failed for want of resources."""
_F_SETPIPE_SZ = 1031
_NO_SPLICE = (22, 95)
"""EINVAL, EOPNOTSUPP: the kernel cannot splice these descriptors."""


class _Refused(Exception):
    """A request the proxy answers with an error status and one line."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def proxy_env() -> dict[str, str]:
    """The variables that send a command's HTTP and HTTPS through the bridge."""
    url = f"http://127.0.0.1:{PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    found = dict.fromkeys(names, url) | dict.fromkeys((name.lower() for name in names), url)
    return found | {"NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY}


class DomainProxy:
    """An HTTP proxy on a Unix socket that reaches only `domains` (module docstring).

    Started on first use (`socket_path`), from any thread, as a process of its own (so
    the agent's threads and the proxy's never wait for one another's interpreter lock);
    `close` stops it, and so does this process's end (the proxy reads its standard
    input, a pipe from here, and leaves when it closes).

    Args:
        domains: What commands may reach.
    """

    def __init__(self, domains: AllowedDomains) -> None:
        """Remember the domains; nothing starts yet."""
        self.domains = domains
        self._lock = threading.Lock()
        self._folder: str | None = None
        self._finalizer: weakref.finalize[[subprocess.Popen[bytes], str], DomainProxy] | None
        self._finalizer = None

    @property
    def socket_path(self) -> str:
        """The host path of the proxy's socket; starts the proxy the first time."""
        with self._lock:
            if self._folder is None:
                self._start()
            return f"{self._folder}/{SOCKET_NAME}"

    def _start(self) -> None:
        folder = tempfile.mkdtemp(prefix="fstools-proxy-")  # 0700
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(f"{folder}/{SOCKET_NAME}")
                listener.listen(128)
                process = _spawn(listener.fileno(), folder, self.domains)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._folder = folder
        self._finalizer = weakref.finalize(self, _stop, process, folder)

    def close(self) -> None:
        """Stop the proxy and remove the socket's folder."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._folder = self._finalizer = None

    def bwrap_args(self) -> list[str]:
        """Bubblewrap arguments that show the proxy's folder at `SANDBOX_FOLDER`."""
        return ["--ro-bind", self.socket_path.rpartition("/")[0], SANDBOX_FOLDER]

    def bridge_argv(self, helper: Sequence[str]) -> list[str]:
        """The bridge's command line, on the helper's interpreter (its last item is a path)."""
        script = os.path.realpath(bridge.__file__)
        inside = f"{SANDBOX_FOLDER}/{SOCKET_NAME}"
        return [*helper[:-1], script, str(PORT), inside, "--"]


_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); from {0} import main;"
    " main(int(sys.argv[2]), sys.argv[3])"
)


def _spawn(listener: int, folder: str, domains: AllowedDomains) -> subprocess.Popen[bytes]:
    """Start the proxy's process on the listening socket `listener`; tell it the domains."""
    package = os.path.realpath(__file__).rsplit("/", 4)[0]  # the folder holding the package
    argv = [os.path.realpath(sys.executable), "-I", "-S", "-c", _CHILD.format(__name__)]
    process = subprocess.Popen(  # noqa: S603 - this interpreter, our own module
        [*argv, package, str(listener), folder],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=[listener],
    )
    assert process.stdin is not None  # noqa: S101 - a pipe, asked for above
    process.stdin.write(json.dumps(domains.spec()).encode() + b"\n")
    process.stdin.flush()
    return process


def _stop(process: subprocess.Popen[bytes], folder: str) -> None:
    process.kill()
    process.wait()
    if process.stdin is not None:
        process.stdin.close()
    shutil.rmtree(folder, ignore_errors=True)


def main(listener: int, folder: str) -> None:
    """The proxy's process: serve `listener` until standard input closes.

    Then it removes `folder` (the socket's) and exits. The first line of standard input
    is the domains (`AllowedDomains.spec`, as JSON).
    """
    from langchain_fstools.shell.network.domains import AllowedDomains  # noqa: PLC0415 - the child

    domains = AllowedDomains(**json.loads(sys.stdin.buffer.readline()))
    accepting = socket.socket(fileno=listener)
    threading.Thread(target=_accept, args=(accepting, domains), daemon=True).start()
    sys.stdin.buffer.read()  # returns when the agent closes the pipe or ends
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


class _Workers:
    """Threads that each run one task at a time and then wait for the next.

    Handing a task to an idle thread costs a few microseconds; starting a thread costs
    tens, twice per connection (its request, then the second direction of its relay).
    At most `idle` threads wait; one more ends when its task does.
    """

    def __init__(self, idle: int = 32) -> None:
        self._most = idle
        self._idle = 0
        self._lock = threading.Lock()
        self._tasks: queue.SimpleQueue[tuple[Callable[..., object], tuple[object, ...]]]
        self._tasks = queue.SimpleQueue()

    def run(self, task: Callable[..., object], *args: object) -> None:
        """Run `task(*args)` in an idle thread, or in a new one when none is idle."""
        with self._lock:
            waiting = self._idle > 0
            if waiting:
                self._idle -= 1  # that thread takes this task (or an earlier one)
        self._tasks.put((task, args))
        if not waiting:
            with contextlib.suppress(RuntimeError):  # no thread to spare: the next free one
                threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            task, args = self._tasks.get()
            with contextlib.suppress(Exception):  # a task's failure ends only that task
                task(*args)
            del task, args  # hold no socket while idle
            with self._lock:
                if self._idle >= self._most:
                    return
                self._idle += 1


_WORKERS = _Workers()


def _accept(listener: socket.socket, domains: AllowedDomains) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # closed
        _WORKERS.run(_serve_unix, client, domains)


def _serve_unix(connection: socket.socket, domains: AllowedDomains) -> None:
    """A Unix connection: a bridge passing its listener, or a request of its own."""
    connection.settimeout(_HEAD_TIMEOUT)
    try:
        message, descriptors, _, _ = socket.recv_fds(connection, 65536, 1)
    except OSError:
        connection.close()
        return
    if not descriptors:
        _serve(connection, domains, message)
        return
    for extra in descriptors[1:]:
        os.close(extra)
    try:
        listener = socket.socket(fileno=descriptors[0])
    except OSError:
        os.close(descriptors[0])  # not a socket
        connection.close()
        return
    if not _is_tcp_listener(listener):
        listener.close()
        connection.close()
        return
    _accept_passed(connection, listener, domains)


def _is_tcp_listener(passed: socket.socket) -> bool:
    try:
        listening = passed.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError:
        return False
    return (
        bool(listening)
        and passed.family in {socket.AF_INET, socket.AF_INET6}
        and passed.type == socket.SOCK_STREAM
    )


def _accept_passed(bridge: socket.socket, listener: socket.socket, domains: AllowedDomains) -> None:
    """Serve each connection `listener` accepts until the `bridge` connection ends."""
    listener.settimeout(0)  # accept only what poll said is there
    poller = select.poll()
    poller.register(bridge, select.POLLIN)
    poller.register(listener, select.POLLIN)
    try:
        while True:
            ready = dict(poller.poll())
            if bridge.fileno() in ready:
                return  # the bridge sends nothing: it ended (its sandbox did)
            try:
                client, _ = listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                continue  # the connection went before it was accepted
            except OSError:  # out of descriptors or memory: wait a little, then again
                poller.unregister(listener)
                poller.poll(_ACCEPT_PAUSE)
                poller.register(listener, select.POLLIN)
                continue
            _WORKERS.run(_serve, client, domains, b"")
    finally:
        listener.close()
        bridge.close()


def _serve(client: socket.socket, domains: AllowedDomains, start: bytes) -> None:
    """Answer one connection: a tunnel, a forwarded request, or a refusal."""
    client.settimeout(_HEAD_TIMEOUT)
    try:
        head, rest = _read_head(client, start)
        method, host, port, forwarded = _parse(head)
        reason = domains.refusal(host, port)
        if reason is not None:
            raise _Refused("403 Forbidden", reason)  # noqa: TRY301 - answered below
        upstream = _connect(domains, host, port)
        client.settimeout(None)
    except _Refused as refused:
        _answer(client, refused.status, refused.reason)
        return
    except OSError:
        client.close()
        return
    try:
        if method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            upstream.sendall(rest)
        else:
            upstream.sendall(forwarded + rest)
    except OSError:
        client.close()
        upstream.close()
        return
    relay(client, upstream)


def _read_head(client: socket.socket, received: bytes) -> tuple[bytes, bytes]:
    """The request line and headers (to the blank line), and what came after them."""
    while b"\r\n\r\n" not in received:
        if len(received) > _HEAD_LIMIT:
            raise _Refused("431 Request Header Fields Too Large", "the request head is too long")
        chunk = client.recv(65536)
        if not chunk:
            raise _Refused("400 Bad Request", "the request ended before its headers did")
        received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return head, rest


def _parse(head: bytes) -> tuple[str, str, int, bytes]:
    """Method, host, port, and the request as sent on (empty for CONNECT)."""
    line, *headers = head.decode("latin-1").split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3:  # noqa: PLR2004 - method, target, version
        raise _Refused("400 Bad Request", f"not an HTTP request line: {line[:200]!r}")
    method, target, version = parts
    if method == "CONNECT":
        host, port = _host_port(target, None)
        return method, host, port, b""
    scheme, separator, remainder = target.partition("://")
    if not separator or scheme.lower() != "http":
        raise _Refused(
            "400 Bad Request",
            "send requests through the proxy in absolute form (http://host/path), and"
            " HTTPS through CONNECT",
        )
    authority, slash, path = remainder.partition("/")
    authority = authority.rpartition("@")[2]
    host, port = _host_port(authority, 80)
    kept = [h for h in headers if h.partition(":")[0].strip().lower() not in _DROPPED]
    line = f"{method} {slash}{path} {version}"
    request = "\r\n".join([line, f"Host: {authority}", *kept, "Connection: close"])
    return method, host, port, (request + "\r\n\r\n").encode("latin-1")


def _host_port(authority: str, default: int | None) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, after = authority[1:].partition("]")
        port_text = after.removeprefix(":") if after.startswith(":") else ""
    elif authority.count(":") == 1:
        host, _, port_text = authority.partition(":")
    else:
        host, port_text = authority, ""
    if not port_text and default is not None:
        return host, default
    if not port_text.isdigit() or not host:
        raise _Refused("400 Bad Request", f"not a host and port: {authority[:200]!r}")
    return host, int(port_text)


def _connect(domains: AllowedDomains, host: str, port: int) -> socket.socket:
    try:
        addresses = domains.addresses(host, port)
    except OSError as exc:
        raise _Refused("502 Bad Gateway", f"{host} does not resolve: {exc}") from None
    failure: OSError | None = None
    for family, address in addresses:
        connection = socket.socket(family, socket.SOCK_STREAM)
        connection.settimeout(_CONNECT_TIMEOUT)
        try:
            connection.connect((address, port))
        except OSError as exc:
            connection.close()
            failure = exc
            continue
        connection.settimeout(None)
        return connection
    raise _Refused("502 Bad Gateway", f"{host}:{port} cannot be reached: {failure}")


def relay(first: socket.socket, second: socket.socket) -> None:
    """Pass bytes both ways between two connected sockets until both directions end.

    Closes both sockets when done.
    """
    finished = threading.Lock()
    finished.acquire()

    def backward() -> None:
        try:
            _pump(second, first)
        finally:
            finished.release()

    _WORKERS.run(backward)
    try:
        _pump(first, second)
        finished.acquire()
    finally:
        first.close()
        second.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Move bytes from `source` to `target` until `source` ends; then end `target`'s side.

    Zero-copy (`splice` through a pipe) where the kernel can, else receive and send.
    """
    try:
        try:
            _splice(source, target)
        except OSError as exc:
            if exc.errno not in _NO_SPLICE:
                raise
            _copy(source, target)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        for each in (source, target):  # one side failed: the other stops too
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)


def _splice(source: socket.socket, target: socket.socket) -> None:
    read_end, write_end = os.pipe()
    try:
        for size in _PIPE_SIZES:  # the default size works too, in more calls
            with contextlib.suppress(OSError):
                fcntl.fcntl(write_end, _F_SETPIPE_SZ, size)
                break
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
    buffer = bytearray(_BUFFER)
    view = memoryview(buffer)
    while count := source.recv_into(buffer):
        target.sendall(view[:count])


def _answer(client: socket.socket, status: str, reason: str) -> None:
    """Send `status` with `reason` as the body and in the status line, then close.

    In the status line too: HTTPS clients (pip's "Tunnel connection failed: 403 ...")
    show it where they never read a refused CONNECT's body.
    """
    line = f"fstools sandbox proxy: {reason}"
    body = f"{line}\n".encode()
    head = (
        f"HTTP/1.1 {status} - {line}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        client.sendall(head.encode("latin-1", "replace") + body)
    client.close()


__all__ = [
    "NO_PROXY",
    "PORT",
    "SANDBOX_FOLDER",
    "SOCKET_NAME",
    "DomainProxy",
    "proxy_env",
    "relay",
]
