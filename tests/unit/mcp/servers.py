"""A file server as the MCP tests use it (local disk with execute and eviction), and a
`tools/call` as it reaches the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.server import FileServer

if TYPE_CHECKING:
    from pathlib import Path


@dataclass
class Request:
    """What the server reads of a `tools/call`, recording the progress it sends."""

    name: str
    arguments: dict[str, Any]
    client: object
    progress_token: str | None = "token-1"  # noqa: S105 - not a secret
    request_id: int = 1
    sent: list[tuple[float, str]] = field(default_factory=list)
    asks_by_result: bool = False
    """Whether the call came on the 2026-07-28 protocol (no session)."""

    def can_elicit(self) -> bool:
        return False

    async def progress(self, progress: float, message: str) -> None:
        self.sent.append((progress, message))


class Client:
    """A client's connection: one per MCP session (held weakly by the server)."""


def file_server(
    root: Path, *, handle_key: bytes | None = None, reads_only: bool = False, **settings: Any
) -> FileServer:
    """A server over `root` with every tool, no permission rules and eviction on.

    `settings` are `ToolSettings` fields (`diagnostics=True`: with language servers).
    """
    return FileServer(
        LocalBackend(root, execute=True),
        tools=None,
        execute=True,
        mode=None,
        permissions=(),
        protected_paths=(),
        eviction=True,
        settings=settings,
        handle_key=handle_key,
        reads_only=reads_only,
    )
