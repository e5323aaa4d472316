"""What reads learnt of text files, so a later read of the same version starts ahead.

Per file, the toolkit keeps the last version a read found: its metadata, first bytes,
codec and line index. A later read asks the backend for its window at that version
(`Backend.read_checked`) without a `stat` first: on an object store that is one ranged
GET instead of a HEAD and a GET. A file changed since fails the check, and the read
starts again from a `stat`. A write through the tools notes the version it made too, so
a read after an edit is one call.

A small file's whole content is kept with its version when the toolkit had all of it (a
read whose first bytes were the file, a tool's write): an edit of that version then
needs no read, only the write, which is made on the condition that the file is still
at that version (`tools.edit_file`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_fstools.formats import encoding
from langchain_fstools.formats.text import LineIndex

if TYPE_CHECKING:
    from langchain_fstools.core.results import FileInfo
    from langchain_fstools.formats.encoding import TextCodec


KEEP_CONTENT_BYTES = 65_536
"""Largest file whose whole content is kept with its version (at most 16 MiB for the
256 files kept). Default: 64 KiB."""


@dataclass
class KnownText:
    """One version of a text file, as reads found it.

    Attributes:
        info: Its metadata; `info.version` is the version the rest describes.
        head: Its first bytes (`encoding.SNIFF_BYTES`), which told its kind and codec.
        codec: Its text encoding.
        index: Where its lines start, as far as reads have learnt.
        content: Its whole content, when it is small and the toolkit had all of it.
    """

    info: FileInfo
    head: bytes
    codec: TextCodec
    index: LineIndex
    content: bytes | None = None


class KnownTexts:
    """The last version read of recently read text files, least recently used dropped first."""

    def __init__(self, max_entries: int = 256) -> None:
        """Keep at most `max_entries` files. Default: 256."""
        self._entries: OrderedDict[tuple[int, str], KnownText] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()  # parallel tool calls share the toolkit

    def get(self, backend: object, path: str) -> KnownText | None:
        """The last version of `path` read through `backend`, if still kept."""
        key = (id(backend), path)
        with self._lock:
            known = self._entries.get(key)
            if known is not None:
                self._entries.move_to_end(key)
            return known

    def learn(
        self,
        backend: object,
        info: FileInfo,
        head: bytes,
        codec: TextCodec,
        *,
        start: int,
        content: bytes | None = None,
    ) -> KnownText:
        """Note that `info.path` is at `info.version`; its index is kept if it already was.

        Args:
            backend: The backend the file was read through.
            info: The file's metadata from a `stat`.
            head: Its first bytes.
            codec: Its text encoding.
            start: Where its line 1 starts (after a byte-order mark).
            content: Its whole content, if known (kept up to `KEEP_CONTENT_BYTES`);
                a `head` as long as the file is its content too.
        """
        if content is None and len(head) == info.size:
            content = head
        kept = content if content is not None and len(content) <= KEEP_CONTENT_BYTES else None
        key = (id(backend), info.path)
        with self._lock:
            known = self._entries.get(key)
            if known is None or known.info.version != info.version or known.codec != codec:
                known = KnownText(info, head, codec, LineIndex(start=start), kept)
            elif known.content is None:
                known.content = kept
            self._entries[key] = known
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
            return known

    def learn_written(self, backend: object, info: FileInfo, data: bytes) -> None:
        """Note the version a tool wrote (`data` at `info.version`), as a read would find it.

        Only text a read takes in place (`in_place`); the codec is sniffed from the head
        as a read sniffs it, so the next read decodes the file as it would after a `stat`.
        """
        head = data[: encoding.SNIFF_BYTES]
        codec = encoding.sniff(head)
        if codec is not None and in_place(codec):
            self.learn(backend, info, head, codec, start=len(codec.bom), content=data)


def in_place(codec: TextCodec) -> bool:
    """Whether a read takes windows of this codec's files straight from their bytes."""
    return codec.name == "utf-8" or codec.single_byte


__all__ = ["KEEP_CONTENT_BYTES", "KnownText", "KnownTexts", "in_place"]
