"""FilesystemMiddleware: the file tools, their system prompt and state, for create_agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.core import calls, paths
from langchain_fstools.errors import FsToolsError
from langchain_fstools.middleware.approval import PermissionGate, Review
from langchain_fstools.middleware.capabilities import adapt_messages
from langchain_fstools.middleware.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.middleware.history import (
    HISTORY_KEY,
    MAX_RECORD_BYTES,
    history_of,
    plan_rewind,
    restore,
    rewind_update,
)
from langchain_fstools.middleware.policy import PROTECTED_PATHS, Mode, Permission, Policy
from langchain_fstools.middleware.recording import RecordingBackend
from langchain_fstools.middleware.state import FilesystemHistoryState, FilesystemState
from langchain_fstools.middleware.updates import with_state_update
from langchain_fstools.middleware.views import GuardedBackend
from langchain_fstools.patch.targets import patch_paths
from langchain_fstools.tools.toolkit import FileToolkit
from langchain_fstools.tools.tracking import was_cleared
from langchain_fstools.tools.undo_edit import UndoEditTool

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command


SYSTEM_PROMPT = """## Files

You have file tools over a workspace whose root is `/`.
- Paths are absolute workspace paths, such as `/src/app.py`.
- Find files by name with `glob` and search their contents with `grep`; do not use a
  shell for that. Read files with `read_file`, in windows (`offset`, `limit`) when long.
- Read a file before you edit or overwrite it; if it changed since, read it again.
- Change existing files with `edit_file` (exact text replacement); use `write_file` for
  new files or complete rewrites, and `notebook_edit` for Jupyter notebooks. For many
  changes at once, in one file or several, send one `apply_patch`.
- Change a file at most once per turn: when one turn asks for several changes to the
  same file, only the first is made; make the others in the next turn.
- With `execute`, run programs (tests, builds, git) from the workspace root with
  relative paths; read, search and change files with the file tools, not the shell.
- A tool result too large for the conversation is saved under `/large_tool_results/`;
  the notice says where. Read it back with `read_file` (`offset`, `limit`) or `grep`."""
"""The section appended to the agent's system prompt."""

PATH_ARGUMENTS = ("file_path", "notebook_path")

DEFAULT_NAME = "FilesystemMiddleware"
"""The middleware's default name, the same as deepagents' file middleware.

`create_deep_agent(middleware=[...])` replaces its own middleware of the same name, so
by default this one takes the place of deepagents' file tools, in the main agent and
in its general-purpose subagent (see the README's deepagents recipe). To keep both in
one `create_agent` agent, give this one another name (`name="FsToolsMiddleware"`); their
tool names must not overlap then (pick a `tools` subset).
"""


class FilesystemMiddleware(AgentMiddleware[FilesystemState, Any]):
    """Give a `create_agent` agent the file tools over one backend.

    Contributes the tools (all, or a chosen subset), a system-prompt section on how to
    use them, and the state they need (`FilesystemState`: the `files` channel for
    `StateBackend`, and the read records that make read-before-write survive a resumed
    thread). When one model turn asks for several changes to the same file, the first
    runs and the others get an error to retry, since parallel calls all see the state
    from before the turn.

    Large results of other tools (shell, MCP, ...) are evicted to
    `/large_tool_results/` (see `LargeResultEviction`). Unless the backend already keeps
    files in graph state, that folder is mounted from graph state
    (`CompositeBackend`), so nothing is written to the user's disk.

    Permissions are opt-in: with `mode=None` and no `permissions` (the default) every
    call runs, as before. Given a mode or rules, each file tool call (and `execute`,
    `apply_patch`) is allowed, denied with an error the model reads, or paused with a
    LangGraph `interrupt()` for a person to approve, edit or reject (see
    `middleware.permissions` for the request and answer shapes, and
    `langchain_fstools.middleware.policy` for how rules, modes and protected paths combine).
    Opt-in, because the `default` mode asks before every write, which needs a
    checkpointer and a person; an agent built without them keeps working unchanged.
    Denied paths are hidden from `ls`, `glob` and `grep` by a guarded view of the
    backend, so no tool reaches them. The permission layer stays on when the backend
    can execute commands.

    With `history=True`, the state schema is `FilesystemHistoryState`, and every change
    the tools make is recorded in the thread's `file_history` channel (bounded; see
    `langchain_fstools.middleware.history`), an `undo_edit` tool is added, and `rewind`
    puts the files back as they were before a tool call.

    Args:
        backend: Where the files live.
        tools: Names of the tools to give (default: all).
        system_prompt: The section appended to the system prompt; None adds nothing.
            Default: `SYSTEM_PROMPT`.
        eviction: True for the default `LargeResultEviction`, an instance to configure
            it (its backend is replaced by the tools' one), or False. Default: True.
        mode: `"default"`, `"accept_edits"`, `"plan"` or `"bypass"`; None for no
            permission layer. Default: None (`"default"` when `permissions` are given).
        permissions: `Permission` rules, tried in order before the mode's default.
            Default: none.
        protected_paths: Globs that always ask, in every mode.
            Default: `permissions.PROTECTED_PATHS`.
        history: Record file changes for `rewind` and `undo_edit`. Default: False.
        history_record_bytes: Largest earlier content kept per change.
            Default: `history.MAX_RECORD_BYTES` (1 MiB).
        name: The middleware's name; an agent's middleware names must be unique.
            Default: `DEFAULT_NAME` (`"FilesystemMiddleware"`).
        **settings: `ToolSettings` fields, e.g. `read_limit=500`.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, LocalBackend

        agent = create_agent(
            "anthropic:claude-sonnet-4-5",
            middleware=[FilesystemMiddleware(backend=LocalBackend("./repo"))],
        )
        ```
    """

    state_schema = FilesystemState

    def __init__(
        self,
        *,
        backend: Backend,
        tools: list[str] | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        eviction: LargeResultEviction | bool = True,
        mode: Mode | None = None,
        permissions: Sequence[Permission] = (),
        protected_paths: Sequence[str] = PROTECTED_PATHS,
        history: bool = False,
        history_record_bytes: int = MAX_RECORD_BYTES,
        name: str = DEFAULT_NAME,
        **settings: Any,
    ) -> None:
        """Build the tools.

        Raises:
            TypeError: `backend` is not a backend instance, or a setting has the wrong
                type.
            ValueError: an unknown tool, setting, mode or rule, a setting out of range,
                or an empty `name`.
        """
        super().__init__()
        _check_arguments(backend, name, eviction, history_record_bytes)
        self._name = name
        if eviction and backend.kind != "state":
            backend = CompositeBackend(backend, {RESULTS_DIR + "/": StateBackend(optional=True)})
        self.storage = backend
        self.eviction = (
            None
            if eviction is False
            else _with_backend(eviction if eviction is not True else LargeResultEviction(), backend)
        )
        self.gate: PermissionGate | None = None
        if mode is not None or permissions:
            policy = Policy(permissions, mode=mode or "default", protected=protected_paths)
            self.gate = PermissionGate(policy, backend)
        self.history = history
        if history:
            self.state_schema = FilesystemHistoryState
            backend = RecordingBackend(backend, max_record_bytes=history_record_bytes)
        if self.gate is not None:
            backend = GuardedBackend(backend, self.gate.guard_for)
        self.toolkit = FileToolkit(backend, tools=tools, **settings)
        self.tools = self.toolkit.get_tools()
        if history and (tools is None or "undo_edit" in tools):
            self.tools.append(UndoEditTool(context=self.toolkit.context))
        self.system_prompt = system_prompt
        self._mutating = {t.name for t in self.tools if not (t.metadata or {}).get("read_only")}

    @property
    def name(self) -> str:
        """The middleware's name in the agent (unique per agent); see `DEFAULT_NAME`."""
        return self._name

    # ----- model calls: the system prompt section ---------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Append the tools' prompt section; fit tool results to the model."""
        return handler(self._prepared(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async `wrap_model_call`."""
        return await handler(self._prepared(request))

    def _prepared(self, request: ModelRequest) -> ModelRequest:
        cleared = [
            call_id
            for message in request.messages
            if isinstance(message, ToolMessage)
            and was_cleared(message)
            and (call_id := message.tool_call_id)
        ]
        if cleared:  # context editing ran outside this middleware: read again in full
            self.toolkit.context.tracker.clear_shown(cleared)
        profile = getattr(request.model, "profile", None)
        messages = adapt_messages(request.messages, profile)
        if messages is not request.messages and messages != request.messages:
            request = request.override(messages=list(messages))
        if not self.system_prompt:
            return request
        section = {"type": "text", "text": self.system_prompt}
        blocks = (
            [*request.system_message.content_blocks, section]
            if request.system_message
            else [section]
        )
        return request.override(system_message=SystemMessage(content=blocks))  # type: ignore[arg-type]

    # ----- tool calls: one change per file per turn -------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Refuse a second change to one file in one turn; check permissions; evict."""
        refusal = self._parallel_refusal(request)
        if refusal is not None:
            return refusal
        review = Review(request) if self.gate is None else self.gate.review(request)
        if review.message is not None or review.request is None:
            return review.message or _no_request(request)
        call_id = review.request.tool_call["id"] or ""
        if self.gate is not None:
            self.gate.grant(call_id, review.approved)
        deferred = self.toolkit.context.deferred_updates
        deferred[call_id] = {}
        try:
            if self.eviction is None:
                result = handler(review.request)
            else:
                result = self.eviction.wrap_tool_call(review.request, handler)
        finally:
            if self.gate is not None:
                self.gate.revoke(call_id)
            update = deferred.pop(call_id, {})
        return with_state_update(result, update) if update else result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async `wrap_tool_call`."""
        refusal = self._parallel_refusal(request)
        if refusal is not None:
            return refusal
        review = Review(request) if self.gate is None else await self.gate.areview(request)
        if review.message is not None or review.request is None:
            return review.message or _no_request(request)
        call_id = review.request.tool_call["id"] or ""
        if self.gate is not None:
            self.gate.grant(call_id, review.approved)
        deferred = self.toolkit.context.deferred_updates
        deferred[call_id] = {}
        try:
            if self.eviction is None:
                result = await handler(review.request)
            else:
                result = await self.eviction.awrap_tool_call(review.request, handler)
        finally:
            if self.gate is not None:
                self.gate.revoke(call_id)
            update = deferred.pop(call_id, {})
        return with_state_update(result, update) if update else result

    # ----- file history: rewind ------------------------------------------------------------

    def rewind(self, agent: Any, config: RunnableConfig, *, to: str) -> list[str]:
        """Put the files back as they were before tool call `to`, between runs.

        Undoes that call's changes and every later one, all or nothing, then drops
        their records from the history. Read records are left as they are, so the
        agent must read a restored file again before changing it.

        Args:
            agent: The compiled agent (anything with `get_state`/`update_state`).
            config: The thread's config, e.g. `{"configurable": {"thread_id": "t1"}}`.
            to: The id of the first tool call to undo.

        Returns:
            The paths restored.

        Raises:
            ValueError: the middleware was built without `history=True`.
            UnknownChange: no recorded change of call `to`.
            ChangeNotKept: an earlier content was too large to keep.
            ChangedOutsideAgent: a file changed outside the agent since its last change
                (nothing is restored).
        """
        state = agent.get_state(config).values
        bound, steps = self._rewind_plan(state, to)
        versions = calls.run(restore(steps), bound)
        agent.update_state(config, self._rewind_update(bound, state, to, versions))
        return sorted(versions)

    async def arewind(self, agent: Any, config: RunnableConfig, *, to: str) -> list[str]:
        """Async `rewind`."""
        state = (await agent.aget_state(config)).values
        bound, steps = self._rewind_plan(state, to)
        versions = await calls.arun(restore(steps), bound)
        await agent.aupdate_state(config, self._rewind_update(bound, state, to, versions))
        return sorted(versions)

    def _rewind_plan(self, state: Any, to: str) -> tuple[Backend, list[Any]]:
        if not self.history:
            raise ValueError("rewind needs FilesystemMiddleware(history=True)")
        steps = plan_rewind(history_of(state), to)
        return self.storage.bind(_StateRuntime(state)), steps

    @staticmethod
    def _rewind_update(
        bound: Backend, state: Any, to: str, versions: dict[str, str | None]
    ) -> dict[str, Any]:
        update = rewind_update(history_of(state), to, versions)
        return {**bound.state_update(), HISTORY_KEY: update}

    def _parallel_refusal(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call["name"] not in self._mutating:
            return None
        targets = _targets(call["args"])
        turn = _turn_of(request.state, call["id"])
        if not targets or turn is None:
            return None
        for earlier in turn.tool_calls:
            if earlier["id"] == call["id"]:
                return None
            shared = targets & _targets(earlier["args"])
            if earlier["name"] in self._mutating and shared:
                target = min(shared)
                return ToolMessage(
                    content=(
                        f"Error: another call in this turn already changes {target}; a file "
                        "is changed at most once per turn. Read it again and make this "
                        "change in your next turn."
                    ),
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                )
        return None


class _StateRuntime:
    """A stand-in tool runtime outside a run: the thread's state, no tool call."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.tool_call_id = None
        self.config: dict[str, Any] = {}


def _check_arguments(
    backend: object, name: object, eviction: object, history_record_bytes: object
) -> None:
    """Refuse a wrong type (TypeError) or value (ValueError) at construction."""
    if not isinstance(backend, Backend):
        kind = f"the class {backend.__name__}" if isinstance(backend, type) else repr(backend)
        raise TypeError(
            "backend must be a backend instance such as StateBackend() or"
            f" LocalBackend('./repo'), not {kind}"
        )
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string, e.g. 'FsToolsMiddleware'")
    if not isinstance(eviction, bool | LargeResultEviction):
        raise TypeError("eviction must be True, False or a LargeResultEviction")
    if isinstance(history_record_bytes, bool) or not isinstance(history_record_bytes, int):
        raise TypeError("history_record_bytes must be an int")
    if history_record_bytes < 0:
        raise ValueError(f"history_record_bytes must be 0 or more, not {history_record_bytes}")


def _no_request(request: ToolCallRequest) -> ToolMessage:
    """Unreachable by construction: a review gives a request or a message."""
    return ToolMessage(
        content="Error: the call was not run.",
        tool_call_id=request.tool_call["id"],
        name=request.tool_call["name"],
        status="error",
    )


def _with_backend(eviction: LargeResultEviction, backend: Backend) -> LargeResultEviction:
    """Point an eviction middleware at the tools' backend."""
    eviction.backend = backend
    return eviction


def _targets(args: dict[str, Any]) -> frozenset[str]:
    """The canonical paths a mutation changes (those of a patch too); invalid ones skipped."""
    named = [value for name in PATH_ARGUMENTS if isinstance(value := args.get(name), str)]
    patch = args.get("patch")
    if isinstance(patch, str):
        named.extend(patch_paths(patch))
    found: set[str] = set()
    for value in named:
        try:
            found.add(paths.normalize(value))
        except FsToolsError:
            continue
    return frozenset(found)


def _turn_of(state: Any, call_id: str | None) -> AIMessage | None:
    """The model message that asked for `call_id`."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message
    return None


__all__ = ["DEFAULT_NAME", "PATH_ARGUMENTS", "SYSTEM_PROMPT", "FilesystemMiddleware"]
