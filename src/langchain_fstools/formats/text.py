"""Text windows: numbered rows of a line range, at a cost proportional to the window.

A row is the line number, a tab, then the line (`12\tdef f():`): `cat -n` without
the padding, the cheapest gutter measured that keeps exact numbers and a clear
separator (about 1.2-1.4 o200k_base tokens a line of code, where `     12→` costs 4.4;
`bench/gutter.py` measures the forms).

A line ends at `\\n` (so `\\r\\n`, form feeds and U+2028 never split lines differently
from grep); a trailing `\\r` is not shown. Lines longer than `ROW_WIDTH` characters are
split into rows labelled `N`, `N.1`, `N.2`, ...; rows count toward the limit, and a
window may start at any row (`row=3` with `offset=12` starts at `12.3`). A line that
does not fit whole in the window that starts with it is shown as far as it fits, and
the window continues at its next row, so following the continuations visits every
character once.

Windows read bytes in place for UTF-8 and for single-byte codecs (where a character is
one byte); callers transcode other encodings to UTF-8 first.

Reading a window seeks through a sparse `LineIndex` (a mark every 16 KiB scanned, built
lazily and kept per file version), so a window near the end of a large file reads the
file once, and later windows read only their own bytes plus at most one chunk.
"""

from __future__ import annotations

import bisect
import codecs
import threading
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from langchain_fstools.core import progress
from langchain_fstools.core.calls import Effect

if TYPE_CHECKING:
    from langchain_fstools.core.tokens import TokenCounter

ROW_WIDTH = 5000
"""Characters per displayed row; longer lines continue on rows `N.1`, `N.2`, ..."""

LINE_WIDTH = 500
"""Longest line text grep shows; longer lines are cut with `…` around the match."""

CHUNK_BYTES = 256 * 1024
"""Bytes read per backend call while scanning. Default: 256 KiB."""

MARK_BYTES = 16 * 1024
"""Bytes scanned between two marks of a `LineIndex` (8 bytes a mark: 1 MiB for a 1 GiB
file): a window finds its first line within this many bytes of a mark."""

PROGRESS_CHUNKS = 64
"""Chunks scanned (16 MiB) between two progress reports of a long read: while someone
listens, reaching a line far into a file reports how many lines it has passed."""

BATCH_BYTES = 64 * 1024
"""Most bytes of whole lines turned into rows (and counted for tokens) at once."""

SEPARATOR = "\t"
"""Between a row's label and its text."""

Reader = Callable[[int, int], Effect[bytes]]
"""Reads `size` bytes from byte offset `start` of one file version."""

StopReason = Literal["end", "limit", "tokens"]


@dataclass
class LineIndex:
    """Where lines start in one version of a file, learnt lazily.

    Attributes:
        start: Byte offset of line 1 (after a byte-order mark).
        mark_lines: Line numbers whose start offset is known, increasing: about one
            every `MARK_BYTES` scanned.
        mark_offsets: The byte offsets of those lines.
        scanned_to: Bytes scanned so far.
        scanned_lines: Newlines found before `scanned_to`.
        last_start: Byte offset where line `scanned_lines + 1` starts.
        total_lines: The file's line count, once the scan reached the end.
    """

    start: int = 0
    mark_lines: array[int] = field(default_factory=lambda: array("q"))
    mark_offsets: array[int] = field(default_factory=lambda: array("q"))
    scanned_to: int = -1
    scanned_lines: int = 0
    last_start: int = -1
    total_lines: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Held while the marks change or are looked up: reads of one file version running at
    once (parallel tool calls, threads or tasks) share the index."""

    def __post_init__(self) -> None:
        """Line 1 starts at `start`."""
        if self.scanned_to < 0:
            self.scanned_to = self.last_start = self.start
        if not self.mark_lines:
            self.mark_lines.append(1)
            self.mark_offsets.append(self.start)

    def start_of(self, read: Reader, line: int) -> Effect[tuple[int, bytes, bool] | None]:
        """Where `line` starts, or None past the last line.

        Returns the byte offset, the bytes already read from there (the rest of the
        chunk the line was found in, so they are not read again) and whether those
        reach the end of the file.
        """
        listening = progress.listening_now()
        scanned = 0
        while line > self.scanned_lines + 1 and self.total_lines is None:
            yield from self._scan_chunk(read)
            scanned += 1
            if listening and scanned % PROGRESS_CHUNKS == 0:
                progress.report({"lines": self.scanned_lines})
        if self.total_lines is not None and line > self.total_lines:
            return None
        with self._lock:
            slot = bisect.bisect_right(self.mark_lines, line) - 1
            at_line, offset = self.mark_lines[slot], self.mark_offsets[slot]
            # the line starts before the next mark: no newline after that is searched
            bound = self.mark_offsets[slot + 1] if slot + 1 < len(self.mark_offsets) else None
        chunk, position = b"", 0
        while at_line < line:
            chunk = yield from read(offset, CHUNK_BYTES)
            span = len(chunk) if bound is None else min(len(chunk), bound - offset)
            position = _after_newlines(chunk, line - at_line, span)
            if position < 0:  # fewer: the line starts in a later chunk
                at_line += chunk.count(b"\n")
                offset += len(chunk)
            else:
                at_line = line
                offset += position
        return offset, chunk[position:], bool(chunk) and len(chunk) < CHUNK_BYTES

    def _scan_chunk(self, read: Reader) -> Effect[None]:
        """Scan the next chunk, unless another read of the index scanned it meanwhile."""
        position = self.scanned_to
        chunk = yield from read(position, CHUNK_BYTES)
        with self._lock:
            if self.scanned_to != position:
                return
            for begin in range(0, len(chunk), MARK_BYTES):
                last = chunk.rfind(b"\n", begin, begin + MARK_BYTES)
                if last >= 0:
                    self.scanned_lines += chunk.count(b"\n", begin, begin + MARK_BYTES)
                    self.last_start = position + last + 1
                    self.mark_lines.append(self.scanned_lines + 1)
                    self.mark_offsets.append(self.last_start)
            self.scanned_to += len(chunk)
            if len(chunk) < CHUNK_BYTES:
                unterminated = self.scanned_to > self.last_start
                self.total_lines = self.scanned_lines + (1 if unterminated else 0)


def _after_newlines(chunk: bytes, count: int, span: int) -> int:
    """The position just after the `count`-th newline of `chunk[:span]`; -1 if it has fewer.

    Guesses the position from the mean line length, counts the newlines before the
    guess (in C) and walks the few lines between: on even lines a handful of searches,
    where walking from the start would search once per line.
    """
    total = chunk.count(b"\n", 0, span)
    if total < count:
        return -1
    guess = span * count // total
    seen = chunk.count(b"\n", 0, guess)
    position = guess
    while seen >= count:  # too far: back to the `count`-th newline
        position = chunk.rfind(b"\n", 0, position)
        seen -= 1
    while seen < count:
        position = chunk.find(b"\n", position) + 1
        seen += 1
    return position


@dataclass(frozen=True, slots=True)
class Window:
    """Rows of one read, and where the file continues.

    Attributes:
        rows: Rendered rows, `{label}\t{text}`.
        first_line: The first line shown (the requested offset).
        last_line: The last line of which at least one row is shown.
        total_lines: Line count of the file, when known.
        next_offset: The line that continues the read, or None at the end.
        stopped_by: Why the window ended: the file's end, the row limit, or the token
            budget.
        first_row: The row of `first_line` the window starts at (0: its start).
        next_row: The row of `next_offset` that continues the read (0: its start);
            not 0 when the window ends inside a long line.
    """

    rows: list[str]
    first_line: int
    last_line: int
    total_lines: int | None
    next_offset: int | None
    stopped_by: StopReason
    first_row: int = 0
    next_row: int = 0

    @property
    def continuation(self) -> str | None:
        """The offset to pass to continue: `15`, or `12.3` inside a long line."""
        if self.next_offset is None:
            return None
        return row_label(self.next_offset, self.next_row)


class NoSuchRow(ValueError):
    """A window was asked to start at a row its line does not have."""

    def __init__(self, line: int, row: int) -> None:
        """Say which line and row."""
        super().__init__(f"line {line} has no row {row_label(line, row)}")
        self.line = line
        self.row = row


def render_row(label: str, text: str) -> str:
    """Render one row: its label, the separator, the text."""
    return f"{label}{SEPARATOR}{text}"


def row_label(line: int, row: int) -> str:
    """The label of a row: `12` for a line's first row, `12.3` for its fourth."""
    return f"{line}.{row}" if row else str(line)


def line_rows(number: int, text: str, first_row: int = 0) -> list[str]:
    """Render one line as its rows: `N`, then `N.1`, `N.2`, ... per `ROW_WIDTH` chars.

    Args:
        number: The line number.
        text: The line's text from row `first_row` on.
        first_row: The row `text` starts at. Default: 0 (the whole line).
    """
    if len(text) <= ROW_WIDTH and not first_row:
        return [render_row(str(number), text)]
    pieces = [text[i : i + ROW_WIDTH] for i in range(0, len(text), ROW_WIDTH)] or [""]
    return [render_row(row_label(number, k), piece) for k, piece in enumerate(pieces, first_row)]


def decode_line(raw: bytes, codec: str) -> str:
    """Decode one line's bytes for display, dropping a trailing carriage return."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode(codec, "replace")


@dataclass
class _Cursor:
    """Reads a file line by line from a byte position, buffering one chunk ahead.

    Consumed lines advance `head` rather than being cut from the buffer, so reading a
    chunk's lines costs the chunk once, not once per line.
    """

    read: Reader
    position: int
    """File offset of `buffer[head]`, the first byte not consumed."""
    buffer: bytearray = field(default_factory=bytearray)
    at_eof: bool = False
    head: int = 0

    def next_line(self, room: int) -> Effect[tuple[bytes, bool] | None]:
        """Return the next line's bytes (without `\\n`) and whether it was cut at `room`.

        Returns None at the end of the file. The line is consumed unless it was cut.
        """
        buffer = self.buffer
        newline = buffer.find(b"\n", self.head)
        while newline < 0 and not self.at_eof and len(buffer) - self.head <= room:
            del buffer[: self.head]
            self.head = 0
            chunk = yield from self.read(self.position + len(buffer), CHUNK_BYTES)
            self.at_eof = len(chunk) < CHUNK_BYTES
            searched = len(buffer)
            buffer += chunk
            newline = buffer.find(b"\n", searched)
        pending = len(buffer) - self.head
        if newline < 0 and not pending:
            return None
        if newline < 0 and pending > room:
            return bytes(buffer[self.head : self.head + room]), True
        end = newline if newline >= 0 else len(buffer)
        line = bytes(buffer[self.head : end])
        consumed = (end + 1 if newline >= 0 else end) - self.head
        self.head += consumed
        self.position += consumed
        return line, False

    def buffered_lines(self, most: int) -> bytes | None:
        """Consume up to `most` whole lines the buffer already holds, joined by `\\n`.

        None when the buffer holds no such line.

        Each line has at most `ROW_WIDTH` bytes: the batch stops before a longer line,
        which may need several rows (`next_line` takes it). At most `BATCH_BYTES`.
        """
        buffer, head = self.buffer, self.head
        last = buffer.rfind(b"\n", head, head + BATCH_BYTES)
        if last < 0:
            return None
        region = bytes(buffer[head:last])
        lines = region.split(b"\n", most)
        del lines[most:]
        if max(map(len, lines)) > ROW_WIDTH:
            del lines[next(k for k, raw in enumerate(lines) if len(raw) > ROW_WIDTH) :]
        if not lines:
            return None
        consumed = sum(map(len, lines)) + len(lines)
        self.head += consumed
        self.position += consumed
        return region[: consumed - 1]

    def more(self) -> Effect[bool]:
        """Whether any byte follows the consumed lines."""
        if len(self.buffer) > self.head:
            return True
        if self.at_eof:
            return False
        return bool((yield from self.read(self.position, 1)))


_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _row_start(read: Reader, position: int, row: int, codec: str) -> Effect[int | None]:
    """The byte offset where row `row` of the line starting at `position` starts.

    None when the line has no such row. Characters are counted without decoding: UTF-8
    continuation bytes start no character; in single-byte codecs every byte does.
    """
    wanted = row * ROW_WIDTH
    utf8 = codecs.lookup(codec).name == "utf-8"
    while True:
        chunk = yield from read(position, CHUNK_BYTES)
        newline = chunk.find(b"\n")
        body = chunk if newline < 0 else chunk[:newline]
        if body.endswith(b"\r") and (newline >= 0 or len(chunk) < CHUNK_BYTES):
            body = body[:-1]
        starts = len(body.translate(None, _CONTINUATION_BYTES)) if utf8 else len(body)
        if starts > wanted:
            if not utf8:
                return position + wanted
            # the first byte whose prefix (itself included) holds `wanted + 1` starts
            return position + bisect.bisect_left(
                range(len(body)),
                wanted + 1,
                key=lambda end: len(body[: end + 1].translate(None, _CONTINUATION_BYTES)),
            )
        if newline >= 0 or len(chunk) < CHUNK_BYTES:
            return None
        wanted -= starts
        position += len(chunk)


def _batch_rows(batch: bytes, first_line: int, codec: str) -> list[str]:
    """Rows of whole one-row lines joined by `\\n`, as `decode_line` and `render_row` make.

    Decoded at once: with UTF-8 or Latin-1, `\\n` is never part of another character,
    so the text splits where the bytes do.
    """
    texts = batch.decode(codec, "replace").split("\n")
    if b"\r" in batch:
        texts = [text.removesuffix("\r") for text in texts]
    return [f"{n}{SEPARATOR}{text}" for n, text in enumerate(texts, first_line)]


def _fit(
    rows: list[str],
    batch: list[str],
    *,
    tokens: int,
    token_budget: int,
    count_tokens: TokenCounter,
) -> tuple[int, int]:
    """Append the longest prefix of `batch` that fits; return tokens used and rows fitted.

    The first row of a window always fits. Tokens are counted on the rows' text: once
    for a batch that fits whole, by bisection otherwise.
    """

    def cost(count: int) -> int:
        return count_tokens("\n".join(batch[:count]) + "\n")

    fitted, spent = len(batch), cost(len(batch))
    if tokens + spent > token_budget:
        low, high, spent = (0 if rows else 1), len(batch) - 1, 0
        while low < high:
            middle = (low + high + 1) // 2
            if tokens + cost(middle) <= token_budget:
                low = middle
            else:
                high = middle - 1
        fitted = low
        spent = cost(fitted) if fitted else 0
    rows.extend(batch[:fitted])
    return tokens + spent, fitted


def read_window(  # noqa: C901 - one loop over batches and long lines
    read: Reader,
    index: LineIndex,
    *,
    codec: str,
    offset: int,
    limit: int,
    token_budget: int,
    count_tokens: TokenCounter,
    row: int = 0,
) -> Effect[Window]:
    """Read rows from row `row` of line `offset` until `limit` rows, the budget, or the end.

    The window ends on the last whole row that fits: a line that does not fit whole is
    left for the next read, unless it is the window's first line, which is then shown
    as far as it fits and continued at its next row (`Window.next_row`).

    Raises:
        NoSuchRow: line `offset` has no row `row`.
    """
    start = yield from index.start_of(read, offset)
    if start is None:
        return Window([], offset, offset - 1, index.total_lines, None, "end", row)
    position, ahead, at_eof = start
    cursor = _Cursor(read, position, bytearray(ahead), at_eof)
    if row:
        row_start = yield from _row_start(read, position, row, codec)
        if row_start is None:
            raise NoSuchRow(offset, row)
        cursor = _Cursor(read, row_start)
    rows: list[str] = []
    tokens, line = 0, offset - 1
    stopped_by: StopReason = "limit"
    next_row = 0
    left_over = False
    while len(rows) < limit:
        batch = cursor.buffered_lines(limit - len(rows)) if rows or not row else None
        if batch is not None:
            batch_rows = _batch_rows(batch, line + 1, codec)
            tokens, fitted = _fit(
                rows,
                batch_rows,
                tokens=tokens,
                token_budget=token_budget,
                count_tokens=count_tokens,
            )
            line += fitted
            if fitted < len(batch_rows):
                stopped_by = "tokens"
                break
            continue
        room = (limit - len(rows)) * ROW_WIDTH * 4 + 4
        fetched = yield from cursor.next_line(room)
        if fetched is None:
            stopped_by = "end"
            break
        raw, cut = fetched
        line += 1
        first_row = row if line == offset else 0
        candidates = line_rows(line, decode_line(raw, codec), first_row)
        tokens, fitted = _fit(
            rows,
            candidates[: limit - len(rows)],
            tokens=tokens,
            token_budget=token_budget,
            count_tokens=count_tokens,
        )
        if fitted < len(candidates) or cut:
            stopped_by = "tokens" if fitted < len(candidates) and len(rows) < limit else "limit"
            if line == offset:
                next_row = first_row + fitted
            else:
                del rows[len(rows) - fitted :]
                line -= 1
                left_over = True
            break
    if stopped_by == "limit" and not (next_row or left_over) and not (yield from cursor.more()):
        stopped_by = "end"
    if stopped_by == "end":
        index.total_lines = line
    next_offset = None if stopped_by == "end" else line + (0 if next_row else 1)
    return Window(rows, offset, line, index.total_lines, next_offset, stopped_by, row, next_row)


__all__ = [
    "CHUNK_BYTES",
    "LINE_WIDTH",
    "ROW_WIDTH",
    "SEPARATOR",
    "LineIndex",
    "NoSuchRow",
    "Reader",
    "Window",
    "count_lines",
    "decode_line",
    "line_rows",
    "read_window",
    "render_row",
    "row_label",
]


def count_lines(text: str) -> int:
    """Count lines as a window does: newlines, plus an unterminated last line."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
