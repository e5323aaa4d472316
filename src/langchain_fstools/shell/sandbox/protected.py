"""What a command may not change: what runs later outside the sandbox, and credentials.

A command runs on a copy-on-write view (`shell.sandbox.overlay`); its change set is committed
only when `refusal` finds none of these among its changes, in every permission mode
and without a permission layer (a file tool's write of such a path is what shows the
change to a person):

1. What git executes in a repository that existed before the command: below its
   `.git`, every `config` and `config.worktree` (`core.fsmonitor`, `core.hooksPath`,
   aliases; also a submodule's or a worktree's, under `modules/` and `worktrees/`),
   every `hooks` folder and `info/attributes` (filters); and the `.gitmodules` beside
   it (a submodule `git status` enters). A repository the command made itself (`git
   init`, its `.git` added, not replacing one, by the same change set) is the
   command's own. The rest of `.git` (objects, refs, the index, logs) is not
   protected: `git commit` works.
2. Code the host runs or imports later that lies inside the workspace: the
   interpreter's prefixes (a virtualenv), its site-packages folders, this package, and
   the executables the host starts (`rg`, `bwrap`), as `host_code` names them. (The
   workspace root itself is never one: a workspace that is all code would take no
   command's change.)
3. A `*.pth` file (run at every interpreter start) in a `site-packages` folder that
   existed before the command: one created with its environment (not replacing one)
   is the command's own.
4. Credential files and folders at any depth (`CREDENTIAL_PATHS`).
"""

from __future__ import annotations

import os
import site
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from langchain_fstools.core import paths
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.shell.sandbox.sandbox import CREDENTIAL_PATHS

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from langchain_fstools.core.changesets import Change, ChangeSet

_GIT_CONFIGURATION: Final = ("config", "config.worktree")
"""The names of git's configuration files below a `.git` folder (at any depth)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The change that keeps a change set from being committed, and why, in a few words."""

    path: str
    reason: str


def refusal(changes: ChangeSet, host_code: Sequence[str]) -> Refusal | None:
    """The first change of `changes` that a command may not make, or None.

    Args:
        changes: What the command changed.
        host_code: Virtual paths of code the host runs later (see `host_code_paths`).
    """
    found = protected_changes(changes, host_code)
    return next((Refusal(path, why) for path, why in found.items()), None)


def protected_changes(changes: ChangeSet, host_code: Sequence[str]) -> dict[str, str]:
    """Every changed path a command may not make by itself, with why, in the set's order."""
    new = {c.path for c in changes.changes if c.kind is ChangeKind.ADDED}
    added = new - {c.path for c in changes.changes if c.kind is ChangeKind.DELETED}
    found: dict[str, str] = {}
    for change in changes.changes:
        why = _reason(change, added, host_code)
        if why is not None:
            found.setdefault(change.path, why)
    return found


def host_code_paths(root: str, executables: Iterable[str | None]) -> list[str]:
    """The virtual paths, inside the workspace `root`, of code this process runs later.

    Args:
        root: The workspace's real host path.
        executables: Programs the host starts (None for one not found).
    """
    package = str(Path(__file__).resolve().parents[2])
    found = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        *site.getsitepackages(),
        site.getusersitepackages(),
        package,
        *executables,
    ]
    inside: list[str] = []
    for host in found:
        if not host:
            continue
        real = os.path.realpath(host)
        if real.startswith(root.rstrip("/") + "/"):
            virtual = paths.normalize("/" + os.path.relpath(real, root))
            if virtual not in inside:
                inside.append(virtual)
    return inside


def _reason(change: Change, added: set[str], host_code: Sequence[str]) -> str | None:
    path = change.path
    if any(paths.is_within(path, code) for code in host_code):
        return "holds code this program runs outside the sandbox"
    parts = path.strip("/").split("/")
    found = _git_reason(path, parts, added)
    if found is not None:
        return found
    if parts[-1].endswith(".pth") and len(parts) > 1 and parts[-2] == "site-packages":
        environment = "/" + "/".join(parts[:-1])
        if environment not in added:
            return "Python runs at every start"
    joined = f"/{'/'.join(parts)}/"
    if any(f"/{credential}/" in joined for credential in CREDENTIAL_PATHS):
        return "holds credentials"
    return None


def _git_reason(path: str, parts: list[str], added: set[str]) -> str | None:
    """Why git would run a change to `path` outside the sandbox, or None."""
    for index, part in enumerate(parts):
        if part == ".git":
            repository = "/" + "/".join(parts[: index + 1])
            if repository not in added and _executed_by_git(parts[index + 1 :]):
                return "git runs outside the sandbox"
    if parts[-1] == ".gitmodules" and paths.join(paths.parent(path), ".git") not in added:
        return "git status enters the submodules it names, outside the sandbox"
    return None


def _executed_by_git(inner: list[str]) -> bool:
    """Whether a path below `.git` (its parts) is configuration, a hook or attributes."""
    if not inner:
        return True  # the repository itself (replaced, or made a file pointing elsewhere)
    if "hooks" in inner or inner[-1] in _GIT_CONFIGURATION:
        return True
    return inner[-2:] == ["info", "attributes"]


__all__ = ["Refusal", "host_code_paths", "protected_changes", "refusal"]
