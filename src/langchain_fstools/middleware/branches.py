"""Subagents on branches: a call that runs a subagent works on a branch of the files.

With `FilesystemMiddleware(branches=True)`, each call of a branching tool (deepagents'
`task`, or the names given) runs with a copy-on-write branch (`backends.branch`) of the
middleware's files. While the call runs, every file tool over the same backend (this
middleware's, or another instance's in the subagent) works on the branch: the subagent
reads the files as they were and its writes stay in the branch, so parallel subagents
never see or overwrite each other's work. A subagent's own branching calls branch the
branch (nesting).

When the call returns, its branch is kept in the thread's state (the `kept_branches`
channel) by the call's own result, so it is checkpointed with that result before any
merge starts; the result says the changes are merged before the next step. Before the
next model call (`settling`), each kept branch is merged into the files it branched
from (three ways, file by file; rules in `backends.branch`), through the tools' own
view: path rules and history apply to the merge once, as one change of the branching
call, which the parent can rewind; the call's result is then replaced by what the merge
did (an error unless it committed). Parallel calls of one turn have all returned by
then (no merge changes the files under a subagent still at work), and merge one at a
time in the order the model gave them, each onto what the earlier merges left.

A subagent still at work keeps its branch beside the thread's checkpoint after each of
its tool steps that changed it (`_Keeper`), before its own checkpoint records the step
as done: a worker killed mid-subagent resumes the call in a new process with the branch
holding every step the subagent's replay takes as done, and none it will do again.
A worker killed at a merge (or between two) leaves the branches in the checkpoint: the
process that resumes the thread runs `settling` again and merges them; the subagents
are not run again. A merge that had committed before the kill is not applied again:
local disk kept its receipt with the commit (`tools.merge_branch.merge_receipt`), so it
is known whatever the files hold now; on another store outside the checkpoint (a
LangGraph store, an object store) it finds the files holding its changes already and
changes nothing twice; files kept in graph state change with the checkpoint that drops
the branch, all at once.

A merge with conflicts commits nothing: the call's result says so, with each
conflicting file's hunks (the base, the files now, the subagent's); the branch is kept
in the thread's state (the `kept_branches` channel) for the `merge` tool
(`tools.merge_branch`), with which the parent merges it again once resolved, or takes
one side of a file whole. A call that raises is not merged; its
branch is dropped. Permission rules judge the merge as they judge a command's changes
(inside the branch, writes do not ask): when they ask, the merge waits with the branch
kept in state, and the middleware asks a person before the next model call
(`permissions.command_review`), as it does for a command's changes.

A subagent stopped by an interrupt of its own keeps its branch on this machine until
its call resumes (`suspended_branches`); the resumed call merges before the next model
call like any other. A nested call (a subagent's own `task`) merges into its enclosing
branch when it returns, once the calls of its turn have all returned.

The tasks of a `Send` fan-out in a hand-built graph branch the same way through
`BranchedCalls.node`, merged when all have returned, in the order of their `Send`s.

Branching or not, the sandbox sessions a subagent's commands started (its own, its
nested subagents') end when its call returns, with their background processes
(`shell.session.session.started_sessions`); one stopped by an interrupt starts afresh
when it resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.messages import ToolMessage
from langgraph.config import get_store
from langgraph.errors import GraphInterrupt

from langchain_fstools.backends.branch import BranchBackend, MergeResult, Proposed
from langchain_fstools.backends.view import BackendView
from langchain_fstools.core import calls
from langchain_fstools.core.changesets import Change, ChangeSet
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import BranchNotMerged, FsToolsError
from langchain_fstools.formats.diff import unified_patch
from langchain_fstools.middleware import checkpointed_branches as checkpointed
from langchain_fstools.middleware.suspended_branches import (
    discard,
    resume,
    suspend,
    suspended_key,
)
from langchain_fstools.middleware.turns import turn_of
from langchain_fstools.permissions.review import resumable
from langchain_fstools.shell.session.session import started_sessions
from langchain_fstools.tools.base import call_key
from langchain_fstools.tools.changes_shown import COMMAND_REVIEWS_KEY
from langchain_fstools.tools.execute import WAITING
from langchain_fstools.tools.merge_branch import (
    BRANCH_KEY,
    KEPT_KEY,
    MERGING,
    NEXT_STEP,
    MergeTool,
    conflicts_report,
    kept_entry,
    merged_kept,
)
from langchain_fstools.tools.runtime import StateRuntime, running_config
from langchain_fstools.tools.updates import (
    merged_channels,
    settled_message,
    state_after,
    with_state_update,
)


@dataclass(frozen=True)
class _Waiting:
    """A merge that waits for a person (`review`: its `command_reviews` entry)."""

    review: dict[str, Any]


@dataclass(frozen=True)
class _NextStep:
    """A call's merge, done before the next model call (`BranchedCalls.settling`).

    The call's result carries its branch into the thread's state, so the branch is
    checkpointed before any merge starts: a worker killed at a merge leaves it there,
    and whichever process resumes the thread merges it. By the next model call, every
    call of the turn has returned and its state update is in.
    """

    paths: tuple[str, ...]


if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence

    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.permissions.gate import PermissionGate
    from langchain_fstools.tools.base import ToolContext

    Result = ToolMessage | Command[Any]
    Outcome = MergeResult | FsToolsError | OSError | str | _Waiting | _NextStep
    """What a merge did: its result, the error that stopped it, why it did not run, or
    that it waits for a person."""

R = TypeVar("R")

logger = logging.getLogger(__name__)

DEFAULT_BRANCHING = ("task",)
"""The tools whose calls get a branch with `branches=True`: deepagents' subagent tool."""

_ACTIVE: ContextVar[Mapping[Hashable, BranchBackend] | None] = ContextVar(
    "fstools_branches", default=None
)
"""The branches of the running call, by the storage they branch."""

_POLL_SECONDS = 0.005
"""How often an async call waiting to merge checks its turn."""

JOIN_WAIT = 10.0
"""Seconds a turn's merges wait for its branching calls to start."""

_KEPT_TURNS = 64
"""Turns kept whose branching calls did not all run."""


_KEEPER: ContextVar[_Keeper | None] = ContextVar("fstools_branch_keeper", default=None)
"""The running `task` call's keeper of its branch (nested calls keep their parent's)."""


@dataclass
class _Keeper:
    """Keeps a running call's branch beside the checkpoint it runs from, step by step.

    `step` writes the branch when it changed since the last write, after each tool step
    of the subagent (`keeping`), before the subagent's checkpoint records that step: a
    resumed call starts from the newest (`checkpointed_branches.kept`). Once written, a
    copy an interrupt kept on this machine (`suspended`) is discarded: the checkpoint's
    supersedes it.
    """

    config: Any
    ident: str
    branch: BranchBackend
    suspended: str | None
    """The key of the copy on this machine the branch was taken from, if it was."""
    saved: dict[str, Any] | None = None

    def _changed(self) -> dict[str, Any] | None:
        snapshot = self.branch.snapshot()
        return None if snapshot == self.saved else snapshot

    def _written(self, snapshot: dict[str, Any]) -> None:
        self.saved = snapshot
        if self.suspended is not None:
            discard(self.suspended)
            self.suspended = None

    def step(self) -> None:
        """Write the branch if it changed since the last write."""
        snapshot = self._changed()
        if snapshot is not None and checkpointed.keep(self.config, self.ident, snapshot):
            self._written(snapshot)

    async def astep(self) -> None:
        """Async `step`."""
        snapshot = self._changed()
        if snapshot is not None and await checkpointed.akeep(self.config, self.ident, snapshot):
            await asyncio.to_thread(self._written, snapshot)

    def dropped(self) -> None:
        """The call raised: its branch is dropped, and the copy it was taken from with it."""
        if self.suspended is not None:
            discard(self.suspended)

    def keeping(self, handler: Callable[[R], Result]) -> Callable[[R], Result]:
        """`handler`, then `step`."""

        def kept(request: R) -> Result:
            result = handler(request)
            self.step()
            return result

        return kept

    def akeeping(
        self, handler: Callable[[R], Awaitable[Result]]
    ) -> Callable[[R], Awaitable[Result]]:
        """Async `keeping`."""

        async def kept(request: R) -> Result:
            result = await handler(request)
            await self.astep()
            return result

        return kept


class BranchSwitch(BackendView):
    """The tools' backend: the branch of the running call, if it branches this storage.

    Args:
        inner: The tools' view of the files.
        key: The storage key of the backend the user gave (`Backend.storage_key`), so
            every middleware over one backend sees one branch.
    """

    def __init__(self, inner: Backend, key: Hashable) -> None:
        """Switch between `inner` and the active branch of `key`."""
        super().__init__(inner)
        self.key = key

    def bind(self, runtime: Any) -> Backend:
        """The active branch of this storage bound for one call, else the inner view."""
        branch = _active().get(self.key)
        return (self.inner if branch is None else branch).bind(runtime)


class _Prebound(BackendView):
    """A backend bound once, handed out as it is by `bind` (a turn's shared state view)."""

    def bind(self, runtime: Any) -> Backend:  # noqa: ARG002  # bound already
        return self.inner


@dataclass
class _Turn:
    """The branching calls of one model turn: merged in their order, onto one view.

    Attributes:
        order: The ids of the turn's branching calls, in the order the model gave them
            (the order LangGraph applies their state updates in); empty for the tasks
            of a `Send` fan-out, whose number is not known.
        position: Each call's place in that order (a `Send` task's index).
        joined: The calls that started (a call another middleware refused never does).
        ran: The calls whose subagent has returned (or raised).
        done: The calls merged, or ended without a merge.
        shared: The view of the files the turn's merges go into, bound once.
    """

    order: tuple[str, ...]
    position: dict[str, int] = field(default_factory=dict)
    joined: set[str] = field(default_factory=set)
    ran: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    shared: Backend | None = None
    started: float = field(default_factory=time.monotonic)
    ready: threading.Condition = field(default_factory=threading.Condition)

    def note(self, calls: set[str], call_id: str) -> None:
        """Add `call_id` to `calls` (`ran` or `done`) and wake the calls waiting."""
        with self.ready:
            calls.add(call_id)
            self.ready.notify_all()

    def may_merge(self, call_id: str) -> bool:
        """Whether every call of the turn has run, and the earlier ones ended.

        No merge changes the files while a subagent of the turn still works on them. A
        call not started `JOIN_WAIT` seconds into the turn is not waited for: another
        middleware answered it.
        """
        late = time.monotonic() > self.started + JOIN_WAIT
        waited = self.joined if late else self.joined.union(self.order)
        mine = self.position.get(call_id, 0)
        earlier = [c for c in waited if self.position.get(c, 0) < mine]
        return waited <= self.ran and all(c in self.done for c in earlier)

    def wait_time(self) -> float | None:
        """How long to wait for a change before checking `may_merge` again."""
        left = self.started + JOIN_WAIT - time.monotonic()
        return max(left, 0.01) if left > 0 else None

    @property
    def over(self) -> bool:
        """Whether every branching call of the turn has ended (never known for `Send`)."""
        return bool(self.order) and self.done.issuperset(self.order)


class BranchedCalls:
    """Runs branching calls on branches and merges them back.

    Args:
        names: The tools whose calls branch.
        key: The storage key of the user's backend.
        storage: The backend the tools' view wraps (unbound).
        view: Builds the tools' view (rules, history) around a backend.
        gate: The permission gate, if any: a merge it asks about is put to a person.
    """

    def __init__(
        self,
        names: tuple[str, ...],
        key: Hashable,
        storage: Backend,
        view: Callable[[Backend], Backend],
        gate: PermissionGate | None = None,
    ) -> None:
        """Keep what a merge needs."""
        self.names = frozenset(names)
        self.subagents = self.names | frozenset(DEFAULT_BRANCHING)
        """The tools whose calls run subagents: their sandbox sessions end with the call."""
        self.key = key
        self.storage = storage
        self.view = view
        self.gate = gate
        self._turns: dict[tuple[Hashable, ...], _Turn] = {}
        self._lock = threading.Lock()
        self.switch = BranchSwitch(view(storage), key)
        """The tools' backend: the running call's branch of the files, if any."""

    @classmethod
    def given(
        cls,
        branches: bool | Sequence[str],  # noqa: FBT001
        key: Hashable,
        storage: Backend,
        view: Callable[[Backend], Backend],
        gate: PermissionGate | None,
    ) -> BranchedCalls:
        """The branching of `FilesystemMiddleware(branches=...)` (none for False).

        Raises:
            ValueError: `branches` is neither a bool nor tool names.
        """
        if branches is False:
            return cls((), key, storage, view, gate)
        names = DEFAULT_BRANCHING if branches is True else branches
        names = (names,) if isinstance(names, str) else tuple(names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"branches must be True, False or tool names, not {branches!r}")
        return cls(names, key, storage, view, gate)

    def tools(self, context: ToolContext) -> list[MergeTool]:
        """The tools branching adds: `merge`, for a branch that came back in conflict."""
        return [MergeTool(context=context)] if self.names else []

    def settling(
        self, state: Any, runtime: Any, context: ToolContext | None = None
    ) -> Effect[dict[str, Any] | None]:
        """Merge the branches of resumed calls, before the next model call (see `_NextStep`).

        Each merges through the tools' view over the files the ones before it left; its
        call's result says what was merged, or why nothing was, and what the toolkit's
        (`context`'s) language servers say the merge introduced and fixed.
        """
        kept = state.get(KEPT_KEY) or {} if isinstance(state, Mapping) else {}
        due = [ident for ident, entry in kept.items() if entry and entry.get(NEXT_STEP)]
        if not due:
            return None
        config = running_config()
        store = getattr(runtime, "store", None)
        update: dict[str, Any] = {}
        seen, replies = dict(state), []
        view = self.view(self.storage)
        for ident in _in_call_order(state, due):
            backend = view.bind(StateRuntime(seen, config, store, ident))
            text, merged, artifact = yield from merged_kept(backend, seen, ident, context)
            text = text[:1].upper() + text[1:]
            update = merged_channels(update, merged)
            seen = state_after(seen, merged)
            replies.append(settled_message(state, ident, text, marker=MERGING, artifact=artifact))
        return {**update, "messages": replies}

    def on_branch(self) -> bool:
        """Whether the running call works on a branch of these files."""
        return on_branch(self.key)

    def branching(self, request: ToolCallRequest) -> bool:
        """Whether the call runs on a branch."""
        return request.tool_call["name"] in self.names

    def wrapping(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]
    ) -> Callable[[ToolCallRequest], Result]:
        """`handler`, run on a branch when the call branches; a subagent's sessions end with it."""
        keeper = _KEEPER.get()
        if self.branching(request):
            handler = functools.partial(self.run, handler=handler)
        elif keeper is not None and keeper.branch is _active().get(self.key):
            handler = keeper.keeping(handler)
        if request.tool_call["name"] not in self.subagents:
            return handler

        def ending(request: ToolCallRequest) -> Result:
            with started_sessions() as sessions:
                try:
                    return handler(request)
                finally:
                    sessions.end()

        return ending

    def awrapping(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Callable[[ToolCallRequest], Awaitable[Result]]:
        """Async `wrapping` (the sessions are ended off the event loop)."""
        keeper = _KEEPER.get()
        if self.branching(request):
            handler = functools.partial(self.arun, handler=handler)
        elif keeper is not None and keeper.branch is _active().get(self.key):
            handler = keeper.akeeping(handler)
        if request.tool_call["name"] not in self.subagents:
            return handler

        async def ending(request: ToolCallRequest) -> Result:
            with started_sessions() as sessions:
                try:
                    return await handler(request)
                finally:
                    await asyncio.to_thread(sessions.end)

        return ending

    # ----- running a call -----------------------------------------------------------------

    def run(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]) -> Result:
        """Run the call on a branch; merge the branch into the files it came from."""
        call_id = request.tool_call["id"] or ""
        joined = self._join(request, call_id)
        ran = self._running(joined, call_id, request.runtime, lambda: handler(request), later=True)
        return _reported(*ran, request)

    async def arun(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        """Async `run`."""
        call_id = request.tool_call["id"] or ""
        joined = self._join(request, call_id)
        ran = await self._arunning(
            joined, call_id, request.runtime, lambda: handler(request), later=True
        )
        return _reported(*ran, request)

    def _running(
        self,
        joined: tuple[tuple[Hashable, ...], _Turn],
        ident: str,
        runtime: Any,
        work: Callable[[], R],
        *,
        later: bool = False,
    ) -> tuple[R, Outcome, dict[str, Any]]:
        """Do `work` on a new branch; merge it in its turn. Its result, the merge's, the update.

        With `later` (a tool call, whose result can carry its branch into the thread's
        state), a branch with changes is merged before the next model call instead.
        """
        turn_key, turn = joined
        try:
            config = _config_of(runtime)
            fresh = later and not self.on_branch()  # a nested branch merges in its call
            found = checkpointed.kept(config, ident) if fresh else None
            branch, resumed, keeper = self._branch(runtime, found, config, ident, fresh=fresh)
            try:
                with _activated(self.key, branch, keeper), _suspending(branch, runtime, keeper):
                    result = work()
            finally:
                turn.note(turn.ran, ident)
            deferred = _later(branch, later=later)
            if deferred is not None and keeper is not None:
                keeper.step()
            with turn.ready:
                while not (resumed or deferred) and not turn.may_merge(ident):
                    turn.ready.wait(turn.wait_time())
            target = self._target(branch, turn, runtime)
            verdict = calls.run(self._approving(branch), target.base)
            outcome = verdict or deferred or _merged(target.merge)
        finally:
            self._leave(turn_key, turn, ident)
        return result, outcome, {**target.state_update(), **_kept(ident, branch, outcome)}

    async def _arunning(
        self,
        joined: tuple[tuple[Hashable, ...], _Turn],
        ident: str,
        runtime: Any,
        work: Callable[[], Awaitable[R]],
        *,
        later: bool = False,
    ) -> tuple[R, Outcome, dict[str, Any]]:
        """Async `_running` (its wait polls: the turn's condition is a thread's)."""
        turn_key, turn = joined
        try:
            config = _config_of(runtime)
            fresh = later and not self.on_branch()  # a nested branch merges in its call
            found = await checkpointed.akept(config, ident) if fresh else None
            branch, resumed, keeper = self._branch(runtime, found, config, ident, fresh=fresh)
            try:
                with _activated(self.key, branch, keeper), _suspending(branch, runtime, keeper):
                    result = await work()
            finally:
                turn.note(turn.ran, ident)
            deferred = _later(branch, later=later)
            if deferred is not None and keeper is not None:
                await keeper.astep()
            while not (resumed or deferred) and not turn.may_merge(ident):  # noqa: ASYNC110
                await asyncio.sleep(_POLL_SECONDS)  # the turn's condition is a thread's
            target = self._target(branch, turn, runtime)
            verdict = await calls.arun(self._approving(branch), target.base)
            outcome = verdict or deferred or await _amerged(target.amerge)
        finally:
            self._leave(turn_key, turn, ident)
        return result, outcome, {**target.state_update(), **_kept(ident, branch, outcome)}

    # ----- graph nodes: the tasks of a `Send` fan-out ------------------------------------

    def node(
        self,
        work: Callable[..., Any],
        *,
        on_conflict: Callable[[str], dict[str, Any]] | None = None,
    ) -> Callable[..., Any]:
        """A graph node that does `work` on a branch of the files, merged when it returns.

        For the tasks of a `Send` fan-out: each task works on a branch of its own (its
        file tools, and those of an agent it runs, over the same backend), and the
        tasks of one step merge once all have returned, in the order of their `Send`s.
        The node returns `work`'s update with the merge's (files kept in graph state:
        the `Send` payload must carry the `files` channel). `work` takes the state, and
        the config if it has a second parameter; it may be a coroutine function.

        Args:
            work: The node's body.
            on_conflict: Turns the report of a branch that did not merge (kept for the
                `merge` tool under the task's id) into a state update. Default: raise
                `BranchNotMerged` with it.
        """
        takes_config = len(inspect.signature(work).parameters) > 1

        def call(state: Any, config: RunnableConfig) -> Any:
            return work(state, config) if takes_config else work(state)

        if inspect.iscoroutinefunction(work):

            async def anode(state: Any, config: RunnableConfig) -> dict[str, Any]:
                joined, ident, runtime = self._task(state, config)
                ran = await self._arunning(joined, ident, runtime, lambda: call(state, config))
                return _node_update(*ran, ident, on_conflict)

            return anode

        def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            joined, ident, runtime = self._task(state, config)
            ran = self._running(joined, ident, runtime, lambda: call(state, config))
            return _node_update(*ran, ident, on_conflict)

        return node

    def _task(
        self, state: Any, config: RunnableConfig
    ) -> tuple[tuple[tuple[Hashable, ...], _Turn], str, StateRuntime]:
        """The fan-out a node's task belongs to (joined), its id, and its runtime."""
        metadata = config.get("metadata") or {}
        namespace = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
        parent, _, own = namespace.rpartition("|")
        ident = own or namespace or "task"
        path: Sequence[Any] = metadata.get("langgraph_path") or ()
        position = path[1] if len(path) > 1 and isinstance(path[1], int) else 0
        thread = (config.get("configurable") or {}).get("thread_id")
        key = (thread, parent, metadata.get("langgraph_step"), metadata.get("langgraph_node"))
        joined = self._joined(key, lambda: _Turn(()), ident, position)
        return joined, ident, StateRuntime(state, config, _store(), ident)

    def _approving(self, branch: BranchBackend) -> Effect[str | _Waiting | None]:
        """Why the merge may not go ahead now: a refusal, a wait for a person, or None.

        Runs over the view the merge goes through (its rules judge the changes).

        The permission rules judge the branch's changes as they judge a command's; when
        they ask, the merge waits: the branch is kept in the thread's state and the
        middleware asks a person before the next model call (`CommandReview`), so
        what is approved is exactly what the state holds, in whichever worker answers.
        """
        proposed = branch.proposed()
        if self.gate is None or not proposed:
            return None
        changes = ChangeSet(tuple(Change(p.path, p.kind, p.entry) for p in proposed), "")
        review = yield from calls.judge_changes(changes)
        if review.refused is not None:
            return f"a permission rule forbids changing {review.refused[1]}"
        if not review.asks:
            return None
        if not resumable(running_config()):
            return (
                "they need a person's approval, and this agent has no checkpointer to ask "
                "with (compile it with one and pass a thread_id)"
            )
        return _Waiting(_merge_review(proposed, review.asks))

    def _branch(
        self,
        runtime: Any,
        saved: Mapping[str, Any] | None,
        config: Any,
        ident: str,
        *,
        fresh: bool,
    ) -> tuple[BranchBackend, bool, _Keeper | None]:
        """The call's branch of what the tools see now (the enclosing call's branch, if any).

        New; or the one it had when an interrupt stopped it (`suspended_branches`), or
        when its worker died while or after its subagent ran (`saved`, written by
        `checkpointed_branches.keep`): then True too (the call resumed). With it, the
        branch's keeper when the call is `fresh` (not nested: its result carries it).
        """
        base = _active().get(self.key) or self.view(self.storage)
        key = _suspended_key(runtime)
        suspended = resume(key)
        kept = suspended or saved
        branch, resumed = BranchBackend(base), False
        if kept is not None:
            with contextlib.suppress(ValueError):  # a damaged write: the call starts afresh
                branch, resumed = BranchBackend.restored(base, kept), True
        if not fresh:
            return branch, resumed, None
        taken = key if suspended is not None else None
        keeper = _Keeper(config, ident, branch, taken, None if taken else branch.snapshot())
        return branch, resumed, keeper

    def _target(self, branch: BranchBackend, turn: _Turn, runtime: Any) -> Any:
        """The branch bound to merge into the turn's shared view of the files."""
        if isinstance(branch.base, BranchBackend):
            return branch.bind(runtime)
        if turn.shared is None:
            turn.shared = self.storage.bind(runtime)
        return branch.over(self.view(_Prebound(turn.shared)).bind(runtime))

    # ----- the turn -----------------------------------------------------------------------

    def _join(self, request: ToolCallRequest, call_id: str) -> tuple[tuple[Hashable, ...], _Turn]:
        """The turn of the call (its branching calls), joined."""
        message = turn_of(request.state, call_id)
        calls = [] if message is None else message.tool_calls
        answered = _answered(request.state)
        order = tuple(
            c["id"] or "" for c in calls if c["name"] in self.names and c["id"] not in answered
        ) or (call_id,)
        key = tuple(c["id"] or "" for c in calls) or (call_id,)
        position = {c: i for i, c in enumerate(order)}
        return self._joined(key, lambda: _Turn(order, position), call_id, position.get(call_id, 0))

    def _joined(
        self, key: tuple[Hashable, ...], turn: Callable[[], _Turn], ident: str, position: int
    ) -> tuple[tuple[Hashable, ...], _Turn]:
        """Join the turn (or fan-out) under `key`, made by `turn` if it is the first."""
        with self._lock:
            found = self._turns.get(key)
            if found is None:
                found = self._turns[key] = turn()
            found.position.setdefault(ident, position)
            found.joined.add(ident)
        return key, found

    def _leave(self, key: tuple[Hashable, ...], turn: _Turn, call_id: str) -> None:
        """End the call's part in its turn; forget the turn once every call ended.

        A turn some call of which never started (another middleware answered it) is
        forgotten when `_KEPT_TURNS` later turns are kept.
        """
        if self.gate is not None:
            self.gate.revoke(call_id)
        turn.note(turn.ran, call_id)
        turn.note(turn.done, call_id)
        with self._lock:
            if turn.over:
                self._turns.pop(key, None)
            while len(self._turns) > _KEPT_TURNS:
                del self._turns[next(iter(self._turns))]


def _kept(call_id: str, branch: BranchBackend, outcome: object) -> dict[str, Any]:
    """The state update keeping a branch not merged.

    In conflict: for the `merge` tool; waiting: for the person the middleware asks
    (`command_reviews`).
    """
    if isinstance(outcome, _Waiting):
        return {
            KEPT_KEY: {call_id: kept_entry(branch)},
            COMMAND_REVIEWS_KEY: {call_id: outcome.review},
        }
    if isinstance(outcome, _NextStep):
        return {KEPT_KEY: {call_id: {**kept_entry(branch), NEXT_STEP: True}}}
    if isinstance(outcome, MergeResult) and not outcome.clean:
        return {KEPT_KEY: {call_id: kept_entry(branch)}}
    return {}


def _later(branch: BranchBackend, *, later: bool) -> _NextStep | None:
    """A call's merge, left for the next step (`later`: the call's result can carry it).

    Not a nested branch's: the branch it merges into is this run's.
    """
    if not later or isinstance(branch.base, BranchBackend) or not branch.changed:
        return None
    return _NextStep(branch.changed)


def _in_call_order(state: Any, idents: list[str]) -> list[str]:
    """`idents` in the order of their calls' results in the thread (the model's order)."""
    messages = state.get("messages") or []
    place = {m.tool_call_id: n for n, m in enumerate(messages) if isinstance(m, ToolMessage)}
    return sorted(idents, key=lambda ident: place.get(ident, len(messages)))


def _config_of(runtime: Any) -> Any:
    """The config of the running call (empty outside a graph)."""
    return getattr(runtime, "config", None) or {}


def _suspended_key(runtime: Any) -> str:
    """The key a call's branch is kept under while an interrupt stops it."""
    config = _config_of(runtime)
    thread = (config.get("configurable") or {}).get("thread_id")
    return suspended_key(thread, *call_key(runtime))


@contextlib.contextmanager
def _suspending(branch: BranchBackend, runtime: Any, keeper: _Keeper | None) -> Iterator[None]:
    """Keep `branch` on this machine if an interrupt stops the work inside.

    If the work raises otherwise, the branch is dropped, with the copy it came from.
    """
    try:
        yield
    except GraphInterrupt:
        try:
            suspend(_suspended_key(runtime), branch.snapshot())
        except OSError as exc:  # the work is lost with this call: say so where it can be seen
            logger.warning("a subagent's branch could not be kept across its interrupt: %s", exc)
        raise
    except Exception:
        if keeper is not None:
            keeper.dropped()
        raise


def _answered(state: Any) -> set[str]:
    """The calls of `state` answered already (before tools ran: by another middleware)."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def on_branch(key: Hashable) -> bool:
    """Whether the running call works on a branch of the storage `key`."""
    return key in _active()


def _active() -> Mapping[Hashable, BranchBackend]:
    """The running call's branches, by the storage they branch."""
    return _ACTIVE.get() or {}


@contextlib.contextmanager
def _activated(key: Hashable, branch: BranchBackend, keeper: _Keeper | None) -> Iterator[None]:
    """Make `branch` the active branch of `key` (and `keeper` its keeper, if given) inside."""
    token = _ACTIVE.set({**_active(), key: branch})
    kept = _KEEPER.set(keeper) if keeper is not None else None
    try:
        yield
    finally:
        if kept is not None:
            _KEEPER.reset(kept)
        _ACTIVE.reset(token)


def _merged(merge: Callable[[], MergeResult]) -> MergeResult | FsToolsError | OSError:
    try:
        return merge()
    except (FsToolsError, OSError) as exc:
        return exc


async def _amerged(
    merge: Callable[[], Awaitable[MergeResult]],
) -> MergeResult | FsToolsError | OSError:
    try:
        return await merge()
    except (FsToolsError, OSError) as exc:
        return exc


# ----- the result -------------------------------------------------------------------------


def _reported(
    result: Result,
    outcome: Outcome,
    update: dict[str, Any],
    request: ToolCallRequest,
) -> Result:
    """`result` with what the merge did said after the subagent's answer."""
    ident = request.tool_call["id"] or ""
    message = _message_of(result, ident)
    if message is None:
        return with_state_update(result, update) if update else result
    if isinstance(outcome, MergeResult) and outcome.clean:
        if not outcome.merged:
            return with_state_update(result, update) if update else result
        note = f"The subagent's changes were merged: {', '.join(outcome.merged)}."
        status = message.status
    elif isinstance(outcome, _Waiting):
        note = f"The subagent changed: {', '.join(outcome.review['merge'])}.{WAITING}"
        status = message.status
    elif isinstance(outcome, _NextStep):
        note = f"The subagent changed: {', '.join(outcome.paths)}.{MERGING}"
        status = message.status
    else:
        note = _refusal(outcome, ident)
        status = "error"
    text = f"{message.text}\n\n{note}" if message.text else note
    changes: dict[str, Any] = {"content": text, "status": status}
    if isinstance(outcome, MergeResult) and not outcome.clean:
        changes["artifact"] = {BRANCH_KEY: ident, "conflicts": [c.path for c in outcome.conflicts]}
    amended = message.model_copy(update=changes)
    return with_state_update(result, update, message=amended)


def _node_update(
    result: Any,
    outcome: Outcome,
    update: dict[str, Any],
    ident: str,
    on_conflict: Callable[[str], dict[str, Any]] | None,
) -> dict[str, Any]:
    """A node's update: its work's, with the merge's; a branch not merged reported."""
    if isinstance(outcome, _Waiting):  # no middleware hook of a hand-built graph asks
        update = {key: value for key, value in update.items() if key != COMMAND_REVIEWS_KEY}
        outcome = "they need a person's approval, which a task of a graph node cannot ask for"
    merged = merged_channels(result if isinstance(result, Mapping) else {}, update)
    if isinstance(outcome, MergeResult) and outcome.clean:
        return merged
    if on_conflict is None:
        raise BranchNotMerged(ident, _refusal(outcome, ident, kept=False))
    return {**merged, **on_conflict(_refusal(outcome, ident))}


def _store() -> Any:
    """The running graph's store, if it has one."""
    try:
        return get_store()
    except RuntimeError:
        return None


def _message_of(result: Result, call_id: str | None) -> ToolMessage | None:
    """The call's own message in `result`."""
    if isinstance(result, ToolMessage):
        return result
    messages = result.update.get("messages", []) if isinstance(result.update, dict) else []
    found = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    return found[-1] if found else None


def _refusal(outcome: Outcome, ident: str, *, kept: bool = True) -> str:
    """What the parent reads when the branch was not merged (`kept`: and was kept)."""
    if isinstance(outcome, MergeResult):
        return conflicts_report(outcome, ident, kept=kept)
    return (
        f"The subagent's changes were not merged ({outcome}); nothing of them was applied."
        " Make the changes yourself."
    )


def _merge_review(proposed: Sequence[Proposed], asks: Sequence[str]) -> dict[str, Any]:
    """The `command_reviews` entry of a merge waiting for a person: what to show."""
    patches = [
        unified_patch(
            p.path, (p.before or b"").decode(errors="replace"), p.after.decode(errors="replace")
        )
        for p in proposed
        if p.after is not None and p.entry == "file"
    ]
    return {
        "merge": [p.path for p in proposed],
        "summary": (
            f"Merge a subagent's changes ({plural(len(proposed), 'path')};"
            f" asks: {', '.join(asks)}); approve to apply them."
        ),
        "changes": "\n".join(f"{p.kind} {p.path}" for p in proposed),
        "diff": "".join(patch for patch in patches if patch),
        "asks": list(asks),
    }


def _text(data: bytes | None) -> str:
    return (data or b"").decode(errors="replace")


__all__ = ["DEFAULT_BRANCHING", "BranchSwitch", "BranchedCalls", "on_branch"]
