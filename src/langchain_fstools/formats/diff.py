"""Diffs of a mutation: a full unified patch for traces, a bounded snippet for models."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_fstools.core.wording import plural

if TYPE_CHECKING:
    from collections.abc import Iterable

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
    region = _Region.around_change(old_lines, new_lines)
    if not region.removed and not region.added:
        return ""
    diff: Iterable[str]
    if region.one_block():
        diff = region.one_hunk(path)
    else:
        diff = (
            _shift_hunk(line, region.skipped) if line.startswith("@@") else line
            for line in difflib.unified_diff(
                region.old, region.new, f"a{path}", f"b{path}", n=CONTEXT_LINES
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


@dataclass(frozen=True, slots=True)
class _Region:
    """The lines around a change: the differing ones and up to 3 equal ones each side.

    An edit changes a few lines of a long file: matching only this region keeps a
    diff's cost proportional to the change.

    Attributes:
        skipped: Equal lines left out before the region.
        lead: Equal lines the region starts with (context).
        trail: Equal lines the region ends with (context).
        old: The region's old lines.
        new: The region's new lines.
    """

    skipped: int
    lead: int
    trail: int
    old: list[str]
    new: list[str]

    @classmethod
    def around_change(cls, old: list[str], new: list[str]) -> _Region:
        """Find the first and last differing lines of `old` and `new`."""
        most = min(len(old), len(new))
        head = 0
        while head < most and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < most - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        skipped, trail = max(0, head - CONTEXT_LINES), min(tail, CONTEXT_LINES)
        return cls(
            skipped,
            head - skipped,
            trail,
            old[skipped : len(old) - tail + trail],
            new[skipped : len(new) - tail + trail],
        )

    @property
    def removed(self) -> list[str]:
        """The old lines between the context."""
        return self.old[self.lead : len(self.old) - self.trail]

    @property
    def added(self) -> list[str]:
        """The new lines between the context."""
        return self.new[self.lead : len(self.new) - self.trail]

    def one_block(self) -> bool:
        """Whether no removed line comes back among the added ones.

        Then difflib sees one replaced block, and the hunk needs no matching.
        """
        return set(self.removed).isdisjoint(self.added)

    def one_hunk(self, path: str) -> list[str]:
        """The diff of a one-block change, as `difflib.unified_diff` writes it."""
        old_span = _span(self.skipped, len(self.old))
        new_span = _span(self.skipped, len(self.new))
        return [
            f"--- a{path}\n",
            f"+++ b{path}\n",
            f"@@ -{old_span} +{new_span} @@\n",
            *(f" {line}" for line in self.old[: self.lead]),
            *(f"-{line}" for line in self.removed),
            *(f"+{line}" for line in self.added),
            *(f" {line}" for line in self.old[len(self.old) - self.trail :]),
        ]


def _span(start: int, length: int) -> str:
    """A hunk's line range (`start` lines before it), as unified diffs write it."""
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


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
    """What changed, for the model: the changed lines of a unified diff, no context.

    Each run of removed and added lines gets its own `@@ -a,b +c,d @@` header with exact
    line numbers (as `diff -U0`); the unchanged lines around it are left out, since the
    model wrote or just read them. At most `max_lines` lines of at most 200 characters;
    costs the lines shown, not the whole patch: the rest is only counted.
    """
    if patch is None:
        return "(diff omitted: the file is too large to diff)"
    hunks = patch
    for header in ("--- ", "+++ "):
        if hunks.startswith(header):
            hunks = hunks.partition("\n")[2]
    lines = _changes_only(hunks).split("\n", max_lines)
    rest = lines.pop() if len(lines) > max_lines else lines.pop() if lines[-1] == "" else ""
    shown = [
        line if len(line) <= SNIPPET_LINE_WIDTH else line[:SNIPPET_LINE_WIDTH] + "…"
        for line in lines
    ]
    if rest:
        more = rest.count("\n") + (not rest.endswith("\n"))
        shown.append(f"... ({plural(more, 'more diff line')})")
    return "\n".join(shown)


def _changes_only(hunks: str) -> str:
    """Unified diff hunks without their context lines, each run of changes headed anew."""
    out: list[str] = []
    old_line = new_line = 0
    run: list[str] = []
    run_at = (0, 0)

    def close() -> None:
        if run:
            removed = sum(line.startswith("-") for line in run)
            added = len(run) - removed
            old_span = _span(run_at[0] - 1, removed) if removed else f"{run_at[0] - 1},0"
            new_span = _span(run_at[1] - 1, added) if added else f"{run_at[1] - 1},0"
            out.append(f"@@ -{old_span} +{new_span} @@")
            out.extend(run)
            run.clear()

    for line in hunks.split("\n"):
        header = _HUNK_HEADER.match(line)
        if header:
            close()
            old_line, new_line = int(header[1]), int(header[3])
            old_line += header[2] == ",0"
            new_line += header[4] == ",0"
        elif line.startswith(("-", "+")):
            if not run:
                run_at = (old_line, new_line)
            run.append(line)
            old_line += line.startswith("-")
            new_line += line.startswith("+")
        elif line.startswith("\\"):  # "\ No newline at end of file" stays with its line
            if run:
                run.append(line)
            else:
                out.append(line)
        else:
            close()
            old_line += 1
            new_line += 1
    close()
    return "\n".join(out) + "\n"


__all__ = ["snippet", "unified_patch"]
