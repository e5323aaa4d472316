"""Path listings for the model: a run of paths in one directory shares one header line.

The paths `/src/a.py`, `/src/b.py`, `/docs/c.md`, in that order, are shown as::

    /src/
    a.py
    b.py
    /docs/c.md

A line starting with `/` is a whole path, or (ending with `/`) the directory of the
names below it, which never start with `/`; each name keeps its suffix (`:12`, `/`).
The order is kept exactly, so a directory whose files are not consecutive is named
again. Files at the root keep their whole path (`/a.py`): a `/` header would save
nothing. On the file lists of a real repository this costs about a third fewer tokens
than whole paths, and every path is still spelled out for the next call: header plus
name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def grouped(entries: Sequence[tuple[str, str]], *, min_run: int = 2) -> list[str]:
    """Lines for `(path, suffix)` entries: runs in one directory under one header.

    Args:
        entries: Absolute paths and what to print after each (`""`, `":3"`, `"/"`).
        min_run: The fewest consecutive entries of one directory (other than the root)
            that get a header; shorter runs print whole paths. Default: 2.

    Returns:
        The lines, in the order of `entries`.
    """
    lines: list[str] = []
    start = 0
    while start < len(entries):
        folder = _folder(entries[start][0])
        end = start + 1
        while end < len(entries) and _folder(entries[end][0]) == folder:
            end += 1
        run = entries[start:end]
        if end - start >= min_run and folder != "/":
            lines.append(folder)
            lines += [path[len(folder) :] + suffix for path, suffix in run]
        else:
            lines += [path + suffix for path, suffix in run]
        start = end
    return lines


def _folder(path: str) -> str:
    """`/src/a.py` → `/src/`; `/a.py` → `/`."""
    return path[: path.rfind("/") + 1]


__all__ = ["grouped"]
