"""process: list, read, write to and kill the background processes `execute` started."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from langchain_fstools.core import calls
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.shell.session.session import in_session
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.execute import limit_note, session_of, settle
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.lsp.report import TextChange
    from langchain_fstools.shell.session.background import Background, Processes

Action = Literal["list", "read", "write", "kill"]


class ProcessArgs(ToolArgs):
    """Arguments of process."""

    action: Action = Field(description="See above.")
    process_id: str | None = Field(default=None, description="e.g. p1")
    input: str | None = Field(default=None, description="For write.")


DESCRIPTION = """execute's background processes: list, read new output (and keep its file
changes), write stdin, kill."""

_ENDED_BY = {
    "kill": "killed",
    "idle": "ended: nobody read or wrote it for too long",
    "session": "ended with its session",
}


class ProcessTool(FileTool):
    """The background processes of the call's sandbox session."""

    name: str = "process"
    description: str = DESCRIPTION
    args_schema: type[ProcessArgs] = ProcessArgs
    read_only: bool = False
    requires_execute: ClassVar[bool] = True
    uses_processes: ClassVar[bool] = True

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered once an `execute` call of the thread started a background process."""
        del state
        return any(
            isinstance(getattr(message, "artifact", None), dict)
            and message.artifact.get("process_id") is not None  # type: ignore[attr-defined]
            for message in messages
        )

    def targets(self, args: ProcessArgs) -> list[Target]:
        """Input written to a process is a command; reading, listing and killing touch nothing.

        What a process changed is reviewed as a command's change set when it is read.
        """
        if args.action == "write":
            return [Target("execute", command=args.input or "")]
        return []

    def contained(self, args: ProcessArgs) -> bool:
        """Input to a contained process is contained too (its effects are reviewed)."""
        del args
        return self.context.backend.contains_background()

    def _effect(self, scope: CallScope, args: ProcessArgs) -> Effect[ToolOutcome]:
        with in_session(session_of(scope.runtime)):
            table = yield from calls.blocking(scope.backend.processes)
            if table is None:
                raise InvalidArgument("action", "this backend has no background processes")
            if args.action == "list":
                return _listing(table.all())
            if args.process_id is None:
                raise InvalidArgument("process_id", f"{args.action} needs the process id")
            process = table.get(args.process_id)
            if args.action == "write":
                if args.input is None:
                    raise InvalidArgument("input", "write needs the text to send")
                yield from calls.blocking(functools.partial(process.write, args.input.encode()))
                return ToolOutcome(
                    f"Wrote {plural(len(args.input.encode()), 'byte')} to {process.ident}; read"
                    " its output with action read.",
                    {"process_id": process.ident, "action": "write"},
                )
            if args.action == "kill":
                yield from calls.blocking(process.kill)
            return (yield from _read(scope, table, process))


def _read(scope: CallScope, table: Processes, process: Background) -> Effect[ToolOutcome]:
    """The output since the last read, how the process stands, and its reviewed changes."""
    output = yield from calls.blocking(process.read)
    body = output.text or "(no new output)\n"
    if not body.endswith("\n"):
        body += "\n"
    if output.skipped:
        body += f"({plural(output.skipped, 'byte')} of output skipped in the middle)\n"
    body += _standing(process)
    artifact: dict[str, Any] = {
        "process_id": process.ident,
        "running": output.running,
        "exit_code": output.exit_code,
    }
    state: dict[str, Any] = {}
    texts: list[TextChange] = []
    changes = yield from calls.blocking(functools.partial(table.review, process))
    if changes is not None:
        try:
            body, state, texts = yield from settle(scope, process.command, changes, body, artifact)
        finally:
            yield from calls.blocking(functools.partial(table.reviewed, process))
    return ToolOutcome(body, artifact, state, changes=tuple(texts))


def _standing(process: Background) -> str:
    """One line: running for how long, or how it ended."""
    seconds = f"{process.runtime:.0f} s"
    if process.running:
        return f"{process.ident} is running ({seconds})."
    limit = process.limit
    if limit is not None and limit.name == "changed_bytes":
        return (
            f"{process.ident} ended after {seconds} (what earlier reads kept stays)."
            f" {limit_note(limit)}"
        )
    if process.ended_by is not None:
        return f"{process.ident} {_ENDED_BY[process.ended_by]} after {seconds}."
    ended = f"{process.ident} exited with code {process.exit_code} after {seconds}."
    return ended if limit is None else f"{ended} {limit_note(limit)}"


def _listing(processes: list[Background]) -> ToolOutcome:
    if not processes:
        return ToolOutcome("No background processes.", {"processes": []})
    lines = [f"{_standing(p)} `{p.command}`" for p in processes]
    rows = [
        {
            "process_id": p.ident,
            "command": p.command,
            "running": p.running,
            "exit_code": p.exit_code,
        }
        for p in processes
    ]
    return ToolOutcome("\n".join(lines), {"processes": rows})


__all__ = ["DESCRIPTION", "ProcessArgs", "ProcessTool"]
