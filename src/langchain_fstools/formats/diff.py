"""Diffs of a mutation: a full unified patch for traces, a bounded snippet for models."""

from __future__ import annotations

import difflib
import re

MAX_DIFF_CHARS = 2 * 1024 * 1024
"""Texts larger than this (old + new, in characters) get no diff. Default: 2 Mi."""

SNIPPET_LINE_WIDTH = 200

CONTEXT_LINES = 3

_HUNK_HEADER = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified_patch(path: str, old: str, new: str) -> str | None:
    """Return a unified diff of `old` → `new` (line endings folded), or None if too big."""
    if len(old) + len(new) > MAX_DIFF_CHARS:
        return None
    new = new.replace("\r\n", "\n")
    old_lines = old.replace("\r\n", "\n").splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    if not old_lines and new_lines:
        return _creation_patch(path, new, new_lines)
    skipped, old_lines, new_lines = _changed_region(old_lines, new_lines)
    diff = difflib.unified_diff(old_lines, new_lines, f"a{path}", f"b{path}", n=CONTEXT_LINES)
    return "".join(
        _shift_hunk(line, skipped)
        if line.startswith("@@")
        else line
        if line.endswith("\n")
        else line + "\n"
        for line in diff
    )


def _changed_region(old: list[str], new: list[str]) -> tuple[int, list[str], list[str]]:
    """Drop the equal lines around the change, but the context; return how many lead.

    An edit changes a few lines of a long file: matching only the lines between the
    common head and tail keeps a diff's cost proportional to the change.
    """
    most = min(len(old), len(new))
    head = 0
    while head < most and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < most - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    skipped = max(0, head - CONTEXT_LINES)
    kept_tail = min(tail, CONTEXT_LINES)
    return (
        skipped,
        old[skipped : len(old) - tail + kept_tail],
        new[skipped : len(new) - tail + kept_tail],
    )


def _shift_hunk(header: str, lines: int) -> str:
    """Move a hunk header `lines` lines down (the lines left out before the region)."""
    return _HUNK_HEADER.sub(
        lambda m: f"@@ -{int(m[1]) + lines}{m[2] or ''} +{int(m[3]) + lines}{m[4] or ''} @@",
        header,
        count=1,
    )


def _creation_patch(path: str, text: str, lines: list[str]) -> str:
    """What `difflib.unified_diff` gives for an empty old text, without matching."""
    span = "1" if len(lines) == 1 else f"1,{len(lines)}"
    if len(lines) == text.count("\n") + (not text.endswith("\n")):  # only \n ends lines
        body = "+" + "+".join(lines) + ("" if text.endswith("\n") else "\n")
    else:
        body = "".join(f"+{line}" if line.endswith("\n") else f"+{line}\n" for line in lines)
    return f"--- a{path}\n+++ b{path}\n@@ -0,0 +{span} @@\n{body}"


def snippet(patch: str | None, max_lines: int) -> str:
    """Cut a unified diff to its hunks, at most `max_lines` lines of at most 200 chars.

    Costs the lines shown, not the whole patch: the rest is only counted.
    """
    if patch is None:
        return "(diff omitted: the file is too large to diff)"
    hunks = patch
    for header in ("--- ", "+++ "):
        if hunks.startswith(header):
            hunks = hunks.partition("\n")[2]
    lines = hunks.split("\n", max_lines)
    rest = lines.pop() if len(lines) > max_lines else lines.pop() if lines[-1] == "" else ""
    shown = [
        line if len(line) <= SNIPPET_LINE_WIDTH else line[:SNIPPET_LINE_WIDTH] + "…"
        for line in lines
    ]
    if rest:
        more = rest.count("\n") + (not rest.endswith("\n"))
        shown.append(f"... ({more} more diff lines)")
    return "\n".join(shown)


__all__ = ["snippet", "unified_patch"]
