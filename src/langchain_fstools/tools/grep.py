"""grep: search file contents, literal by default, ripgrep-fast on local disk."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import paths
from langchain_fstools.core.wording import plural
from langchain_fstools.formats.listing import grouped
from langchain_fstools.search.contract import (
    FileHits,
    GrepRequest,
    InvalidPattern,
    SearchOutcome,
)
from langchain_fstools.search.filetypes import COMMON, globs_for
from langchain_fstools.search.regex import unsupported
from langchain_fstools.tools import searching
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect

OutputMode = Literal["files_with_matches", "content", "count"]


class GrepArgs(ToolArgs):
    """Arguments of grep."""

    pattern: str = Field(description="Text to find.")
    path: str | None = Field(default=None, description="Absolute file or folder. Default: /.")
    glob: str | None = Field(default=None, description='Files to search, e.g. "*.py".')
    type: str | None = Field(default=None, description='File type, e.g. "py".')
    output_mode: OutputMode = Field(
        default="files_with_matches", description="Paths come newest first."
    )
    after_context: int | None = Field(default=None, alias="-A", description="Lines after.")
    before_context: int | None = Field(default=None, alias="-B", description="Lines before.")
    context: int | None = Field(default=None, alias="-C", description="Lines around.")
    ignore_case: bool = Field(default=False, alias="-i", description="Ignore case.")
    line_numbers: bool = Field(default=True, alias="-n", description="Line numbers.")
    multiline: bool = Field(default=False, description="Matches may span lines.")
    head_limit: int | None = Field(default=None, description="Most entries; 0: all.")
    offset: int = Field(default=0, description="Entries to skip.")
    regex: bool = Field(default=False, description="A regex pattern.")


DESCRIPTION = """Search file contents (ripgrep). `pattern` is literal unless `regex=true`; a literal
that finds nothing but looks like a regex is retried as one. Lines are cut at
{line_width} characters. Skips ignored files, VCS folders and binaries.
-[execute] Use it, not grep or rg in execute."""

_REGEX_SPECIAL = re.compile(r"[\\.^$?*+()\[\]{}]")

_REGEX_HINT = re.compile(r"\\[dwsbDWSB.(){}\[\]|*+?^$]|\.\*|\.\+|\[[^\]]+\]|\(\?|\||\^|\$$")


class GrepTool(FileTool):
    """Search contents: literal by default, paged, newest-first file lists."""

    name: str = "grep"
    description: str = DESCRIPTION
    args_schema: type[GrepArgs] = GrepArgs
    argument_defaults: ClassVar[dict[str, str]] = {"head_limit": "{grep_head_limit:,}"}

    def targets(self, args: GrepArgs) -> list[Target]:
        """A read of `path`."""
        return [Target("read", args.path or paths.ROOT)]

    def _effect(self, scope: CallScope, args: GrepArgs) -> Effect[ToolOutcome]:
        if not args.pattern:
            raise errors.InvalidArgument("pattern", "it is empty; give the text to search for")
        searching.require_text("pattern", args.pattern)
        for name, value in (("glob", args.glob), ("type", args.type)):
            if value is not None:
                searching.require_text(name, value)
        head_limit, offset = _paging(args, scope.context.settings.grep_head_limit)
        root = yield from searching.search_root(scope, args.path)
        request = _request(args, root)
        page = searching.ContentPage(
            None if head_limit is None or args.output_mode != "content" else offset + head_limit
        )
        summaries: list[FileHits] = []
        sink = page.add if args.output_mode == "content" else summaries.append
        deadline = searching.deadline_of(scope)
        outcome = yield from _grep(scope, request, deadline, sink)
        note = ""
        if (
            not (page.total_files or summaries)
            and not args.regex
            and _REGEX_HINT.search(args.pattern)
        ):
            retry = replace(request, regex=True)
            try:
                outcome = yield from _grep(scope, retry, deadline, sink)
            except errors.InvalidArgument:
                note = _not_a_regex(args.pattern)
            else:
                note = (
                    f"No literal match for {args.pattern!r}; "
                    "searched it as a regular expression instead.\n"
                )
        complete = outcome.complete
        if args.output_mode == "content":
            entries, total = _content_lines(page, args.line_numbers), page.total_lines
            shown = entries[offset : None if head_limit is None else offset + head_limit]
        else:
            ordered = _order(summaries, args.output_mode)
            total = len(ordered)
            window = ordered[offset : None if head_limit is None else offset + head_limit]
            shown = _summary_lines(window, args.output_mode)
        text = note + _render(args, shown, total, offset, summaries, complete, scope)
        if outcome.skipped:
            text += f"\n{searching.skipped_note(outcome.skipped)}"
        artifact: dict[str, Any] = {
            "pattern": args.pattern,
            "path": root,
            "mode": args.output_mode,
            "regex": request.regex or bool(note),
            "total": total,
            "shown": len(shown),
            "offset": offset,
            "complete": complete,
            "skipped": outcome.skipped,
            "engine": (yield from searching.engine_name(scope, root)),
        }
        return ToolOutcome(text, artifact)


def _grep(
    scope: CallScope, request: GrepRequest, deadline: float, sink: Any
) -> Effect[SearchOutcome]:
    try:
        return (yield from searching.grep(scope, request, deadline, sink))
    except InvalidPattern:
        reason = unsupported(request.pattern)
        raise errors.InvalidArgument(
            "regex",
            f"{_shown(request.pattern)} does not compile as a regular expression"
            + (f": {reason}," if reason else "; fix its syntax,")
            + " or search for it literally with regex=false",
        ) from None


def _shown(pattern: str, limit: int = 200) -> str:
    """`pattern` quoted for a reply, shortened when long."""
    return repr(pattern) if len(pattern) <= limit else repr(pattern[:limit]) + "…"


def _not_a_regex(pattern: str) -> str:
    """Why a literal miss that looks like a regex was not retried as one, and what to do."""
    note = f"No literal match for {_shown(pattern)}, and it is not a valid regular expression."
    if "|" in pattern:
        alternatives = "|".join(_REGEX_SPECIAL.sub(r"\\\g<0>", part) for part in pattern.split("|"))
        note += (
            " To search for any of its alternatives, set regex=true and escape the special"
            f" characters: {_shown(alternatives)}."
        )
    return note + "\n"


def _paging(args: GrepArgs, default_limit: int) -> tuple[int | None, int]:
    limit = default_limit if args.head_limit is None else args.head_limit
    if limit < 0:
        raise errors.InvalidArgument("head_limit", "it must be 0 (no limit) or more")
    if args.offset < 0:
        raise errors.InvalidArgument("offset", "it must be 0 or more")
    return (None if limit == 0 else limit), args.offset


def _request(args: GrepArgs, root: str) -> GrepRequest:
    for name, value in (
        ("-A", args.after_context),
        ("-B", args.before_context),
        ("-C", args.context),
    ):
        if value is not None and value < 0:
            raise errors.InvalidArgument(name, "context lines must be 0 or more")
    groups: list[tuple[str, ...]] = []
    if args.glob:
        groups.append((args.glob,))
    if args.type:
        type_globs = globs_for(args.type)
        if type_globs is None:
            raise errors.InvalidArgument(
                "type",
                f"unknown type {_shown(args.type, 40)}; use one of ripgrep's types (e.g."
                f" {', '.join(COMMON)}), or a glob instead",
            )
        groups.append(type_globs)
    around = args.context or 0
    return GrepRequest(
        pattern=args.pattern,
        directory=root,
        regex=args.regex,
        ignore_case=args.ignore_case,
        multiline=args.multiline,
        globs=tuple(groups),
        mode=args.output_mode,
        before=args.before_context if args.before_context is not None else around,
        after=args.after_context if args.after_context is not None else around,
    )


def _order(summaries: list[FileHits], mode: OutputMode) -> list[FileHits]:
    if mode == "files_with_matches":
        return sorted(summaries, key=lambda h: (-h.mtime, h.path))
    return sorted(summaries, key=lambda h: h.path)


def _summary_lines(page: list[FileHits], mode: OutputMode) -> list[str]:
    """One item per file, grouped by directory (see `formats.listing`).

    A directory header (`/src/`, the only lines that start and end with `/`) is joined to
    the file after it, so the items still count files.
    """
    items: list[str] = []
    header = ""
    for line in grouped(
        [(h.path, "" if mode == "files_with_matches" else f":{h.count}") for h in page]
    ):
        if line.startswith("/") and line.endswith("/"):
            header = line + "\n"
        else:
            items.append(header + line)
            header = ""
    return items


def _content_lines(page: searching.ContentPage, numbered: bool) -> list[str]:  # noqa: FBT001
    lines: list[str] = []
    for hits in page.files:
        for hit in hits.lines:
            mark = ":" if hit.is_match else "-"
            number = f"{hit.number}{mark}" if numbered else ""
            lines.append(f"{hits.path}{mark}{number}{searching.cut(hit.text, hit.column)}")
    return lines


def _render(  # noqa: PLR0917 - the pieces of one reply
    args: GrepArgs,
    shown: list[str],
    total: int,
    offset: int,
    summaries: list[FileHits],
    complete: bool,  # noqa: FBT001
    scope: CallScope,
) -> str:
    unit = {"files_with_matches": "file", "content": "line", "count": "file"}[args.output_mode]
    if total == 0:
        body = f"No matches found for {_shown(args.pattern)}."
    else:
        header = ""
        if args.output_mode == "files_with_matches":
            header = f"Found {plural(total, 'file')}\n"
        elif args.output_mode == "count":
            matches = sum(h.count for h in summaries)
            header = f"Found {plural(matches, 'matching line')} in {plural(total, 'file')}\n"
        body = header + "\n".join(shown)
        end = offset + len(shown)
        if end < total:
            body += (
                f"\n\n(Showing {unit}s {offset + 1}-{end} of {total}. Continue with offset={end}.)"
            )
        elif not shown:
            body += f"\n(offset={offset} is past the last of {plural(total, unit)}.)"
    if not complete:
        body += (
            f"\n(The search stopped at its {scope.context.settings.search_timeout:g} s deadline; "
            "results are incomplete. Narrow the path, glob or type.)"
        )
    return body


__all__ = ["DESCRIPTION", "GrepArgs", "GrepTool"]
