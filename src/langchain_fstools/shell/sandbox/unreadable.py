"""Workspace paths a permission rule denies reading: hidden from commands as well.

A rule that denies reading a path (`Permission(operations=["read"], paths=["/secrets"],
action="deny")`) keeps every file tool from it; a command must not read it either. The
permission layer's view of the backend (`backends.guarded.GuardedBackend`) says, around
each command it lets run, which virtual paths no call may read (`Unreadable`, handed
down with `hiding`), and the backend that runs the command finds them in the
workspace's current tree at the command's start (`unreadable_paths`): the sandbox
masks each over the command's own view (an empty read-only folder, an empty file), as
it masks credentials. Found per command, a file created under a denied folder, or
matching a denied glob (`**/*.pem`), after the session started is hidden too.

How the tree is searched:
    1. Only where a rule may match: below the literal start of each denying glob
       (`/secrets/**` is looked for in `/secrets` alone; `*.pem`, or `**/x`, anywhere:
       the whole tree is listed at each command's start, about 3.5 ms a thousand
       entries).
    2. An entry the rules hide is masked whole, and not entered; a folder all of whose
       entries are hidden is masked whole (it looks empty, as `ls` shows it).
    3. A link the rules hide is masked where it leads (stricter than the file tools,
       which never follow a link out of the workspace), unless that is the workspace
       or a folder above it (the backend leaves those out); another link is not
       entered.

Where the sandbox has no mount namespace (Landlock alone, or `sandbox=None`) nothing
can be masked: a command that would see a denied path is refused (fail closed).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@dataclass(frozen=True)
class Unreadable:
    """The virtual paths no call may read, for the commands of one call.

    Attributes:
        hidden: Whether a virtual path (as spelled, any case) is denied to reads;
            asked only about a path no folder above which is hidden (the search
            walks down, and does not enter a hidden folder).
        starts: The literal start of each glob that denies reads, lower-cased
            components (`()`: it may match anywhere); nothing outside these is hidden.
        why: The rule that hides a path, as a phrase ("permission rule 1").
    """

    hidden: Callable[[str], bool]
    starts: tuple[tuple[str, ...], ...]
    why: Callable[[str], str]


commands_unreadable: contextvars.ContextVar[Unreadable | None] = contextvars.ContextVar(
    "fstools_commands_unreadable", default=None
)
"""What the commands started in the current call must not see (None: nothing)."""


@contextlib.contextmanager
def hiding(unreadable: Unreadable | None) -> Iterator[None]:
    """Hide `unreadable` from the commands started inside the block."""
    token = commands_unreadable.set(unreadable)
    try:
        yield
    finally:
        commands_unreadable.reset(token)


def unreadable_paths(root: str, unreadable: Unreadable) -> list[str]:
    """The virtual paths below the host folder `root` that a command must not see, now."""
    found, _whole = _search(root, (), (), unreadable)
    return found


def _search(
    folder: str, spelled: tuple[str, ...], lowered: tuple[str, ...], unreadable: Unreadable
) -> tuple[list[str], bool]:
    """What to mask below `folder`, and whether every entry of it is hidden."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return [], False
    found: list[str] = []
    whole = bool(entries) and bool(spelled)  # the workspace itself is never masked whole
    for entry in entries:
        names, lower = (*spelled, entry.name), (*lowered, entry.name.lower())
        if not any(s[: len(lower)] == lower or lower[: len(s)] == s for s in unreadable.starts):
            whole = False
            continue
        virtual = "/" + "/".join(names)
        if unreadable.hidden(virtual):
            found.append(virtual)
            continue
        whole = False
        if entry.is_dir(follow_symlinks=False):
            inner, inner_whole = _search(entry.path, names, lower, unreadable)
            found += [virtual] if inner_whole else inner
    return found, whole


__all__ = ["Unreadable", "commands_unreadable", "hiding", "unreadable_paths"]
