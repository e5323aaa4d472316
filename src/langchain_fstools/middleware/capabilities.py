"""Fit tool results to what the model can take: blocks it cannot read become notes.

The model's profile (`BaseChatModel.profile`) says whether images and PDFs may appear in
tool messages. Where it says no, those blocks are replaced by a short text note in the
request sent to the model; graph state keeps the originals. An unknown capability is
left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import AnyMessage, ToolMessage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain.agents.middleware import ModelRequest

IMAGE_NOTE = "[An image was returned here; this model cannot read images in tool results.]"
PDF_NOTE = "[A PDF was returned here; this model cannot read PDFs in tool results.]"


def adapt_messages(
    messages: Sequence[AnyMessage], profile: Mapping[str, Any] | None
) -> Sequence[AnyMessage]:
    """Return `messages` with unreadable tool-result blocks replaced by notes.

    The same sequence when the model can read them all.
    """
    drop_images = bool(profile) and profile.get("image_tool_message") is False  # type: ignore[union-attr]
    drop_pdfs = bool(profile) and profile.get("pdf_tool_message") is False  # type: ignore[union-attr]
    if not (drop_images or drop_pdfs):
        return messages
    adapted: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage) and isinstance(message.content, list):
            blocks = [
                _adapted(block, drop_images=drop_images, drop_pdfs=drop_pdfs)
                for block in message.content
            ]
            if blocks != message.content:
                message = message.model_copy(update={"content": blocks})  # noqa: PLW2901
        adapted.append(message)
    return adapted


def adapted(request: ModelRequest) -> ModelRequest:
    """`request` with its messages fitted to its model (`adapt_messages`)."""
    messages = adapt_messages(request.messages, getattr(request.model, "profile", None))
    if messages is request.messages or messages == request.messages:
        return request
    return request.override(messages=list(messages))


def _adapted(block: Any, *, drop_images: bool, drop_pdfs: bool) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if drop_images and kind in ("image", "image_url"):
        return {"type": "text", "text": IMAGE_NOTE}
    is_pdf = kind == "file" and block.get("mime_type", "application/pdf") == "application/pdf"
    if drop_pdfs and is_pdf:
        return {"type": "text", "text": PDF_NOTE}
    return block


__all__ = ["IMAGE_NOTE", "PDF_NOTE", "adapt_messages"]
