"""A file server as the MCP tests use it: local disk with execute and eviction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.server import FileServer

if TYPE_CHECKING:
    from pathlib import Path


def file_server(root: Path) -> FileServer:
    """A server over `root` with every tool, no permission rules and eviction on."""
    return FileServer(
        LocalBackend(root, execute=True),
        tools=None,
        execute=True,
        mode=None,
        permissions=(),
        protected_paths=(),
        eviction=True,
        settings={},
    )
