"""FilesystemMiddleware: the file tools, their system prompt and state, for create_agent.

A composition root: it builds the backend stack (eviction folder, history recorder,
guarded view), the tools, and the collaborators that do the work: `prompt` (the system
prompt section), `turns` (one change per file per turn), `permissions.review` (the
after-model review, its interrupt and each call's admission), `rewind` (file history)
and `tools.eviction` (large results).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Self, cast

from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.factory import FactoryBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.core import calls, paths
from langchain_fstools.history.changes import MAX_RECORD_BYTES
from langchain_fstools.history.recording import RecordingBackend
from langchain_fstools.middleware import rewind as rewinding
from langchain_fstools.middleware.branches import BranchedCalls
from langchain_fstools.middleware.capabilities import adapted
from langchain_fstools.middleware.offering import offered
from langchain_fstools.middleware.prompt import SYSTEM_PROMPT, prompt_for, with_prompt
from langchain_fstools.middleware.schemas import FilesystemHistoryState, FilesystemState
from langchain_fstools.middleware.turns import OneChangePerTurn
from langchain_fstools.permissions.approval import REVIEWS_KEY, ApprovalState
from langchain_fstools.permissions.command_review import CommandReview
from langchain_fstools.permissions.gate import PermissionGate
from langchain_fstools.permissions.review import TurnReview
from langchain_fstools.permissions.rules import PROTECTED_PATHS, Mode, Permission, Policy
from langchain_fstools.tools.base import FileTool, call_key
from langchain_fstools.tools.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.tools.toolkit import FileToolkit, as_backend
from langchain_fstools.tools.undo_edit import UndoEditTool
from langchain_fstools.tools.updates import merged_channels, state_after, with_state_update

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.permissions.approval import Review


class FilesystemApprovalState(FilesystemState, ApprovalState):
    """`FilesystemState` plus the approval gate's private channel."""


class FilesystemHistoryApprovalState(FilesystemHistoryState, ApprovalState):
    """`FilesystemHistoryState` plus the approval gate's private channel (`history=True`)."""


DEFAULT_NAME = "FilesystemMiddleware"
"""The middleware's default name, the same as deepagents' file middleware.

`create_deep_agent(middleware=[...])` replaces its own middleware of the same name, so
by default this one takes the place of deepagents' file tools, in the main agent and
in its general-purpose subagent (see the deepagents recipe in docs/stack.md). To keep both in
one `create_agent` agent, give this one another name (`name="FsToolsMiddleware"`); their
tool names must not overlap then (pick a `tools` subset).
"""


_SCHEMAS: dict[tuple[bool, bool], type[FilesystemState]] = {
    (False, False): FilesystemState,
    (True, False): FilesystemHistoryState,
    (False, True): FilesystemApprovalState,
    (True, True): FilesystemHistoryApprovalState,
}
"""The state schema by (history on, permission gate on): each channel only when used."""


class FilesystemMiddleware(AgentMiddleware[FilesystemState, Any]):
    """Give a `create_agent` agent the file tools over one backend.

    Contributes the tools (all, or a chosen subset), each offered to the model while it
    can be of use (`offering`), and the state they need (`FilesystemState`: the `files`
    channel for `StateBackend`, and the read records behind read-before-write). A second
    change to one file in one model turn gets an error to retry (`turns`).

    Large results of other tools (shell, MCP, ...) are evicted to `/large_tool_results/`
    (`LargeResultEviction`), mounted from graph state unless the backend keeps files there
    already or a `CompositeBackend` routes that folder itself: nothing reaches the disk.

    Permissions are opt-in (`mode` or `permissions`): each call is then allowed, denied
    with an error the model reads, or paused with an `interrupt()` for a person to
    approve, edit or reject (`permissions.review`; shapes in `permissions.approval`,
    rules in `permissions.rules`). The `default` mode asks before every write, which needs
    a checkpointer. Denied paths are hidden from `ls`, `glob` and `grep` too.

    With `history=True` every change is recorded in the thread's `file_history` channel
    (`history.changes`), an `undo_edit` tool is added, and `rewind` puts files back.

    Args:
        backend: Where the files live, or a function of each call's runtime giving it.
        tools: Names of the tools to give (default: all).
        system_prompt: The section appended to the system prompt; None adds nothing.
            Default: `SYSTEM_PROMPT` where it applies: nothing (the tool descriptions
            say how to use them) but a sentence that changes are not syntax-checked when
            `syntax_check` is on and the `syntax` extra is not installed.
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
        branches: Run each subagent call on a branch of the files, kept in the thread's
            state by the call's result and merged before the next model call
            (`middleware.branches`): True for deepagents' `task`, or tool names. Default: False.
        name: The middleware's name; an agent's middleware names must be unique.
            Default: `DEFAULT_NAME` (`"FilesystemMiddleware"`).
        **settings: `ToolSettings` fields, e.g. `read_limit=500`; deepagents'
            `custom_tool_descriptions` (tool name -> description, see `FileToolkit`) and
            `tool_token_limit_before_evict` (tokens, or None: no eviction; in place of
            `eviction`) mean what they mean there.

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

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:  # noqa: ARG004
        """An instance whose class has the model hooks only when it uses them.

        `create_agent` adds a graph node (a superstep and a checkpoint per model turn)
        for every middleware class that overrides `before_model` or `after_model`, so
        the after-model review exists only with a permission gate (`mode` or
        `permissions` given), and the before-model settling with it or with `branches`
        (subagents' branches merge there).
        """
        return cast("Self", super().__new__(_class_for(cls, kwargs)))

    def __init__(
        self,
        *,
        backend: Backend | Callable[[Any], Backend],
        tools: list[str] | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        eviction: LargeResultEviction | bool = True,
        mode: Mode | None = None,
        permissions: Sequence[Permission] = (),
        protected_paths: Sequence[str] = PROTECTED_PATHS,
        history: bool = False,
        history_record_bytes: int = MAX_RECORD_BYTES,
        branches: bool | Sequence[str] = False,
        name: str = DEFAULT_NAME,
        **settings: Any,
    ) -> None:
        """Build the tools.

        Raises:
            TypeError: `backend` is no backend (nor a factory), or a setting's type.
            ValueError: an unknown tool, setting, mode or rule, a setting out of range,
                or an empty `name`.
        """
        super().__init__()
        backend = _check_arguments(backend, name, eviction, history_record_bytes)
        self.factory = backend if isinstance(backend, FactoryBackend) else None
        eviction = _deepagents_eviction(eviction, settings)
        self._name = name
        key = backend.storage_key()  # of the backend given: every middleware over it branches it
        self.storage = backend = _with_results_folder(backend) if eviction else backend
        self.eviction = None if eviction is False else _evicting(eviction, backend=backend)
        self.gate = gate = (
            PermissionGate(
                Policy(permissions, mode=mode or "default", protected=protected_paths), backend
            )
            if _gated(mode, permissions)
            else None
        )
        self.history = history
        self.state_schema = _SCHEMAS[history, gate is not None]
        recording = history_record_bytes if history else None
        view = functools.partial(_tools_view, gate=gate, recording=recording)
        self.branches = BranchedCalls.given(branches, key, backend, view, gate)
        self.toolkit = FileToolkit(self.branches.switch, tools=tools, **settings)
        self.tools = _middleware_tools(self.toolkit, self.branches, tools, history=history)
        if system_prompt == SYSTEM_PROMPT:
            syntax_check = self.toolkit.context.settings.syntax_check
            system_prompt = prompt_for(self.tools, syntax_check=syntax_check)
        self.system_prompt = system_prompt
        file_tools = {t.name: t for t in self.tools if isinstance(t, FileTool)}
        mutating = {t.name for t in self.tools if not (t.metadata or {}).get("read_only")}
        self.turns = OneChangePerTurn(file_tools, mutating)
        self.review: TurnReview | None = None
        self.command_review: CommandReview | None = None
        if gate is not None:
            gate.tools = file_tools
            self.review = TurnReview(gate, self.turns.refused, self.branches.on_branch)
            self.command_review = CommandReview(gate, self.toolkit.context)

    @property
    def name(self) -> str:
        """The middleware's name in the agent (unique per agent); see `DEFAULT_NAME`."""
        return self._name

    # ----- model calls: the system prompt section ---------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Offer the tools usable now; append the prompt section; fit results to the model.

        With a permission gate, the reviews of the answer's asks (their dry runs) are
        kept in the thread's state with it (`TurnReview.pinning`).
        """
        response = _as_response(handler(self._prepared(request)))
        pinning = self._pinning(request, response)
        return response if pinning is None else _pinned(response, calls.run(*pinning))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Async `wrap_model_call`."""
        response = _as_response(await handler(self._prepared(request)))
        pinning = self._pinning(request, response)
        return response if pinning is None else _pinned(response, await calls.arun(*pinning))

    def _pinning(
        self, request: ModelRequest, response: ModelResponse
    ) -> tuple[Effect[dict[str, Review] | None], Backend] | None:
        if self.review is None:
            return None
        return self.review.pinning(request.state, response.result, request.runtime, self.storage)

    def _prepared(self, request: ModelRequest) -> ModelRequest:
        # Context editing may have run outside this middleware: read those again in full.
        self.toolkit.context.tracker.note_cleared(request.messages)
        return with_prompt(offered(adapted(request), self.tools, self.factory), self.system_prompt)

    # ----- tool calls: admission, deferred state updates, eviction -------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Refuse a second change to one file in one turn; check permissions; evict; branch."""
        blocked = calls.run(self._admitting(request), self.storage.bind(request.runtime))
        if blocked is not None:
            return blocked
        handler = self.branches.wrapping(request, handler)
        key = self._open(request)
        try:
            evicting = self.eviction
            result = (
                handler(request) if evicting is None else evicting.wrap_tool_call(request, handler)
            )
        finally:
            update = self._close(key)
        return with_state_update(result, update) if update else result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async `wrap_tool_call` (the same steps; only the handler is awaited)."""
        blocked = await calls.arun(self._admitting(request), self.storage.bind(request.runtime))
        if blocked is not None:
            return blocked
        handler = self.branches.awrapping(request, handler)
        key = self._open(request)
        try:
            evicting = self.eviction
            result = await (
                handler(request) if evicting is None else evicting.awrap_tool_call(request, handler)
            )
        finally:
            update = self._close(key)
        return with_state_update(result, update) if update else result

    def _admitting(self, request: ToolCallRequest) -> Effect[ToolMessage | None]:
        """The refusal of a call that may not run now, or None (its approval granted)."""
        refused = self.turns.refusal(request.tool_call, request.state)
        if refused is not None or self.review is None:
            return refused
        return (yield from self.review.admitting(request.tool_call, request.state))

    def _open(self, request: ToolCallRequest) -> tuple[str, str]:
        """Start a call: its state update is left for this middleware to return."""
        key = call_key(request.runtime)
        self.toolkit.context.deferred_updates[key] = {}
        return key

    def _close(self, key: tuple[str, str]) -> dict[str, Any]:
        """End a call: its approval ends; its state update, to return with the message."""
        if self.review is not None:
            self.review.finished(key[1])
        return self.toolkit.context.deferred_updates.pop(key, {})

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
            The paths restored: the files put back, and the folders the undone calls
            created that were removed (a folder holding a file since stays).

        Raises:
            ValueError: the middleware was built without `history=True`.
            UnknownChange: no recorded change of call `to`.
            ChangeNotKept: an earlier content was too large to keep.
            ChangedOutsideAgent: a file changed outside the agent since its last change
                (nothing is restored).
        """
        return rewinding.rewind(self._recorded(), agent, config, to)

    async def arewind(self, agent: Any, config: RunnableConfig, *, to: str) -> list[str]:
        """Async `rewind`."""
        return await rewinding.arewind(self._recorded(), agent, config, to)

    def _recorded(self) -> Backend:
        if not self.history:
            raise ValueError("rewind needs FilesystemMiddleware(history=True)")
        return self.storage


class _SettlingFilesystemMiddleware(FilesystemMiddleware):
    """`FilesystemMiddleware` that settles what waits for the next model call."""

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Apply what waits for this model call: a person's answers, resumed merges."""
        return calls.run(self._settling(state, runtime), self.storage)

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async `before_model`."""
        return await calls.arun(self._settling(state, runtime), self.storage)

    def _settling(self, state: Any, runtime: Runtime[Any]) -> Effect[dict[str, Any] | None]:
        """A person's answers on waiting changes, then resumed merges, as one update.

        See `CommandReview.deciding` and `BranchedCalls.settling`.
        """
        review = self.command_review
        decided = None
        if review is not None and review.pending(state):
            decided = yield from review.deciding(state, runtime)
        merged = yield from self.branches.settling(
            state_after(state, decided or {}), runtime, self.toolkit.context
        )
        if decided is None or merged is None:
            return decided or merged
        replies = [*decided.get("messages", []), *merged.get("messages", [])]
        return {**merged_channels(decided, merged), "messages": replies}


class _ReviewingFilesystemMiddleware(_SettlingFilesystemMiddleware):
    """`FilesystemMiddleware` with a permission gate: it also reviews each model turn."""

    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Ask a person about every call of the turn that needs it, in one interrupt.

        Each ask carries the tool's dry run (the exact diff, or the error the call would
        return); approvals are kept in state for the tool calls, rejections answered.
        """
        review = None if self.review is None else self.review.of_turn(state, runtime, self.storage)
        return None if review is None else calls.run(*review)

    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async `after_model`."""
        review = None if self.review is None else self.review.of_turn(state, runtime, self.storage)
        return None if review is None else await calls.arun(*review)


_HOOKED_CLASSES: dict[tuple[type[FilesystemMiddleware], type[Any]], type[FilesystemMiddleware]] = {}


def _hooked_class(
    cls: type[FilesystemMiddleware], hooks: type[FilesystemMiddleware]
) -> type[FilesystemMiddleware]:
    """`cls` (a subclass of `FilesystemMiddleware`) with the model hooks of `hooks`."""
    if issubclass(cls, hooks):
        return cls
    if cls is FilesystemMiddleware:
        return hooks
    if (cls, hooks) not in _HOOKED_CLASSES:
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        _HOOKED_CLASSES[cls, hooks] = type(cls.__name__, (cls, hooks), namespace)
    return _HOOKED_CLASSES[cls, hooks]


def _class_for(cls: type[FilesystemMiddleware], kwargs: dict[str, Any]) -> type[Any]:
    """`cls`, with the model hooks the arguments `kwargs` need (see `__new__`)."""
    if _gated(kwargs.get("mode"), kwargs.get("permissions", ())):
        return _hooked_class(cls, _ReviewingFilesystemMiddleware)
    if kwargs.get("branches", False) is not False:
        return _hooked_class(cls, _SettlingFilesystemMiddleware)
    return cls


def _middleware_tools(
    toolkit: FileToolkit, branches: BranchedCalls, names: list[str] | None, *, history: bool
) -> list[BaseTool]:
    """The toolkit's tools, the branches' (`merge`) and `undo_edit`.

    The last where history is kept and `names` allows it.
    """
    context = toolkit.context
    found = [*toolkit.get_tools(), *branches.tools(context)]

    def wanted(tool: type[BaseTool]) -> bool:
        return names is None or tool.model_fields["name"].default in names

    if history and wanted(UndoEditTool):
        found.append(UndoEditTool(context=context))
    return found


def _as_response(answer: ModelResponse | AIMessage) -> ModelResponse:
    """A handler may answer with the bare message: as a `ModelResponse`."""
    return ModelResponse(result=[answer]) if isinstance(answer, AIMessage) else answer


def _pinned(
    response: ModelResponse, reviews: dict[str, Review] | None
) -> ModelResponse | ExtendedModelResponse[Any]:
    """`response`, with `reviews` written to the thread's state beside it (if any)."""
    if not reviews:
        return response
    return ExtendedModelResponse(
        model_response=response, command=Command(update={REVIEWS_KEY: reviews})
    )


def _gated(mode: Mode | None, permissions: Sequence[Permission]) -> bool:
    """Whether a middleware built with these arguments has a permission gate."""
    return mode is not None or bool(permissions)


def _check_arguments(
    backend: object, name: object, eviction: object, history_record_bytes: object
) -> Backend:
    """The backend (`as_backend`); a wrong type (TypeError) or value (ValueError) refused."""
    backend = as_backend(backend)
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string, e.g. 'FsToolsMiddleware'")
    if not isinstance(eviction, bool | LargeResultEviction):
        raise TypeError("eviction must be True, False or a LargeResultEviction")
    if isinstance(history_record_bytes, bool) or not isinstance(history_record_bytes, int):
        raise TypeError("history_record_bytes must be an int")
    if history_record_bytes < 0:
        raise ValueError(f"history_record_bytes must be 0 or more, not {history_record_bytes}")
    return backend


def _deepagents_eviction(
    eviction: LargeResultEviction | bool,  # noqa: FBT001
    settings: dict[str, Any],
) -> LargeResultEviction | bool:
    """`eviction`, or the one deepagents' `tool_token_limit_before_evict` in `settings` asks.

    The setting is taken out of `settings`: None turns eviction off, a number of tokens
    is `LargeResultEviction(threshold_tokens=...)`.
    """
    if "tool_token_limit_before_evict" not in settings:
        return eviction
    limit = settings.pop("tool_token_limit_before_evict")
    if eviction is not True:
        raise ValueError(
            "give eviction or tool_token_limit_before_evict, not both: the second is"
            " LargeResultEviction(threshold_tokens=...)"
        )
    return False if limit is None else LargeResultEviction(threshold_tokens=limit)


def _evicting(eviction: LargeResultEviction | bool, *, backend: Backend) -> LargeResultEviction:  # noqa: FBT001
    """The eviction middleware (the default one for True), pointed at the tools' backend."""
    evicting = LargeResultEviction() if eviction is True else cast("LargeResultEviction", eviction)
    evicting.backend = backend
    return evicting


def _tools_view(backend: Backend, *, gate: PermissionGate | None, recording: int | None) -> Backend:
    """What the tools work on: `backend`, recorded (`recording` bytes a change) and guarded."""
    if recording is not None:
        backend = RecordingBackend(backend, max_record_bytes=recording)
    return backend if gate is None else GuardedBackend(backend, gate.guard_for)


def _with_results_folder(backend: Backend) -> Backend:
    """`backend` with `/large_tool_results/` mounted from graph state.

    Left as it is when it keeps files in graph state already, or is a composite that
    routes that folder itself.
    """
    if backend.kind == "state" or _routes(backend, RESULTS_DIR):
        return backend
    return CompositeBackend(
        backend, {RESULTS_DIR + "/": StateBackend(optional=True)}, traced_as=backend.traced_kind
    )


def _routes(backend: Backend, directory: str) -> bool:
    """Whether `backend` is a composite with a mount of its own for `directory`."""
    return isinstance(backend, CompositeBackend) and paths.normalize(directory) in backend.routes


__all__ = [
    "DEFAULT_NAME",
    "SYSTEM_PROMPT",
    "FilesystemApprovalState",
    "FilesystemHistoryApprovalState",
    "FilesystemMiddleware",
]
