"""Jupyter notebooks through nbformat: parse, address cells, summarise outputs, write back.

Cells are addressed by their `id` (nbformat 4.5+); cells of older notebooks, which have
no ids, are addressed as `cell-1`, `cell-2`, ... by position. Writing uses nbformat's
own serialisation (one-space indent, sorted keys), which is what Jupyter writes, so
cells an edit does not touch keep their bytes in notebooks Jupyter saved.
"""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import nbformat
from nbformat import NotebookNode

from langchain_fstools.formats.kinds import Unreadable

MAX_OUTPUT_CHARS = 2000
"""Text kept per output (stream, result, traceback)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LINE_MAGIC = re.compile(r"^([ \t]*)[%!].*$", re.MULTILINE)
CellType = Literal["code", "markdown", "raw"]


@dataclass(frozen=True, slots=True)
class Output:
    """One cell output, reduced to what a model needs."""

    kind: Literal["text", "image", "error"]
    text: str = ""
    image: bytes = b""
    mime_type: str = ""


def parse(text: str) -> NotebookNode:
    """Read a notebook without converting its version.

    Raises:
        Unreadable: not JSON, or not a notebook.
    """
    try:
        notebook: NotebookNode = nbformat.reads(text, as_version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds
        raise Unreadable(f"it is not a valid notebook ({type(exc).__name__})") from None
    if not isinstance(notebook.get("cells"), list):
        raise Unreadable("it has no list of cells")
    return notebook


def cell_id(notebook: NotebookNode, index: int) -> str:
    """The id a cell is addressed by."""
    return str(notebook.cells[index].get("id") or f"cell-{index + 1}")


def find(notebook: NotebookNode, wanted: str) -> int | None:
    """The index of the cell with id `wanted`, or None."""
    for index in range(len(notebook.cells)):
        if cell_id(notebook, index) == wanted:
            return index
    return None


def source(cell: NotebookNode) -> str:
    """A cell's source as one string."""
    value = cell.get("source", "")
    return "".join(value) if isinstance(value, list) else str(value)


def kernel_language(notebook: NotebookNode) -> str | None:
    """The language of the notebook's kernel (`python`, `julia`, ...), from its metadata."""
    metadata = notebook.get("metadata") or {}
    for value in (
        (metadata.get("kernelspec") or {}).get("language"),
        (metadata.get("language_info") or {}).get("name"),
    ):
        if isinstance(value, str) and value:
            return value
    return None


def ipython_as_python(text: str) -> str | None:
    """A Python cell's source as plain Python, for a parser: line numbers are kept.

    IPython line magics and shell escapes (`%timeit f()`, `!pip install x`) become
    `pass` at their indentation. A cell magic (`%%bash`) makes the whole cell another
    language: None.
    """
    if text.lstrip().startswith("%%"):
        return None
    return _LINE_MAGIC.sub(r"\1pass", text)


def outputs(cell: NotebookNode) -> list[Output]:
    """A code cell's outputs: text cut to `MAX_OUTPUT_CHARS`, images decoded."""
    found: list[Output] = []
    for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
        kind = output.get("output_type")
        if kind == "stream":
            found.append(
                Output(
                    "text", _cut(f"[{output.get('name', 'stream')}] " + _join(output.get("text")))
                )
            )
        elif kind in ("execute_result", "display_data"):
            found.extend(_rich(output.get("data", {})))
        elif kind == "error":
            trace = _ANSI.sub("", "\n".join(output.get("traceback", [])))
            found.append(
                Output("error", _cut(f"{output.get('ename')}: {output.get('evalue')}\n{trace}"))
            )
    return found


def _rich(data: dict[str, Any]) -> list[Output]:
    for mime in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        if mime in data:
            payload = _join(data[mime])
            try:
                return [Output("image", image=base64.b64decode(payload), mime_type=mime)]
            except ValueError:
                break
    if "text/plain" in data:
        return [Output("text", _cut(_join(data["text/plain"])))]
    return []


def new_cell(notebook: NotebookNode, cell_type: CellType, text: str) -> NotebookNode:
    """A new cell of `cell_type`, with an id when the notebook's version has ids."""
    maker = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    cell: NotebookNode = maker(text)  # type: ignore[no-untyped-call]
    if _has_ids(notebook):
        cell["id"] = secrets.token_hex(4)
    else:
        cell.pop("id", None)
    return cell


def serialize(notebook: NotebookNode, *, trailing_newline: bool) -> str:
    """Validate and serialise like Jupyter does.

    Raises:
        Unreadable: the edited notebook is not valid.
    """
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        reason = str(exc).splitlines()[0]
        raise Unreadable(f"the result would not be a valid notebook ({reason})") from None
    text: str = nbformat.writes(notebook, version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
    return text + "\n" if trailing_newline and not text.endswith("\n") else text


def _has_ids(notebook: NotebookNode) -> bool:
    return (notebook.get("nbformat", 4), notebook.get("nbformat_minor", 0)) >= (4, 5)


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "… (output cut)"


__all__ = [
    "MAX_OUTPUT_CHARS",
    "CellType",
    "NotebookNode",
    "Output",
    "cell_id",
    "find",
    "ipython_as_python",
    "kernel_language",
    "new_cell",
    "outputs",
    "parse",
    "serialize",
    "source",
]
