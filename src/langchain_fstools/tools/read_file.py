"""read_file: numbered lines of a text file, one window at a time."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import calls, paths
from langchain_fstools.formats import encoding, kinds
from langchain_fstools.formats.kinds import ContentKind
from langchain_fstools.formats.text import Reader, Window, read_window
from langchain_fstools.tools._base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools._media import read_image, read_notebook, read_pdf
from langchain_fstools.tools.tracking import after_read

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect


class ReadFileArgs(ToolArgs):
    """Arguments of read_file."""

    file_path: str = Field(description="Absolute path of the file to read, e.g. /src/app.py.")
    offset: int | None = Field(
        default=None, description="1-based line number to start reading at. Default: 1."
    )
    limit: int | None = Field(
        default=None, description="Maximum number of lines (rows) to read. Default: 2000."
    )
    pages: str | None = Field(
        default=None,
        description='PDF pages to read, e.g. "3", "1-5" or "2,4-6" (PDF files only).',
    )


DESCRIPTION = """Read a file from the workspace.

- `file_path` is an absolute workspace path (`/` is the workspace root).
- Output is `cat -n` style: the line number, `→`, then the line. Line numbers start at 1.
- By default up to 2000 lines from the start are returned, within a budget of about
  25,000 tokens. When a file is longer, the output ends with the exact `offset` to pass
  to continue; read large files in windows with `offset` and `limit`.
- Lines longer than 5000 characters continue on rows numbered N.1, N.2, ...
- Read a file before editing or overwriting it: edit_file and write_file refuse files
  you have not read, or that changed since you read them.
- Reading the same unchanged range again, while its earlier result is still in the
  conversation, returns a short "unchanged" note: that text is still current.
- Images (PNG, JPEG, GIF, WebP) come back as images you can see, scaled to fit.
- PDFs come back as text with page markers; for PDFs over 10 pages give `pages`
  ("3", "1-5", "2,4-6"), at most 20 pages per call.
- Jupyter notebooks (.ipynb) come back as cells with ids, numbered sources and outputs
  (images as images); `offset`/`limit` count cells. Edit them with notebook_edit.
- Text files over 256 KB need `offset`/`limit` (or use grep to find the place).
- Text in UTF-8, UTF-16 and Latin-1 is read; other binary files are refused. To list a
  directory use ls; to find files use glob; to search contents use grep."""

UNCHANGED = (
    "File unchanged since your last read of this range: the content of {path} "
    "(lines {first}-{last}) you read earlier is still current."
)
EMPTY = "System reminder: File exists but has empty contents"
SHORTER = (
    "System reminder: {path} has only {total} lines, fewer than offset {offset}. "
    "Read with an offset of at most {total}."
)


class ReadFileTool(FileTool):
    """Read a text file as `cat -n` rows, windowed by offset, limit and a token budget."""

    name: str = "read_file"
    description: str = DESCRIPTION
    args_schema: type[ReadFileArgs] = ReadFileArgs

    def _effect(self, scope: CallScope, args: ReadFileArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.file_path)
        offset, limit = _window_arguments(args, scope.context.settings.read_limit)
        info = yield from _stat_or_suggest(path)
        if info.is_dir:
            raise IsADirectoryError(21, "Is a directory", path)
        head = yield from calls.read_bytes(path, 0, encoding.SNIFF_BYTES)
        kind, mime = kinds.detect(head, path)
        if args.pages is not None and kind is not ContentKind.PDF:
            raise errors.InvalidArgument("pages", "it applies to PDF files only")
        if kind is ContentKind.BINARY:
            raise errors.BinaryFile(path)
        if kind is ContentKind.IMAGE:
            return (yield from read_image(scope, info, mime or "image/png"))
        if kind is ContentKind.PDF:
            return (yield from read_pdf(scope, info, args.pages))
        if kind is ContentKind.NOTEBOOK:
            return (yield from read_notebook(scope, info, offset, args.limit))
        return (yield from _read_text(scope, info, head, args, offset, limit))


def _read_text(  # noqa: PLR0917 - one read's facts
    scope: CallScope, info: FileInfo, head: bytes, args: ReadFileArgs, offset: int, limit: int
) -> Effect[ToolOutcome]:
    path = info.path
    view = f"lines:{offset}:{limit}"
    previous = scope.reads.get(path)
    repeated = scope.reads.repeats(path, version=info.version, view=view)
    if repeated is not None:
        last = offset + limit - 1
        if repeated["total_lines"] is not None:
            last = min(last, repeated["total_lines"])
        text = UNCHANGED.format(path=path, first=offset, last=last)
        return ToolOutcome(text, {"path": path, "unchanged": True, "version": info.version})
    cap = scope.context.settings.read_max_bytes
    if cap and info.size > cap and args.offset is None and args.limit is None:
        raise errors.NeedsWindow(path, info.size, cap)
    codec = encoding.sniff(head)
    if codec is None:
        raise errors.BinaryFile(path)
    read, start = yield from _reader(scope, path, info, codec)
    index = scope.context.line_indexes.get(
        (id(scope.context.backend), path, info.version, codec.name), start=start
    )
    window = yield from read_window(
        read,
        index,
        codec="utf-8" if codec.name.startswith("utf-16") else codec.name,
        offset=offset,
        limit=limit,
        token_budget=scope.context.settings.read_token_budget,
        count_tokens=scope.context.settings.count_tokens,
    )
    seen_last = window.last_line - (1 if window.cut_line is not None else 0)
    scope.reads.put(
        path,
        after_read(
            previous,
            version=info.version,
            first=offset,
            last=seen_last,
            total_lines=window.total_lines,
            view=view,
        ),
    )
    artifact: dict[str, Any] = {
        "path": path,
        "kind": "text",
        "encoding": codec.label,
        "first_line": offset,
        "last_line": window.last_line,
        "total_lines": window.total_lines,
        "next_offset": window.next_offset,
        "stopped_by": window.stopped_by,
        "version": info.version,
    }
    return ToolOutcome(_render(path, window, offset, limit), artifact)


def _window_arguments(args: ReadFileArgs, default_limit: int) -> tuple[int, int]:
    offset = 1 if args.offset is None or args.offset == 0 else args.offset
    if offset < 0:
        raise errors.InvalidArgument("offset", "it is a 1-based line number and must be 1 or more")
    limit = default_limit if args.limit is None else args.limit
    if limit < 1:
        raise errors.InvalidArgument("limit", "it must be 1 or more")
    return offset, limit


def _stat_or_suggest(path: str) -> Effect[FileInfo]:
    try:
        return (yield from calls.stat(path))
    except FileNotFoundError:
        suggestions = yield from _near_spellings(path)
        raise errors.MissingFile(path, suggestions) from None


def _near_spellings(path: str) -> Effect[list[str]]:
    """Existing siblings whose names are close to the missing one."""
    directory, name = paths.parent(path), path.rsplit("/", 1)[-1]
    try:
        siblings = yield from calls.list_dir(directory)
    except OSError:
        return []
    names = [entry.name for entry in siblings]
    # macOS screenshots put a narrow no-break space (U+202F) before AM/PM.
    respelled = [name.replace(" AM", "\u202fAM").replace(" PM", "\u202fPM")]
    respelled.append(name.replace("\u202f", " "))
    exact = [n for n in respelled if n in names and n != name]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
    return [paths.join(directory, n) for n in dict.fromkeys(exact + close)]


def _reader(
    scope: CallScope, path: str, info: FileInfo, codec: encoding.TextCodec
) -> Effect[tuple[Reader, int]]:
    """Return how to read the file's bytes as lines, and where line 1 starts.

    Single-byte-newline encodings are read in place; UTF-16 is transcoded to UTF-8 in
    memory (bounded by `max_edit_bytes`), so one windowing algorithm serves all.
    """
    if not codec.name.startswith("utf-16"):

        def read_range(start: int, size: int) -> Effect[bytes]:
            return calls.read_bytes(path, start, size)

        return read_range, len(codec.bom)
    limit = scope.context.settings.max_edit_bytes
    if info.size > limit:
        raise errors.FileTooLarge(path, info.size, limit)
    data = yield from calls.read_bytes(path)
    transcoded = codec.decode(data, errors="replace").encode("utf-8")

    def read_memory(start: int, size: int) -> Effect[bytes]:
        return transcoded[start : start + size]
        yield  # pragma: no cover - makes this a generator

    return read_memory, 0


def _render(path: str, window: Window, offset: int, limit: int) -> str:
    if not window.rows:
        if window.total_lines == 0 or (window.total_lines is None and offset == 1):
            return EMPTY
        return SHORTER.format(path=path, total=window.total_lines, offset=offset)
    body = "\n".join(window.rows)
    footer = _footer(window, limit)
    return f"{body}\n\n{footer}" if footer else body


def _footer(window: Window, limit: int) -> str:
    notes: list[str] = []
    if window.cut_line is not None:
        notes.append(
            f"Line {window.cut_line} is too long to show whole in one read; "
            "only its beginning is shown."
        )
    if window.next_offset is not None:
        of_total = f" of {window.total_lines}" if window.total_lines is not None else ""
        reason = {
            "tokens": "Output reached the token budget. ",
            "limit": "",
            "cut": "",
            "end": "",
        }[window.stopped_by]
        notes.append(
            f"{reason}Showing lines {window.first_line}-{window.last_line}{of_total}. "
            f"Continue with offset={window.next_offset} (limit={limit})."
        )
    return f"({' '.join(notes)})" if notes else ""


__all__ = ["DESCRIPTION", "ReadFileArgs", "ReadFileTool"]
