"""merge: apply a subagent's branch that came back in conflict, once resolved.

A subagent's branch (`FilesystemMiddleware(branches=True)`) whose merge conflicted is
kept in graph state (the `kept_branches` channel: `KeptBranchesChannel`), under the id
of the call that ran the subagent, for an hour: so it is checkpointed with the thread,
travels with a fork of it, and is there for a worker other than the one that ran the
subagent. The model can resolve the conflicting files itself and call `merge` again,
or settle a file by taking a side whole: the subagent's version, or the file as it is
now. The merge goes through the tools' own view (rules, history), as the first one did.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, PrivateAttr

from langchain_fstools.backends.branch import BranchBackend
from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import FsToolsError, InvalidArgument
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.changes_shown import rewind_note
from langchain_fstools.tools.diagnosing import (
    checked_change,
    render_diagnostics,
    report_data,
    texts_after,
    texts_before,
)
from langchain_fstools.tools.runtime import running_config
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.backends.branch import FileConflict, MergeResult, Side
    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.base import ToolContext

KEEP_SECONDS = 3600.0
"""How long a branch whose merge conflicted is kept for `merge`."""

MOST_KEPT = 32
"""Most branches kept at once; the oldest goes first."""

BRANCH_KEY = "branch"
"""The artifact key of a result whose branch was kept: the id `merge` takes."""

KEPT_KEY = "kept_branches"
"""The graph-state channel of the kept branches."""

NEXT_STEP = "next_step"
"""The entry key of a branch merged before the next model call (a resumed call's)."""

_HUNK_LINES = 12
"""Lines shown per side of a conflicting hunk; the rest is counted."""


def merge_kept(
    current: Mapping[str, Any] | None, update: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The `kept_branches` reducer: `update`'s entries over `current`'s (None drops one).

    At most `MOST_KEPT` are kept: the oldest go first.
    """
    kept = {**(current or {}), **(update or {})}
    live = {ident: entry for ident, entry in kept.items() if entry is not None}
    newest = sorted(live, key=lambda ident: _kept_at(live[ident]))[-MOST_KEPT:]
    return {ident: live[ident] for ident in newest}


def _kept_at(entry: object) -> float:
    """When `entry` was kept (0 for what is not an entry: it goes first)."""
    at = entry.get("at") if isinstance(entry, Mapping) else None
    return float(at) if isinstance(at, int | float) else 0.0


KeptBranchesChannel = Annotated[dict[str, Any], merge_kept]
"""State annotation of the `kept_branches` channel; declare it `NotRequired[...]`.

Each entry: `{"at": seconds since the epoch, "branch": BranchBackend.snapshot()}`.
"""


def kept_entry(branch: BranchBackend) -> dict[str, Any]:
    """The channel's entry for `branch`, kept now."""
    return {"at": time.time(), "branch": branch.snapshot()}


def kept_snapshot(state: Mapping[str, Any], ident: str) -> Mapping[str, Any] | None:
    """The snapshot of the branch kept under `ident` in `state`, unless it is too old."""
    entry = (state.get(KEPT_KEY) or {}).get(ident)
    snapshot = entry.get("branch") if isinstance(entry, Mapping) else None
    if not isinstance(snapshot, Mapping) or time.time() - _kept_at(entry) > KEEP_SECONDS:
        return None
    return snapshot


def merge_receipt(
    ident: str, snapshot: Mapping[str, Any], sides: Mapping[str, str] | None = None
) -> str:
    """The receipt of merging the branch `snapshot` holds, kept as `ident` in this thread.

    The same merge of the same branch (with the same `sides`) has the same receipt in
    any worker, so a merge resumed after its worker died is not applied twice
    (`BranchBackend.merge`); another branch, or another thread's, has another.
    """
    thread = (running_config().get("configurable") or {}).get("thread_id")
    touched = snapshot.get("touched") or {}
    versions = sorted((path, str(entry[2]), str(entry[4])) for path, entry in touched.items())
    named = json.dumps([str(thread), ident, versions, sorted((sides or {}).items())])
    return "merge:" + hashlib.sha256(named.encode()).hexdigest()


class MergeArgs(ToolArgs):
    """Arguments of merge."""

    branch: str = Field(description="The branch id the conflict gave.")
    sides: dict[str, Literal["subagent", "now"]] = Field(
        default_factory=dict, description="Per conflicting file: which side to take whole."
    )


DESCRIPTION = """Merge a subagent's branch that came back in conflict: after you edited the
conflicting files, or taking per file the "subagent" version or the file as it is "now"."""

_SIDES: dict[str, Side] = {"subagent": "branch", "now": "base"}


class MergeTool(FileTool):
    """Merge a kept branch into the files, sides chosen per file."""

    name: str = "merge"
    description: str = DESCRIPTION
    args_schema: type[MergeArgs] = MergeArgs
    read_only: bool = False
    _paths: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    """The paths of the branches kept in the state last offered with (for `targets`)."""

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered while a branch is kept in the thread's state."""
        del messages
        kept = {ident: kept_snapshot(state, ident) for ident in state.get(KEPT_KEY) or {}}
        self._paths = {
            ident: tuple(touched)
            for ident, snapshot in kept.items()
            if snapshot and isinstance(touched := snapshot.get("touched"), Mapping)
        }
        return bool(self._paths)

    def targets(self, args: MergeArgs) -> list[Target]:
        """A write of every path the branch changed.

        A write of files not named when the tool was not offered with the state that
        keeps the branch (another worker's model call).
        """
        found = self._paths.get(args.branch)
        if found is None:
            return [Target("write")]
        return [Target("write", path) for path in found]

    def _effect(self, scope: CallScope, args: MergeArgs) -> Effect[ToolOutcome]:
        state = getattr(scope.runtime, "state", None)
        snapshot = kept_snapshot(state, args.branch) if isinstance(state, dict) else None
        if snapshot is None:
            raise InvalidArgument(
                "branch",
                f"no branch {args.branch} is kept (merged already, or kept for an hour"
                " only); make the changes yourself",
            )
        sides = {paths.normalize(path): _SIDES[side] for path, side in args.sides.items()}
        branch = _restored(scope.backend, snapshot)
        if branch is None:
            raise InvalidArgument(
                "branch", f"branch {args.branch} in the state is damaged; make the changes yourself"
            )
        before = yield from texts_before(scope.context.diagnostics, branch.changed)
        receipt = merge_receipt(args.branch, snapshot, sides)
        result = yield from branch.merging(sides, receipt=receipt)
        artifact: dict[str, Any] = {BRANCH_KEY: args.branch, "merged": list(result.merged)}
        if not result.clean:
            artifact["conflicts"] = [c.path for c in result.conflicts]
            return ToolOutcome(conflicts_report(result, args.branch), artifact)
        merged = ", ".join(result.merged) or "nothing left to change"
        dropped = {KEPT_KEY: {args.branch: None}}
        texts = yield from texts_after(before)
        return ToolOutcome(
            f"Merged branch {args.branch}: {merged}.", artifact, dropped, changes=tuple(texts)
        )


MERGING = "\nThe subagent's changes are merged before your next step."
"""What a `task` result says while its merge waits for the next step (`merged_kept`)."""


def merged_kept(
    backend: Backend,
    state: Mapping[str, Any],
    ident: str,
    context: ToolContext | None = None,
) -> Effect[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """Merge the branch kept under `ident` in `state` through `backend` (the tools' view).

    With the toolkit's `context`, its language servers check what the merge changed
    (`diagnosing.checked_change`), as they check a tool's change.

    Returns:
        What the call's result says now ("Error: ..." when nothing was merged); the
        state update: the merge's, the branch dropped; or, after a conflict, the branch
        kept for `merge` (no longer waiting for a step); and, after a conflict, the
        result's artifact (the branch id and the conflicting paths), after a merge with
        diagnostics, their data (`diagnostics`), else None.
    """
    snapshot = kept_snapshot(state, ident)
    if snapshot is None:
        gone = (
            "Error: the subagent's changes were no longer kept (older than an hour);"
            " nothing was merged. Run the task again."
        )
        return gone, {KEPT_KEY: {ident: None}}, None
    branch = _restored(backend, snapshot)
    if branch is None:
        damaged = "Error: the kept changes in the state are damaged; nothing was merged."
        return f"{damaged} Run the task again.", {KEPT_KEY: {ident: None}}, None
    merge = calls.blocking(functools.partial(branch.merge, receipt=merge_receipt(ident, snapshot)))
    try:
        if context is None:
            result, report = (yield from merge), None
        else:
            checked = checked_change(context, backend, branch.changed, merge)
            result, report = yield from checked
    except (FsToolsError, OSError) as exc:
        return f"Error: the merge failed ({exc}); nothing was merged.", {}, None
    if not result.clean:
        kept = {KEPT_KEY: {ident: {**state[KEPT_KEY][ident], NEXT_STEP: False}}}
        artifact = {BRANCH_KEY: ident, "conflicts": [c.path for c in result.conflicts]}
        return "Error: " + conflicts_report(result, ident), kept, artifact
    update = {**backend.state_update(), KEPT_KEY: {ident: None}}
    merged = ", ".join(sorted((*result.merged, *result.present))) or "nothing left to change"
    text = f"they were merged: {merged}." + rewind_note(update)
    if not report or context is None:
        return text, update, None
    shown = render_diagnostics(report, context.settings.count_tokens)
    return f"{text}\n\n{shown}", update, {"diagnostics": report_data(report)}


def _restored(backend: Backend, snapshot: Mapping[str, Any]) -> BranchBackend | None:
    """The branch `snapshot` holds over `backend`; None when it is not a snapshot."""
    try:
        return BranchBackend.restored(backend, snapshot)
    except ValueError:
        return None


def conflicts_report(result: MergeResult, ident: str, *, kept: bool = True) -> str:
    """What the model reads when a branch did not merge: each file, its hunks, what to do.

    With `kept=False` (nowhere to keep the branch) it says to make the changes instead.
    """
    count = plural(len(result.conflicts), "file")
    parts = [
        (
            f"The subagent's changes were not merged: {count} changed meanwhile in ways that"
            " conflict, so nothing of them was applied:"
        )
    ]
    parts += [_conflict(conflict) for conflict in result.conflicts]
    parts.append(
        f'The branch is kept: edit the files, then call merge(branch="{ident}"), or give'
        ' sides={"<path>": "subagent" | "now"} to take one side of a file whole.'
        if kept
        else "The branch is not kept: make the changes yourself."
    )
    return "\n".join(parts)


def _conflict(conflict: FileConflict) -> str:
    lines = [f"{conflict.path}: {conflict.reason}"]
    for hunk in conflict.hunks:
        lines.append(f"  at line {hunk.line}:")
        for side, text in (("base", hunk.base), ("now", hunk.ours), ("subagent", hunk.theirs)):
            lines.append(f"  {side}:")
            lines += [f"    {line.rstrip(chr(10))}" for line in text[:_HUNK_LINES]]
            if len(text) > _HUNK_LINES:
                lines.append(f"    ({plural(len(text) - _HUNK_LINES, 'more line')})")
    return "\n".join(lines)


__all__ = [
    "BRANCH_KEY",
    "KEPT_KEY",
    "MERGING",
    "NEXT_STEP",
    "KeptBranchesChannel",
    "MergeArgs",
    "MergeTool",
    "conflicts_report",
    "kept_entry",
    "kept_snapshot",
    "merge_kept",
    "merged_kept",
]
