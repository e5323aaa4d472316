"""One change per file per turn, and one call per id.

Parallel calls of one model turn all see the state from before it, so a second change
to the same file in one turn is refused, for the model to make in its next turn. A
change is known by its call's id (its approval, its result, its record), so calls that
change things and share an id in one turn are all refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolMessage

from langchain_fstools.core import paths
from langchain_fstools.errors import FsToolsError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_core.messages import ToolCall

    from langchain_fstools.tools.base import FileTool


class OneChangePerTurn:
    """Refuses a call that changes a file an earlier call of its turn already changes.

    Args:
        tools: The file tools by name (they declare what a call writes).
        mutating: The names of the tools that change files or run commands.
    """

    def __init__(self, tools: Mapping[str, FileTool], mutating: set[str]) -> None:
        """Keep the tools and which of them change things."""
        self.tools = tools
        self.mutating = mutating

    def refusal(self, call: ToolCall, state: Any) -> ToolMessage | None:
        """The error `call` gets for a file an earlier call of its turn changes, or None.

        Also for a call whose id another call of its turn has.
        """
        if call["name"] not in self.mutating:
            return None
        turn = turn_of(state, call["id"])
        if turn is not None and sum(c["id"] == call["id"] for c in turn.tool_calls) > 1:
            return _refused(
                call,
                f"Error: several calls in this turn have the id {call['id']}, so their"
                " results cannot be told apart; none of them ran. Make each call again,"
                " each with an id of its own.",
            )
        targets = self._written(call)
        if not targets or turn is None:
            return None
        for earlier in turn.tool_calls:
            if earlier["id"] == call["id"]:
                return None
            shared = targets & self._written(earlier)
            if earlier["name"] in self.mutating and shared:
                return _refused(
                    call,
                    f"Error: another call in this turn already changes {min(shared)}; a "
                    "file is changed at most once per turn. Read it again and make this "
                    "change in your next turn.",
                )
        return None

    def refused(self, call: ToolCall, state: Any) -> bool:
        """Whether `call` is refused (see `refusal`)."""
        return self.refusal(call, state) is not None

    def _written(self, call: ToolCall) -> frozenset[str]:
        """The canonical paths a call declares it writes; invalid ones skipped."""
        tool = self.tools.get(call["name"])
        args = None if tool is None else tool.validated(call["args"])
        if tool is None or args is None:
            return frozenset()
        found: set[str] = set()
        for target in tool.targets(args):
            if target.operation != "write" or target.path is None:
                continue
            try:
                found.add(paths.normalize(target.path))
            except FsToolsError:
                continue
        return frozenset(found)


def _refused(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")


def turn_of(state: Any, call_id: str | None) -> AIMessage | None:
    """The model message that asked for `call_id`."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message
    return None


__all__ = ["OneChangePerTurn", "turn_of"]
