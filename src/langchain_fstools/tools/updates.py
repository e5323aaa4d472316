"""Tool results that carry a graph-state update with their message."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from langchain_fstools.backends.state import FILES_KEY, merge_files
from langchain_fstools.history.changes import HISTORY_KEY, combined_updates


def with_state_update(
    result: ToolMessage | Command[Any],
    update: Mapping[str, Any],
    *,
    message: ToolMessage | None = None,
) -> ToolMessage | Command[Any]:
    """Return `result` with `update` applied alongside it, as one `Command`.

    A channel both carry gets the two mappings merged (`update` wins). `message`, when
    given, replaces the result's message for the same tool call; every other message of a
    `Command` (a `RemoveMessage`, an `AIMessage`, ...) and its `goto`, `graph` and
    `resume` are kept.
    """
    if isinstance(result, ToolMessage) and not update:
        return message or result
    merged: dict[str, Any] = (
        dict(result.update)
        if isinstance(result, Command) and isinstance(result.update, dict)
        else {}
    )
    merged = merged_channels(merged, update)
    if isinstance(result, ToolMessage):
        merged["messages"] = [message or result]
        return Command(update=merged)
    if message is not None:
        merged["messages"] = _replaced(merged.get("messages"), message)
    return dataclasses.replace(result, update=merged)


def merged_channels(first: Mapping[str, Any], then: Mapping[str, Any]) -> dict[str, Any]:
    """Two state updates as one: a channel both carry gets its mappings merged (`then` wins).

    The history's two updates become one that does what both do, in order.
    """
    merged = dict(first)
    for channel, values in then.items():
        mine = merged.get(channel)
        both = isinstance(mine, Mapping) and isinstance(values, Mapping)
        if both and channel == HISTORY_KEY:
            merged[channel] = combined_updates(mine, values)  # type: ignore[arg-type]
        else:
            merged[channel] = {**mine, **values} if both else values  # type: ignore[dict-item]
    return merged


def state_after(state: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`state` with `update`'s files applied (what the next commit of one step reads)."""
    if FILES_KEY not in update:
        return dict(state)
    return {**state, FILES_KEY: merge_files(state.get(FILES_KEY), [update[FILES_KEY]])}


def settled_message(
    state: Any,
    call_id: str,
    text: str,
    *,
    marker: str,
    rejected: bool = False,
    artifact: Any = None,
) -> ToolMessage:
    """The call's tool message with its `marker` (what it waited for) replaced by `text`.

    Same id, so it replaces the message in the thread; its status is error when `text`
    starts with "Error" or a person `rejected` what it waited for (LangChain's
    human-in-the-loop convention); `artifact`, if given, replaces the message's.
    """
    found = next(
        (
            m
            for m in reversed(state.get("messages") or [])
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id
        ),
        None,
    )
    content = str(found.content) if found is not None else ""
    before, _, after = content.partition(marker)
    return ToolMessage(
        content=f"{before}\n{text}{after}",
        tool_call_id=call_id,
        name=found.name if found is not None and found.name else None,
        id=found.id if found is not None else None,
        artifact=artifact if artifact is not None or found is None else found.artifact,
        status="error" if rejected or text.startswith("Error") else "success",
    )


def _replaced(messages: Any, message: ToolMessage) -> list[Any]:
    """`messages` with the ToolMessage of `message`'s tool call swapped for it."""
    kept = list(messages) if isinstance(messages, list | tuple) else []
    for position, old in enumerate(kept):
        if isinstance(old, ToolMessage) and old.tool_call_id == message.tool_call_id:
            kept[position] = message
            return kept
    return [*kept, message]


__all__ = ["merged_channels", "settled_message", "state_after", "with_state_update"]
