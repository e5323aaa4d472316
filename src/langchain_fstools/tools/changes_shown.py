"""A command's change set as the model and a person see it: a summary and the effect's diff.

`summary` lists what a command changed (`M /src/a.py`, `A /build/out.o`, `D /old.txt`),
by top-level folder past `SUMMARY_LINES` paths, and `left_out_note` the empty copies of
masked files not kept; `rewind_note` says when the history
could not keep enough of a committed set to put it back. `effect_diff` shows a person what
approving would commit: the unified diff of each text file, a line for each binary,
link, folder or file past the budget.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.core.wording import plural
from langchain_fstools.formats.diff import unified_patch
from langchain_fstools.formats.encoding import detect
from langchain_fstools.history.changes import HISTORY_KEY, unrewindable
from langchain_fstools.shell.sandbox.overlay import open_upper, upper_path

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import Change, ChangeSet

COMMAND_REVIEWS_KEY: Final = "command_reviews"
"""The state channel holding the change sets of commands that wait for a person."""

SUMMARY_LINES: Final = 20
"""Most changed paths a command's result lists; the rest are counted by folder."""

DIFFED_FILES: Final = 20
"""Most files whose diff a review shows; the rest are listed."""

DIFF_BUDGET: Final = 200_000
"""Most characters of diff a review shows."""

DIFFED_FILE_BYTES: Final = 1 << 20
"""Largest new content a review reads to diff (by its apparent size, so a sparse file of
any size costs nothing); a larger file is listed with its size."""


def effect_diff(changes: ChangeSet, asked: Sequence[str]) -> Effect[str]:
    """The diff of what committing `changes` would do to the `asked` paths (bounded).

    The workspace's side is read through the backend (so a path a rule hides is not
    shown), the command's from the change set.
    """
    wanted = set(asked)
    parts: list[str] = []
    used = 0
    for change in changes.changes:
        if change.path not in wanted:
            continue
        text = None
        if (
            change.entry == "file"
            and change.size <= DIFFED_FILE_BYTES
            and len(parts) < DIFFED_FILES
            and used < DIFF_BUDGET
        ):
            text = yield from _file_diff(changes, change)
        if text is None:
            text = _one_line(change)
        used += len(text)
        parts.append(text)
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts)


def _file_diff(changes: ChangeSet, change: Change) -> Effect[str | None]:
    old = b""
    if change.kind is not ChangeKind.ADDED:
        try:
            old = yield from calls.read_bytes(change.path)
        except (OSError, ValueError):
            return None
    new = b""
    if change.kind is not ChangeKind.DELETED:
        try:
            new = yield from calls.blocking(functools.partial(_read_upper, changes, change))
        except OSError:
            return None
    texts = [_text(data) for data in (old, new)]
    if texts[0] is None or texts[1] is None:
        return None
    patch = unified_patch(change.path, texts[0], texts[1])
    return _mode_lines(change) + patch if patch else None


def _mode_lines(change: Change) -> str:
    """Git's header lines of a change of mode (`old mode 100644` / `new mode 100755`)."""
    if change.mode is None:
        return ""
    if change.old_mode is not None and change.old_mode != change.mode:
        return f"old mode 100{change.old_mode:03o}\nnew mode 100{change.mode:03o}\n"
    if change.kind is ChangeKind.ADDED and change.mode & 0o111:
        return f"new file mode 100{change.mode:03o}\n"
    return ""


def _mode_note(change: Change) -> str:
    """What a summary line adds of a change's mode: changed, executable, bits dropped."""
    notes = []
    if change.old_mode is not None and change.mode is not None and change.old_mode != change.mode:
        notes.append(f"mode {change.old_mode:o} -> {change.mode:o}")
    elif change.kind is ChangeKind.ADDED and change.entry == "file" and (change.mode or 0) & 0o111:
        notes.append(f"mode {change.mode:o}")
    if change.dropped & 0o6000:
        notes.append("its set-uid/set-gid bit is not kept")
    elif change.dropped:
        notes.append("group/world write bits dropped by the umask")
    return f" ({'; '.join(notes)})" if notes else ""


def _read_upper(changes: ChangeSet, change: Change) -> bytes:
    """The new content of `change` (at most `DIFFED_FILE_BYTES` of it)."""
    with os.fdopen(open_upper(upper_path(changes, change.path)), "rb") as file:
        return file.read(DIFFED_FILE_BYTES + 1)


def _text(data: bytes) -> str | None:
    if not data:
        return ""
    codec = detect(data)
    return None if codec is None else codec.decode(data, errors="replace")


def _one_line(change: Change) -> str:
    what = {"file": "file", "directory": "folder", "link": "link"}[change.entry]
    if change.entry == "link":
        return f"{change.kind} {_printable(change.path)} (link to {change.target})"
    size = f", {plural(change.size, 'byte')}" if change.entry == "file" and change.size else ""
    mode = _mode_note(change).removeprefix(" (").removesuffix(")")
    return f"{change.kind} {_printable(change.path)} ({what}{size}{', ' + mode if mode else ''})"


def summary(changes: Sequence[Change]) -> str:
    """What a command's commit changed: a line a path (`M /src/a.py`), or per folder past a limit.

    Up to `SUMMARY_LINES` paths are listed one a line, with what changed of a mode
    (`M /run.sh (mode 644 -> 755)`) and the bits not kept; a larger set is listed by its
    top-level folders (`/node_modules/: 9,812 added`) and files. A directory added or
    deleted with what is in it is not listed on its own.
    """
    holding = {folder for change in changes for folder in _folders_above(change.path)}
    shown = [change for change in changes if not _holds_listed(change, holding)]
    if not shown:
        return ""
    if len(shown) <= SUMMARY_LINES:
        return "\nChanged:\n" + "\n".join(
            f"{c.kind} {_printable(c.path)}{_mode_note(c)}" for c in shown
        )
    groups: dict[str, list[Change]] = {}
    for change in shown:
        top = change.path.split("/")[1]
        groups.setdefault(change.path if change.path == f"/{top}" else f"/{top}/", []).append(
            change
        )
    lines = [_group_line(name, members) for name, members in groups.items()]
    if len(lines) > SUMMARY_LINES:
        rest = sum(len(members) for members in list(groups.values())[SUMMARY_LINES:])
        lines = [*lines[:SUMMARY_LINES], f"... and {rest:,} more below other folders"]
    stripped = [_printable(c.path) for c in shown if c.dropped & 0o6000]
    if stripped:
        lines.append(f"Set-uid/set-gid bits not kept: {', '.join(stripped[:SUMMARY_LINES])}")
    return f"\nChanged ({len(shown):,} paths):\n" + "\n".join(lines)


def left_out_note(changes: ChangeSet) -> str:
    """Lines naming what a command made that its set leaves out, else ""."""
    note = ""
    if changes.left_out:
        note += (
            f"\nNot kept: {_listed(changes.left_out)} (empty, named as files hidden from the"
            " command or with a hidden folder's mode: what copying them leaves)"
        )
    if changes.special:
        note += (
            f"\nNot kept: {_listed(changes.special)} (FIFOs, sockets and devices are not"
            " kept in the workspace: make them at run time, in the command that uses them)"
        )
    return note


def _listed(names: Sequence[str]) -> str:
    """`names` printed, at most `SUMMARY_LINES` of them, and how many more."""
    shown = ", ".join(_printable(path) for path in names[:SUMMARY_LINES])
    more = f" and {len(names) - SUMMARY_LINES:,} more" if len(names) > SUMMARY_LINES else ""
    return shown + more


def rewind_note(update: Mapping[str, Any]) -> str:
    """A line for a committed command's result when history cannot rewind it, else "".

    `update` is the state update of the commit (`Backend.state_update`): its history
    records, when history is on, are the command's.
    """
    added = update.get(HISTORY_KEY)
    records = added.get("add", []) if isinstance(added, dict) else []
    reason = unrewindable(records) if records else None
    if reason is None:
        return ""
    return (
        f"\nThese changes cannot be rewound: {reason}, so undo_edit and rewind cannot"
        " restore what this command changed."
    )


def _group_line(name: str, members: Sequence[Change]) -> str:
    if len(members) == 1 and members[0].path == name:
        return f"{members[0].kind} {_printable(name)}"
    counts = Counter(change.kind.name.lower() for change in members)
    parts = ", ".join(f"{count:,} {kind}" for kind, count in sorted(counts.items()))
    return f"{_printable(name)}: {parts}"


def _printable(path: str) -> str:
    """`path` as text a model can be sent (a name's undecodable bytes escaped)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _folders_above(path: str) -> Iterator[str]:
    """The folders `path` lies in, but the root."""
    while (path := paths.parent(path)) != paths.ROOT:
        yield path


def _holds_listed(change: Change, holding: set[str]) -> bool:
    """Whether `change` adds or deletes a folder that other changes (`holding`) lie in."""
    added_or_deleted = change.entry == "directory" and change.kind is not ChangeKind.MODIFIED
    return added_or_deleted and change.path in holding


__all__ = [
    "COMMAND_REVIEWS_KEY",
    "DIFFED_FILES",
    "DIFF_BUDGET",
    "SUMMARY_LINES",
    "effect_diff",
    "left_out_note",
    "rewind_note",
    "summary",
]
