"""An MCP server: the file tools, with their safety model, for any MCP client.

Minimal use, from Python (the `mcp` extra: `pip install '.[mcp]'` in a checkout):

    import anyio
    from langchain_fstools import LocalBackend
    from langchain_fstools.mcp import create_server, run_stdio

    anyio.run(run_stdio, create_server(LocalBackend("./repo")))

Advanced: permissions (an `ask` becomes an elicitation), `execute`, streamable HTTP:

    from functools import partial
    from langchain_fstools.mcp import run_http

    server = create_server(
        LocalBackend("./repo", execute=True), execute=True, mode="accept_edits"
    )
    anyio.run(partial(run_http, server, host="127.0.0.1", port=8765, token="secret"))

Over HTTP, Host and Origin must name the bound address or `localhost`, and every request
carries the `token` as `Authorization: Bearer` (only `no_auth=True`, on loopback, serves
without one, for a `create_server(reads_only=True)` server; see `mcp.door`). From a
shell: `python -m langchain_fstools mcp --root ./repo [--http 127.0.0.1:8765]`. The
server runs on the MCP SDK 1.x and 2.x (see `mcp.sdk`).
Names are imported on first use, so the command line parser loads without the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_fstools.core.extras import require
from langchain_fstools.core.lazy import lazy_names

if TYPE_CHECKING:
    from langchain_fstools.mcp.server import create_server
    from langchain_fstools.mcp.transports import http_app, run_http, run_stdio

_HOMES = {
    "create_server": "langchain_fstools.mcp.server",
    "http_app": "langchain_fstools.mcp.transports",
    "run_http": "langchain_fstools.mcp.transports",
    "run_stdio": "langchain_fstools.mcp.transports",
}


_lazy_getattr, __dir__ = lazy_names(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    """A public name, imported on first use; the SDK missing is `MissingExtra`."""
    if name in _HOMES:
        require("mcp", extra="mcp", feature="The MCP server")
    return _lazy_getattr(name)


__all__ = ["create_server", "http_app", "run_http", "run_stdio"]
