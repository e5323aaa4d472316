"""Tool messages as MCP results: text, images, embedded PDFs, the error flag."""

from __future__ import annotations

from langchain_core.messages import ToolMessage
from mcp import types

from langchain_fstools.mcp.content import to_call_result


def test_text_and_error_flag() -> None:
    ok = to_call_result(ToolMessage(content="fine", tool_call_id="1"))
    failed = to_call_result(ToolMessage(content="Error: no.", tool_call_id="1", status="error"))
    assert ok.isError is False
    assert ok.content == [types.TextContent(type="text", text="fine")]
    assert failed.isError is True


def test_image_and_file_blocks() -> None:
    message = ToolMessage(
        content=[
            {"type": "text", "text": "--- Page 1 ---"},
            {"type": "image", "base64": "aW1n", "mime_type": "image/png"},
            {"type": "file", "base64": "cGRm", "mime_type": "application/pdf", "filename": "r.pdf"},
        ],
        artifact={"path": "/docs/r.pdf"},
        tool_call_id="1",
    )
    text, image, resource = to_call_result(message).content
    assert text == types.TextContent(type="text", text="--- Page 1 ---")
    assert image == types.ImageContent(type="image", data="aW1n", mimeType="image/png")
    assert isinstance(resource, types.EmbeddedResource)
    assert isinstance(resource.resource, types.BlobResourceContents)
    assert str(resource.resource.uri) == "fstools:///docs/r.pdf"
    assert resource.resource.blob == "cGRm"
    assert resource.resource.mimeType == "application/pdf"
