"""ls: list one directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.formats.listing import grouped
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect


class LsArgs(ToolArgs):
    """Arguments of ls."""

    path: str = Field(default="/", description="Absolute path; `/` is the workspace root.")


DESCRIPTION = """List a directory, not recursively: names sorted, hidden ones included, folders
ending in `/`, at most {ls_limit:*entry/entries}."""


class LsTool(FileTool):
    """List one directory: sorted, directories marked with `/`, capped."""

    name: str = "ls"
    description: str = DESCRIPTION
    args_schema: type[LsArgs] = LsArgs

    def targets(self, args: LsArgs) -> list[Target]:
        """A read of `path`."""
        return [Target("read", args.path)]

    def _effect(self, scope: CallScope, args: LsArgs) -> Effect[ToolOutcome]:
        directory = paths.normalize(args.path)
        limit = scope.context.settings.ls_limit
        try:
            # One entry past the limit tells a cut listing; the rest is never listed.
            entries = yield from calls.list_page(directory, after=None, limit=limit + 1)
        except NotADirectoryError:
            info = yield from calls.stat(directory)
            if info.is_dir:
                raise
            raise errors.InvalidArgument(
                "path",
                f"{directory} is a file, not a directory; read it with read_file,"
                f" or list its directory with ls(path={paths.parent(directory)!r})",
            ) from None
        cut = len(entries) > limit
        shown = entries[:limit]
        lines = grouped([(e.path, "/" if e.is_dir else "") for e in shown], min_run=1)
        if not entries:
            lines = [f"(empty directory: {directory})"]
        elif cut:
            lines.append(
                f"(Showing the first {plural(limit, 'entry', 'entries')}; there are more. "
                "List a subdirectory or use glob to narrow the listing.)"
            )
        artifact = {
            "path": directory,
            "entries": [{"path": e.path, "kind": e.kind.value, "size": e.size} for e in shown],
            "total": None if cut else len(entries),
            "truncated": cut,
        }
        return ToolOutcome("\n".join(lines), artifact)


__all__ = ["DESCRIPTION", "LsArgs", "LsTool"]
