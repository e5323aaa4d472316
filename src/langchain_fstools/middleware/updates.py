"""Tool results that carry a graph-state update with their message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.types import Command

if TYPE_CHECKING:
    from collections.abc import Mapping


def with_state_update(
    result: ToolMessage | Command[Any],
    update: Mapping[str, Any],
    *,
    message: ToolMessage | None = None,
) -> ToolMessage | Command[Any]:
    """Return `result` with `update` applied alongside it, as one `Command`.

    A channel both carry gets the two mappings merged (`update` wins). `message`, when
    given, replaces the result's message.
    """
    if isinstance(result, ToolMessage) and not update:
        return message or result
    merged: dict[str, Any] = (
        dict(result.update)
        if isinstance(result, Command) and isinstance(result.update, dict)
        else {}
    )
    for channel, values in update.items():
        merged[channel] = {**merged[channel], **values} if channel in merged else values
    if message is not None:
        merged["messages"] = [message]
    elif isinstance(result, ToolMessage):
        merged["messages"] = [result]
    return Command(update=merged)


__all__ = ["with_state_update"]
