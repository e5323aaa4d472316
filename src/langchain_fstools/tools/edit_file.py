"""edit_file: replace an exact string in a file the agent has read.

A file the toolkit holds whole at the version the agent read (`tools.known_texts`) is
edited without asking for it: the write alone, on the condition that the file is still
at that version. A file changed since fails that condition, and is edited afresh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.backends import ABSENT
from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.formats import encoding, syntax
from langchain_fstools.formats.matching import plan_replacement
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target
from langchain_fstools.tools.writing import (
    changed,
    known_text,
    load_text,
    require_read,
    write_text,
)

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.writing import TextFile


class EditFileArgs(ToolArgs):
    """Arguments of edit_file."""

    file_path: str = Field(description="Absolute path.")
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The new text (must differ).")
    replace_all: bool = Field(default=False, description="Replace every match.")


DESCRIPTION = """Replace exact text in a file.

-[read_file] Read the file first; files not read, or changed since, are refused.
- `old_string` must match exactly, indentation included, without line numbers, and be
  unique: add surrounding lines, or set `replace_all`. An empty one creates a file.
-[apply_patch] For many changes at once use apply_patch."""


class EditFileTool(FileTool):
    """Replace a unique (or every) occurrence of a string, preserving bytes around it."""

    name: str = "edit_file"
    description: str = DESCRIPTION
    args_schema: type[EditFileArgs] = EditFileArgs
    read_only: bool = False
    needs_read: ClassVar[bool] = True

    def targets(self, args: EditFileArgs) -> list[Target]:
        """A write of `file_path`."""
        return [Target("write", args.file_path)]

    def _effect(self, scope: CallScope, args: EditFileArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.file_path)
        if path.lower().endswith(".ipynb"):
            raise errors.UseNotebookEdit(path)
        if args.old_string == args.new_string:
            raise errors.NoOpEdit(path)
        known = known_text(scope, path) if args.old_string else None
        if known is not None:
            try:
                return (yield from _replace(scope, known, args))
            except _STALE_MAY_CAUSE:
                pass  # the file may have changed since: edit it afresh
        try:
            info: FileInfo | None = yield from calls.stat(path)
        except FileNotFoundError:
            if args.old_string:
                raise
            info = None
        if info is not None and info.is_dir:
            raise IsADirectoryError(21, "Is a directory", path)
        if not args.old_string:
            return (yield from _create(scope, path, info, args.new_string))
        assert info is not None  # noqa: S101 - a missing file re-raised above
        require_read(scope, info, whole=False)
        return (yield from _replace(scope, (yield from load_text(scope, info)), args))


_STALE_MAY_CAUSE = (
    errors.VersionConflict,
    errors.NoMatch,
    errors.AmbiguousMatch,
    syntax.SyntaxBroken,
    errors.FileTooLarge,
    errors.InvalidArgument,
)
"""What an edit of the kept text raises, before writing anything, if the file changed
since: the edit is then made afresh, and its errors are the current file's."""


def _replace(scope: CallScope, current: TextFile, args: EditFileArgs) -> Effect[ToolOutcome]:
    """Replace `old_string` in `current`, written only if the file is still at its version.

    `current` is the file as read now, or as the toolkit kept it at the version the
    agent read (`known_text`): one round trip, the conditional write.
    """
    path = current.info.path
    plan = plan_replacement(
        current.text, args.old_string, args.new_string, replace_all=args.replace_all
    )
    if plan == 0:
        raise errors.NoMatch(path)
    if isinstance(plan, int):
        raise errors.AmbiguousMatch(path, plan)
    written = yield from write_text(
        scope,
        path,
        plan.text,
        codec=current.codec,
        old_text=current.text,
        expected_version=current.info.version,
    )
    how = {
        "exact": "",
        "quotes": " (matched after normalising curly quotes; the file's quote style was kept)",
        "line_numbers": " (matched after removing line-number prefixes from old_string)",
    }[plan.matched_by]
    text = f"Edited {path}: replaced {plural(plan.count, 'occurrence')}{how}.\n{written.diff}"
    artifact = {
        "path": path,
        "replacements": plan.count,
        "matched_by": plan.matched_by,
        "encoding": current.codec.label,
        "patch": written.patch,
        "version": written.info.version,
    }
    return changed(text, artifact, written.syntax, [written.change])


def _create(
    scope: CallScope, path: str, info: FileInfo | None, content: str
) -> Effect[ToolOutcome]:
    """An empty old_string: create the file, or fill an existing empty one."""
    codec, expected = encoding.UTF8, ABSENT
    if info is not None:
        existing = yield from load_text(scope, info)
        if existing.text:
            raise errors.FileAlreadyExists(path)
        codec, expected = existing.codec, info.version
    written = yield from write_text(
        scope, path, content, codec=codec, old_text="", expected_version=expected, whole=True
    )
    text = f"Created {path} ({plural(written.lines, 'line')}, {plural(written.info.size, 'byte')})."
    artifact = {
        "path": path,
        "replacements": 0,
        "created": info is None,
        "patch": written.patch,
        "version": written.info.version,
    }
    return changed(text, artifact, written.syntax, [written.change])


__all__ = ["DESCRIPTION", "EditFileArgs", "EditFileTool"]
