"""The graph state the file tools use, for `create_agent` and hand-built graphs."""

from __future__ import annotations

from typing import Any, NotRequired, Required

from langchain.agents import AgentState

from langchain_fstools.backends.state import FilesChannel
from langchain_fstools.channels.messages import MessagesChannel
from langchain_fstools.history.changes import HistoryChannel
from langchain_fstools.tools.merge_branch import KeptBranchesChannel
from langchain_fstools.tools.reads import ReadsChannel


class FilesystemState(AgentState[Any]):
    """Agent state with the file tools' channels.

    Pass it as `state_schema` to `create_agent`, or copy its fields into the state
    of your own `StateGraph` and run the tools in a `ToolNode`.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FileToolkit, FilesystemState, StateBackend

        agent = create_agent(
            model,
            tools=FileToolkit(StateBackend()).get_tools(),
            state_schema=FilesystemState,
        )
        ```
    """

    files: NotRequired[FilesChannel]
    """Files kept in graph state by `StateBackend` (path → record)."""

    file_reads: NotRequired[ReadsChannel]
    """What the agent has read, per path and version (read-before-write, staleness).

    Stored as deltas in checkpoints, like `files`.

    Not marked private: LangGraph hands tools only the fields of a node's input
    schema, and the tools must see this one.
    """

    kept_branches: NotRequired[KeptBranchesChannel]
    """Subagents' branches whose merge conflicted, for the `merge` tool (branches=True)."""


class FilesystemHistoryState(FilesystemState):
    """`FilesystemState` plus the file history, for `FilesystemMiddleware(history=True)`.

    The middleware uses this schema only when it records history, so an agent without
    history has no `file_history` channel at all.
    """

    file_history: NotRequired[HistoryChannel]
    """Changes the file tools made, for `rewind` and `undo_edit` (see `history`)."""


class FilesystemAgentState(FilesystemState):
    """`FilesystemState` with the conversation stored as deltas: the recommended schema.

    `create_agent`'s default `messages` channel stores the whole conversation in every
    checkpoint, so every tool result is stored again at every later step. Here
    `messages` is a LangGraph `DeltaChannel` (`channels.messages`): a checkpoint
    stores only the messages its step wrote (and, periodically, a snapshot of the whole
    list), and the conversation reads back the same (`add_messages`' meaning, `RemoveMessage` and
    `REMOVE_ALL_MESSAGES` included). `files` and `file_reads` are stored the same way.

    `create_agent` takes a middleware's channels first and `state_schema`'s last, so
    this schema's `messages` replaces the default one; the middleware adds the channels
    it uses (history, approvals). A thread checkpointed with the default channel
    continues with this one; the other way round is not supported (checkpoints written
    with this schema hold no full copy of the conversation for the default channel).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemAgentState, FilesystemMiddleware, StateBackend

        agent = create_agent(
            model,
            middleware=[FilesystemMiddleware(backend=StateBackend())],
            state_schema=FilesystemAgentState,
            checkpointer=checkpointer,
        )
        ```
    """

    messages: Required[MessagesChannel]
    """The conversation; checkpoints store each message once (plus periodic snapshots)."""


__all__ = ["FilesystemAgentState", "FilesystemHistoryState", "FilesystemState"]
