"""Tool-result blocks a model cannot read become notes in its request; state keeps them."""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.middleware.capabilities import IMAGE_NOTE, PDF_NOTE, adapt_messages
from langchain_fstools.testing import ScriptedChatModel
from tests.media import image_bytes

IMAGE = {"type": "image", "base64": "AAAA", "mime_type": "image/png"}
PDF = {"type": "file", "base64": "AAAA", "mime_type": "application/pdf"}


def tool_message() -> ToolMessage:
    return ToolMessage(content=[{"type": "text", "text": "x"}, IMAGE, PDF], tool_call_id="1")


def test_unknown_profile_changes_nothing() -> None:
    messages = [HumanMessage("hi"), tool_message()]
    assert adapt_messages(messages, None) == messages
    assert adapt_messages(messages, {"image_tool_message": True}) == messages


def test_blocks_replaced_by_notes() -> None:
    (adapted,) = adapt_messages(
        [tool_message()], {"image_tool_message": False, "pdf_tool_message": False}
    )
    assert adapted.content == [
        {"type": "text", "text": "x"},
        {"type": "text", "text": IMAGE_NOTE},
        {"type": "text", "text": PDF_NOTE},
    ]
    (only_pdf,) = adapt_messages([tool_message()], {"pdf_tool_message": False})
    assert only_pdf.content[1] == IMAGE


def test_model_without_image_support_gets_a_note_and_state_keeps_the_image(tmp_path: Path) -> None:
    (tmp_path / "p.png").write_bytes(image_bytes())
    model = ScriptedChatModel(
        turns=(
            [
                AIMessage(
                    "",
                    tool_calls=[{"name": "read_file", "args": {"file_path": "/p.png"}, "id": "r"}],
                ),
                AIMessage("ok"),
            ]
        ),
        profile={"image_tool_message": False},
    )
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=LocalBackend(tmp_path))])
    state = agent.invoke({"messages": [{"role": "user", "content": "look"}]})
    sent = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert {"type": "text", "text": IMAGE_NOTE} in sent.content
    kept = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert any(isinstance(b, dict) and b.get("type") == "image" for b in kept.content)
