"""Servers on 127.0.0.1 for the proxy's tests: HTTP over a folder, HTTPS with a
certificate made in the test, and a recorder of what each connection sends.

Tests give them names through `AllowedDomains(resolve=...)`; nothing here reaches an
address off this machine.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import http.server
import socket
import ssl
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; answers POST with what it received; logs nothing."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        head = f"{self.requestline}\n{self.headers}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(head) + len(body)))
        self.end_headers()
        self.wfile.write(head + body)


@contextlib.contextmanager
def http_server(folder: Path, tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """Serve `folder` on 127.0.0.1 (over TLS with `tls`); yields the port."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def self_signed(name: str, folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for `name` with a fresh self-signed certificate, and its PEM file."""
    from cryptography import x509  # noqa: PLC0415 - only the TLS tests need it
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = folder / f"{name}.pem"
    pem.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    secret = folder / f"{name}.key"
    secret.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem, secret)
    return context, pem


@contextlib.contextmanager
def tcp_recorder() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that keeps the first bytes of each connection."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while True:
            connection, _ = server.accept()
            if stop.is_set():
                connection.close()
                return
            with connection:
                connection.settimeout(5)
                with contextlib.suppress(OSError):
                    received.append(connection.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        socket.create_connection(server.getsockname()).close()  # wakes the accept
        thread.join()
        server.close()
