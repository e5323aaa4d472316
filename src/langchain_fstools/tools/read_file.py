"""read_file: numbered lines of a text file, one window at a time."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any, ClassVar, Final

from pydantic import Field

from langchain_fstools import errors
from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.formats import encoding, kinds
from langchain_fstools.formats.kinds import ContentKind
from langchain_fstools.formats.text import (
    SEPARATOR,
    NoSuchRow,
    Reader,
    Window,
    read_window,
    row_label,
)
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.diagnosing import prepare_diagnostics
from langchain_fstools.tools.known_texts import in_place
from langchain_fstools.tools.media_reader import read_image, read_notebook, read_pdf
from langchain_fstools.tools.reads import after_read
from langchain_fstools.tools.targets import Target
from langchain_fstools.tools.writing import prepare_syntax

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.known_texts import KnownText


class ReadFileArgs(ToolArgs):
    """Arguments of read_file."""

    file_path: str = Field(description="Absolute path, e.g. /src/app.py.")
    offset: int | str | None = Field(
        default=None, description='1-based line to start at, or a row such as "12.3".'
    )
    limit: int | None = Field(default=None, description="Most rows to read.")
    pages: str | None = Field(default=None, description='PDF pages, e.g. "1-5".')


DESCRIPTION = """Read a file as rows `N<TAB>line`; a cut read ends with the `offset` to continue.

- Read a file before changing it; changes to files not read, or changed since, are refused.
- Images come back as images; PDFs as text (over {pdf_pages_without_range:*page} need
  `pages`, at most {pdf_pages_per_call:*page} a call); notebooks as cells with ids.
-[read_max_bytes] Files over {read_max_size} need `offset`/`limit`."""

UNCHANGED = (
    "File unchanged since your last read of this range: the content of {path} "
    "(lines {first}-{last}) you read earlier is still current."
)
EMPTY = "System reminder: File exists but has empty contents"
SHORTER = (
    "System reminder: {path} has only {lines}, fewer than offset {offset}. "
    "Read with an offset of at most {total}."
)


class ReadFileTool(FileTool):
    """Read a text file as `cat -n` rows, windowed by offset, limit and a token budget."""

    name: str = "read_file"
    description: str = DESCRIPTION
    args_schema: type[ReadFileArgs] = ReadFileArgs
    records_reads: ClassVar[bool] = True
    argument_defaults: ClassVar[dict[str, str]] = {
        "limit": "{read_limit:,}, fewer past {read_token_budget:*token}"
    }

    def targets(self, args: ReadFileArgs) -> list[Target]:
        """A read of `file_path`."""
        return [Target("read", args.file_path)]

    def _effect(self, scope: CallScope, args: ReadFileArgs) -> Effect[ToolOutcome]:
        path = paths.normalize(args.file_path)
        offset, row, limit = _window_arguments(args, scope.context.settings.read_limit)
        known = _known_rereadable(scope, path, args, view=_view(offset, row, limit))
        if known is not None:
            try:
                return (yield from _read_text(scope, known, (offset, row), limit, checked=True))
            except (errors.VersionConflict, OSError):
                pass  # changed, moved or gone since: read it afresh
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
            if row:
                raise errors.InvalidArgument("offset", "in a notebook it is a cell number")
            return (yield from read_notebook(scope, info, offset, args.limit))
        return (yield from _read_new_text(scope, info, head, args, (offset, row), limit))


def _view(offset: int, row: int, limit: int) -> str:
    """The read record's name for a window: which rows it asked for."""
    return f"lines:{row_label(offset, row)}:{limit}"


def _known_rereadable(
    scope: CallScope, path: str, args: ReadFileArgs, *, view: str
) -> KnownText | None:
    """The version of `path` read before, if this read may go to it without a `stat`.

    Not when the answer would depend on the file's current version before any byte is
    read: a repeat of a read still shown (answered with a note), a whole read of a file
    over the size cap (refused). Only text read in place (UTF-8, single-byte codecs).
    """
    known = scope.context.known_texts.get(scope.context.backend, path)
    if known is None or args.pages is not None or not in_place(known.codec):
        return None
    info = known.info
    if scope.reads.repeats(path, version=info.version, view=view) is not None:
        return None
    return None if _needs_window(scope, info, args) else known


def _needs_window(scope: CallScope, info: FileInfo, args: ReadFileArgs) -> bool:
    """Whether this is a whole read of a file over the size cap (refused: it needs a window)."""
    cap = scope.context.settings.read_max_bytes
    return bool(cap) and info.size > cap and args.offset is None and args.limit is None


def _read_new_text(  # noqa: PLR0917 - one read's facts
    scope: CallScope,
    info: FileInfo,
    head: bytes,
    args: ReadFileArgs,
    begin: tuple[int, int],
    limit: int,
) -> Effect[ToolOutcome]:
    """A window of a text file just `stat`ed: the repeat and size checks, then the read."""
    path = info.path
    offset, row = begin
    repeated = scope.reads.repeats(path, version=info.version, view=_view(offset, row, limit))
    if repeated is not None:
        last = offset + limit - 1
        if repeated["total_lines"] is not None:
            last = min(last, repeated["total_lines"])
        text = UNCHANGED.format(path=path, first=offset, last=last)
        return ToolOutcome(text, {"path": path, "unchanged": True, "version": info.version})
    if _needs_window(scope, info, args):
        raise errors.NeedsWindow(path, info.size, scope.context.settings.read_max_bytes)
    codec = encoding.sniff(head)
    if codec is None:
        raise errors.BinaryFile(path)
    start = len(codec.bom) if in_place(codec) else 0
    known = scope.context.known_texts.learn(scope.context.backend, info, head, codec, start=start)
    return (yield from _read_text(scope, known, begin, limit, checked=False))


def _read_text(
    scope: CallScope, known: KnownText, begin: tuple[int, int], limit: int, *, checked: bool
) -> Effect[ToolOutcome]:
    """Rows of a window of the text file version `known`.

    With `checked`, every byte is read at `known.info.version` (no `stat` came first):
    `VersionConflict` when the file has changed since.
    """
    info, codec = known.info, known.codec
    path = info.path
    offset, row = begin
    previous = scope.reads.get(path)
    if checked:
        read, confirm = _checked_reader(info)
    else:
        read, confirm = (yield from _reader(scope, info, codec)), None
    try:
        window = yield from read_window(
            read,
            known.index,
            codec=codec.name if in_place(codec) else "utf-8",
            offset=offset,
            row=row,
            limit=limit,
            token_budget=scope.context.settings.read_token_budget,
            count_tokens=scope.context.settings.count_tokens,
        )
    except NoSuchRow:
        raise errors.InvalidArgument(
            "offset",
            f'line {offset} has no row "{row_label(offset, row)}"; read it from offset={offset}',
        ) from None
    if confirm is not None:
        yield from confirm()
    # A line counts as seen once a read shows its last row.
    seen_last = window.last_line - (1 if window.next_row else 0)
    scope.reads.put(
        path,
        after_read(
            previous,
            version=info.version,
            first=offset,
            last=seen_last,
            total_lines=window.total_lines,
            view=_view(offset, row, limit),
        ),
    )
    artifact: dict[str, Any] = {
        "path": path,
        "kind": "text",
        "encoding": codec.label,
        "first_line": offset,
        "last_line": window.last_line,
        "total_lines": window.total_lines,
        "next_offset": window.continuation,
        "stopped_by": window.stopped_by,
        "version": info.version,
    }
    prepare_syntax(scope, info, known.head)
    prepare_diagnostics(scope.context.diagnostics, scope.backend, info, scope.context)
    return ToolOutcome(_render(path, window, offset, limit), artifact)


def _window_arguments(args: ReadFileArgs, default_limit: int) -> tuple[int, int, int]:
    """The line and row to start at, and the row limit."""
    offset, row = _offset(args.offset)
    limit = default_limit if args.limit is None else args.limit
    if limit < 1:
        raise errors.InvalidArgument("limit", "it must be 1 or more")
    return offset, row, limit


_ROW_OFFSET = re.compile(r"\s*\+?(\d+)(?:\.(\d+))?\s*")


def _offset(given: int | str | None) -> tuple[int, int]:
    """`12` → (12, 0); `"12.3"` → (12, 3); None and 0 → (1, 0)."""
    if isinstance(given, str):
        match = _ROW_OFFSET.fullmatch(given)
        if match is None:
            raise errors.InvalidArgument(
                "offset", f'{given!r} is neither a line number (12) nor a row of a line ("12.3")'
            )
        line, row = int(match[1]), int(match[2] or 0)
    else:
        line, row = given or 0, 0
    if line < 0:
        raise errors.InvalidArgument("offset", "it is a 1-based line number and must be 1 or more")
    return (line or 1), (row if line else 0)


def _stat_or_suggest(path: str) -> Effect[FileInfo]:
    try:
        return (yield from calls.stat(path))
    except FileNotFoundError as exc:
        suggestions = yield from _near_spellings(path)
        where = exc.looked_in if isinstance(exc, errors.NotInMount) else None
        raise errors.MissingFile(path, suggestions, where) from None


SPELLINGS_COMPARED: Final = 5_000
"""Most siblings a missing name is compared with: a directory's first, by name (an object
store's directory of 100,000 objects is then one page, not a whole listing)."""


def _near_spellings(path: str) -> Effect[list[str]]:
    """Existing siblings whose names are close to the missing one."""
    directory, name = paths.parent(path), path.rsplit("/", 1)[-1]
    try:
        siblings = yield from calls.list_page(directory, after=None, limit=SPELLINGS_COMPARED)
    except OSError:
        return []
    names = [entry.name for entry in siblings]
    # macOS screenshots put a narrow no-break space (U+202F) before AM/PM.
    respelled = [name.replace(" AM", "\u202fAM").replace(" PM", "\u202fPM")]
    respelled.append(name.replace("\u202f", " "))
    exact = [n for n in respelled if n in names and n != name]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
    return [paths.join(directory, n) for n in dict.fromkeys(exact + close)]


def _reader(scope: CallScope, info: FileInfo, codec: encoding.TextCodec) -> Effect[Reader]:
    """Return how to read the file's bytes as lines.

    UTF-8 and single-byte code pages are read in place; other encodings (UTF-16,
    Shift-JIS, ...) are transcoded to UTF-8 in memory (bounded by `max_edit_bytes`), so
    one windowing algorithm serves all.
    """
    path = info.path
    if in_place(codec):

        def read_range(start: int, size: int) -> Effect[bytes]:
            return calls.read_bytes(path, start, size)

        return read_range
    limit = scope.context.settings.max_edit_bytes
    if info.size > limit:
        raise errors.FileTooLarge(path, info.size, limit)
    data = yield from calls.read_bytes(path)
    transcoded = codec.decode(data, errors="replace").encode("utf-8")

    def read_memory(start: int, size: int) -> Effect[bytes]:
        return transcoded[start : start + size]
        yield  # pragma: no cover - makes this a generator

    return read_memory


def _checked_reader(info: FileInfo) -> tuple[Reader, Callable[[], Effect[None]]]:
    """How to read a file in place at `info.version`, and how to confirm that version.

    A window that needs no byte (an offset past the known end) still learns nothing of
    the file's current version: `confirm` then checks it with a read of no bytes.
    """
    path, version = info.path, info.version
    read_any = False

    def read_range(start: int, size: int) -> Effect[bytes]:
        nonlocal read_any
        read_any = True
        return calls.read_checked(path, start, size, expected_version=version)

    def confirm() -> Effect[None]:
        if not read_any:
            yield from calls.read_checked(path, 0, 0, expected_version=version)

    return read_range, confirm


def _render(path: str, window: Window, offset: int, limit: int) -> str:
    if not window.rows:
        if window.total_lines == 0 or (window.total_lines is None and offset == 1):
            return EMPTY
        total = window.total_lines or 0
        return SHORTER.format(path=path, lines=plural(total, "line"), total=total, offset=offset)
    body = "\n".join(window.rows)
    footer = _footer(window, limit)
    return f"{body}\n\n{footer}" if footer else body


def _footer(window: Window, limit: int) -> str:
    if window.continuation is None:
        return ""
    notes: list[str] = []
    if window.next_row:
        notes.append(f"Line {window.last_line} is long and continues on row {window.continuation}.")
    if window.stopped_by == "tokens":
        notes.append("Output reached the token budget.")
    of_total = f" of {window.total_lines}" if window.total_lines is not None else ""
    first = row_label(window.first_line, window.first_row)
    last = window.rows[-1].partition(SEPARATOR)[0]
    continuation = f'"{window.continuation}"' if window.next_row else window.continuation
    notes.append(
        f"Showing lines {first}-{last}{of_total}. "
        f"Continue with offset={continuation} (limit={limit})."
    )
    return f"({' '.join(notes)})"


__all__ = ["DESCRIPTION", "ReadFileArgs", "ReadFileTool"]
