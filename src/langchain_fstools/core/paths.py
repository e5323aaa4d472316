"""Virtual paths: the only paths a model ever sees.

A virtual path is absolute and POSIX-style: `/` is the workspace root, whatever the
backend stores underneath. `normalize` is the single gate every backend and tool passes
a model-supplied path through; it refuses what can never name a workspace file and
collapses the rest to one canonical spelling, so two backends agree on every path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath

from langchain_fstools.errors import InvalidPath, OutsideRoot

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_PATH_BYTES = 4096
"""Longest virtual path accepted, in UTF-8 bytes. Default: 4096 (Linux PATH_MAX)."""

MAX_NAME_BYTES = 255
"""Longest single path component accepted, in UTF-8 bytes. Default: 255 (NAME_MAX)."""

ROOT = "/"


def normalize(path: str) -> str:
    r"""Return the canonical virtual spelling of a model-supplied path.

    Relative paths are taken from the root. `.` and repeated slashes collapse; `..`
    is resolved lexically and may not climb above the root.

    Args:
        path: The path as the model wrote it.

    Returns:
        An absolute path such as `/src/app.py`, or `/` for the root.

    Raises:
        InvalidPath: empty, NUL bytes, lone surrogates, `~`, UNC (`//host`, `\\host`),
            drive letters, backslashes, or overlong names.
        OutsideRoot: `..` would climb above the root.
    """
    _refuse_unusable(path)
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise OutsideRoot(path)
            parts.pop()
            continue
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidPath(path, "a path component is longer than 255 bytes")
        parts.append(part)
    return ROOT + "/".join(parts)


def _refuse_unusable(path: str) -> None:
    """Raise `InvalidPath` for spellings that can never name a workspace file."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidPath(str(path), "the path is empty")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidPath(
            path, "the path contains a lone surrogate, not a valid character"
        ) from None
    if "\x00" in path:
        raise InvalidPath(path.replace("\x00", "\\0"), "the path contains a NUL byte")
    if path.startswith("~"):
        raise InvalidPath(path, "home-directory paths (~) are not workspace paths")
    if "\\" in path:
        raise InvalidPath(path, "backslashes are not path separators here; use /")
    if path.startswith("//"):
        raise InvalidPath(path, "network (UNC) paths are not allowed")
    if len(path) >= 2 and path[1] == ":" and path[0].isalpha():  # noqa: PLR2004
        raise InvalidPath(path, "drive-letter paths are not workspace paths")
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise InvalidPath(path[:80] + "...", "the path is too long")


def join(directory: str, name: str) -> str:
    """Join a canonical directory path and a single entry name."""
    return posixpath.join(directory, name) if directory != ROOT else ROOT + name


def parent(path: str) -> str:
    """Return the canonical parent of a canonical path (the root is its own parent)."""
    return posixpath.dirname(path) or ROOT


def is_within(path: str, directory: str) -> bool:
    """Tell whether canonical `path` is `directory` or lies below it."""
    return directory in (ROOT, path) or path.startswith(directory + "/")


@contextlib.contextmanager
def virtual_errors(virtual: str) -> Iterator[None]:
    """Re-raise any `OSError` as the same class, naming `virtual` instead of a host path."""
    try:
        yield
    except OSError as exc:
        code = exc.errno if exc.errno is not None else errno.EIO
        raise type(exc)(code, os.strerror(code), virtual) from None
