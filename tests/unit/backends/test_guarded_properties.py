"""The change-set review, as a property: nothing host-run or protected is kept without a person.

Random change sets over a workspace with a git repository, a virtualenv, caches and
ignored folders are judged by the guarded view (`GuardedBackend.judge_changes`) in
every mode, and by a backend with no permission layer. Each path's category is the
generator's own label (the template it was drawn from), not the code's classification.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools import LocalBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.permissions.gate import CallGuard
from langchain_fstools.permissions.rules import Policy

if TYPE_CHECKING:
    from langchain_fstools.core.changesets import ChangeReview

NAMES = st.sampled_from(["a", "b2", "x-y", "main", "tool", "z_9"])
FOLDERS = st.sampled_from(["src", "build", "cache", "build/deep", "node_modules/pkg"])

HOST_RUN = [
    "build/__pycache__/{n}.cpython-311.pyc",
    "{d}/{n}.pyc",
    ".venv/lib/python3.11/site-packages/{n}.py",
    ".venv/lib/python3.11/{n}.txt",
    "{d}/sitecustomize.py",
    "{d}/usercustomize.py",
    "node_modules/.bin/{n}",
    "{d}/lib{n}.so",
    "{d}/lib{n}.so.1",
    ".envrc",
    ".vscode/{n}.json",
    "{d}/.envrc",
]
"""Templates of paths the host may run later (`mode 0o755` adds any path)."""

PROTECTED = [
    ".git/config",
    ".git/commondir",
    ".git/objects/info/alternates",
    ".git/hooks/{n}",
    ".git/info/attributes",
    ".git/unknown-{n}",
    ".git/worktrees/{n}/commondir",
    "{d}/.ssh/{n}",
    "{d}/.git",
]

ORDINARY = [
    "src/{n}.py",
    "build/{n}.o",
    "cache/{n}.json",
    ".git/objects/ab/{n}",
    ".git/refs/heads/{n}",
    ".git/logs/refs/heads/{n}",
    "{d}/{n}.txt",
]


@st.composite
def labelled_change(draw: st.DrawFn) -> tuple[str, Change]:
    label = draw(st.sampled_from(["host-run", "protected", "ordinary", "executable"]))
    templates = {"host-run": HOST_RUN, "protected": PROTECTED}.get(label, ORDINARY)
    template = draw(st.sampled_from(templates))
    path = "/" + template.format(n=draw(NAMES), d=draw(FOLDERS))
    kinds = [ChangeKind.ADDED, ChangeKind.MODIFIED]
    if label == "protected":
        kinds.append(ChangeKind.DELETED)
    kind = draw(st.sampled_from(kinds))
    mode = 0o755 if label == "executable" else draw(st.sampled_from([0o644, 0o600, 0o664]))
    entry = "file"
    if label == "protected" and path.endswith("/.git"):
        entry = "directory" if kind is ChangeKind.MODIFIED else "file"  # a replaced repository
    return ("host-run" if label == "executable" else label), Change(
        path, kind, entry, None if kind is ChangeKind.DELETED else mode
    )


CHANGE_SETS = st.lists(labelled_change(), min_size=1, max_size=12, unique_by=lambda c: c[1].path)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text("build/\ncache/\n__pycache__/\n.venv/\nnode_modules/\n")
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "src").mkdir()
    return root


def judged(root: Path, mode: str, changes: ChangeSet) -> ChangeReview:
    policy = Policy(mode=mode)  # type: ignore[arg-type]
    return GuardedBackend(LocalBackend(root), lambda _runtime: CallGuard(policy)).judge_changes(
        changes
    )


@settings(
    derandomize=True,
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(drawn=CHANGE_SETS)
def test_nothing_host_run_or_protected_is_kept_without_a_person(
    workspace: Path, drawn: list[tuple[str, Change]]
) -> None:
    changes = ChangeSet(tuple(change for _, change in drawn), "/nonexistent")
    careful = {change.path for label, change in drawn if label != "ordinary"}
    protected = {change.path for label, change in drawn if label == "protected"}

    for mode in ("default", "accept_edits"):
        review = judged(workspace, mode, changes)
        assert review.refused is not None or careful <= set(review.asks), (mode, drawn)

    review = judged(workspace, "bypass", changes)
    assert review.refused is not None or not protected, drawn
    bare = LocalBackend(workspace).judge_changes(changes)
    assert bare.refused is not None or not protected, drawn
