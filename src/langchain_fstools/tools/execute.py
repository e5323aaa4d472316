"""execute: run a shell command in the workspace, bounded in time and output."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import CommandTimedOut, InvalidArgument, UnsupportedInvocation
from langchain_fstools.patch.invocation import InvalidInvocation, PatchInvocation, parse_invocation
from langchain_fstools.tools.apply_patch import run_patch, write_targets
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.settings import ToolSettings


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
        result = yield from calls.execute(
            args.command, timeout=timeout, output_limit=settings.execute_output_limit
        )
        if result.timed_out:
            raise CommandTimedOut(timeout, result.output)
        body = result.output or "(no output)"
        if not body.endswith("\n"):
            body += "\n"
        artifact = {
            "command": args.command,
            "exit_code": result.exit_code,
            "timeout": timeout,
            "dropped_bytes": result.dropped_bytes,
        }
        return ToolOutcome(f"{body}Exit code: {result.exit_code}", artifact)


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
