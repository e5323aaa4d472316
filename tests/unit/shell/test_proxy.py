"""The sandbox's proxy, spoken to on its Unix socket: it reaches the allowed names only.

Loopback servers get names through the proxy's resolver; nothing leaves this machine.
The same proxy behind the bridge, from inside the sandbox: test_sandbox_domains.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.shell.network.bridge import MARKER
from langchain_fstools.shell.network.domains import AllowedDomains
from langchain_fstools.shell.network.proxy import PORT, DomainProxy, proxy_env
from tests.loopback import http_server, self_signed, tcp_recorder

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[int]:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "index.html").write_text("hello from pypi.test\n")
    with http_server(folder) as port:
        yield port


def _proxy(port: int, *names: str) -> DomainProxy:
    resolve = {"pypi.test": "127.0.0.1", "other.test": "127.0.0.1"}
    return DomainProxy(AllowedDomains(names or ["pypi.test"], ports=[port], resolve=resolve))


def _ask(proxy: DomainProxy, request: bytes) -> bytes:
    """Send `request` to the proxy and read its whole answer."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(proxy.socket_path)
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
        return answer


@contextlib.contextmanager
def _tunnel(proxy: DomainProxy, port: int) -> Iterator[socket.socket]:
    """A CONNECT tunnel to pypi.test:`port`, established, through the proxy's Unix socket."""
    with socket.socket(socket.AF_UNIX) as raw:
        raw.settimeout(10)
        raw.connect(proxy.socket_path)
        raw.sendall(f"CONNECT pypi.test:{port} HTTP/1.1\r\n\r\n".encode())
        assert raw.recv(100) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        yield raw


def _pass(proxy: DomainProxy, descriptor: int) -> socket.socket:
    """Pass `descriptor` to the proxy as the bridge passes its listener; the connection."""
    bridge = socket.socket(socket.AF_UNIX)
    bridge.settimeout(10)
    bridge.connect(proxy.socket_path)
    socket.send_fds(bridge, [MARKER], [descriptor])
    return bridge


def _get(port: int, site: int) -> bytes:
    """A GET for pypi.test's index through the proxy listening on `port`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(f"GET http://pypi.test:{site}/index.html HTTP/1.1\r\n\r\n".encode())
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
        return answer


def test_the_proxy_serves_a_passed_listener_until_its_bridge_ends(site: int) -> None:
    proxy = _proxy(site)
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = listener.getsockname()[1]
            bridge = _pass(proxy, listener.fileno())
        # the proxy holds the only listener now: it accepts every connection to it
        answers = [_get(port, site) for _ in range(3)]
        bridge.close()  # the sandbox ended: the proxy closes the listener
        deadline = time.monotonic() + 30
        refused = False
        while not refused and time.monotonic() < deadline:
            with socket.socket() as late:
                refused = late.connect_ex(("127.0.0.1", port)) != 0
    finally:
        proxy.close()
    assert all(a.endswith(b"hello from pypi.test\n") for a in answers), answers
    assert refused


@pytest.mark.parametrize("kind", ["a connected socket", "a pipe"])
def test_a_passed_descriptor_that_is_not_a_tcp_listener_is_closed_unserved(
    site: int, kind: str
) -> None:
    proxy = _proxy(site)
    mine, passed = socket.socketpair()
    read_end, write_end = os.pipe()
    try:
        bridge = _pass(proxy, passed.fileno() if kind == "a connected socket" else read_end)
        passed.close()
        os.close(read_end)
        with bridge:
            assert bridge.recv(100) == b""  # closed without an answer
        if kind == "a connected socket":
            mine.settimeout(10)
            assert mine.recv(100) == b""  # the proxy closed its end, unread and unanswered
        else:
            with pytest.raises(BrokenPipeError):  # the proxy closed the read end
                os.write(write_end, b"GET http://pypi.test/ HTTP/1.1\r\n\r\n")
    finally:
        mine.close()
        os.close(write_end)
        proxy.close()


def test_a_tunnel_held_open_does_not_hold_up_other_requests(site: int) -> None:
    proxy = _proxy(site)
    try:
        with _tunnel(proxy, site):  # idle: its relay waits in two threads
            answers = [
                _ask(proxy, f"GET http://pypi.test:{site}/index.html HTTP/1.1\r\n\r\n".encode())
                for _ in range(3)
            ]
    finally:
        proxy.close()
    assert all(a.endswith(b"hello from pypi.test\n") for a in answers), answers


def test_an_allowed_name_is_forwarded_in_origin_form(site: int) -> None:
    proxy = _proxy(site)
    try:
        answer = _ask(
            proxy,
            f"GET http://pypi.test:{site}/index.html HTTP/1.1\r\nHost: pypi.test:{site}\r\n"
            "Proxy-Connection: keep-alive\r\n\r\n".encode(),
        )
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.0 200")
    assert answer.endswith(b"hello from pypi.test\n")


def test_a_request_body_reaches_the_server_without_proxy_headers_for_the_urls_host(
    site: int,
) -> None:
    body = os.urandom(300_000).hex().encode()
    proxy = _proxy(site)
    try:
        answer = _ask(
            proxy,
            f"POST http://pypi.test:{site}/echo HTTP/1.1\r\nHost: fronted.example\r\n"
            f"Proxy-Authorization: Basic eDp5\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body,
        )
    finally:
        proxy.close()
    head, _, echoed = answer.partition(b"\r\n\r\n")
    assert b" 200 " in head
    assert echoed.startswith(b"POST /echo HTTP/1.1\n")
    assert f"Host: pypi.test:{site}\n".encode() in echoed
    assert b"fronted.example" not in echoed
    assert b"Connection: close" in echoed
    assert b"Proxy-" not in echoed
    assert echoed.endswith(body)


def test_connect_tunnels_tls_to_an_allowed_name(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    (tmp_path / "index.html").write_text("secure hello\n")
    context, pem = self_signed("pypi.test", tmp_path)
    with http_server(tmp_path, tls=context) as port:
        proxy = _proxy(port)
        try:
            with _tunnel(proxy, port) as raw:
                client = ssl.create_default_context(cafile=pem)
                with client.wrap_socket(raw, server_hostname="pypi.test") as tls:
                    tls.sendall(b"GET /index.html HTTP/1.0\r\nHost: pypi.test\r\n\r\n")
                    answer = b""
                    while chunk := tls.recv(65536):
                        answer += chunk
        finally:
            proxy.close()
    assert answer.endswith(b"secure hello\n")


@pytest.mark.parametrize(
    ("target", "status", "says"),
    [
        ("other.test:{port}", b"403", b"other.test is not an allowed host"),
        ("127.0.0.1:{port}", b"403", b"127.0.0.1 is not an allowed address"),
        ("pypi.test:22", b"403", b"port 22 is not allowed"),
        ("pypi.test", b"400", b"not a host and port"),
    ],
)
def test_connect_refuses_what_is_not_allowed_and_reaches_nothing(
    target: str, status: bytes, says: bytes
) -> None:
    with tcp_recorder() as (port, received):
        proxy = _proxy(port)
        try:
            answer = _ask(proxy, f"CONNECT {target.format(port=port)} HTTP/1.1\r\n\r\n".encode())
        finally:
            proxy.close()
    assert answer.startswith(b"HTTP/1.1 " + status)
    assert says in answer
    assert received == []


def test_a_name_absent_from_the_resolver_is_a_bad_gateway(site: int) -> None:
    proxy = _proxy(site, "pypi.test", "unresolved.test")
    try:
        answer = _ask(proxy, f"CONNECT unresolved.test:{site} HTTP/1.1\r\n\r\n".encode())
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 502")
    assert b"does not resolve" in answer


@pytest.mark.parametrize(
    "request_line",
    ["GET /index.html HTTP/1.1", "GET https://pypi.test/ HTTP/1.1", "nonsense"],
)
def test_a_request_that_is_not_for_a_proxy_is_a_bad_request(site: int, request_line: str) -> None:
    proxy = _proxy(site)
    try:
        answer = _ask(proxy, f"{request_line}\r\nHost: pypi.test\r\n\r\n".encode())
    finally:
        proxy.close()
    assert answer.startswith(b"HTTP/1.1 400")


def test_the_socket_is_private_and_close_removes_it(site: int) -> None:
    proxy = _proxy(site)
    folder = Path(proxy.socket_path).parent
    assert folder.stat().st_mode & 0o777 == 0o700
    proxy.close()
    assert not folder.exists()


def test_commands_are_told_the_bridge_for_every_scheme() -> None:
    env = proxy_env()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        assert env[name] == f"http://127.0.0.1:{PORT}"
    assert "127.0.0.1" in env["NO_PROXY"]


def test_the_proxy_ends_with_the_agents_process_and_removes_its_socket() -> None:
    agent = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import os; from langchain_fstools.shell.network.domains import AllowedDomains;"
                " from langchain_fstools.shell.network.proxy import DomainProxy;"
                " print(DomainProxy(AllowedDomains(['pypi.test'])).socket_path, flush=True);"
                " os._exit(0)"  # no clean-up runs: the proxy must notice on its own
            ),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    path = agent.stdout.strip()
    deadline = time.monotonic() + 30
    while Path(path).parent.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(path).parent.exists()  # the proxy removes it as it leaves
    with socket.socket(socket.AF_UNIX) as client, pytest.raises(OSError):
        client.connect(path)
