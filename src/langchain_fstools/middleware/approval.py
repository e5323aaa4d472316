"""The permission gate of `FilesystemMiddleware`: allow, deny, or ask a person.

Glue only: `permissions.Policy` decides, `backends.views.GuardedBackend` enforces
(denied paths are invisible to every tool, a write needs an allow or an approval),
and this module turns an `ask` into a LangGraph `interrupt()` and applies the answer.

The interrupt's value is a `FileApprovalRequest`: langchain's `HITLRequest` (one
`ActionRequest`, one `ReviewConfig`) plus the tool call id, a one-line summary and,
for edits, writes and patches, the unified diff. Resume with langchain's
`HITLResponse` shape, `{"decisions": [decision]}`, or with the bare decision:

- `{"type": "approve"}` runs the call;
- `{"type": "edit", "edited_action": {"name": ..., "args": {...}}}` runs the edited
  call (rules that deny still apply to its new targets);
- `{"type": "reject", "message": "..."}` returns the message to the model as an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, cast

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    Decision,
    HITLRequest,
    ReviewConfig,
)
from langchain_core.messages import ToolMessage
from langgraph.types import interrupt

from langchain_fstools.core import calls, paths
from langchain_fstools.errors import FsToolsError, PermissionDenied
from langchain_fstools.middleware.policy import Policy, Target, Verdict, tool_targets
from langchain_fstools.tools._preview import preview_diff
from langchain_fstools.tools._render import render_error

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langgraph.prebuilt.tool_node import ToolCallRequest

    from langchain_fstools.backends.protocol import Backend


logger = logging.getLogger(__name__)


class FileApprovalRequest(HITLRequest):
    """The interrupt value of a file tool call that needs a person's decision."""

    tool_call_id: str
    """The id of the tool call to decide."""
    summary: str
    """One line: what the call would do and why it asks."""
    diff: NotRequired[str]
    """For edits, writes and patches: the unified diff the call would apply."""


@dataclass(frozen=True)
class CallGuard:
    """What one tool call may do with each path: the policy, plus approved paths."""

    policy: Policy
    approved: frozenset[str] = frozenset()

    def visible(self, path: str) -> bool:
        """Whether the path is not denied to reads."""
        return self.policy.decide_path("read", path).action != "deny"

    def readable(self, path: str) -> bool:
        """Whether reads are allowed, or a person approved this path for this call."""
        return path in self.approved or self.policy.decide_path("read", path).action == "allow"

    def writable(self, path: str) -> bool:
        """Whether writes are allowed, or a person approved this path for this call."""
        if path in self.approved:
            return self.policy.decide_path("write", path).action != "deny"
        return self.policy.decide_path("write", path).action == "allow"


@dataclass(frozen=True)
class Review:
    """What to do with a call: run `request` (with `approved` paths), or answer `message`."""

    request: ToolCallRequest | None = None
    approved: frozenset[str] = frozenset()
    message: ToolMessage | None = None


class PermissionGate:
    """Decides each file tool call; asks a person through `interrupt()` when needed.

    Args:
        policy: The rules and mode.
        storage: The unguarded backend, read for diffs shown to the person.
    """

    def __init__(self, policy: Policy, storage: Backend) -> None:
        """Keep the policy; no approvals yet."""
        self.policy = policy
        self.storage = storage
        self._approvals: dict[str, frozenset[str]] = {}

    def guard_for(self, runtime: Any) -> CallGuard:
        """The guard of the call `runtime` belongs to (with its approved paths)."""
        call_id = getattr(runtime, "tool_call_id", None)
        return CallGuard(
            self.policy, self._approvals.get(call_id, frozenset()) if call_id else frozenset()
        )

    def grant(self, call_id: str, approved: frozenset[str]) -> None:
        """Let call `call_id` touch `approved` paths while it runs."""
        self._approvals[call_id] = approved

    def revoke(self, call_id: str) -> None:
        """End the approvals of call `call_id`."""
        self._approvals.pop(call_id, None)

    def review(self, request: ToolCallRequest) -> Review:
        """Decide a call; an `ask` pauses the graph until a person answers."""
        verdict, targets = self._decide(request.tool_call["name"], request.tool_call["args"])
        if verdict is None or verdict.action == "allow":
            return Review(request)
        if verdict.action == "deny":
            return Review(message=_refusal(request, verdict))
        diff = calls.run(self._diff(request), self.storage.bind(request.runtime))
        return self._answer(request, verdict, targets, diff)

    async def areview(self, request: ToolCallRequest) -> Review:
        """Async `review`."""
        verdict, targets = self._decide(request.tool_call["name"], request.tool_call["args"])
        if verdict is None or verdict.action == "allow":
            return Review(request)
        if verdict.action == "deny":
            return Review(message=_refusal(request, verdict))
        diff = await calls.arun(self._diff(request), self.storage.bind(request.runtime))
        return self._answer(request, verdict, targets, diff)

    def _decide(self, name: str, args: dict[str, Any]) -> tuple[Verdict | None, list[Target]]:
        targets = tool_targets(name, args)
        if targets is None:
            return None, []
        verdict = self.policy.decide_all(targets)
        if verdict is None:
            logger.debug("permission: %s touches nothing the policy decides", name)
        else:
            logger.debug(
                "permission: %s %s %s: %s (%s)",
                name,
                verdict.operation,
                verdict.target,
                verdict.action,
                verdict.reason,
            )
        return verdict, targets

    def _diff(self, request: ToolCallRequest) -> calls.Effect[str | None]:
        try:
            diff = yield from preview_diff(request.tool_call["name"], request.tool_call["args"])
        except (OSError, FsToolsError):
            return None
        return diff

    def _answer(
        self, request: ToolCallRequest, verdict: Verdict, targets: list[Target], diff: str | None
    ) -> Review:
        call = request.tool_call
        value = approval_request(call["name"], call["args"], call["id"] or "", verdict, diff)
        decision = _decision(interrupt(value))
        if decision["type"] == "approve":
            return Review(request, _approved(targets))
        if decision["type"] == "reject":
            reason = decision.get("message")
            content = (
                f"User rejected the tool call for `{call['name']}` with reason: {reason}"
                if reason
                else f"User rejected the tool call for `{call['name']}`. It was not run;"
                " do not retry it unless the user asks."
            )
            return Review(
                message=ToolMessage(
                    content=content, tool_call_id=call["id"], name=call["name"], status="error"
                )
            )
        if decision["type"] != "edit" or decision["edited_action"]["name"] != call["name"]:
            raise ValueError(f"unsupported decision for {call['name']}: {decision!r}")
        args = dict(decision["edited_action"]["args"])
        edited = request.override(tool_call={**call, "args": args})
        verdict_after, new_targets = self._decide(call["name"], args)
        if verdict_after is not None and verdict_after.action == "deny":
            return Review(message=_refusal(edited, verdict_after))
        return Review(edited, _approved(new_targets))


def approval_request(
    name: str, args: dict[str, Any], tool_call_id: str, verdict: Verdict, diff: str | None
) -> FileApprovalRequest:
    """The interrupt value asking a person about one call."""
    summary = f"{name} wants to {_doing(verdict)}; {verdict.reason} asks for approval."
    description = summary if not diff else f"{summary}\n\n```diff\n{diff.rstrip()}\n```"
    request = FileApprovalRequest(
        action_requests=[ActionRequest(name=name, args=args, description=description)],
        review_configs=[
            ReviewConfig(action_name=name, allowed_decisions=["approve", "edit", "reject"])
        ],
        tool_call_id=tool_call_id,
        summary=summary,
    )
    if diff:
        request["diff"] = diff
    return request


def _doing(verdict: Verdict) -> str:
    if verdict.operation == "execute":
        return f"run `{verdict.target}`"
    return f"{'change' if verdict.operation == 'write' else 'read'} {verdict.target}"


def _decision(answer: Any) -> Decision:
    """The decision in a resume value: `{"decisions": [d]}` or `d` itself."""
    if isinstance(answer, dict) and "decisions" in answer:
        decisions = answer["decisions"]
        if not isinstance(decisions, list) or len(decisions) != 1:
            raise ValueError("a file tool approval takes exactly one decision")
        answer = decisions[0]
    if not isinstance(answer, dict) or answer.get("type") not in {"approve", "edit", "reject"}:
        raise ValueError(f"expected an approve, edit or reject decision, got {answer!r}")
    return cast("Decision", answer)


def _approved(targets: Sequence[Target]) -> frozenset[str]:
    approved: set[str] = set()
    for target in targets:
        if target.path is None:
            continue
        try:
            approved.add(paths.normalize(target.path))
        except FsToolsError:
            continue
    return frozenset(approved)


def _refusal(request: ToolCallRequest, verdict: Verdict) -> ToolMessage:
    call = request.tool_call
    error = PermissionDenied(call["name"], verdict.operation, verdict.target, verdict.reason)
    return ToolMessage(
        content=render_error(error, tool=call["name"]),
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )


__all__ = ["CallGuard", "FileApprovalRequest", "PermissionGate", "Review", "approval_request"]
