"""undo_edit: put back the last change the file tools made to one file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from langchain_fstools.core import paths
from langchain_fstools.history.changes import (
    HISTORY_KEY,
    history_of,
    plan_undo,
    restore,
    undo_update,
)
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.core.calls import Effect


class UndoEditArgs(ToolArgs):
    """Arguments of undo_edit."""

    file_path: str = Field(description="Absolute path.")


DESCRIPTION = """Undo the last change your file tools made to a file (a file they created is
removed); each call goes one change further back. Refused if the file changed outside
your tools since. Read it again before editing it."""


class UndoEditTool(FileTool):
    """Restore a file to its content before the last recorded change to it."""

    name: str = "undo_edit"
    description: str = DESCRIPTION
    args_schema: type[UndoEditArgs] = UndoEditArgs
    read_only: bool = False

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered once the thread has a recorded change to undo."""
        del messages
        return any(not record.get("folder", False) for record in history_of(state))

    def targets(self, args: UndoEditArgs) -> list[Target]:
        """A write of `file_path`."""
        return [Target("write", args.file_path)]

    def _effect(self, scope: CallScope, args: UndoEditArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.file_path)
        history = history_of(getattr(scope.runtime, "state", None))
        record, step = plan_undo(history, path)
        versions = yield from restore([step])
        done = "removed it again" if step.content is None else "restored its earlier content"
        return ToolOutcome(
            f"Undid the last change to {path} (tool call {record['tool_call_id']}): {done}.",
            {
                "path": path,
                "undone": record["id"],
                "tool_call_id": record["tool_call_id"],
                "history": undo_update(history, record, versions[path]),
            },
        )

    def _state_update(self, scope: CallScope, outcome: ToolOutcome) -> dict[str, Any]:
        """Drop the undone record from the history instead of recording the undo."""
        return {**super()._state_update(scope, outcome), HISTORY_KEY: outcome.artifact["history"]}


__all__ = ["DESCRIPTION", "UndoEditArgs", "UndoEditTool"]
