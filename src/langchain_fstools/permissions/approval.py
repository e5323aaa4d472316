"""Approvals: what a person is asked about a turn's calls, and how the answer reads.

One model turn's asks become ONE `interrupt()`, in HumanInTheLoopMiddleware's shape:
`{"action_requests": [...], "review_configs": [...]}`, one action request per call,
in the order of the turn's tool calls. Each action request also carries the tool
call id, a one-line `summary` and, for a change, the unified `diff` of the dry run
(or the `error` the call would return instead). Resume with one decision per action
request, in the same order: `Command(resume={"decisions": [...]})`.

- `{"type": "approve"}` runs the call, and it may apply exactly the previewed change:
  a file changed since the preview makes the call fail as stale (`StaleApproval`).
  What was shown (the request, the versions and post-image digests) is a `Review` kept
  in the thread's state from the moment the turn is made, so a resume in another
  process (a restart, another worker) checks the same pins;
- `{"type": "edit", "edited_action": {"name": ..., "args": {...}}}` runs the edited
  call (rules that deny still apply to its new targets);
- `{"type": "reject", "message": "..."}` returns the message to the model as an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict, cast

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    Decision,
    HITLRequest,
    ReviewConfig,
)
from langchain.agents.middleware.types import AgentState, PrivateStateAttr
from langchain_core.messages import ToolMessage

from langchain_fstools.errors import PermissionDenied
from langchain_fstools.tools.render import render_error

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import ToolCall

    from langchain_fstools.permissions.rules import Verdict
    from langchain_fstools.tools.targets import Preview

APPROVALS_KEY = "file_approvals"
"""The state channel holding this turn's approved calls, by tool call id."""

REVIEWS_KEY = "file_reviews"
"""The state channel holding what a pending interrupt shows, by tool call id."""


class FileActionRequest(ActionRequest):
    """One call of a turn that needs a person's decision (a langchain `ActionRequest`)."""

    tool_call_id: str
    """The id of the tool call to decide."""
    summary: str
    """One line: what the call would do and why it asks."""
    diff: NotRequired[str]
    """For a change: the unified diff of the tool's own dry run (the exact change)."""
    error: NotRequired[str]
    """For a call that would fail: the error it would return (no diff is shown)."""
    digest: NotRequired[str]
    """For a command's changes: the SHA-256 of the set shown; approving commits that set
    or nothing (`shell.session.pending`)."""


class Approval(TypedDict):
    """What a person approved for one call, kept in graph state until it runs."""

    args: dict[str, Any]
    """The call's arguments as approved."""
    paths: list[str]
    """The approved paths, as spelled and as resolved."""
    expect: dict[str, list[str | None]]
    """Resolved path → `[version before, SHA-256 of the approved post-image, or None
    for a removal]`: the exact change the person saw."""


class Review(TypedDict):
    """One call as a person is asked about it: what is shown, and what approving allows.

    Stored in the thread's state when the turn is made (by the model node, before the
    interrupt), so the interrupt shows it and a resume in any process approves exactly
    it: LangGraph runs the interrupting node again on resume, and a dry run made then
    would show the file as it is by then.
    """

    request: dict[str, Any]
    """The action request shown (a `FileActionRequest`)."""
    config: dict[str, Any]
    """Its review config (the decisions allowed)."""
    approval: Approval
    """What approving it allows: the arguments, paths and pinned versions and digests."""


def merge_reviews(
    current: Mapping[str, Any] | None, update: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The reducer of `file_reviews` and `command_reviews`: by call id; None ends one.

    Keyed by tool call id, so writes from forks or parallel branches merge without loss,
    and a full value handed back (`update_state`, time travel) is merged the same way.
    """
    merged = dict(current or {})
    for call_id, review in (update or {}).items():
        if review is None:
            merged.pop(call_id, None)
        else:
            merged[call_id] = review
    return merged


class ApprovalState(AgentState[Any]):
    """The state the approval gate keeps between a turn's interrupt and its tool calls."""

    file_approvals: NotRequired[Annotated[dict[str, Approval], PrivateStateAttr]]
    """This turn's approved calls, by tool call id (replaced every turn)."""
    file_reviews: NotRequired[Annotated[dict[str, Review], PrivateStateAttr, merge_reviews]]
    """The reviews a pending interrupt shows, by tool call id (ended when answered)."""
    command_reviews: NotRequired[Annotated[dict[str, Any], PrivateStateAttr, merge_reviews]]
    """Commands whose changes wait for a person, by tool call id (`command_review`)."""


def approval_request(
    asks: Sequence[tuple[ToolCall, Verdict, Preview | None]],
) -> HITLRequest:
    """The one interrupt value asking a person about a turn's calls, in order."""
    actions: list[ActionRequest] = []
    configs: list[ReviewConfig] = []
    for call, verdict, preview in asks:
        name = call["name"]
        summary = f"{name} wants to {_doing(verdict)}; {verdict.reason} asks for approval."
        action = FileActionRequest(
            name=name,
            args=call["args"],
            description=summary,
            tool_call_id=call["id"] or "",
            summary=summary,
        )
        if preview is not None and preview.error is not None:
            action["error"] = preview.error
            action["description"] = f"{summary}\n\nThe call would fail: {preview.error}"
        elif preview is not None and preview.diff:
            action["diff"] = preview.diff
            action["description"] = f"{summary}\n\n```diff\n{preview.diff.rstrip()}\n```"
        actions.append(cast("ActionRequest", action))
        configs.append(
            ReviewConfig(action_name=name, allowed_decisions=["approve", "edit", "reject"])
        )
    return HITLRequest(action_requests=actions, review_configs=configs)


def review(call: ToolCall, verdict: Verdict, preview: Preview | None, approval: Approval) -> Review:
    """What a person is shown about one call (its `approval_request` part), and its approval."""
    value = approval_request([(call, verdict, preview)])
    return Review(
        request=dict(value["action_requests"][0]),
        config=dict(value["review_configs"][0]),
        approval=approval,
    )


def reviews_request(reviews: Sequence[Review]) -> HITLRequest:
    """The interrupt value showing `reviews`, in order (as `approval_request` made them)."""
    return HITLRequest(
        action_requests=[cast("ActionRequest", r["request"]) for r in reviews],
        review_configs=[cast("ReviewConfig", r["config"]) for r in reviews],
    )


def _doing(verdict: Verdict) -> str:
    if verdict.operation == "execute":
        network = f" with {verdict.network}" if verdict.network else ""
        return f"run `{verdict.target}`{network}"
    return f"{'change' if verdict.operation == 'write' else 'read'} {verdict.target}"


def decisions(answer: Any, count: int) -> list[Decision]:
    """The decisions in a resume value: `{"decisions": [...]}`, one per action request.

    A single request may also be answered by the bare decision.

    Raises:
        ValueError: not one approve, edit or reject decision per request.
    """
    found = answer["decisions"] if isinstance(answer, dict) and "decisions" in answer else [answer]
    if not isinstance(found, list) or len(found) != count:
        raise ValueError(
            f"expected {count} decision(s), one per action request in order; got {answer!r}"
        )
    for decision in found:
        if not isinstance(decision, dict) or decision.get("type") not in {
            "approve",
            "edit",
            "reject",
        }:
            raise ValueError(f"expected an approve, edit or reject decision, got {decision!r}")
    return cast("list[Decision]", found)


def rejection(call: ToolCall, decision: Decision) -> ToolMessage:
    """The error a rejected call returns to the model."""
    reason = decision.get("message")
    content = (
        f"User rejected the tool call for `{call['name']}` with reason: {reason}"
        if reason
        else f"User rejected the tool call for `{call['name']}`. It was not run;"
        " do not retry it unless the user asks."
    )
    return ToolMessage(content=content, tool_call_id=call["id"], name=call["name"], status="error")


def refusal(call: ToolCall, verdict: Verdict) -> ToolMessage:
    """The error a denied call returns to the model."""
    error = PermissionDenied(call["name"], verdict.operation, verdict.target, verdict.reason)
    return ToolMessage(
        content=render_error(error, tool=call["name"]),
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )


__all__ = [
    "APPROVALS_KEY",
    "REVIEWS_KEY",
    "Approval",
    "ApprovalState",
    "FileActionRequest",
    "Review",
    "approval_request",
    "decisions",
    "merge_reviews",
    "refusal",
    "rejection",
    "review",
    "reviews_request",
]
