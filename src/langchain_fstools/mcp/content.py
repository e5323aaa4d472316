"""Tool results as MCP content: text, images, embedded files, and the error flag.

A file tool answers with a `ToolMessage` whose content is text or LangChain content
blocks. MCP has its own blocks: text blocks stay text, `image` blocks become
`ImageContent`, `file` blocks (the pages of a PDF) become an `EmbeddedResource` named
by the file's virtual path, and an error message sets `isError`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mcp import types

from langchain_fstools.mcp.handles import HANDLE

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage

RESOURCE_SCHEME = "fstools"
"""URI scheme of embedded files: `fstools:///docs/report.pdf` names a virtual path."""

HANDLE_LINE = f"{HANDLE}: "
"""How the line ending a result with a read handle starts."""


def to_call_result(message: ToolMessage, *, handle: str | None = None) -> types.CallToolResult:
    """The MCP result of one tool call's message.

    A `handle` (see `mcp.handles`) ends the text as a line `read_handle: <handle>` and
    is the result's `structuredContent` (`{"read_handle": <handle>}`).
    """
    path = message.artifact.get("path") if isinstance(message.artifact, dict) else None
    content = to_content(message.content, path=path if isinstance(path, str) else None)
    if handle is None:
        return types.CallToolResult(content=content, isError=message.status == "error")
    line = f"{HANDLE_LINE}{handle}"
    last = content[-1] if content else None
    if isinstance(last, types.TextContent):
        content[-1] = types.TextContent(type="text", text=f"{last.text}\n\n{line}")
    else:
        content.append(types.TextContent(type="text", text=line))
    return types.CallToolResult(
        content=content,
        structuredContent={HANDLE: handle},
        isError=message.status == "error",
    )


def error_result(text: str) -> types.CallToolResult:
    """A refusal the server gives itself (no tool ran): `text`, flagged as an error."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)


def to_content(
    content: str | list[str | dict[str, Any]], *, path: str | None = None
) -> list[types.ContentBlock]:
    """MCP content blocks for LangChain content (a string or a list of blocks).

    Args:
        content: The message content.
        path: The virtual path of the file the blocks come from, for embedded files.
    """
    if isinstance(content, str):
        return [types.TextContent(type="text", text=content)]
    return [_block(block, path) for block in content]


def _block(block: str | dict[str, Any], path: str | None) -> types.ContentBlock:
    if isinstance(block, str):
        return types.TextContent(type="text", text=block)
    kind = block.get("type")
    if kind == "text":
        return types.TextContent(type="text", text=str(block.get("text", "")))
    if kind == "image" and "base64" in block:
        return types.ImageContent(
            type="image", data=str(block["base64"]), mimeType=str(block["mime_type"])
        )
    if kind == "file" and "base64" in block:
        name = path or "/" + str(block.get("filename", "file"))
        return types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri=f"{RESOURCE_SCHEME}://{quote(name)}",
                mimeType=str(block.get("mime_type", "application/octet-stream")),
                blob=str(block["base64"]),
            ),
        )
    return types.TextContent(type="text", text=json.dumps(block, default=str))


__all__ = ["HANDLE_LINE", "RESOURCE_SCHEME", "error_result", "to_call_result", "to_content"]
