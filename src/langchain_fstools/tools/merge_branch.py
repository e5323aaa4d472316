"""merge: apply a subagent's branch that came back in conflict, once resolved.

A subagent's branch (`FilesystemMiddleware(branches=True)`) whose merge conflicted is
kept here (`KeptBranches`), under the id of the call that ran the subagent, for an hour.
The model can resolve the conflicting files itself and call `merge` again, or settle a
file by taking a side whole: the subagent's version, or the file as it is now. The
merge goes through the tools' own view (rules, history), as the first one did.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from langchain_fstools.core import paths
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.backends.branch import BranchBackend, FileConflict, MergeResult, Side
    from langchain_fstools.core.calls import Effect

KEEP_SECONDS = 3600.0
"""How long a branch whose merge conflicted is kept for `merge`."""

MOST_KEPT = 32
"""Most branches kept at once; the oldest goes first."""

BRANCH_KEY = "branch"
"""The artifact key of a result whose branch was kept: the id `merge` takes."""

_HUNK_LINES = 12
"""Lines shown per side of a conflicting hunk; the rest is counted."""


class KeptBranches:
    """Branches whose merge conflicted, by the id of the call that made them.

    Args:
        keep_seconds: How long one is kept.
        most: How many are kept at once.
    """

    def __init__(self, *, keep_seconds: float = KEEP_SECONDS, most: int = MOST_KEPT) -> None:
        """An empty shelf."""
        self.keep_seconds = keep_seconds
        self.most = most
        self._kept: dict[str, tuple[BranchBackend, float]] = {}
        self._lock = threading.Lock()

    def keep(self, ident: str, branch: BranchBackend) -> None:
        """Keep `branch` under `ident` (the oldest dropped past `most`)."""
        with self._lock:
            self._kept.pop(ident, None)
            self._kept[ident] = (branch, time.monotonic())
            while len(self._kept) > self.most:
                del self._kept[next(iter(self._kept))]

    def get(self, ident: str) -> BranchBackend | None:
        """The branch kept under `ident`, if it is still kept."""
        with self._lock:
            now = time.monotonic()
            for old in [k for k, (_, at) in self._kept.items() if now - at > self.keep_seconds]:
                del self._kept[old]
            found = self._kept.get(ident)
        return None if found is None else found[0]

    def drop(self, ident: str) -> None:
        """Forget the branch kept under `ident`."""
        with self._lock:
            self._kept.pop(ident, None)


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
    kept: KeptBranches

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered once a subagent's result says its branch was kept."""
        del state
        return any(
            isinstance(getattr(message, "artifact", None), dict)
            and self.kept.get(str(message.artifact.get(BRANCH_KEY))) is not None  # type: ignore[attr-defined]
            for message in messages
        )

    def targets(self, args: MergeArgs) -> list[Target]:
        """A write of every path the branch changed (unknown: a write of files not named)."""
        branch = self.kept.get(args.branch)
        if branch is None:
            return [Target("write")]
        return [Target("write", path) for path in branch.changed]

    def _effect(self, scope: CallScope, args: MergeArgs) -> Effect[ToolOutcome]:
        branch = self.kept.get(args.branch)
        if branch is None:
            raise InvalidArgument(
                "branch",
                f"no branch {args.branch} is kept (merged already, kept for an hour only, or"
                " made in another process); make the changes yourself",
            )
        sides = {paths.normalize(path): _SIDES[side] for path, side in args.sides.items()}
        result = yield from branch.over(scope.backend).merging(sides)
        artifact: dict[str, Any] = {BRANCH_KEY: args.branch, "merged": list(result.merged)}
        if not result.clean:
            artifact["conflicts"] = [c.path for c in result.conflicts]
            return ToolOutcome(conflicts_report(result, args.branch), artifact)
        self.kept.drop(args.branch)
        merged = ", ".join(result.merged) or "nothing left to change"
        return ToolOutcome(f"Merged branch {args.branch}: {merged}.", artifact)


def conflicts_report(result: MergeResult, ident: str) -> str:
    """What the model reads when a branch did not merge: each file, its hunks, what to do."""
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


__all__ = ["BRANCH_KEY", "KeptBranches", "MergeArgs", "MergeTool", "conflicts_report"]
