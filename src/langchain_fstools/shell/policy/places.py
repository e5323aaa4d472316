"""Where the paths of a command line lead: the folders it changes to, and protected ones.

The default command policy (`shell.policy.policy`) refuses a recursive deletion of `/`, a
top-level or a home directory however it is reached. A relative path is reached from
the folder the shell is in when the command runs, which a `cd`, `pushd` or `popd`
earlier in the line (or later, in a loop) may have changed; so a relative target is
judged from every folder the line may be in (`places`), and from an unknown one it is
unknown:

1. The line starts in the workspace (`"."`).
2. Each `cd`, `pushd` and `popd` adds the folder it goes to, from the one before:
   an absolute path as written, `~` (and `cd` alone) as a home directory, a relative
   path joined on. Unknown (None): a computed target, `cd -`, `popd`, `pushd` without
   a folder or with `+N`, a folder above the workspace (`..`), and, in a line that is
   not static (`Analysis.static`: it may set `HOME` or `CDPATH`, as `CDPATH=/ cd etc`
   does), `cd` alone, `~` and a relative path not starting with `./` or `../`.
3. A target computed at run time (`$X`, `$(pwd)/..`, `${HOME:?}/`, `{a,b}`) is unknown.

Protected (`protected`): `/`, a top-level directory, a home directory (`~`, `~user`,
`/home/NAME`, `/Users/NAME`, `/root`), whatever `..` climbs to from the workspace, and
a file-name pattern that may expand to one of these (`/*`, `/home/*`, `~/*`).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from langchain_fstools.shell.policy.analysis import Analysis, SimpleCommand

DIRECTORY_CHANGES: Final = frozenset({"cd", "pushd", "popd"})
"""Commands that change the folder later relative paths are resolved from."""

HOME_PARENTS: Final = ("home", "Users")
"""Top-level folders whose children are home directories."""

_WORKSPACE: Final = "."


def places(analysis: Analysis) -> list[str | None]:
    """Every folder the line's relative paths may be resolved from (None: unknown).

    Args:
        analysis: The line's analysis.

    Returns:
        `"."` (the workspace) first, then one entry per directory change, in order.
    """
    found: list[str | None] = [_WORKSPACE]
    for command in analysis.commands:
        if command.name in DIRECTORY_CHANGES:
            found.append(_destination(command, found[-1], static=analysis.static))
    return found


def _destination(  # noqa: PLR0911 - one return per form of directory change
    command: SimpleCommand, here: str | None, *, static: bool
) -> str | None:
    """Where `cd`/`pushd`/`popd` goes from `here`, or None when it cannot be known."""
    if command.name == "popd":
        return None
    operands = [a for a in command.arguments if a is None or a == "-" or not a.startswith("-")]
    if not operands:
        return "~" if command.name == "cd" and static else None
    target = operands[0]
    if target is None or target == "-" or re.fullmatch(r"[+-][0-9]+", target):
        return None
    if target.startswith("/"):
        return posixpath.normpath(re.sub("/+", "/", target))
    if target.startswith("~"):
        return target if static else None
    explicit = target in {".", ".."} or target.startswith(("./", "../"))
    if here is None or not (static or explicit):
        return None
    joined = posixpath.normpath(posixpath.join(here, target))
    return None if joined == ".." or joined.startswith("../") else joined


def resolved(target: str, place: str | None) -> str | None:
    """`target` as reached from `place` (None when either is unknown)."""
    if target.startswith(("/", "~")):
        return target
    if place is None:
        return None
    return posixpath.join(place, target) if place != _WORKSPACE else target


def protected(path: str, *, pattern: bool = False) -> bool:
    """Whether `path` is, or as a file-name `pattern` may expand to, a protected folder."""
    collapsed = re.sub("/+", "/", path)
    if collapsed.startswith("~"):
        _, _, rest = collapsed.partition("/")
        return posixpath.normpath(rest or ".") in {".", "*", ".*"}
    if not collapsed.startswith("/"):
        return _climbs(collapsed)
    parts = [p for p in posixpath.normpath(collapsed).split("/") if p]
    if len(parts) <= 1:
        return True
    if len(parts) != 2:  # noqa: PLR2004 - `/home/NAME`
        return pattern and ".." in parts
    if pattern:
        return any(fnmatch.fnmatchcase(home, parts[0]) for home in HOME_PARENTS)
    return parts[0] in HOME_PARENTS


def _climbs(path: str) -> bool:
    """Whether a relative path only climbs (`..`, `../../..`, `../*`): toward `/`."""
    parts = [p for p in posixpath.normpath(path).split("/") if p not in {"", "."}]
    return bool(parts) and parts[0] == ".." and all(p in {"..", "*", ".*"} for p in parts)


__all__ = ["DIRECTORY_CHANGES", "HOME_PARENTS", "places", "protected", "resolved"]
