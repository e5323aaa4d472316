"""What a change would do, shown to a person before it runs: a unified diff.

Used when a tool call needs approval. Reads only; a file that cannot be read gives a
diff from empty, and anything unexpected gives no diff (the arguments still show).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_fstools.core import calls, paths
from langchain_fstools.errors import FsToolsError
from langchain_fstools.formats import encoding
from langchain_fstools.formats.diff import MAX_DIFF_CHARS, unified_patch

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_fstools.core.calls import Effect


def preview_diff(tool: str, args: Mapping[str, Any]) -> Effect[str | None]:
    """The unified diff a `write_file`, `edit_file` or `apply_patch` call would make."""
    if tool == "apply_patch":
        patch = args.get("patch")
        return patch if isinstance(patch, str) else None
    path = args.get("file_path")
    if tool not in {"write_file", "edit_file"} or not isinstance(path, str):
        return None
    try:
        canonical = paths.normalize(path)
    except FsToolsError:
        return None
    current = yield from _text_or_empty(canonical)
    new_text = _after(tool, args, current)
    if new_text is None:
        return None
    return unified_patch(canonical, *new_text)


def _after(tool: str, args: Mapping[str, Any], current: str) -> tuple[str, str] | None:
    """The (old, new) texts to diff: the whole file, or the replaced fragment."""
    if tool == "write_file":
        content = args.get("content")
        return (current, content) if isinstance(content, str) else None
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if old and old in current:
        return current, current.replace(old, new, -1 if args.get("replace_all") else 1)
    return old, new


def _text_or_empty(path: str) -> Effect[str]:
    try:
        info = yield from calls.stat(path)
        if not info.is_file or info.size > MAX_DIFF_CHARS:
            return ""
        data = yield from calls.read_bytes(path)
    except (OSError, FsToolsError):
        return ""
    codec = encoding.detect(data)
    return "" if codec is None else codec.decode(data)


__all__ = ["preview_diff"]
