"""Running the server: over stdio, or over streamable HTTP (loopback and a token by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from langchain_fstools.mcp.door import Door, DoorApp

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Sequence

    from mcp.server.lowlevel import Server
    from starlette.types import Receive, Scope, Send

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""


async def run_stdio(server: Server[Any, Any]) -> None:
    """Serve one client over this process's stdin and stdout until it disconnects."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(
    server: Server[Any, Any],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    stateless: bool = False,
    no_auth: bool = False,
) -> Any:
    """An ASGI (Starlette) app serving `server` at `HTTP_PATH` over streamable HTTP.

    Each client session (the `Mcp-Session-Id` header) gets its own MCP session, unless
    `stateless`: then no request depends on an earlier one, as 2026-07-28 requests never
    do, so instances behind a balancer can serve one client. Every
    request must reach the server by the bound address or `localhost` (its `Host`,
    and its `Origin` when a browser sends one), so a web page cannot drive it through
    DNS rebinding; it must also carry `Authorization: Bearer TOKEN`, unless `no_auth`.
    See `langchain_fstools.mcp.door`.

    Args:
        server: The MCP server.
        host: The address the app is served on.
        port: The port it is served on (a `Host` naming another is refused); 0: any.
        token: The bearer token required (needed unless `no_auth`).
        allowed_hosts: More names clients reach the server by. Default: none.
        stateless: No `Mcp-Session-Id`: every request stands alone. Default: False.
        no_auth: Serve requests without a token, on loopback only: anyone on this
            machine can call, so build `server` with `create_server(reads_only=True)`.
            Default: False.

    Raises:
        ValueError: no token without `no_auth`, or a non-loopback `host` without one.
    """
    from starlette.applications import Starlette  # noqa: PLC0415 - the mcp extra has it
    from starlette.routing import Route  # noqa: PLC0415

    door = Door.for_bind(host, port, token=token, names=allowed_hosts, no_auth=no_auth)
    manager = StreamableHTTPSessionManager(app=server, stateless=stateless)

    class _Endpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await manager.handle_request(scope, receive, send)

    app = Starlette(
        routes=[Route(HTTP_PATH, endpoint=_Endpoint())],
        lifespan=lambda _app: manager.run(),
    )
    return DoorApp(app, door)


async def run_http(
    server: Server[Any, Any],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    stateless: bool = False,
    no_auth: bool = False,
    on_listening: Callable[[], object] | None = None,
) -> None:
    """Serve `server` over streamable HTTP at `http://HOST:PORT/mcp` until cancelled.

    Args:
        server: The MCP server.
        host: The address to bind. Default: 127.0.0.1.
        port: The port to bind. Default: 8000.
        token: The bearer token every request must carry (needed unless `no_auth`).
        allowed_hosts: More names clients reach the server by (see `http_app`).
        stateless: Keep no session between requests (see `http_app`). Default: False.
        no_auth: Serve without a token, on loopback only (see `http_app`). Default: False.
        on_listening: Called once the port accepts connections (a banner printed then
            is one a client may act on at once). Default: none.

    Raises:
        ValueError: no token without `no_auth`, or a non-loopback `host` without one.
    """
    import uvicorn  # noqa: PLC0415 - the mcp extra has it

    app = http_app(
        server,
        host=host,
        port=port,
        token=token,
        allowed_hosts=allowed_hosts,
        stateless=stateless,
        no_auth=no_auth,
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_listening is not None:
                on_listening()

    await Announcing(config).serve()


__all__ = ["HTTP_PATH", "http_app", "run_http", "run_stdio"]
