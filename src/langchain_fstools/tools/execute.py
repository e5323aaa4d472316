"""execute: run a shell command in the workspace, bounded in time and output."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import (
    ChangesNotCommitted,
    CommandTimedOut,
    InvalidArgument,
    UnsupportedInvocation,
    VersionConflict,
)
from langchain_fstools.patch.invocation import InvalidInvocation, PatchInvocation, parse_invocation
from langchain_fstools.shell.protected import refusal
from langchain_fstools.tools.apply_patch import run_patch, write_targets
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import Change, ChangeSet
    from langchain_fstools.tools.settings import ToolSettings

SUMMARY_LINES = 20
"""Most changed paths a command's result lists; the rest are counted."""


class ExecuteArgs(ToolArgs):
    """Arguments of execute."""

    command: str = Field(description="e.g. `pytest -q tests/`.")
    timeout: float | None = Field(default=None, description="Seconds before it is killed.")


DESCRIPTION = """Run a bash command from the workspace root; returns its output and exit code.

-[read_file, grep, glob, edit_file] Not for files: use read_file, grep, glob, edit_file, not
  cat/head/tail, grep/rg, find, sed/awk/echo >.
- Use relative paths: `/` in the shell is the machine's root.
- A fresh shell each call, stdin empty (pass `--yes`); background processes end with it.
- On timeout all is killed and the output so far returned. Output over
  {execute_output_limit:*byte} is cut in the middle; stderr lines start `[stderr] `.
-[apply_patch] For patches use the apply_patch tool.
- Dangerous commands (sudo, rm -rf /, ...) are refused."""


class ExecuteTool(FileTool):
    """Run a shell command on backends that can (`supports_execute`), killably."""

    name: str = "execute"
    description: str = DESCRIPTION
    args_schema: type[ExecuteArgs] = ExecuteArgs
    argument_defaults: ClassVar[dict[str, str]] = {
        "timeout": "{execute_timeout:,g}; at most {execute_max_timeout:,g}"
    }
    read_only: bool = False
    requires_execute: ClassVar[bool] = True

    bounds_output: ClassVar[bool] = False

    def targets(self, args: ExecuteArgs) -> list[Target]:
        """The command; for an `apply_patch` invocation, the patch's files instead.

        Such a command is applied in-process by the apply_patch planner, not run by a
        shell, so it touches exactly the files the patch names.
        """
        if isinstance(parse_invocation(args.command), PatchInvocation):
            return write_targets(args.command)
        return [Target("execute", command=args.command)]

    def previews(self, args: ExecuteArgs) -> bool:
        """Only an `apply_patch` invocation can be dry-run (a command never is)."""
        return isinstance(parse_invocation(args.command), PatchInvocation)

    def _effect(self, scope: CallScope, args: ExecuteArgs) -> Effect[ToolOutcome]:
        match parse_invocation(args.command):
            case PatchInvocation(patch=patch, workdir=workdir):
                return (yield from run_patch(scope, patch, workdir or paths.ROOT))
            case InvalidInvocation(reason=reason):
                raise UnsupportedInvocation(reason)
        return (yield from self._run_command(scope, args))

    def _run_command(self, scope: CallScope, args: ExecuteArgs) -> Effect[ToolOutcome]:
        settings = scope.context.settings
        if not args.command.strip():
            raise InvalidArgument("command", "it is empty; give a shell command to run")
        timeout = _timeout(args.timeout, settings)
        refusal = settings.command_policy.check(args.command)
        if refusal is not None:
            raise refusal
        result = yield from calls.execute_changes(
            args.command, timeout=timeout, output_limit=settings.execute_output_limit
        )
        body = result.output or "(no output)"
        if not body.endswith("\n"):
            body += "\n"
        if not result.timed_out:
            body += f"Exit code: {result.exit_code}"
        committed: list[Change] = []
        if result.changes is not None:
            try:
                committed = yield from _committing(result.changes, body)
            finally:
                yield from calls.blocking(result.changes.discard)
            body = body.rstrip("\n") + summary(committed)
        if result.timed_out:
            raise CommandTimedOut(timeout, body)
        artifact = {
            "command": args.command,
            "exit_code": result.exit_code,
            "timeout": timeout,
            "dropped_bytes": result.dropped_bytes,
            "changes": [f"{change.kind} {change.path}" for change in committed],
        }
        return ToolOutcome(body, artifact)


def _committing(changes: ChangeSet, output: str) -> Effect[list[Change]]:
    """Commit what a command changed, or nothing of it (`ChangesNotCommitted` says why).

    Refused whole: a change no command may make (`shell.protected`), a path that also
    changed in the workspace while the command ran, a path a permission rule denies.
    """
    found = refusal(changes, changes.host_code)
    if found is not None:
        raise ChangesNotCommitted("protected", found.path, found.reason, output)
    stale = next((change for change in changes.changes if change.stale), None)
    if stale is not None:
        raise ChangesNotCommitted("stale", stale.path, "", output)
    if not changes:
        return []
    try:
        yield from calls.commit(changes)
    except VersionConflict as conflict:
        raise ChangesNotCommitted("stale", conflict.path, "", output) from None
    except PermissionError as denied:
        raise ChangesNotCommitted("denied", str(denied.filename), "", output) from None
    return list(changes.changes)


def summary(changes: Sequence[Change]) -> str:
    """What a command's commit changed: a line a path (`M /src/a.py`), or per folder past a limit.

    Up to `SUMMARY_LINES` paths are listed one a line; a larger set is listed by its
    top-level folders (`/node_modules/: 9,812 added`) and files. A directory added or
    deleted with what is in it is not listed on its own.
    """
    shown = [change for change in changes if not _holds_listed(change, changes)]
    if not shown:
        return ""
    if len(shown) <= SUMMARY_LINES:
        return "\nChanged:\n" + "\n".join(f"{c.kind} {_printable(c.path)}" for c in shown)
    groups: dict[str, list[Change]] = {}
    for change in shown:
        top = change.path.split("/")[1]
        groups.setdefault(change.path if change.path == f"/{top}" else f"/{top}/", []).append(
            change
        )
    lines = [_group_line(name, members) for name, members in groups.items()]
    if len(lines) > SUMMARY_LINES:
        rest = sum(len(members) for members in list(groups.values())[SUMMARY_LINES:])
        lines = [*lines[:SUMMARY_LINES], f"... and {rest:,} more below other folders"]
    return f"\nChanged ({len(shown):,} paths):\n" + "\n".join(lines)


def _group_line(name: str, members: Sequence[Change]) -> str:
    if len(members) == 1 and members[0].path == name:
        return f"{members[0].kind} {_printable(name)}"
    counts = Counter(change.kind.name.lower() for change in members)
    parts = ", ".join(f"{count:,} {kind}" for kind, count in sorted(counts.items()))
    return f"{_printable(name)}: {parts}"


def _printable(path: str) -> str:
    """`path` as text a model can be sent (a name's undecodable bytes escaped)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _holds_listed(change: Change, changes: Sequence[Change]) -> bool:
    if change.entry != "directory" or change.kind is ChangeKind.MODIFIED:
        return False
    prefix = change.path.rstrip("/") + "/"
    return any(other.path.startswith(prefix) for other in changes)


def _timeout(requested: float | None, settings: ToolSettings) -> float:
    """The seconds a command may run: the request, checked, or the default."""
    limit = settings.execute_max_timeout
    if requested is None:
        return min(settings.execute_timeout, limit)
    if not math.isfinite(requested) or requested <= 0:
        raise InvalidArgument(
            "timeout", f"{requested:g} is not a positive number of seconds (at most {limit:g})"
        )
    if requested > limit:
        raise InvalidArgument(
            "timeout",
            f"{plural(requested, 'second')} is above the maximum of {plural(limit, 'second')}",
        )
    return requested


__all__ = ["DESCRIPTION", "ExecuteArgs", "ExecuteTool"]
