"""Who may call the HTTP server: the Host and Origin it is reached by, and a bearer token.

A web page the person visits can make their browser send requests to a server on their
machine; with DNS rebinding, under a name the page controls. So every request's `Host`
must name the address the server is bound to (or `localhost`), on its port, and an
`Origin`, when the browser sends one, must be such a name on that port too (a page on
`http://localhost:3000` is another origin); anything else gets 421 or 403 before the
MCP layer sees it. Every request must also carry `Authorization: Bearer <token>` (401
otherwise): any local user can reach a loopback port, so the door is closed to those
without the token there too. The command line draws a token when none is given
(`new_token`: written, mode 0600, beside the read-handle key, and printed once). Only
`no_auth`, asked for explicitly, serves without one, and only on loopback, where the
server then serves reading only (`create_server(reads_only=True)`): a caller without a
token never changes a file or runs a command, nor answers an approval it asked for.
Loopback means `localhost` exactly and the addresses `127.0.0.0/8` and `::1` (not
`foo.localhost`, not `localhost.`, which a resolver may send elsewhere).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from langchain_fstools.mcp.handles import config_file

if TYPE_CHECKING:
    from collections.abc import Iterable

    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV: Final = "LANGCHAIN_FSTOOLS_MCP_TOKEN"  # noqa: S105 - a variable name
"""The environment variable holding the bearer token when `--token` is not given."""

TOKEN_FILE: Final = "langchain-fstools/mcp-http-token-{port}"  # noqa: S105 - a file name
"""Where a drawn token is kept for the clients of the server on `port` (config folder)."""

LOCAL_NAMES: Final = ("localhost",)
"""Host names always accepted (they resolve to this machine)."""

CHECKED_HEADERS: Final = ("host", "origin", "authorization")
"""Headers a request may carry once at most (a repeated one is refused, never guessed)."""

_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://" + _HOST.pattern)


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is loopback.

    Only `localhost` itself and loopback addresses count: `foo.localhost` and
    `localhost.` are names a resolver may answer with any address.
    """
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def new_token(port: int) -> tuple[str, Path]:
    """A fresh bearer token for the server on `port`, and the file it is written to.

    The file (`TOKEN_FILE` in the user's config folder, beside the read-handle key) is
    written whole with mode 0600, then renamed into place: a client of this user reads
    it, no other user can.
    """
    token = secrets.token_urlsafe(32)
    path = config_file(Path(TOKEN_FILE.format(port=port)))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    fresh.replace(path)
    return token, path


@dataclass(frozen=True)
class Door:
    """The checks one bound server makes on every request.

    Args:
        names: The host names and addresses a request may reach the server by
            (lowercase; IPv6 without brackets).
        port: The bound port (a `Host` naming another port is refused); 0 for any.
        token: The bearer token every request must carry; None for none (`no_auth`).
    """

    names: frozenset[str]
    port: int
    token: str | None

    @classmethod
    def for_bind(
        cls,
        host: str,
        port: int,
        *,
        token: str | None = None,
        names: Iterable[str] = (),
        no_auth: bool = False,
    ) -> Door:
        """The door of a server bound to `host:port`.

        Args:
            host: The bound address (or name).
            port: The bound port.
            token: The bearer token required.
            names: More host names clients reach the server by (e.g. the machine's
                name, for a server bound to `0.0.0.0` with a token).
            no_auth: Let requests in without a token (loopback only; the server must
                serve reading only). Default: False.

        Raises:
            ValueError: no token without `no_auth`, a token with it, a non-loopback
                bind without a token, or an empty name.
        """
        if token and no_auth:
            raise ValueError("no_auth (--no-auth) and a token contradict each other: give one")
        if not token and not no_auth:
            raise ValueError(
                f"the HTTP server needs a bearer token: --token or {TOKEN_ENV} (token= from"
                " Python); the command line draws one when none is given"
            )
        if not token and not is_loopback(host):
            raise ValueError(
                f"serving HTTP on {host}, which is not a loopback address, needs a bearer "
                f"token: --token or {TOKEN_ENV} (token= from Python), or bind a loopback "
                "address such as 127.0.0.1"
            )
        extra = [name.strip("[]").lower() for name in names]
        if any(not name for name in extra):
            raise ValueError("--allow-host takes a host name, e.g. build-box.local")
        accepted = {host.strip("[]").lower(), *LOCAL_NAMES, *extra}
        return cls(frozenset(accepted), port, token or None)

    def refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """None to let a request with these (lowercase) headers in, else (status, why)."""
        host = headers.get("host", "")
        if not self._host_ok(host):
            return 421, f"Misdirected request: this server is not reached as {host!r}."
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin):
            return 403, f"Forbidden: requests from the origin {origin!r} are not accepted."
        if self.token is not None:
            given = headers.get("authorization", "")
            scheme, _, credentials = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credentials.strip().encode(), self.token.encode()
            ):
                return 401, "Unauthorized: send the server's token as 'Authorization: Bearer'."
        return None

    def _host_ok(self, host: str) -> bool:
        """`name[:port]` exactly (no user, path or spaces), naming this server."""
        match = _HOST.fullmatch(host.lower())
        if match is None or match["name"].strip("[]") not in self.names:
            return False
        port = match["port"]
        return port is None or not self.port or int(port) == self.port

    def _origin_ok(self, origin: str) -> bool:
        """`http[s]://name[:port]` exactly, naming this server: its name and its port."""
        match = _ORIGIN.fullmatch(origin.lower())
        if match is None or match["name"].strip("[]") not in self.names:
            return False
        port = int(match["port"]) if match["port"] else _DEFAULT_PORTS[match["scheme"]]
        return not self.port or port == self.port


class DoorApp:
    """ASGI middleware: refuses a request `door` refuses, before `app` sees it.

    Args:
        app: The guarded app.
        door: The checks.
    """

    def __init__(self, app: ASGIApp, door: Door) -> None:
        """Guard `app`."""
        self.app = app
        self.door = door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check an HTTP request's headers; pass everything else through."""
        if scope["type"] in {"http", "websocket"}:
            pairs = [
                (key.decode("latin-1").lower(), value.decode("latin-1"))
                for key, value in scope.get("headers", [])
            ]
            headers = dict(pairs)
            names = [key for key, _ in pairs]
            refused = self.door.refusal(headers)
            if any(names.count(name) > 1 for name in CHECKED_HEADERS):
                refused = 400, "Bad request: a Host, Origin or Authorization header repeated."
            if refused is not None:
                await _refuse(scope, send, *refused)
                return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: Send, status: int, text: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    headers.append((b"content-length", str(len(body)).encode()))
    if status == 401:  # noqa: PLR2004 - HTTP status
        headers.append((b"www-authenticate", b'Bearer realm="langchain-fstools"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "CHECKED_HEADERS",
    "LOCAL_NAMES",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "Door",
    "DoorApp",
    "is_loopback",
    "new_token",
]
