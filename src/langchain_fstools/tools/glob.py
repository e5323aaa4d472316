"""glob: find files by name pattern, newest first."""

from __future__ import annotations

import heapq
from operator import attrgetter
from typing import TYPE_CHECKING

from pydantic import Field

from langchain_fstools.core import paths
from langchain_fstools.core.globs import compile_globs
from langchain_fstools.core.wording import plural
from langchain_fstools.formats.listing import grouped
from langchain_fstools.tools import searching
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.search.contract import ListedFile


class GlobArgs(ToolArgs):
    """Arguments of glob."""

    pattern: str = Field(description='e.g. "*.py", "src/**/*.{ts,tsx}".')
    path: str | None = Field(default=None, description="Absolute folder to search. Default: /.")


DESCRIPTION = """Find files by name; a pattern without `/` matches at any depth. Newest
first, at most {glob_limit:,}; skips ignored files and VCS folders."""

NO_MATCH = "No files found matching {pattern!r} in {path}."


class GlobTool(FileTool):
    """Find files matching a glob pattern, newest first, capped."""

    name: str = "glob"
    description: str = DESCRIPTION
    args_schema: type[GlobArgs] = GlobArgs

    def targets(self, args: GlobArgs) -> list[Target]:
        """A read of `path`."""
        return [Target("read", args.path or paths.ROOT)]

    def _effect(self, scope: CallScope, args: GlobArgs) -> Effect[ToolOutcome]:
        searching.require_text("pattern", args.pattern)
        compile_globs([args.pattern])  # a malformed pattern fails here, on every engine
        root = yield from searching.search_root(scope, args.path, listing=True)
        limit = scope.context.settings.glob_limit
        listing = yield from searching.list_files(
            scope, root, ((args.pattern,),), searching.deadline_of(scope), newest=limit
        )
        total = listing.count
        lines = grouped([(f.path, "") for f in newest(listing.files, limit)])
        if not total:
            shown = args.pattern if len(args.pattern) <= 200 else args.pattern[:200] + "…"  # noqa: PLR2004
            lines = [NO_MATCH.format(pattern=shown, path=root)]
        if total > limit:
            lines.append(
                f"(Results are truncated: showing the {limit} most recently modified of "
                f"{plural(total, 'file')}. Use a more specific pattern or path.)"
            )
        if listing.skipped:
            lines.append(searching.skipped_note(listing.skipped))
        if not listing.complete:
            lines.append(
                f"(The search stopped at its {scope.context.settings.search_timeout:g} s "
                "deadline; there may be more files. Narrow the pattern or the path.)"
            )
        artifact = {
            "pattern": args.pattern,
            "path": root,
            "total": total,
            "shown": min(limit, total),
            "complete": listing.complete,
            "skipped": listing.skipped,
            "engine": (yield from searching.engine_name(scope, root)),
        }
        return ToolOutcome("\n".join(lines), artifact)


def newest(files: list[ListedFile], limit: int) -> list[ListedFile]:
    """The `limit` most recently modified files, newest first, ties by path.

    Only files at least as new as the `limit`-th newest mtime are sorted, so a large
    listing costs one pass over its mtimes rather than a full sort.
    """
    if len(files) > limit > 0:
        cutoff = heapq.nlargest(limit, map(attrgetter("mtime"), files))[-1]
        files = [f for f in files if f.mtime >= cutoff]
    return sorted(files, key=lambda f: (-f.mtime, f.path))[:limit]


__all__ = ["DESCRIPTION", "GlobArgs", "GlobTool", "newest"]
