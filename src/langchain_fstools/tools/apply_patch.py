"""apply_patch: add, delete, update and move files with one patch, all or nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import paths
from langchain_fstools.formats.diff import snippet
from langchain_fstools.formats.text import count_lines
from langchain_fstools.lsp.report import TextChange
from langchain_fstools.patch.apply import commit, plan
from langchain_fstools.patch.apply import summary as patch_summary
from langchain_fstools.patch.argument import patch_paths, patch_text
from langchain_fstools.patch.parser import parse_patch
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.reads import after_write
from langchain_fstools.tools.targets import Target
from langchain_fstools.tools.writing import changed, syntax_reports

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect


class ApplyPatchArgs(ToolArgs):
    """Arguments of apply_patch."""

    patch: str = Field(description="From '*** Begin Patch' to '*** End Patch'.")


DESCRIPTION = """Add, delete, update or move files with one patch, all or nothing. Format:

*** Begin Patch
*** Update File: /src/app.py
@@ def run(self):
     setup()
-    return 1
+    return 2
*** Add File: /src/new.py
+print("hi")
*** Delete File: /src/old.py
*** End Patch

- `*** Move to: PATH` may follow an Update line.
- A chunk starts with `@@` or `@@ LINE` (a line above the change, such as a def); its
  lines start with ` `, `-` or `+`. Give 3 unchanged lines around each change, exact,
  without line numbers; chunks in file order. `*** End of File` anchors one at the end.
- Files changed since you read them are refused.
- On a mismatch the error shows the closest lines: resend it all, fixed."""

_MIN_DIFF_LINES = 8


class ApplyPatchTool(FileTool):
    """Apply a Codex-format patch across files, atomically."""

    name: str = "apply_patch"
    description: str = DESCRIPTION
    args_schema: type[ApplyPatchArgs] = ApplyPatchArgs
    read_only: bool = False

    def targets(self, args: ApplyPatchArgs) -> list[Target]:
        """A write of every file the patch names (move targets too).

        Relative paths start from a `cd dir && apply_patch ...` directory as the call
        does; a patch naming no valid file gives one unknown write, which asks.
        """
        return write_targets(args.patch)

    def _effect(self, scope: CallScope, args: ApplyPatchArgs) -> Effect[ToolOutcome]:
        text, workdir = patch_text(args.patch)
        return (yield from run_patch(scope, text, workdir))


def write_targets(patch: str) -> list[Target]:
    """The writes of a patch: one per file it names, or one unknown write."""
    return [Target("write", path) for path in patch_paths(patch)] or [Target("write", None)]


def run_patch(scope: CallScope, text: str, workdir: str = paths.ROOT) -> Effect[ToolOutcome]:
    """Apply patch text as the apply_patch tool does, for tools that find a patch elsewhere.

    Meant for `execute`, to run `apply_patch <<'EOF' ...` commands in-process (see
    `patch.invocation.parse_invocation`). An Update or Delete needs no earlier read (the
    chunks' context and removed lines are checked against the file), but a file the
    agent read at another version is refused. Afterwards the agent may edit the files
    the patch changed; it knows every line of a file only if it added it or had seen all
    of it before, so a later full overwrite may still need a read. The syntax errors the patch
    introduces are reported, or (`syntax_check="refuse"`) the whole patch is refused.

    Args:
        scope: The calling tool's scope (backend and read records).
        text: The patch.
        workdir: The directory relative paths start from. Default: `/`.
    """
    parsed = parse_patch(text)

    def check(info: FileInfo) -> None:
        record = scope.reads.get(info.path)
        if record is not None and record["version"] != info.version:
            raise errors.ChangedSinceRead(info.path)

    changes = yield from plan(
        parsed,
        workdir=workdir,
        max_bytes=scope.context.settings.max_edit_bytes,
        check=check,
    )
    reports = syntax_reports(
        scope,
        [
            (change.final_path, change.old_text, change.new_text)
            for change in changes
            if change.kind != "delete"
        ],
    )
    versions = yield from commit(changes)
    summary = patch_summary(changes)
    updated = [change for change in changes if change.kind == "update"]
    budget = max(_MIN_DIFF_LINES, scope.context.settings.diff_lines // max(1, len(updated)))
    files = []
    diffs = []
    for change in changes:
        patch = change.unified_patch()
        version = versions.get(change.final_path)
        if version is not None:
            record = after_write(
                scope.reads.get(change.path),
                previous_version=change.version,
                version=version,
                total_lines=count_lines(change.new_text),
                whole=change.kind == "add",
            )
            scope.reads.put(change.final_path, record)
        if change.kind == "update" and change.old_text != change.new_text:
            diffs.append(f"{change.final_path}:\n{snippet(patch, budget)}")
        files.append(
            {
                "path": change.path,
                "action": change.kind,
                "move_to": change.move_to,
                "encoding": change.encoding,
                "patch": patch,
                "version": version,
            }
        )
    content = "\n\n".join([summary, *diffs])
    texts = [
        TextChange(
            change.final_path,
            None if change.kind == "add" else change.old_text,
            None if change.kind == "delete" else change.new_text,
        )
        for change in changes
    ]
    texts += [TextChange(change.path, None, None) for change in changes if change.move_to]
    return changed(content, {"files": files, "workdir": workdir}, reports, texts)


__all__ = [
    "DESCRIPTION",
    "ApplyPatchArgs",
    "ApplyPatchTool",
    "run_patch",
    "write_targets",
]
