"""The review of a model turn: one interrupt for its asks, and admission of each call.

A front-end (the middleware's after-model hook) hands `TurnReview.reviewing` the turn's
last model message; every call the gate asks about gets its dry run, and all of them go
to a person in ONE `interrupt()` (shapes in `approval`). The answers become the turn's
approvals (kept in the `file_approvals` state channel), edited calls and rejections.

When a call then runs, `TurnReview.admitting` lets it through only with what the gate
allows or a person approved for exactly these arguments, and grants the approval to the
call's guard for as long as it runs (`PermissionGate.grant`, `revoke`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import interrupt

from langchain_fstools.core import calls
from langchain_fstools.permissions.approval import (
    APPROVALS_KEY,
    Approval,
    approval_request,
    decisions,
    refusal,
    rejection,
)
from langchain_fstools.permissions.rules import Verdict
from langchain_fstools.tools.runtime import StateRuntime, running_config

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_core.messages import ToolCall

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.permissions.gate import Assessment, PermissionGate

MAX_SHOWN = 1024
"""Most pending approvals remembered in process (oldest forgotten first)."""

Ask = tuple["ToolCall", "Assessment", Any]
"""A call that asks, its assessment and its dry run (a `Preview`, or None)."""


class TurnReview:
    """Puts a turn's asks to a person and admits each call on its verdict or approval.

    Args:
        gate: The permission gate deciding each call.
        skipped: Whether a call of the turn is refused before any review (a second
            change to one file in a turn, say): it is neither asked about nor admitted.
    """

    def __init__(self, gate: PermissionGate, skipped: Callable[[ToolCall, Any], bool]) -> None:
        """Keep the gate; nothing shown yet."""
        self.gate = gate
        self.skipped = skipped
        self._shown: dict[tuple[str, str], Approval] = {}
        """Approvals as shown in a pending interrupt, by (thread id, tool call id)."""

    # ----- after the model: one interrupt for the turn's asks -----------------------------

    def of_turn(
        self, state: Any, runtime: Any, storage: Backend
    ) -> tuple[Effect[dict[str, Any] | None], Backend] | None:
        """The review of the state's last turn and the backend bound from `storage`.

        None when the state's last message asks for no tool call.
        """
        turn = last_turn(state)
        if turn is None:
            return None
        call_runtime = StateRuntime(state, running_config(), getattr(runtime, "store", None))
        backend = storage.bind(call_runtime)
        return self.reviewing(state, turn, backend, call_runtime), backend

    def reviewing(
        self, state: Any, turn: AIMessage, backend: Backend, call_runtime: Any
    ) -> Effect[dict[str, Any] | None]:
        """The turn's asks, each with its dry run, put to a person in one interrupt."""
        asks: list[Ask] = []
        for call in turn.tool_calls:
            if self.skipped(call, state):
                continue
            found = yield from self.gate.assessing(call)
            if found is not None and found.verdict.action == "ask":
                preview = yield from _previewing(found, backend, call_runtime)
                asks.append((call, found, preview))
        return (yield from self._decided(state, turn, asks, backend, call_runtime))

    def _decided(
        self,
        state: Any,
        turn: AIMessage,
        asks: list[Ask],
        backend: Backend,
        call_runtime: Any,
    ) -> Effect[dict[str, Any] | None]:
        """One interrupt for `asks`; the approvals, rejections and edits it returns."""
        if not asks:
            return {APPROVALS_KEY: {}} if state.get(APPROVALS_KEY) else None
        _require_checkpointer(call_runtime.config)
        value = approval_request([(call, found.verdict, preview) for call, found, preview in asks])
        # LangGraph runs this node again on resume: keep the change the person was shown
        # (the first run's dry run), so a file changed meanwhile fails as stale.
        thread = str((call_runtime.config.get("configurable") or {}).get("thread_id", ""))
        shown = self._remember(thread, asks)
        answers = decisions(interrupt(value), len(asks))
        for call, _found, _preview in asks:
            self._shown.pop((thread, call["id"] or ""), None)
        approvals: dict[str, Approval] = {}
        replies: list[ToolMessage] = []
        edited: dict[str, dict[str, Any]] = {}
        for (call, _found, _preview), seen, decision in zip(asks, shown, answers, strict=True):
            call_id = call["id"] or ""
            if decision["type"] == "reject":
                replies.append(rejection(call, decision))
                continue
            if decision["type"] == "approve":
                approvals[call_id] = seen
                continue
            args, outcome = yield from self._edited(call, decision, backend, call_runtime)
            edited[call_id] = args
            if isinstance(outcome, ToolMessage):
                replies.append(outcome)
            elif outcome is not None:
                approvals[call_id] = outcome
        update: dict[str, Any] = {APPROVALS_KEY: approvals}
        if edited:
            turn.tool_calls = [
                {**c, "args": edited[c["id"]]} if c["id"] in edited else c for c in turn.tool_calls
            ]
        if edited or replies:
            update["messages"] = [turn, *replies]
        return update

    def _remember(self, thread: str, asks: list[Ask]) -> list[Approval]:
        """The approvals of `asks` as first shown (kept until the person answers)."""
        shown = [
            self._shown.setdefault(
                (thread, call["id"] or ""), self.gate.approval(found, call["args"], preview)
            )
            for call, found, preview in asks
        ]
        while len(self._shown) > MAX_SHOWN:
            del self._shown[next(iter(self._shown))]
        return shown

    def _edited(
        self, call: ToolCall, decision: Any, backend: Backend, call_runtime: Any
    ) -> Effect[tuple[dict[str, Any], Approval | ToolMessage | None]]:
        """An edited call's new arguments, and its approval (or its refusal)."""
        action = decision.get("edited_action") if decision["type"] == "edit" else None
        if action is None or action.get("name") != call["name"]:
            raise ValueError(f"unsupported decision for {call['name']}: {decision!r}")
        args = dict(action["args"])
        again = yield from self.gate.assessing({**call, "args": args})
        if again is None:
            return args, None
        if again.verdict.action == "deny":
            return args, refusal(call, again.verdict)
        preview = yield from _previewing(again, backend, call_runtime)
        return args, self.gate.approval(again, args, preview)

    # ----- tool calls: admission ----------------------------------------------------------

    def admitting(self, call: ToolCall, state: Any) -> Effect[ToolMessage | None]:
        """The refusal of a call the gate does not let run, or None (its approval granted)."""
        found = yield from self.gate.assessing(call)
        if found is None or found.verdict.action == "allow":
            return None
        if found.verdict.action == "deny":
            return refusal(call, found.verdict)
        approval = ((state if isinstance(state, dict) else {}).get(APPROVALS_KEY) or {}).get(
            call["id"]
        )
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

    def finished(self, call_id: str) -> None:
        """End the approval of call `call_id` (it has run)."""
        self.gate.revoke(call_id)


def last_turn(state: Any) -> AIMessage | None:
    """The state's last message when it is a model turn asking for tool calls."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    last = messages[-1] if messages else None
    return last if isinstance(last, AIMessage) and last.tool_calls else None


def _require_checkpointer(config: Any) -> None:
    """Refuse to ask a person when the graph could not resume after the answer.

    Without a checkpointer, LangGraph's `interrupt()` ends the run with `__interrupt__`
    and nothing to resume from, so the call would silently never run.

    Raises:
        RuntimeError: the running graph has no checkpointer.
    """
    configurable = config.get("configurable") or {} if isinstance(config, dict) else {}
    if configurable and configurable.get(CONFIG_KEY_CHECKPOINTER) is None:
        msg = (
            "A tool call needs a person's approval, but the graph has no checkpointer to"
            " resume from: compile the agent with one (create_agent(...,"
            " checkpointer=InMemorySaver())) and pass a thread_id, or give permission"
            " rules that allow or deny these calls instead of asking."
        )
        raise RuntimeError(msg)


def _previewing(found: Assessment, backend: Backend, call_runtime: Any) -> Effect[Any]:
    """The dry run of an assessed call: its own run, in a thread on the async path."""
    preview = yield from calls.blocking(
        partial(found.tool.preview, backend, found.args, call_runtime)
    )
    return preview


__all__ = ["MAX_SHOWN", "TurnReview", "last_turn"]
