"""notebook_edit: replace, insert or delete one cell of a Jupyter notebook."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import calls, paths
from langchain_fstools.formats import notebook, syntax
from langchain_fstools.formats.kinds import Unreadable
from langchain_fstools.lsp.report import TextChange
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome, named_in
from langchain_fstools.tools.targets import Target
from langchain_fstools.tools.writing import (
    changed,
    enforce_syntax,
    load_text,
    require_read,
    syntax_report,
    write_text,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.core.calls import Effect

_NOTEBOOK_NAME = re.compile(r"\.ipynb\b", re.IGNORECASE)


class NotebookEditArgs(ToolArgs):
    """Arguments of notebook_edit."""

    notebook_path: str = Field(description="Absolute path.")
    new_source: str = Field(description="The cell's new source (ignored for delete).")
    cell_id: str | None = Field(
        default=None, description="The cell to replace, delete or insert after."
    )
    cell_type: Literal["code", "markdown", "raw"] | None = Field(
        default=None, description="Required for insert."
    )
    edit_mode: Literal["replace", "insert", "delete"] = Field(
        default="replace", description="What to do with the cell."
    )


DESCRIPTION = """Replace, insert or delete one cell of a Jupyter notebook.

-[read_file] Read it first (read_file shows cell ids); unread or changed notebooks are refused.
- Replacing clears a code cell's outputs; insert goes after `cell_id`, or at the top
  without one."""


class NotebookEditTool(FileTool):
    """Replace, insert or delete a notebook cell by id, validated and written atomically."""

    name: str = "notebook_edit"
    description: str = DESCRIPTION
    args_schema: type[NotebookEditArgs] = NotebookEditArgs
    read_only: bool = False
    needs_read: ClassVar[bool] = True

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered once a notebook was named in the thread (asked for, listed, read)."""
        del state
        return named_in(messages, _NOTEBOOK_NAME)

    def targets(self, args: NotebookEditArgs) -> list[Target]:
        """A write of `notebook_path`."""
        return [Target("write", args.notebook_path)]

    def _effect(self, scope: CallScope, args: NotebookEditArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.notebook_path)
        if not path.lower().endswith(".ipynb"):
            raise errors.InvalidArgument(
                "notebook_path", "it is not a .ipynb file; use edit_file for other files"
            )
        info = yield from calls.stat(path)
        if info.is_dir:
            raise IsADirectoryError(21, "Is a directory", path)
        require_read(scope, info, whole=False)
        current = yield from load_text(scope, info)
        try:
            book = notebook.parse(current.text)
        except Unreadable as exc:
            raise errors.UnreadableMedia(path, "notebook", exc.reason) from None
        before = _code(book, args.cell_id) if args.edit_mode == "replace" else None
        old_document = _document(book)
        summary = _apply(book, args)
        after = None if args.edit_mode == "delete" else _code(book, summary[1])
        language = syntax.kernel_language(notebook.kernel_language(book))
        report = None
        if after is not None and language is not None:
            report = syntax_report(scope, path, before, after, language=language, cell=summary[1])
        reports = enforce_syntax(scope, [report])
        try:
            text = notebook.serialize(book, trailing_newline=current.text.endswith("\n"))
        except Unreadable as exc:
            raise errors.InvalidArgument("new_source", exc.reason) from None
        written = yield from write_text(
            scope,
            path,
            text,
            codec=current.codec,
            old_text=current.text,
            expected_version=info.version,
        )
        artifact = {
            "path": path,
            "edit_mode": args.edit_mode,
            "cell_id": summary[1],
            "patch": written.patch,
            "version": written.info.version,
        }
        new_document = _document(book)
        checked = []
        if old_document is not None and new_document is not None:
            checked.append(
                TextChange(
                    path,
                    old_document[0],
                    new_document[0],
                    document=f"{path}#cells.py",
                    old_cells=old_document[1],
                    new_cells=new_document[1],
                )
            )
        return changed(f"{summary[0]} in {path}.", artifact, reports, checked)


def _code(book: notebook.NotebookNode, cell_id: str | None) -> str | None:
    """The source of code cell `cell_id` as its kernel's parser reads it, else None."""
    index = None if cell_id is None else notebook.find(book, cell_id)
    if index is None or book.cells[index].get("cell_type") != "code":
        return None
    text = notebook.source(book.cells[index])
    is_python = syntax.kernel_language(notebook.kernel_language(book)) == "python"
    return notebook.ipython_as_python(text) if is_python else text


def _document(book: notebook.NotebookNode) -> tuple[str, tuple[tuple[int, str], ...]] | None:
    """A Python notebook's code cells as one text for the language servers.

    Returns the text and where each cell starts (0-based line, cell id); None for
    another kernel's notebook. A cell of another language (`%%bash`) is left empty.
    """
    if syntax.kernel_language(notebook.kernel_language(book)) != "python":
        return None
    lines: list[str] = []
    cells: list[tuple[int, str]] = []
    for index, cell in enumerate(book.cells):
        if cell.get("cell_type") == "code":
            cells.append((len(lines), notebook.cell_id(book, index)))
            code = notebook.ipython_as_python(notebook.source(cell)) or ""
            lines += [*code.splitlines(), ""]
    return "\n".join(lines) + "\n", tuple(cells)


def _apply(book: notebook.NotebookNode, args: NotebookEditArgs) -> tuple[str, str]:
    """Change `book` in place; return a sentence and the cell id concerned."""
    index = None
    if args.cell_id is not None:
        index = notebook.find(book, args.cell_id)
        if index is None:
            known = ", ".join(notebook.cell_id(book, i) for i in range(min(len(book.cells), 20)))
            raise errors.InvalidArgument("cell_id", f"no cell {args.cell_id!r}; cells are: {known}")
    if args.edit_mode == "insert":
        if args.cell_type is None:
            raise errors.InvalidArgument("cell_type", "insert needs code, markdown or raw")
        cell = notebook.new_cell(book, args.cell_type, args.new_source)
        position = 0 if index is None else index + 1
        book.cells.insert(position, cell)
        return (
            f"Inserted a {args.cell_type} cell {notebook.cell_id(book, position)}",
            notebook.cell_id(book, position),
        )
    if index is None:
        raise errors.InvalidArgument("cell_id", f"{args.edit_mode} needs the id of a cell")
    target = notebook.cell_id(book, index)
    if args.edit_mode == "delete":
        del book.cells[index]
        return f"Deleted cell {target}", target
    cell = book.cells[index]
    if args.cell_type is not None and args.cell_type != cell.get("cell_type"):
        replacement = notebook.new_cell(book, args.cell_type, args.new_source)
        if "id" in cell:
            replacement["id"] = cell["id"]
        replacement["metadata"] = cell.get("metadata", {})
        book.cells[index] = replacement
    else:
        cell["source"] = args.new_source
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return f"Replaced cell {target}", target


__all__ = ["DESCRIPTION", "NotebookEditArgs", "NotebookEditTool"]
