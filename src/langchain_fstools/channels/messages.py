"""The `messages` channel stored as deltas: each message is checkpointed once.

`create_agent`'s default state keeps `messages` in a plain reducer channel
(`add_messages`), which stores the whole conversation in every checkpoint: each tool
result, with its artifact, is stored again at every later step, so a thread's
checkpoints grow with the square of its length. `MessagesChannel` is a LangGraph
`DeltaChannel` instead: a checkpoint stores the messages its step wrote (and the whole
list, as often as `channels.cadence` decides), and LangGraph rebuilds the list by replaying
the stored writes through `merge_messages`.

`merge_messages` gives the channel the meaning the default one has: `add_messages`
applied to each write in turn (replace by id, `RemoveMessage` by id, `RemoveMessage(
id=REMOVE_ALL_MESSAGES)` as `SummarizationMiddleware` uses it, dicts, tuples, strings
and chunks made messages). It differs in one way, which replay needs: a message without
an id gets an id derived from its place in the conversation and its content, not a
random one, so replaying a write gives its message the id it got the first time.
(LangGraph gives message objects and message dicts their ids before it saves a write;
strings and tuples reach the reducer without one.)
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeAlias, cast

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    MessageLikeRepresentation,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_fstools.channels.cadence import ScaledDeltaChannel

if TYPE_CHECKING:
    from collections.abc import Sequence

Messages: TypeAlias = list[MessageLikeRepresentation] | MessageLikeRepresentation
"""One write of the channel: a message-like, or a list of them (as `add_messages` takes)."""

CONVERSATION_MINIMUM_CADENCE: Final = 100
"""Fewest updates between two snapshots of the conversation (LangGraph's default cadence).

A replayed message costs a load what the same message costs in a snapshot, so the
minimum only bounds how many checkpoints a load walks back; deepagents uses 50."""

_ID_NAMESPACE: Final = uuid.UUID("6f0c1f4e-3b1e-5a8e-9d57-6a2f0f5b8c11")
"""Namespace of the ids `merge_messages` derives (UUID 5)."""


def merge_messages(current: Messages | None, writes: Sequence[Messages]) -> list[AnyMessage]:
    """Reducer of the delta `messages` channel: `add_messages` over each write in order.

    Each write is applied as `add_messages(state, write)` would apply it, so a write
    that removes a message and adds it back keeps its place, and a later write adds it
    at the end, exactly as the default channel does step by step. A message without an
    id gets `uuid5(previous message's id, type, content)` (made unique in the list),
    where `add_messages` draws a random one.

    Deterministic and batching-invariant, as `DeltaChannel` requires
    (`merge_messages(merge_messages(s, xs), ys) == merge_messages(s, xs + ys)`); never
    mutates its inputs. A None write changes nothing.

    Raises:
        ValueError: A `RemoveMessage` names an id the conversation does not hold.
        NotImplementedError: A write holds something that is not a message-like.
    """
    merged, by_id = _identified(_coerced(current))
    for write in writes:
        incoming = _coerced(write)
        cut = _last_remove_all(incoming)
        if cut is not None:
            merged, by_id = _identified(incoming[cut + 1 :])
            continue
        removed: set[str] = set()
        for item in incoming:
            message = (
                item
                if item.id is not None
                else _with_derived_id(item, merged[-1].id if merged else None, by_id)
            )
            key = str(message.id)
            at = by_id.get(key)
            if at is not None:
                if isinstance(message, RemoveMessage):
                    removed.add(key)
                else:
                    removed.discard(key)
                    merged[at] = message
            elif isinstance(message, RemoveMessage):
                msg = f"Attempting to delete a message with an ID that doesn't exist ('{key}')"
                raise ValueError(msg)
            else:
                by_id[key] = len(merged)
                merged.append(message)
        if removed:
            merged = [m for m in merged if m.id not in removed]
            by_id = {str(m.id): at for at, m in enumerate(merged)}
    return merged


MessagesChannel = Annotated[
    list[AnyMessage],
    ScaledDeltaChannel(merge_messages, snapshot_frequency=CONVERSATION_MINIMUM_CADENCE),
]
"""State annotation of the delta `messages` channel; declare it `Required[MessagesChannel]`."""


def _coerced(value: Messages | None) -> list[AnyMessage]:
    """`value` as a new list of messages (chunks made whole), as `add_messages` reads it."""
    items: list[Any] = [] if value is None else value if isinstance(value, list) else [value]
    if all(
        issubclass(kind, BaseMessage) and not issubclass(kind, BaseMessageChunk)
        for kind in set(map(type, items))
    ):
        return list(items)
    return [
        cast("AnyMessage", message_chunk_to_message(cast("BaseMessageChunk", m)))
        for m in convert_to_messages(items)
    ]


def _last_remove_all(messages: list[AnyMessage]) -> int | None:
    """Index of the last `RemoveMessage(id=REMOVE_ALL_MESSAGES)` in `messages`, if any."""
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES:
            return at
    return None


def _identified(messages: list[AnyMessage]) -> tuple[list[AnyMessage], dict[str, int]]:
    """`messages` (a list the caller owns), each with an id, and the last index of each id."""
    by_id: dict[str, int] = {}
    for at, message in enumerate(messages):
        if message.id is None:
            previous = messages[at - 1].id if at else None
            messages[at] = _with_derived_id(message, previous, by_id)
        by_id[str(messages[at].id)] = at
    return messages, by_id


def _with_derived_id(
    message: AnyMessage, previous: str | None, taken: dict[str, int]
) -> AnyMessage:
    """A copy of `message` with an id from its predecessor's id and its own content.

    The same message after the same predecessor gets the same id each time the writes
    are replayed; the id is not one of `taken`.
    """
    derived = uuid.uuid5(_ID_NAMESPACE, f"{previous}\x1f{message.type}\x1f{message.content!r}")
    while str(derived) in taken:
        derived = uuid.uuid5(_ID_NAMESPACE, str(derived))
    return message.model_copy(update={"id": str(derived)})


__all__ = ["Messages", "MessagesChannel", "merge_messages"]
