"""Tool messages as MCP results: text, images, embedded PDFs, the error flag."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from langchain_fstools.mcp.content import to_call_result


def test_text_and_error_flag() -> None:
    ok = to_call_result(ToolMessage(content="fine", tool_call_id="1"))
    failed = to_call_result(ToolMessage(content="Error: no.", tool_call_id="1", status="error"))
    assert wire(ok) == {"content": [{"type": "text", "text": "fine"}], "isError": False}
    assert wire(failed)["isError"] is True


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
    text, image, resource = wire(to_call_result(message))["content"]
    assert text == {"type": "text", "text": "--- Page 1 ---"}
    assert image == {"type": "image", "data": "aW1n", "mimeType": "image/png"}
    assert resource == {
        "type": "resource",
        "resource": {
            "uri": "fstools:///docs/r.pdf",
            "mimeType": "application/pdf",
            "blob": "cGRm",
        },
    }


def wire(model: Any) -> dict[str, Any]:
    """The model as sent (camelCase, no unset fields): the same under mcp 1.x and 2.x."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped.pop("resultType", None)  # 2.x only
    return dumped
