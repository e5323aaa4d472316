"""Approval by effect: a person decides on what a command changed, after it ran.

A contained command (copy-on-write, no network) has no lasting effect until its change
set is committed, so it runs without asking first; when its changes need a person
(the mode asks for writes, or a path no command may change by itself), `execute` keeps
the set on this machine (`shell.session.pending`) and puts what to show in the thread's
`command_reviews` channel. Before the next model call, `CommandReview` asks a person in
ONE `interrupt()` (HumanInTheLoopMiddleware's shape: an action request per command,
with the summary of its changes and the diff of their effect) and applies the answers:

- `{"type": "approve"}` commits exactly the kept set, through the tools' own view (the
  permission rules again, the history records), or says it is stale when the set is
  gone or a path changed since, and refuses it when it is no longer the set shown (its
  digest, carried in the entry, differs);
- `{"type": "reject", "message": "..."}` drops it; the command's message is then an
  error carrying the reviewer's message (LangChain's human-in-the-loop convention).

The command's tool message is then replaced (same id) by one saying what was kept. The
node that asks runs again on resume, in any process: nothing is done before the
answer, and what was shown is what the state holds.

A subagent's branch whose merge the rules ask about waits the same way (its entry
names the paths it `merge`s, and the branch itself is kept in the thread's state,
`kept_branches`): approved, it is merged through the tools' view as it was when shown
(a conflict with what changed since is reported, the branch kept for `merge`);
rejected, it is dropped.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

from langchain.agents.middleware.human_in_the_loop import ActionRequest, HITLRequest, ReviewConfig
from langgraph.types import interrupt

from langchain_fstools.core import calls
from langchain_fstools.errors import VersionConflict
from langchain_fstools.permissions.approval import Approval, FileActionRequest, decisions
from langchain_fstools.permissions.review import _require_checkpointer
from langchain_fstools.shell.session.pending import drop, take
from langchain_fstools.tools.changes_shown import COMMAND_REVIEWS_KEY, left_out_note, rewind_note
from langchain_fstools.tools.diagnosing import checked_change, render_diagnostics
from langchain_fstools.tools.execute import WAITING
from langchain_fstools.tools.merge_branch import KEPT_KEY, merged_kept
from langchain_fstools.tools.runtime import StateRuntime, running_config
from langchain_fstools.tools.updates import merged_channels, settled_message, state_after

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain.agents.middleware.human_in_the_loop import Decision
    from langchain_core.messages import ToolMessage

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.permissions.gate import PermissionGate
    from langchain_fstools.tools.base import ToolContext


class CommandReview:
    """Asks a person about the commands whose changes wait, and commits what they approve.

    Args:
        gate: The permission gate (its grants let an approved set through the guard).
        context: The toolkit's context: its backend (guarded, recording, unbound) is the
            view commits go through, its language servers check what they change, as
            they check a command committed at once.
    """

    def __init__(self, gate: PermissionGate, context: ToolContext) -> None:
        """Keep the gate and the toolkit's context."""
        self.gate = gate
        self.context = context
        self.tools_view = context.backend

    def pending(self, state: Any) -> dict[str, Any]:
        """The waiting commands' reviews, by tool call id."""
        found = state.get(COMMAND_REVIEWS_KEY) if isinstance(state, dict) else None
        return dict(found or {})

    def deciding(self, state: Any, runtime: Any) -> Effect[dict[str, Any] | None]:
        """One interrupt for every waiting command; the state update of the answers."""
        waiting = self.pending(state)
        if not waiting:
            return None
        config = running_config()
        _require_checkpointer(config)
        answers = decisions(interrupt(_request(waiting)), len(waiting))
        update: dict[str, Any] = {COMMAND_REVIEWS_KEY: dict.fromkeys(waiting)}
        replies: list[ToolMessage] = []
        seen = state  # each commit over the files the ones before it left
        for (call_id, review), answer in zip(waiting.items(), answers, strict=True):
            apply = self._merged if "merge" in review else self._committed
            text, extra = yield from apply(
                seen, runtime, config, call_id=call_id, review=review, answer=answer
            )
            update = merged_channels(update, extra)
            seen = state_after(seen, extra)
            rejected = answer["type"] != "approve"
            replies.append(settled_message(state, call_id, text, marker=WAITING, rejected=rejected))
        update["messages"] = replies
        return update

    def _committed(
        self,
        state: Any,
        runtime: Any,
        config: Any,
        *,
        call_id: str,
        review: Mapping[str, Any],
        answer: Decision,
    ) -> Effect[tuple[str, dict[str, Any]]]:
        """The text that replaces the command's result, and the state update of its commit."""
        key = review["key"]
        if answer["type"] != "approve":
            yield from calls.blocking(functools.partial(drop, key))
            return _rejected(answer, "kept"), {}
        changes = yield from calls.blocking(functools.partial(take, key, review.get("digest", "")))
        if isinstance(changes, str):
            return _NOT_TAKEN[changes], {}
        call_runtime = StateRuntime(state, config, getattr(runtime, "store", None), call_id)
        approval = Approval(args={"command": review["command"]}, paths=review["asks"], expect={})
        self.gate.grant(call_id, approval)
        backend = self.tools_view.bind(call_runtime)
        commit = calls.blocking(functools.partial(backend.commit, changes))
        changed = [change.path for change in changes.changes if change.entry == "file"]
        try:
            _, report = yield from checked_change(self.context, backend, changed, commit)
        except VersionConflict as conflict:
            stale = (
                f"Error: {conflict.path} changed since the command ran; nothing was kept."
                " Run the command again."
            )
            return stale, {}
        finally:
            self.gate.revoke(call_id)
            yield from calls.blocking(changes.discard)
        update = backend.state_update()
        kept = "A person approved these changes; they are kept." + left_out_note(changes)
        kept += rewind_note(update)
        if report:
            kept += "\n\n" + render_diagnostics(report, self.context.settings.count_tokens)
        return kept, update

    def _merged(
        self,
        state: Any,
        runtime: Any,
        config: Any,
        *,
        call_id: str,
        review: Mapping[str, Any],
        answer: Decision,
    ) -> Effect[tuple[str, dict[str, Any]]]:
        """`_committed` for a subagent's branch: merged from the thread's state, or dropped."""
        if answer["type"] != "approve":
            return _rejected(answer, "merged"), {KEPT_KEY: {call_id: None}}
        call_runtime = StateRuntime(state, config, getattr(runtime, "store", None), call_id)
        self.gate.grant(call_id, Approval(args={}, paths=review["asks"], expect={}))
        try:
            backend = self.tools_view.bind(call_runtime)
            text, update, _ = yield from merged_kept(backend, state, call_id, self.context)
        finally:
            self.gate.revoke(call_id)
        if text.startswith("Error"):
            return text, update
        return f"A person approved these changes; {text}", update


_NOT_TAKEN = {
    "gone": "Error: the approved changes were no longer kept (too old, or on another machine);"
    " nothing was kept. Run the command again.",
    "altered": "Error: the kept changes were no longer the ones the person was shown; nothing"
    " was kept. Run the command again.",
}
"""What an approval answers when the set shown cannot be taken (`pending.take`)."""


def _rejected(answer: Decision, done: str) -> str:
    """What a rejection says: its reason, and that nothing was `done` ("kept", "merged")."""
    reason = answer.get("message")
    said = f" with reason: {reason}" if reason else ""
    return f"A person rejected these changes{said}; nothing was {done}."


def _request(waiting: Mapping[str, Any]) -> HITLRequest:
    actions: list[ActionRequest] = []
    configs: list[ReviewConfig] = []
    for call_id, review in waiting.items():
        description = f"{review['summary']}\n\n{review['changes']}"
        if review["diff"]:
            description += f"\n\n```diff\n{review['diff'].rstrip()}\n```"
        name, args = (
            ("merge", {"paths": review["merge"]})
            if "merge" in review
            else ("execute", {"command": review["command"]})
        )
        action = FileActionRequest(
            name=name,
            args=args,
            description=description,
            tool_call_id=call_id,
            summary=review["summary"],
            diff=review["diff"],
        )
        if "digest" in review:
            action["digest"] = review["digest"]
        actions.append(cast("ActionRequest", action))
        configs.append(ReviewConfig(action_name=name, allowed_decisions=["approve", "reject"]))
    return HITLRequest(action_requests=actions, review_configs=configs)


__all__ = ["CommandReview"]
