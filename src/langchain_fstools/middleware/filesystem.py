"""FilesystemMiddleware: the file tools, their system prompt and state, for create_agent."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Self, cast

from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.config import get_config
from langgraph.types import Command, interrupt

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.core import calls, paths
from langchain_fstools.errors import FsToolsError
from langchain_fstools.formats import syntax
from langchain_fstools.middleware.approval import (
    APPROVALS_KEY,
    REVIEWS_KEY,
    Approval,
    ApprovalState,
    Assessment,
    PermissionGate,
    Review,
    decisions,
    refusal,
    rejection,
    review,
    reviews_request,
)
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
from langchain_fstools.middleware.policy import (
    PROTECTED_PATHS,
    Mode,
    Permission,
    Policy,
    Verdict,
)
from langchain_fstools.middleware.recording import RecordingBackend
from langchain_fstools.middleware.state import FilesystemHistoryState, FilesystemState
from langchain_fstools.middleware.undo_edit import UndoEditTool
from langchain_fstools.middleware.updates import with_state_update
from langchain_fstools.middleware.views import GuardedBackend
from langchain_fstools.tools._base import FileTool
from langchain_fstools.tools.describe import describe
from langchain_fstools.tools.toolkit import FileToolkit
from langchain_fstools.tools.tracking import was_cleared

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.messages import ToolCall
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime

    from langchain_fstools.core.calls import Effect


SYSTEM_PROMPT_TEMPLATE = """## Files

You have file tools over a workspace whose root is `/`.
- Paths are absolute workspace paths, such as `/src/app.py`.
-[ls] List a directory with `ls`.
-[glob] Find files by name with `glob`, not with a shell.
-[grep] Search file contents with `grep`, not with a shell.
-[read_file] Read files with `read_file`, in windows (`offset`, `limit`) when long. Read a
  file before you edit or overwrite it; if it changed since, read it again.
-[edit_file] Change existing files with `edit_file` (exact text replacement).
-[write_file] Use `write_file` for new files or complete rewrites.
-[notebook_edit] Edit Jupyter notebooks with `notebook_edit`.
-[apply_patch] For many changes at once, in one file or several, send one `apply_patch`.
-[mutating] Change a file at most once per turn: when one turn asks for several changes to
  the same file, only the first is made; make the others in the next turn.
-[execute] With `execute`, run programs (tests, builds, git) from the workspace root with
  relative paths; read, search and change files with the file tools, not the shell.
-[eviction] A tool result too large for the conversation is saved under
  `/large_tool_results/`; the notice says where. Read it back with `read_file` (`offset`,
  `limit`) or `grep`.
-[syntax_unchecked] Your changes are not syntax-checked here (the tree-sitter grammars, the
  langchain-fstools[syntax] extra, are not installed): after changing code, run the
  project's own checks (a compiler, linter or tests) where you can."""
"""The prompt section, marked as in `tools.describe`: bullets follow the tools present."""

SYSTEM_PROMPT = describe(
    SYSTEM_PROMPT_TEMPLATE,
    present=None,
    values={"mutating": True, "eviction": True, "syntax_unchecked": False},
)
"""The section appended to the agent's system prompt, with every tool present."""


class FilesystemApprovalState(FilesystemState, ApprovalState):
    """`FilesystemState` plus the approval gate's private channel."""


class FilesystemHistoryApprovalState(FilesystemHistoryState, ApprovalState):
    """`FilesystemHistoryState` plus the approval gate's private channel (`history=True`)."""


DEFAULT_NAME = "FilesystemMiddleware"
"""The middleware's default name, the same as deepagents' file middleware.

`create_deep_agent(middleware=[...])` replaces its own middleware of the same name, so
by default this one takes the place of deepagents' file tools, in the main agent and
in its general-purpose subagent (see the README's deepagents recipe). To keep both in
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

    Contributes the tools (all, or a chosen subset), a system-prompt section on how to
    use them, and the state they need (`FilesystemState`: the `files` channel for
    `StateBackend`, and the read records that make read-before-write survive a resumed
    thread). When one model turn asks for several changes to the same file, the first
    runs and the others get an error to retry, since parallel calls all see the state
    from before the turn.

    Large results of other tools (shell, MCP, ...) are evicted to
    `/large_tool_results/` (see `LargeResultEviction`). Unless the backend already keeps
    files in graph state, or is a `CompositeBackend` with its own route for that folder
    (which is honoured), that folder is mounted from graph state (`CompositeBackend`),
    so nothing is written to the user's disk.

    Permissions are opt-in: with `mode=None` and no `permissions` (the default) every
    call runs, as before. Given a mode or rules, each file tool call (and `execute`,
    `apply_patch`) is allowed, denied with an error the model reads, or paused with a
    LangGraph `interrupt()` for a person to approve, edit or reject (see
    `middleware.approval` for the request and answer shapes, and
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
            Default: `SYSTEM_PROMPT`, with only the bullets for the tools present (and
            one saying changes are not syntax-checked when `syntax_check` is on but the
            `syntax` extra is not installed).
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

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:  # noqa: ARG004
        """An instance whose class has the after-model review only when it can ask.

        `create_agent` adds a graph node (a superstep and a checkpoint per model turn)
        for every middleware class that overrides `after_model`, so the hook exists only
        with a permission gate (`mode` or `permissions` given).
        """
        gated = _gated(kwargs.get("mode"), kwargs.get("permissions", ()))
        if not gated or issubclass(cls, _ReviewingFilesystemMiddleware):
            return super().__new__(cls)
        return cast("Self", super().__new__(_reviewing_class(cls)))

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
        if eviction and backend.kind != "state" and not _routes(backend, RESULTS_DIR):
            backend = CompositeBackend(
                backend,
                {RESULTS_DIR + "/": StateBackend(optional=True)},
                traced_as=backend.traced_kind,
            )
        self.storage = backend
        self.eviction = (
            None
            if eviction is False
            else _with_backend(eviction if eviction is not True else LargeResultEviction(), backend)
        )
        self.gate: PermissionGate | None = None
        if _gated(mode, permissions):
            policy = Policy(permissions, mode=mode or "default", protected=protected_paths)
            self.gate = PermissionGate(policy, backend)
        self.history = history
        self.state_schema = _SCHEMAS[history, self.gate is not None]
        if history:
            backend = RecordingBackend(backend, max_record_bytes=history_record_bytes)
        if self.gate is not None:
            backend = GuardedBackend(backend, self.gate.guard_for)
        self.toolkit = FileToolkit(backend, tools=tools, **settings)
        self.tools = self.toolkit.get_tools()
        if history and (tools is None or UndoEditTool.model_fields["name"].default in tools):
            self.tools.append(UndoEditTool(context=self.toolkit.context))
        self._mutating = {t.name for t in self.tools if not (t.metadata or {}).get("read_only")}
        if system_prompt == SYSTEM_PROMPT:
            unchecked = self.toolkit.context.settings.syntax_check != "off" and not (
                syntax.available()
            )
            system_prompt = describe(
                SYSTEM_PROMPT_TEMPLATE,
                present={tool.name for tool in self.tools},
                values={
                    "mutating": bool(self._mutating),
                    "eviction": self.eviction is not None,
                    "syntax_unchecked": unchecked and bool(self._mutating),
                },
            )
        self.system_prompt = system_prompt
        self._file_tools = {t.name: t for t in self.tools if isinstance(t, FileTool)}
        if self.gate is not None:
            self.gate.tools = self._file_tools

    @property
    def name(self) -> str:
        """The middleware's name in the agent (unique per agent); see `DEFAULT_NAME`."""
        return self._name

    # ----- model calls: the system prompt section ---------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Append the tools' prompt section; fit tool results to the model.

        With a permission gate, the dry runs of the new turn's asks are kept in the
        thread's state with the model's answer (see `_pinning`).
        """
        response = handler(self._prepared(request))
        pinning = self._pinning(request, response)
        return response if pinning is None else calls.run(*pinning)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Async `wrap_model_call`."""
        response = await handler(self._prepared(request))
        pinning = self._pinning(request, response)
        return response if pinning is None else await calls.arun(*pinning)

    def _pinning(
        self, request: ModelRequest, response: ModelResponse
    ) -> tuple[Effect[ModelResponse | ExtendedModelResponse[Any]], Backend] | None:
        """The effect keeping the new turn's reviews in state, and its backend; or None.

        The person must approve what was shown: LangGraph runs the interrupting node
        again on resume, possibly in another process, where a dry run would show the
        files as they are then. So the dry runs are made here, in the model's node, and
        written to `file_reviews` with its answer; the review only reads them.
        """
        if isinstance(response, AIMessage):  # a handler may answer with the bare message
            response = ModelResponse(result=[response])
        turn = next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
        if self.gate is None or turn is None or not turn.tool_calls:
            return None
        state: dict[str, Any] = dict(request.state) if isinstance(request.state, dict) else {}
        state["messages"] = [*list(state.get("messages") or []), turn]
        call_runtime = _StateRuntime(state, _config(), getattr(request.runtime, "store", None))
        backend = self.storage.bind(call_runtime)
        pinned = self._pinned(response, state, turn, backend=backend, call_runtime=call_runtime)
        return pinned, backend

    def _pinned(
        self,
        response: ModelResponse,
        state: dict[str, Any],
        turn: AIMessage,
        *,
        backend: Backend,
        call_runtime: Any,
    ) -> Effect[ModelResponse | ExtendedModelResponse[Any]]:
        asks = yield from self._asks(state, turn, backend=backend, call_runtime=call_runtime)
        if not asks:
            return response
        reviews = {call["id"] or "": pinned for call, pinned in asks}
        return ExtendedModelResponse(
            model_response=response, command=Command(update={REVIEWS_KEY: reviews})
        )

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

    # ----- after the model (with a gate): one interrupt for the turn's asks -------------

    def _review(
        self, state: Any, runtime: Runtime[Any]
    ) -> tuple[Effect[dict[str, Any] | None], Backend] | None:
        """The turn's review and the backend it runs on, or None with nothing to review."""
        turn = self._turn(state)
        if self.gate is None or turn is None:
            return None
        call_runtime = _StateRuntime(state, _config(), getattr(runtime, "store", None))
        backend = self.storage.bind(call_runtime)
        return self._reviewing(state, turn, backend, call_runtime), backend

    def _reviewing(
        self, state: Any, turn: AIMessage, backend: Backend, call_runtime: Any
    ) -> Effect[dict[str, Any] | None]:
        """The turn's asks, each with its dry run, put to a person in one interrupt."""
        stored = state.get(REVIEWS_KEY) or {}
        asks = yield from self._asks(
            state, turn, backend=backend, call_runtime=call_runtime, stored=stored
        )
        return (yield from self._decide_turn(state, turn, asks, backend, call_runtime))

    def _asks(
        self,
        state: Any,
        turn: AIMessage,
        *,
        backend: Backend,
        call_runtime: Any,
        stored: Mapping[str, Review] | None = None,
    ) -> Effect[list[tuple[ToolCall, Review]]]:
        """The turn's calls that ask a person, each with its review.

        A review kept in state for the same call and arguments is used as it is (what
        was shown stays what is approved); any other is made now from a dry run.
        """
        gate, asks = self.gate, []
        if gate is None:
            return []
        for call in turn.tool_calls:
            if self._parallel_refusal(call, state) is not None:
                continue
            found = yield from gate.assessing(call)
            if found is None or found.verdict.action != "ask":
                continue
            pinned = (stored or {}).get(call["id"] or "")
            if pinned is None or pinned["approval"]["args"] != call["args"]:
                preview = yield from _previewing(found, backend, call_runtime)
                approval = gate.approval(found, call["args"], preview)
                pinned = review(call, found.verdict, preview, approval)
            asks.append((call, pinned))
        return asks

    def _turn(self, state: Any) -> AIMessage | None:
        messages = state.get("messages", []) if isinstance(state, dict) else []
        last = messages[-1] if messages else None
        return last if isinstance(last, AIMessage) and last.tool_calls else None

    def _decide_turn(
        self,
        state: Any,
        turn: AIMessage,
        asks: list[tuple[ToolCall, Review]],
        backend: Backend,
        call_runtime: Any,
    ) -> Effect[dict[str, Any] | None]:
        """One interrupt for `asks`; the approvals, rejections and edits it returns.

        Answered, the turn's reviews end (`file_reviews` keeps only pending ones).
        """
        ended = dict.fromkeys(state.get(REVIEWS_KEY) or {})
        if self.gate is None or not asks:
            cleared: dict[str, Any] = {APPROVALS_KEY: {}} if state.get(APPROVALS_KEY) else {}
            if ended:
                cleared[REVIEWS_KEY] = ended
            return cleared or None
        answers = decisions(interrupt(reviews_request([r for _, r in asks])), len(asks))
        approvals: dict[str, Approval] = {}
        replies: list[ToolMessage] = []
        edited: dict[str, dict[str, Any]] = {}
        for (call, pinned), decision in zip(asks, answers, strict=True):
            call_id = call["id"] or ""
            if decision["type"] == "reject":
                replies.append(rejection(call, decision))
                continue
            if decision["type"] == "approve":
                approvals[call_id] = pinned["approval"]
                continue
            args, outcome = yield from self._edited(call, decision, backend, call_runtime)
            edited[call_id] = args
            if isinstance(outcome, ToolMessage):
                replies.append(outcome)
            elif outcome is not None:
                approvals[call_id] = outcome
        update: dict[str, Any] = {APPROVALS_KEY: approvals, REVIEWS_KEY: ended}
        if edited:
            turn.tool_calls = [
                {**c, "args": edited[c["id"]]} if c["id"] in edited else c for c in turn.tool_calls
            ]
        if edited or replies:
            update["messages"] = [turn, *replies]
        return update

    def _edited(
        self, call: ToolCall, decision: Any, backend: Backend, call_runtime: Any
    ) -> Effect[tuple[dict[str, Any], Approval | ToolMessage | None]]:
        """An edited call's new arguments, and its approval (or its refusal)."""
        action = decision.get("edited_action") if decision["type"] == "edit" else None
        if action is None or action.get("name") != call["name"]:
            raise ValueError(f"unsupported decision for {call['name']}: {decision!r}")
        args = dict(action["args"])
        if self.gate is None:
            return args, None
        again = yield from self.gate.assessing({**call, "args": args})
        if again is None:
            return args, None
        if again.verdict.action == "deny":
            return args, refusal(call, again.verdict)
        preview = yield from _previewing(again, backend, call_runtime)
        return args, self.gate.approval(again, args, preview)

    # ----- tool calls: one change per file per turn -------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Refuse a second change to one file in one turn; check permissions; evict."""
        backend = self.storage.bind(request.runtime)
        blocked = calls.run(self._admitting(request), backend)
        if blocked is not None:
            return blocked
        call_id = self._open(request)
        try:
            if self.eviction is None:
                result = handler(request)
            else:
                result = self.eviction.wrap_tool_call(request, handler)
        finally:
            update = self._close(call_id)
        return with_state_update(result, update) if update else result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async `wrap_tool_call` (the same steps; only the handler is awaited)."""
        backend = self.storage.bind(request.runtime)
        blocked = await calls.arun(self._admitting(request), backend)
        if blocked is not None:
            return blocked
        call_id = self._open(request)
        try:
            if self.eviction is None:
                result = await handler(request)
            else:
                result = await self.eviction.awrap_tool_call(request, handler)
        finally:
            update = self._close(call_id)
        return with_state_update(result, update) if update else result

    def _admitting(self, request: ToolCallRequest) -> Effect[ToolMessage | None]:
        """The refusal of a call that may not run now, or None (its approval granted)."""
        refusal_message = self._parallel_refusal(request.tool_call, request.state)
        if refusal_message is not None:
            return refusal_message
        if self.gate is None:
            return None
        found = yield from self.gate.assessing(request.tool_call)
        return self._blocked(request, found)

    def _open(self, request: ToolCallRequest) -> str:
        """Start a call: its state update is left for this middleware to return."""
        call_id = request.tool_call["id"] or ""
        self.toolkit.context.deferred_updates[call_id] = {}
        return call_id

    def _close(self, call_id: str) -> dict[str, Any]:
        """End a call: its approval ends; its state update, to return with the message."""
        if self.gate is not None:
            self.gate.revoke(call_id)
        return self.toolkit.context.deferred_updates.pop(call_id, {})

    def _blocked(self, request: ToolCallRequest, found: Assessment | None) -> ToolMessage | None:
        """The refusal of a call the gate does not let run; grants an approved one."""
        if self.gate is None or found is None or found.verdict.action == "allow":
            return None
        call = request.tool_call
        if found.verdict.action == "deny":
            return refusal(call, found.verdict)
        state = request.state if isinstance(request.state, dict) else {}
        approval = (state.get(APPROVALS_KEY) or {}).get(call["id"])
        if approval is None or approval["args"] != call["args"]:
            missing = Verdict(
                "deny",
                f"{found.verdict.reason}, which asks for a person's approval that this call"
                " did not get,",
                found.verdict.target,
                found.verdict.operation,
            )
            return refusal(call, missing)
        self.gate.grant(call["id"] or "", approval)
        return None

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

    def _parallel_refusal(self, call: ToolCall, state: Any) -> ToolMessage | None:
        if call["name"] not in self._mutating:
            return None
        targets = self._written(call)
        turn = _turn_of(state, call["id"])
        if not targets or turn is None:
            return None
        for earlier in turn.tool_calls:
            if earlier["id"] == call["id"]:
                return None
            shared = targets & self._written(earlier)
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

    def _written(self, call: ToolCall) -> frozenset[str]:
        """The canonical paths a call declares it writes; invalid ones skipped."""
        tool = self._file_tools.get(call["name"])
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


class _ReviewingFilesystemMiddleware(FilesystemMiddleware):
    """`FilesystemMiddleware` with a permission gate: it reviews each model turn."""

    def after_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Ask a person about every call of the turn that needs it, in one interrupt.

        Each ask carries the tool's dry run (the exact diff, or the error the call would
        return); approvals are kept in state for the tool calls, rejections answered.
        """
        review = self._review(state, runtime)
        return None if review is None else calls.run(*review)

    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async `after_model`."""
        review = self._review(state, runtime)
        return None if review is None else await calls.arun(*review)


_REVIEWING_CLASSES: dict[type[FilesystemMiddleware], type[FilesystemMiddleware]] = {}


def _reviewing_class(cls: type[FilesystemMiddleware]) -> type[FilesystemMiddleware]:
    """`cls` (a subclass of `FilesystemMiddleware`) with the after-model review."""
    if cls is FilesystemMiddleware:
        return _ReviewingFilesystemMiddleware
    if cls not in _REVIEWING_CLASSES:
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        _REVIEWING_CLASSES[cls] = type(
            cls.__name__, (cls, _ReviewingFilesystemMiddleware), namespace
        )
    return _REVIEWING_CLASSES[cls]


def _gated(mode: Mode | None, permissions: Sequence[Permission]) -> bool:
    """Whether a middleware built with these arguments has a permission gate."""
    return mode is not None or bool(permissions)


class _StateRuntime:
    """A stand-in tool runtime outside a tool call: the thread's state and store, no call id."""

    def __init__(self, state: Any, config: Any = None, store: Any = None) -> None:
        self.state = state
        self.tool_call_id = None
        self.config: Any = config or {}
        self.store = store


def _config() -> Any:
    """The running graph's config (its thread id keys in-process read records)."""
    try:
        return get_config()
    except RuntimeError:
        return {}


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


def _previewing(found: Assessment, backend: Backend, call_runtime: Any) -> Effect[Any]:
    """The dry run of an assessed call: its own run, in a thread on the async path."""
    preview = yield from calls.blocking(
        partial(found.tool.preview, backend, found.args, call_runtime)
    )
    return preview


def _with_backend(eviction: LargeResultEviction, backend: Backend) -> LargeResultEviction:
    """Point an eviction middleware at the tools' backend."""
    eviction.backend = backend
    return eviction


def _turn_of(state: Any, call_id: str | None) -> AIMessage | None:
    """The model message that asked for `call_id`."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message
    return None


def _routes(backend: Backend, directory: str) -> bool:
    """Whether `backend` is a composite with a mount of its own for `directory`."""
    return isinstance(backend, CompositeBackend) and paths.normalize(directory) in backend.routes


__all__ = [
    "DEFAULT_NAME",
    "SYSTEM_PROMPT",
    "SYSTEM_PROMPT_TEMPLATE",
    "FilesystemApprovalState",
    "FilesystemHistoryApprovalState",
    "FilesystemMiddleware",
]
