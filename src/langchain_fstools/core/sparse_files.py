"""A file read as its data and its holes, so a sparse file costs what it holds, not its size.

`pieces` walks an open file with `SEEK_DATA`/`SEEK_HOLE`; `copy_sparse` writes a copy whose
holes stay holes (a copy across file systems, where a rename or a link cannot keep them).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

CHUNK: Final = 1 << 20
"""Bytes of data read at once."""


def pieces(source: int) -> Iterator[bytes | int]:
    """The content of the file open at `source`, in order: data as bytes, a hole as its length.

    Each data piece is at most `CHUNK` bytes. A file cut short while it is read ends
    where the read found its end.
    """
    size = os.fstat(source).st_size
    offset = 0
    while offset < size:
        try:
            data = min(os.lseek(source, offset, os.SEEK_DATA), size)
        except OSError:  # ENXIO: only a hole is left
            data = size
        if data > offset:
            yield data - offset
            offset = data
        end = min(os.lseek(source, offset, os.SEEK_HOLE), size) if offset < size else size
        while offset < end:
            chunk = os.pread(source, min(CHUNK, end - offset), offset)
            if not chunk:  # cut short meanwhile
                return
            yield chunk
            offset += len(chunk)


def copy_sparse(source: int, target: int) -> int:
    """Copy the file open at `source` into the empty file open at `target`; its size.

    Holes are skipped, not written, so they stay holes in the copy.
    """
    offset = 0
    for piece in pieces(source):
        if isinstance(piece, bytes):
            view = memoryview(piece)
            while view:
                written = os.pwrite(target, view, offset)
                view = view[written:]
                offset += written
        else:
            offset += piece
    os.ftruncate(target, offset)
    return offset


__all__ = ["CHUNK", "copy_sparse", "pieces"]
