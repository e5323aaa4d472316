"""The permission gate: each file tool call decided on its canonical targets.

Glue only. Each tool says what a call touches (`FileTool.targets`) and what it would
change (`FileTool.preview`, a dry run through the tool's own planner); the gate adds
the canonical form of every path (`Backend.resolve`: symlinks followed inside the
workspace), `rules.Policy` decides on both spellings (the strictest wins), and
`backends.guarded.GuardedBackend` enforces the decision again when the call runs, through
the `CallGuard` of that call (with what a person approved for it, if anything).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_fstools.core import calls, paths
from langchain_fstools.errors import FsToolsError
from langchain_fstools.permissions.approval import Approval
from langchain_fstools.permissions.rules import Policy, Target, Verdict
from langchain_fstools.shell.sandbox.protected import PROTECTED

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import ToolCall

    from langchain_fstools.backends.guarded import CommitDecision
    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.shell.sandbox.protected import Finding
    from langchain_fstools.shell.sandbox.unreadable import Unreadable
    from langchain_fstools.tools.base import FileTool
    from langchain_fstools.tools.targets import Preview

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallGuard:
    """What one tool call may do with each path: the policy, plus its approval."""

    policy: Policy
    approved: frozenset[str] = frozenset()
    expected: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    command_approved: bool = False
    """Whether a person approved running this call's command (before it ran)."""
    command_allowed: bool = False
    """Whether a permission rule allows running this call's command, contained or not."""

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

    def unreadable(self, *, masked: bool = True) -> Unreadable | None:
        """What this call's commands must not see: what the rules keep from reads.

        `masked`: whether the backend can hide paths from commands. Where it cannot,
        a command asks before it runs (`Policy.decide`), and one a person approved
        runs seeing them: nothing is hidden from it (the backend would refuse it).
        """
        if self.command_approved and not masked:
            return None
        return self.policy.unreadable()

    def commit_decision(  # noqa: PLR0911 - one return per row of the decision table
        self, path: str, finding: Finding | None, *, ignored: bool = False
    ) -> CommitDecision:
        """How a command's change of `path` may be committed (docs/permissions.md's table).

        In order: a rule that denies writing it refuses the change set; a person who
        approved this path (after the command ran) keeps it. A protected path
        (`finding`, `shell.sandbox.protected`) asks, or in `bypass` (no one to ask) is
        refused. A host-run path asks in `default` and `accept_edits`, unless a person
        approved the command before it ran. Otherwise the mode's decision of a write
        (`Policy.decide_change`: `default` asks, `accept_edits` and `bypass` allow),
        but the mode does not ask about a path the workspace's ignore files ignore
        (`ignored`: caches, build outputs), nor about the changes of a command a
        person approved or a rule allows (`command_approved`, `command_allowed`).
        """
        verdict = self.policy.decide_change(path)
        if verdict.action == "deny":
            return "deny"
        if path in self.approved:
            return "allow"
        if finding is not None and finding.category == PROTECTED:
            return "refuse" if self.policy.mode == "bypass" else "ask"
        if finding is not None:
            return "allow" if self.command_approved or self.policy.mode == "bypass" else "ask"
        if self.command_approved:
            return "allow"
        if (ignored or self.command_allowed) and self.policy.by_mode(verdict):
            return "allow"
        return verdict.action

    def expectation(self, path: str) -> tuple[str, str | None] | None:
        """The approved change pinned at `path` (version before, post-image digest)."""
        return self.expected.get(path)


@dataclass(frozen=True)
class Assessment:
    """A governed call: its tool, validated arguments, canonical targets and verdict."""

    tool: FileTool
    args: Any
    targets: list[Target]
    verdict: Verdict


class PermissionGate:
    """Decides each file tool call on its canonical targets; asks people in batches.

    Args:
        policy: The rules and mode.
        storage: The unguarded backend: resolves paths and serves dry runs.
        after_effect: Whether a person can be asked about a command's changes after
            it ran (`command_review`), so a contained command runs without asking
            first. Default: True (the MCP server, which cannot yet, says False).
    """

    def __init__(self, policy: Policy, storage: Backend, *, after_effect: bool = True) -> None:
        """Keep the policy; no tools or approvals yet."""
        self.policy = policy
        self.storage = storage
        self.after_effect = after_effect
        self.tools: dict[str, FileTool] = {}
        self._grants: dict[str, CallGuard] = {}

    def guard_for(self, runtime: Any) -> CallGuard:
        """The guard of the call `runtime` belongs to (with its approval)."""
        call_id = getattr(runtime, "tool_call_id", None)
        return (
            self._grants.get(call_id, CallGuard(self.policy)) if call_id else CallGuard(self.policy)
        )

    def grant(self, call_id: str, approval: Mapping[str, Any] | None) -> None:
        """Let call `call_id` do what `approval` allows while it runs."""
        if approval is None:
            return
        expected = {path: (pin[0], pin[1]) for path, pin in approval["expect"].items()}
        command = "command" in approval["args"]
        self._grants[call_id] = CallGuard(
            self.policy, frozenset(approval["paths"]), expected, command_approved=command
        )

    def grant_allowed(self, call_id: str, assessment: Assessment) -> None:
        """Let call `call_id` keep its command's ordinary changes when a rule allows it.

        That is when the rules allow running each of its commands as if it were not
        contained (`Policy.decide_command`), as they let a command with the network run
        and keep what it did: the mode does not ask about its changes, while protected
        and host-run paths still do.
        """
        commands = [t.command for t in assessment.targets if t.operation == "execute"]
        if commands and all(
            self.policy.decide_command(command or "").action == "allow" for command in commands
        ):
            self._grants[call_id] = CallGuard(self.policy, command_allowed=True)

    def revoke(self, call_id: str) -> None:
        """End the approval of call `call_id`."""
        self._grants.pop(call_id, None)

    # ----- deciding ----------------------------------------------------------------------

    def assessing(self, call: ToolCall) -> Effect[Assessment | None]:
        """Decide `call` over the backend the effect runs on; None for a call not governed."""
        found = self._governed(call)
        if found is None:
            return None
        tool, args = found
        declared = tool.targets(args)
        if any(target.operation == "execute" for target in declared):
            # Both may probe the sandbox the first time: off the event loop.
            backend = tool.context.backend
            masked = yield from calls.blocking(backend.hides_from_commands)
            contained = self.after_effect and (
                yield from calls.blocking(functools.partial(tool.contained, args))
            )
            declared = [replace(t, contained=contained, masked=masked) for t in declared]
        targets: list[Target] = []
        for target in declared:
            targets.append(target)
            if target.path is None:
                continue
            try:
                spelled = paths.normalize(target.path)
                resolved = yield from calls.resolve(spelled)
            except (OSError, FsToolsError):
                continue  # the call fails the same way: it reaches nothing
            for form in (spelled, resolved):
                candidate = Target(target.operation, form)
                if candidate not in targets:
                    targets.append(candidate)
        return Assessment(tool, args, targets, self._verdict(tool.name, targets))

    def assess(self, call: ToolCall, backend: Backend) -> Assessment | None:
        """`assessing` over bound `backend`, sync."""
        return calls.run(self.assessing(call), backend)

    async def aassess(self, call: ToolCall, backend: Backend) -> Assessment | None:
        """`assessing` over bound `backend`, async."""
        return await calls.arun(self.assessing(call), backend)

    def approval(
        self, assessment: Assessment, args: dict[str, Any], preview: Preview | None
    ) -> Approval:
        """The approval of a call: its paths and, with a preview, its exact change."""
        approved = {t.path for t in assessment.targets if t.path is not None}
        expect: dict[str, list[str | None]] = {}
        for planned in preview.files if preview is not None else ():
            approved.add(planned.path)
            expect[planned.path] = [planned.before, planned.digest]
        return Approval(args=args, paths=sorted(approved), expect=expect)

    def _governed(self, call: ToolCall) -> tuple[FileTool, Any] | None:
        tool = self.tools.get(call["name"])
        if tool is None:
            return None
        args = tool.validated(call["args"])
        return None if args is None else (tool, args)

    def _verdict(self, name: str, targets: Sequence[Target]) -> Verdict:
        verdict = self.policy.decide_all(targets)
        if verdict is None:
            logger.debug("permission: %s touches nothing the policy decides", name)
            return Verdict("allow", "no target", "", "read")
        logger.debug(
            "permission: %s %s %s: %s (%s)",
            name,
            verdict.operation,
            verdict.target,
            verdict.action,
            verdict.reason,
        )
        return verdict


__all__ = ["Assessment", "CallGuard", "PermissionGate"]
