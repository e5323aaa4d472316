"""The review of a model turn: one interrupt for its asks, and admission of each call.

When the model answers with tool calls, `TurnReview.pinning` makes the dry run of every
call the gate asks about and keeps it, as a `Review`, in the `file_reviews` state channel
with the model's answer. The after-model hook (`TurnReview.reviewing`) shows the kept
reviews to a person in ONE `interrupt()` (shapes in `approval`) and approves exactly them:
LangGraph runs the interrupting node again on resume, perhaps in another process, where a
dry run would show the files as they are by then. The answers become the turn's approvals
(the `file_approvals` channel), edited calls and rejections; the reviews end.

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
    REVIEWS_KEY,
    Approval,
    Review,
    decisions,
    refusal,
    rejection,
    review,
    reviews_request,
)
from langchain_fstools.permissions.rules import Verdict
from langchain_fstools.tools.runtime import StateRuntime, running_config

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from langchain_core.messages import ToolCall

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.permissions.gate import Assessment, PermissionGate

Ask = tuple["ToolCall", Review]
"""A call that asks a person, and its review."""


class TurnReview:
    """Puts a turn's asks to a person and admits each call on its verdict or approval.

    Args:
        gate: The permission gate deciding each call.
        skipped: Whether a call of the turn is refused before any review (a second
            change to one file in a turn, say): it is neither asked about nor admitted.
        on_branch: Whether the running call works on a branch, whose merge a person is
            asked about instead: nothing of its turns is asked, and its writes run.
    """

    def __init__(
        self,
        gate: PermissionGate,
        skipped: Callable[[ToolCall, Any], bool],
        on_branch: Callable[[], bool] = lambda: False,
    ) -> None:
        """Keep the gate."""
        self.gate = gate
        self.skipped = skipped
        self.on_branch = on_branch

    # ----- the model's answer: the reviews of its asks, kept in state -----------------------

    def pinning(
        self, state: Any, answer: Sequence[Any], runtime: Any, storage: Backend
    ) -> tuple[Effect[dict[str, Review] | None], Backend] | None:
        """The reviews of the asks of the model's `answer`, and the backend to run on.

        `state` is the state the model answered in. None when the answer asks for no
        tool call; the effect returns None when no call asks a person.
        """
        turn = next((m for m in reversed(answer) if isinstance(m, AIMessage)), None)
        if turn is None or not turn.tool_calls or self.on_branch():
            return None
        state = {**(state if isinstance(state, dict) else {})}
        state["messages"] = [*list(state.get("messages") or []), turn]
        call_runtime = StateRuntime(state, running_config(), getattr(runtime, "store", None))
        backend = storage.bind(call_runtime)
        return self._pinned(state, turn, backend, call_runtime), backend

    def _pinned(
        self, state: Any, turn: AIMessage, backend: Backend, call_runtime: Any
    ) -> Effect[dict[str, Review] | None]:
        asks = yield from self._asks(state, turn, backend, call_runtime, {})
        return {call["id"] or "": pinned for call, pinned in asks} or None

    def _asks(
        self,
        state: Any,
        turn: AIMessage,
        backend: Backend,
        call_runtime: Any,
        stored: Mapping[str, Review],
    ) -> Effect[list[Ask]]:
        """The turn's calls that ask a person, each with its review.

        A review kept in state for the same call and arguments is used as it is (what
        was shown stays what is approved); any other is made now from a dry run.
        """
        asks: list[Ask] = []
        for call in turn.tool_calls:
            if self.skipped(call, state):
                continue
            found = yield from self.gate.assessing(call)
            if found is None or found.verdict.action != "ask":
                continue
            pinned = stored.get(call["id"] or "")
            if pinned is None or pinned["approval"]["args"] != call["args"]:
                preview = yield from _previewing(found, backend, call_runtime)
                approval = self.gate.approval(found, call["args"], preview)
                pinned = review(call, found.verdict, preview, approval)
            asks.append((call, pinned))
        return asks

    # ----- after the model: one interrupt for the turn's asks -----------------------------

    def of_turn(
        self, state: Any, runtime: Any, storage: Backend
    ) -> tuple[Effect[dict[str, Any] | None], Backend] | None:
        """The review of the state's last turn and the backend bound from `storage`.

        None when the state's last message asks for no tool call.
        """
        turn = last_turn(state)
        if turn is None or self.on_branch():
            return None
        call_runtime = StateRuntime(state, running_config(), getattr(runtime, "store", None))
        backend = storage.bind(call_runtime)
        return self.reviewing(state, turn, backend, call_runtime), backend

    def reviewing(
        self, state: Any, turn: AIMessage, backend: Backend, call_runtime: Any
    ) -> Effect[dict[str, Any] | None]:
        """The turn's asks, each with its kept review, put to a person in one interrupt."""
        stored = state.get(REVIEWS_KEY) or {}
        asks = yield from self._asks(state, turn, backend, call_runtime, stored)
        return (yield from self._decided(state, turn, asks, backend, call_runtime))

    def _decided(
        self,
        state: Any,
        turn: AIMessage,
        asks: list[Ask],
        backend: Backend,
        call_runtime: Any,
    ) -> Effect[dict[str, Any] | None]:
        """One interrupt for `asks`; the approvals, rejections and edits it returns.

        Answered, the turn's reviews end (`file_reviews` keeps only pending ones).
        """
        ended = dict.fromkeys(state.get(REVIEWS_KEY) or {})
        if not asks:
            cleared: dict[str, Any] = {APPROVALS_KEY: {}} if state.get(APPROVALS_KEY) else {}
            if ended:
                cleared[REVIEWS_KEY] = ended
            return cleared or None
        _require_checkpointer(call_runtime.config)
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
        again = yield from self.gate.assessing({**call, "args": args})
        if again is None:
            return args, None
        if again.verdict.action == "deny":
            return args, refusal(call, again.verdict)
        preview = yield from _previewing(again, backend, call_runtime)
        return args, self.gate.approval(again, args, preview)

    # ----- tool calls: admission ----------------------------------------------------------

    def admitting(self, call: ToolCall, state: Any) -> Effect[ToolMessage | None]:
        """The refusal of a call the gate does not let run, or None (its approval granted).

        On a branch, a write the rules would ask about runs (its merge is asked about).
        """
        found = yield from self.gate.assessing(call)
        if found is None:
            return None
        if found.verdict.action == "allow":
            self.gate.grant_allowed(call["id"] or "", found)
            return None
        if found.verdict.action == "deny":
            return refusal(call, found.verdict)
        if found.verdict.operation == "write" and self.on_branch():
            return None
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


def resumable(config: Any) -> bool:
    """Whether a graph running with `config` can resume after an `interrupt()`.

    False when it runs without a checkpointer; True outside a graph (nothing to say).
    """
    configurable = config.get("configurable") or {} if isinstance(config, dict) else {}
    return not configurable or configurable.get(CONFIG_KEY_CHECKPOINTER) is not None


def _require_checkpointer(config: Any) -> None:
    """Refuse to ask a person when the graph could not resume after the answer.

    Without a checkpointer, LangGraph's `interrupt()` ends the run with `__interrupt__`
    and nothing to resume from, so the call would silently never run.

    Raises:
        RuntimeError: the running graph has no checkpointer.
    """
    if not resumable(config):
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


__all__ = ["TurnReview", "last_turn", "resumable"]
