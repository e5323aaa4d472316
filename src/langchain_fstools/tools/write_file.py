"""write_file: create a file, or replace one the agent has read in full."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from langchain_fstools.backends import ABSENT
from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.formats import encoding
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.targets import Target
from langchain_fstools.tools.writing import changed, load_text, require_read, write_text

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect


class WriteFileArgs(ToolArgs):
    """Arguments of write_file."""

    file_path: str = Field(description="Absolute path.")
    content: str = Field(description="The whole new content.")


DESCRIPTION = """Create a file, or replace one whole (parent folders are created).

-[read_file] Overwriting needs a read of the whole file first.
-[edit_file] Prefer edit_file to change part of a file."""


class WriteFileTool(FileTool):
    """Create or overwrite a file atomically, enforcing read-before-write.

    The artifact holds the path, whether the file was created, its size, line count,
    encoding and new version, and the unified `patch` of an overwrite (None for a
    created file: its content is the call's input, already in the trace and thread).
    """

    name: str = "write_file"
    description: str = DESCRIPTION
    args_schema: type[WriteFileArgs] = WriteFileArgs
    read_only: bool = False
    needs_read: ClassVar[bool] = True
    idempotent: ClassVar[bool | None] = True  # the same content twice leaves one file

    def targets(self, args: WriteFileArgs) -> list[Target]:
        """A write of `file_path`."""
        return [Target("write", args.file_path)]

    def _effect(self, scope: CallScope, args: WriteFileArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.file_path)
        try:
            info = yield from calls.stat(path)
        except FileNotFoundError:
            info = None
        codec, old_text, expected = encoding.UTF8, "", ABSENT
        content = args.content
        if info is not None:
            if info.is_dir:
                raise IsADirectoryError(21, "Is a directory", path)
            require_read(scope, info, whole=True)
            existing = yield from load_text(scope, info)
            codec, old_text, expected = existing.codec, existing.text, info.version
            if _mostly_crlf(old_text):
                content = content.replace("\r\n", "\n").replace("\n", "\r\n")
        written = yield from write_text(
            scope,
            path,
            content,
            codec=codec,
            old_text=old_text,
            expected_version=expected,
            whole=True,
        )
        verb = "Created" if info is None else "Updated"
        text = (
            f"{verb} {path} ({plural(written.lines, 'line')}, {plural(written.info.size, 'byte')})."
        )
        if info is not None:
            text += f"\n{written.diff}" if written.diff else " The content is unchanged."
        artifact = {
            "path": path,
            "created": info is None,
            "bytes": written.info.size,
            "lines": written.lines,
            "encoding": codec.label,
            "patch": None if info is None else written.patch,
            "version": written.info.version,
        }
        return changed(text, artifact, written.syntax, [written.change])


def _mostly_crlf(text: str) -> bool:
    newlines = text.count("\n")
    return newlines > 0 and text.count("\r\n") * 2 > newlines


__all__ = ["DESCRIPTION", "WriteFileArgs", "WriteFileTool"]
