"""read_file for images and PDFs: content blocks for the model, records for tracking."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from langchain_fstools import errors
from langchain_fstools.core import calls
from langchain_fstools.core.wording import plural
from langchain_fstools.formats import image, notebook, pdf
from langchain_fstools.formats.kinds import Unreadable
from langchain_fstools.formats.text import line_rows
from langchain_fstools.tools.base import CallScope, ToolOutcome
from langchain_fstools.tools.reads import after_read

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect

UNCHANGED = (
    "File unchanged since your last read: the {what} of {path} you read earlier is still current."
)


def read_image(scope: CallScope, info: FileInfo, mime: str) -> Effect[ToolOutcome]:
    """An image block scaled to the model's limits, with a text block describing it."""
    stub = _unchanged(scope, info, "image", "image")
    if stub is not None:
        return stub
    data = yield from _load(scope, info, "image")
    try:
        prepared = image.prepare(data, scope.context.settings.image_limits)
    except Unreadable as exc:
        raise errors.UnreadableMedia(info.path, "image", exc.reason) from None
    (width, height), (sent_w, sent_h) = prepared.original_size, prepared.size
    note = (
        f"Image {info.path}: {prepared.original_format} {width}x{height}"
        f"{f', {prepared.frames} frames (first shown)' if prepared.frames > 1 else ''}; "
        f"sent as {prepared.mime_type} {sent_w}x{sent_h} ({plural(len(prepared.data), 'byte')})."
    )
    blocks: list[str | dict[str, Any]] = [
        {"type": "text", "text": note},
        {
            "type": "image",
            "base64": base64.b64encode(prepared.data).decode("ascii"),
            "mime_type": prepared.mime_type,
        },
    ]
    _record(scope, info, "image")
    artifact = {
        "path": info.path,
        "kind": "image",
        "source_mime_type": mime,
        "original_size": [width, height],
        "sent_size": [sent_w, sent_h],
        "sent_bytes": len(prepared.data),
        "version": info.version,
    }
    return ToolOutcome(blocks, artifact)


def read_pdf(scope: CallScope, info: FileInfo, pages: str | None) -> Effect[ToolOutcome]:
    """Page text with `--- Page N ---` markers, optionally the pages as a file block."""
    data = yield from _load(scope, info, "PDF")
    try:
        reader = pdf.open_pdf(data)
    except Unreadable as exc:
        raise errors.UnreadableMedia(info.path, "PDF", exc.reason) from None
    settings = scope.context.settings
    count = len(reader.pages)
    if pages is None:
        if count > settings.pdf_pages_without_range:
            raise errors.InvalidArgument(
                "pages",
                f'{info.path} has {plural(count, "page")}; give pages, e.g. pages="1-5" '
                f"(at most {settings.pdf_pages_per_call} per call)",
            )
        numbers = list(range(1, count + 1))
    else:
        numbers = pdf.parse_pages(pages, count)
    if len(numbers) > settings.pdf_pages_per_call:
        raise errors.InvalidArgument(
            "pages",
            f"at most {plural(settings.pdf_pages_per_call, 'page')} per call; ask for fewer",
        )
    view = "pages:" + ",".join(map(str, numbers))
    stub = _unchanged(scope, info, view, f"pages {_spell(numbers)}")
    if stub is not None:
        return stub
    try:
        extracted = pdf.extract(reader, numbers)
    except Unreadable as exc:
        raise errors.UnreadableMedia(info.path, "PDF", exc.reason) from None
    text, shown = _within_budget(scope, info.path, extracted)
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": text}]
    if settings.pdf_file_blocks:
        blocks.append(
            {
                "type": "file",
                "base64": base64.b64encode(pdf.subset(reader, shown)).decode("ascii"),
                "mime_type": "application/pdf",
                "filename": info.name,
            }
        )
    _record(scope, info, view)
    artifact = {"path": info.path, "kind": "pdf", "page_count": count, "pages": shown}
    return ToolOutcome(blocks if len(blocks) > 1 else text, artifact)


def read_notebook(
    scope: CallScope, info: FileInfo, offset: int, limit: int | None
) -> Effect[ToolOutcome]:
    """Cells with ids, types, numbered sources and outputs (images as image blocks)."""
    view = f"cells:{offset}:{limit}"
    stub = _unchanged(scope, info, view, "cells")
    if stub is not None:
        return stub
    data = yield from _load(scope, info, "notebook")
    try:
        book = notebook.parse(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, Unreadable) as exc:
        reason = getattr(exc, "reason", "it is not UTF-8 text")
        raise errors.UnreadableMedia(info.path, "notebook", reason) from None
    total = len(book.cells)
    if offset > max(total, 1):
        raise errors.InvalidArgument("offset", f"the notebook has {plural(total, 'cell')}")
    last_allowed = total if limit is None else min(total, offset + limit - 1)
    blocks = _NotebookBlocks(scope)
    kernel = book.get("metadata", {}).get("kernelspec", {}).get("name", "unknown")
    version = f"{book.get('nbformat')}.{book.get('nbformat_minor')}"
    shown = offset - 1
    for index in range(offset - 1, last_allowed):
        if not blocks.add_cell(book, index) and shown >= offset:
            break
        shown = index + 1
    header = (
        f"Notebook {info.path}: {plural(total, 'cell')} (nbformat {version}, kernel {kernel}); "
        f"showing cells {offset}-{shown}."
    )
    footer = ""
    if shown < total:
        footer = f"(Showing cells {offset}-{shown} of {total}. Continue with offset={shown + 1}.)"
    _record(scope, info, view)
    artifact = {"path": info.path, "kind": "notebook", "cells": total, "shown": [offset, shown]}
    return ToolOutcome(blocks.finish(header, footer), artifact)


class _NotebookBlocks:
    """Text and image blocks of a notebook read, within the token budget."""

    def __init__(self, scope: CallScope) -> None:
        self._scope = scope
        self._budget = scope.context.settings.read_token_budget
        self._used = 0
        self._blocks: list[str | dict[str, Any]] = []
        self._text: list[str] = []

    def add_cell(self, book: Any, index: int) -> bool:
        """Add one cell; False (and nothing added) when it does not fit the budget."""
        cell = book.cells[index]
        kind = cell.get("cell_type", "code")
        count = cell.get("execution_count")
        counted = f' execution_count="{count}"' if count is not None else ""
        lines = notebook.source(cell).split("\n")
        rows = "\n".join(row for n, line in enumerate(lines, 1) for row in line_rows(n, line))
        parts = [
            f'<cell id="{notebook.cell_id(book, index)}" type="{kind}"{counted}>\n{rows}\n</cell>'
        ]
        images: list[notebook.Output] = []
        for output in notebook.outputs(cell):
            if output.kind == "image":
                images.append(output)
            else:
                tag = "output error" if output.kind == "error" else "output"
                parts.append(f"<{tag}>\n{output.text}\n</output>")
        text = "\n".join(parts)
        cost = self._scope.context.settings.count_tokens(text)
        if self._used and self._used + cost > self._budget:
            return False
        self._used += cost
        self._text.append(text)
        for output in images:
            self._image(output)
        return True

    def _image(self, output: notebook.Output) -> None:
        try:
            prepared = image.prepare(output.image, self._scope.context.settings.image_limits)
        except Unreadable as exc:
            self._text.append(f"<output>(an image that cannot be shown: {exc.reason})</output>")
            return
        self._flush()
        self._blocks.append(
            {
                "type": "image",
                "base64": base64.b64encode(prepared.data).decode("ascii"),
                "mime_type": prepared.mime_type,
            }
        )

    def _flush(self) -> None:
        if self._text:
            self._blocks.append({"type": "text", "text": "\n\n".join(self._text)})
            self._text = []

    def finish(self, header: str, footer: str) -> str | list[str | dict[str, Any]]:
        """The blocks, header first; plain text when there is no image."""
        if footer:
            self._text.append(footer)
        self._flush()
        if not self._blocks:
            return header
        first = self._blocks[0]  # a text block: a cell's text always precedes its images
        if not isinstance(first, dict):
            raise TypeError("notebook blocks must be dicts")
        first["text"] = f"{header}\n\n{first['text']}"
        return str(first["text"]) if len(self._blocks) == 1 else self._blocks


def _within_budget(scope: CallScope, path: str, extracted: pdf.PdfPages) -> tuple[str, list[int]]:
    budget = scope.context.settings.read_token_budget
    count_tokens = scope.context.settings.count_tokens
    parts: list[str] = []
    shown: list[int] = []
    used = 0
    for number, page_text in extracted.pages:
        part = f"--- Page {number} ---\n{page_text.strip() or '(no text on this page)'}"
        cost = count_tokens(part)
        if parts and used + cost > budget:
            break
        parts.append(part)
        shown.append(number)
        used += cost
    pages = plural(extracted.page_count, "page")
    header = f"PDF {path}: {pages}; showing pages {_spell(shown)}."
    rest = [n for n, _ in extracted.pages if n not in shown]
    footer = (
        f"\n\n(Output reached the token budget; read the remaining pages with "
        f'pages="{_spell(rest)}".)'
        if rest
        else ""
    )
    return header + "\n\n" + "\n\n".join(parts) + footer, shown


def _spell(numbers: list[int]) -> str:
    """`[1, 2, 3, 5]` → `1-3,5`."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _load(scope: CallScope, info: FileInfo, kind: str) -> Effect[bytes]:
    limit = scope.context.settings.max_media_bytes
    if info.size > limit:
        raise errors.UnreadableMedia(
            info.path, kind, f"it is {plural(info.size, 'byte')}, above the {limit:,}-byte limit"
        )
    return (yield from calls.read_bytes(info.path))


def _unchanged(scope: CallScope, info: FileInfo, view: str, what: str) -> ToolOutcome | None:
    if scope.reads.repeats(info.path, version=info.version, view=view):
        text = UNCHANGED.format(what=what, path=info.path)
        return ToolOutcome(text, {"path": info.path, "unchanged": True, "version": info.version})
    return None


def _record(scope: CallScope, info: FileInfo, view: str) -> None:
    previous = scope.reads.get(info.path)
    record = after_read(
        previous, version=info.version, first=1, last=0, total_lines=None, view=view
    )
    scope.reads.put(info.path, record)


__all__ = ["read_image", "read_notebook", "read_pdf"]
