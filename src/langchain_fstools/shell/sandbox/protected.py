"""What a command may not change by itself: the review's categories of a changed path.

A command runs on a copy-on-write view (`shell.sandbox.overlay`); before its change set
is committed, `classify` puts every changed path in one category, failing closed (a
path is ordinary only when it is provably inert):

- **protected** (`PROTECTED`): never kept without a person, and refused where there is
  no one to ask (`bypass`, no permission layer):
    1. Under any git directory (a `.git` folder, one of its `modules/` or `worktrees/`,
       or a folder holding `HEAD` and `config` or `objects`, in the set or the
       workspace: a bare repository, what a gitfile or `commondir` points to),
       everything but what git itself writes in ordinary work (`_GIT_ORDINARY`:
       objects, refs, logs, the index, `HEAD` and its siblings, `packed-refs`, the
       sequencer and rebase state, `*.sample` hooks). So a `commondir`,
       `objects/info/alternates`, a hook, `info/attributes` or a config is protected.
       A repository the command made itself (its `.git` added, replacing nothing) may
       have a `config` that sets nothing git executes (`git_config_runs`). A `.git`
       file (a gitfile, pointing elsewhere) and the `.gitmodules` beside an existing
       repository are protected too.
    2. Code this program runs later that lies inside the workspace (`host_code`: the
       interpreter's prefixes and site-packages, this package, `rg`, `bwrap`).
    3. A `*.pth` file in a `site-packages` folder that existed before the command.
    4. Credential files and folders at any depth (`CREDENTIAL_PATHS`).
- **host-run** (`HOST_RUN`): what the host may execute or import later, outside the
  sandbox; never "ignored", so it asks in `default` and `accept_edits` (see
  docs/permissions.md). A deletion is never host-run (nothing is left to run):
    1. Compiled caches: `*.pyc`, `*.pyo`, anything in a `__pycache__`.
    2. Anything in a Python environment: below a `site-packages` or `dist-packages`
       folder or a folder holding a `pyvenv.cfg` (in the set or, told by the caller,
       in the workspace), `*.pth`, `sitecustomize.py`, `usercustomize.py`.
    3. `node_modules/.bin`, shared libraries (`*.so`, `*.so.*`, `*.dylib`, `*.dll`,
       `*.pyd`), and any file with an execute bit (below a git directory too, but
       git's own `*.sample` hooks).
    4. Files tools run commands from (`TOOL_CONFIGS`): direnv's `.envrc`, editor
       settings (`.vscode/`, `.idea/`), hook managers, package managers' rc files.
- Anything else is ordinary: the mode decides (and the ignore files may keep it).
"""

from __future__ import annotations

import os
import re
import site
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from langchain_fstools.core import paths
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.shell.sandbox.overlay import upper_path
from langchain_fstools.shell.sandbox.sandbox import CREDENTIAL_PATHS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from langchain_fstools.core.changesets import Change, ChangeSet

Category = Literal["protected", "host-run"]
"""What can happen to a changed path later: see the module docstring."""

PROTECTED: Final = "protected"
HOST_RUN: Final = "host-run"

_GIT_ORDINARY_FILES: Final = frozenset(
    {
        "HEAD",
        "AUTO_MERGE",
        "COMMIT_EDITMSG",
        "TAG_EDITMSG",
        "MERGE_MSG",
        "MERGE_MODE",
        "MERGE_RR",
        "SQUASH_MSG",
        "description",
        "index",
        "packed-refs",
        "shallow",
        "gc.log",
        "gc.pid",
        "locked",
    }
)
"""Files at the top of a git directory that git writes in ordinary work (and `*_HEAD`,
`BISECT_*`, `sharedindex.*`)."""

_GIT_ORDINARY_FOLDERS: Final = frozenset(
    {"refs", "logs", "sequencer", "rebase-merge", "rebase-apply", "rr-cache", "branches", "lfs"}
)
"""Folders of a git directory whose every file git writes in ordinary work (and
`objects`, but for what points at other object stores)."""

_GIT_ELSEWHERE: Final = frozenset({"alternates", "http-alternates"})
"""`objects/info/` files that point git at other object stores (and their configs)."""

_GIT_NESTED: Final = frozenset({"modules", "worktrees"})
"""Folders of a git directory whose entries are git directories themselves (a module's
name may hold slashes: which folder is one is told by its `HEAD`)."""

TOOL_CONFIGS: Final = (
    ".envrc",
    ".vscode",
    ".idea",
    ".devcontainer",
    ".pre-commit-config.yaml",
    ".husky",
    "lefthook.yml",
    ".lefthook.yml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".tool-versions",
    ".mise.toml",
    "mise.toml",
    ".exrc",
    ".nvim.lua",
    ".gdbinit",
    ".lldbinit",
    ".pdbrc",
)
"""Files and folders (at any depth, with their contents) that tools run commands from."""

_SHARED_LIBRARY: Final = re.compile(r"\.(so(\.[0-9.]+)?|dylib|dll|pyd)$")

_CONFIG_RUNS: Final = frozenset(
    {
        "filter",
        "include",
        "includeif",
        "credential",
        "pager",
        "gpg",
        "sequence",
        "difftool",
        "mergetool",
        "browser",
        "web",
        "man",
        "sendemail",
        "uploadpack",
        "receive",
        "protocol",
        "ssh",
        "url",
        "trailer",
        "submodule",
        "interactive",
        "hook",
        "fsmonitor",
    }
)
"""Sections of a git config whose every key may make git run something."""

_CORE_INERT: Final = frozenset(
    {
        "repositoryformatversion",
        "filemode",
        "bare",
        "logallrefupdates",
        "ignorecase",
        "precomposeunicode",
        "symlinks",
        "autocrlf",
        "eol",
        "safecrlf",
        "compression",
        "quotepath",
    }
)
"""The `core` keys a new repository may set (every other `core` key may run something)."""

_RUNNING_KEYS: Final = frozenset(
    {"textconv", "command", "driver", "external", "uploadpack", "receivepack", "vcs", "proxy"}
)
"""Keys of any other section that name a program git runs (`diff.x.textconv`, ...)."""

_SECTION: Final = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(\s+"(?:[^"\\]|\\.)*")?\s*\]$')
_ENTRY: Final = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(=\s*(.*))?$")


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a changed path is not ordinary: its category and, in a few words, why."""

    category: Category
    reason: str


@dataclass(frozen=True, slots=True)
class Refusal:
    """The change that keeps a change set from being committed, and why, in a few words."""

    path: str
    reason: str


def refusal(changes: ChangeSet, host_code: Sequence[str]) -> Refusal | None:
    """The first change of `changes` that is protected, or None.

    Args:
        changes: What the command changed.
        host_code: Virtual paths of code the host runs later (see `host_code_paths`).
    """
    found = classify(changes, host_code)
    return next(
        (Refusal(path, f.reason) for path, f in found.items() if f.category == PROTECTED), None
    )


def classify(
    changes: ChangeSet,
    host_code: Sequence[str],
    *,
    environment: Callable[[str], bool] | None = None,
    git_directory: Callable[[str], bool] | None = None,
) -> dict[str, Finding]:
    """Every changed path that is not ordinary, with its finding, in the set's order.

    Args:
        changes: What the command changed.
        host_code: Virtual paths of code the host runs later (see `host_code_paths`).
        environment: Whether a workspace folder holds a `pyvenv.cfg` (a Python
            environment); the set's own `pyvenv.cfg` files count without it.
        git_directory: Whether a workspace folder is a git directory (holds `HEAD` and
            `objects`: one a gitfile or `commondir` points to, a bare repository),
            whatever its name; `.git` folders and the set's own count without it.
    """
    nowhere: Callable[[str], bool] = lambda _folder: False  # noqa: E731
    review = _Review(changes, tuple(host_code), environment or nowhere, git_directory or nowhere)
    found: dict[str, Finding] = {}
    for change in changes.changes:
        finding = review.finding(change)
        if finding is not None:
            found.setdefault(change.path, finding)
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


def git_config_runs(text: str) -> bool:
    """Whether a git config may make git run a program (failing closed on what it cannot read).

    Runs: any key of a section in `_CONFIG_RUNS`, a `core` key not in `_CORE_INERT`, a
    key naming a program (`_RUNNING_KEYS`), an alias starting with `!`, and any line
    this reader does not understand (continuations, odd quoting).
    """
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            subsection = header.group(2) is not None
            if section.split(".")[0] in _CONFIG_RUNS:
                return True
            continue
        entry = _ENTRY.match(line)
        if entry is None or line.endswith("\\") or not section:
            return True
        key, value = entry.group(1).lower(), (entry.group(3) or "").strip().strip('"')
        if section == "core" and not subsection and key not in _CORE_INERT:
            return True
        if key in _RUNNING_KEYS or (section == "alias" and value.startswith("!")):
            return True
    return False


class _Review:
    """A change set's facts that classify its paths: what it adds, its git folders, venvs."""

    def __init__(
        self,
        changes: ChangeSet,
        host_code: Sequence[str],
        environment: Callable[[str], bool],
        git_directory: Callable[[str], bool],
    ) -> None:
        self.changes = changes
        self.host_code = host_code
        self.environment = environment
        self.git_directory = git_directory
        entries = changes.changes
        new = {c.path for c in entries if c.kind is ChangeKind.ADDED}
        self.added = new - {c.path for c in entries if c.kind is ChangeKind.DELETED}
        kept = {c.path for c in entries if c.kind is not ChangeKind.DELETED}
        self.venvs = {paths.parent(p) for p in kept if p.endswith("/pyvenv.cfg")}
        self.git_folders = {
            paths.parent(p)
            for p in kept
            if p.endswith("/HEAD")
            and {paths.join(paths.parent(p), name) for name in ("config", "objects")} & kept
        }
        """Folders the set makes git directories of (a bare repository, say)."""

    def finding(self, change: Change) -> Finding | None:
        parts = change.path.strip("/").split("/")
        inside, why = self._protected(change, parts)
        if why is not None:
            return Finding(PROTECTED, why)
        # git writes no executables in ordinary work but its samples; a deletion runs nothing
        sample = change.path.endswith(".sample")
        if change.kind is ChangeKind.DELETED or (inside and (sample or not _executable(change))):
            return None
        why = self._host_run(change, parts)
        return None if why is None else Finding(HOST_RUN, why)

    def _protected(self, change: Change, parts: list[str]) -> tuple[bool, str | None]:
        """Whether `change` is below a git directory, and why it is protected, if so."""
        if any(paths.is_within(change.path, code) for code in self.host_code):
            return False, "holds code this program runs outside the sandbox"
        inside, why = self._git(change, parts)
        if why is not None:
            return inside, why
        folder = "/" + "/".join(parts[:-1])
        if parts[-1].endswith(".pth") and parts[-2:-1] == ["site-packages"]:
            return inside, None if folder in self.added else "Python runs at every start"
        joined = f"/{'/'.join(parts)}/"
        if any(f"/{credential}/" in joined for credential in CREDENTIAL_PATHS):
            return inside, "holds credentials"
        return inside, None

    def _git(self, change: Change, parts: list[str]) -> tuple[bool, str | None]:
        """Whether `change` is below a git directory, and why git would run it, if so.

        Below a module's or a worktree's own git directory (one `git_folders` or
        `git_directory` knows), a path is judged there; any other path below
        `modules/` or `worktrees/` is not what git writes in ordinary work.
        """
        path = change.path
        repositories = [
            ("/" + "/".join(parts[:depth]), depth)
            for depth in range(1, len(parts) + 1)
            if parts[depth - 1] == ".git" or (depth < len(parts) and self._repository(parts, depth))
        ]
        for index, (folder, depth) in enumerate(repositories):
            inner = parts[depth:]
            if inner[:1] and inner[0] in _GIT_NESTED and repositories[index + 1 :]:
                continue  # judged below the nested git directory
            if not _git_ordinary(change, inner, new=folder in self.added, config=self._config):
                return True, "git runs outside the sandbox"
        inside = bool(repositories)
        if parts[-1] == ".gitmodules" and paths.join(paths.parent(path), ".git") not in self.added:
            return inside, "git status enters the submodules it names, outside the sandbox"
        return inside, None

    def _repository(self, parts: list[str], depth: int) -> bool:
        """Whether the folder of the first `depth` parts is a git directory of any name."""
        folder = "/" + "/".join(parts[:depth])
        return folder in self.git_folders or self.git_directory(folder)

    def _config(self, change: Change) -> bool:
        """Whether a new repository's config sets nothing git executes (unread: it may)."""
        if not self.changes.source:
            return False  # no waiting contents (a branch's proposed paths): fail closed
        try:
            text = Path(upper_path(self.changes, change.path)).read_text(errors="strict")
        except (OSError, UnicodeDecodeError):
            return False
        return not git_config_runs(text)

    def _host_run(self, change: Change, parts: list[str]) -> str | None:  # noqa: PLR0911 - a row each
        """What the host may run of `change` later, or None."""
        name = parts[-1]
        if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
            return "a compiled cache Python runs"
        if name in {"sitecustomize.py", "usercustomize.py"} or name.endswith(".pth"):
            return "Python runs it at start"
        if {"site-packages", "dist-packages"} & set(parts[:-1]) or self._in_environment(parts):
            return "inside a Python environment"
        if "node_modules" in parts and ".bin" in parts:
            return "a program npm puts on the PATH"
        if change.entry == "file" and _SHARED_LIBRARY.search(name):
            return "a shared library"
        if _executable(change):
            return "an executable"
        joined = f"/{'/'.join(parts)}/"
        if any(f"/{config}/" in joined for config in TOOL_CONFIGS):
            return "a tool runs commands from it"
        return None

    def _in_environment(self, parts: list[str]) -> bool:
        folders = ["/" + "/".join(parts[:depth]) for depth in range(1, len(parts))]
        return any(folder in self.venvs or self.environment(folder) for folder in folders)


def _executable(change: Change) -> bool:
    return change.entry == "file" and change.mode is not None and bool(change.mode & 0o111)


def _git_ordinary(  # noqa: PLR0911 - one return per part of a git directory
    change: Change, inner: list[str], *, new: bool, config: Callable[[Change], bool]
) -> bool:
    """Whether git writes the path `inner` (below a git directory) in ordinary work.

    `new`: the git directory is the command's own (added, replacing nothing).
    """
    if not inner:  # the git directory itself: a new folder, not a gitfile, nor a replacement
        return new and change.entry == "directory" and change.kind is ChangeKind.ADDED
    if change.entry == "link":
        return False
    if change.entry == "directory":
        return inner[-1] not in _GIT_ELSEWHERE and (new or inner != ["hooks"])
    first, name = inner[0], inner[-1]
    if len(inner) == 1:
        if name == "config":
            return new and change.kind is ChangeKind.ADDED and config(change)
        return (
            name in _GIT_ORDINARY_FILES
            or name.endswith("_HEAD")
            or name.startswith(("BISECT_", "sharedindex."))
        )
    if first == "objects":
        return name not in _GIT_ELSEWHERE
    if first == "hooks":
        return inner[2:] == [] and name.endswith(".sample")
    if first == "info":
        return inner[1:] in (["exclude"], ["refs"], ["sparse-checkout"])
    return first in _GIT_ORDINARY_FOLDERS


__all__ = [
    "HOST_RUN",
    "PROTECTED",
    "TOOL_CONFIGS",
    "Category",
    "Finding",
    "Refusal",
    "classify",
    "git_config_runs",
    "host_code_paths",
    "refusal",
]
