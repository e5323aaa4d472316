"""An MCP server: the file tools, with their safety model, for any MCP client.

Minimal use, from Python (the `mcp` extra: `pip install langchain-fstools[mcp]`):

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
    anyio.run(partial(run_http, server, host="127.0.0.1", port=8765))

From a shell: `python -m langchain_fstools mcp --root ./repo [--http 127.0.0.1:8765]`.
Names are imported on first use, so the command line parser loads without the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_fstools.mcp.server import create_server
    from langchain_fstools.mcp.transports import http_app, run_http, run_stdio

_HOMES = {
    "create_server": "langchain_fstools.mcp.server",
    "http_app": "langchain_fstools.mcp.transports",
    "run_http": "langchain_fstools.mcp.transports",
    "run_stdio": "langchain_fstools.mcp.transports",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = ["create_server", "http_app", "run_http", "run_stdio"]
