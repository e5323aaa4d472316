"""Running the server: over stdio, or over streamable HTTP (loopback by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import Receive, Scope, Send

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


async def run_stdio(server: Server[Any, Any]) -> None:
    """Serve one client over this process's stdin and stdout until it disconnects."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Server[Any, Any], *, host: str = "127.0.0.1") -> Any:
    """An ASGI (Starlette) app serving `server` at `HTTP_PATH` over streamable HTTP.

    Each client session (the `Mcp-Session-Id` header) gets its own MCP session. On a
    loopback host, requests whose `Host` or `Origin` is not loopback are refused
    (DNS-rebinding protection), so a web page cannot drive the server.
    """
    from starlette.applications import Starlette  # noqa: PLC0415 - the mcp extra has it
    from starlette.routing import Route  # noqa: PLC0415

    security = None
    if host in LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)

    class _Endpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await manager.handle_request(scope, receive, send)

    return Starlette(
        routes=[Route(HTTP_PATH, endpoint=_Endpoint())],
        lifespan=lambda _app: manager.run(),
    )


async def run_http(server: Server[Any, Any], *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve `server` over streamable HTTP at `http://HOST:PORT/mcp` until cancelled."""
    import uvicorn  # noqa: PLC0415 - the mcp extra has it

    config = uvicorn.Config(
        http_app(server, host=host), host=host, port=port, log_level="warning", lifespan="on"
    )
    await uvicorn.Server(config).serve()


__all__ = ["HTTP_PATH", "LOOPBACK_HOSTS", "http_app", "run_http", "run_stdio"]
