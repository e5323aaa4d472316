"""The review's categories of a changed path: protected, host-run, or ordinary (fail closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.shell.sandbox.protected import (
    HOST_RUN,
    PROTECTED,
    Finding,
    classify,
    git_config_runs,
    refusal,
)

A, M, D = ChangeKind.ADDED, ChangeKind.MODIFIED, ChangeKind.DELETED


def change(path: str, kind: ChangeKind = A, *, mode: int = 0o644, entry: str = "file") -> Change:
    return Change(path, kind, entry, None if entry == "link" else mode)  # type: ignore[arg-type]


def category(*changes: Change, source: str = "/nonexistent") -> dict[str, str]:
    found = classify(ChangeSet(changes, source), ())
    return {path: finding.category for path, finding in found.items()}


GIT_ORDINARY = [
    "/.git/objects/ab/cdef0123",
    "/.git/objects/pack/pack-1.pack",
    "/.git/objects/info/commit-graph",
    "/.git/refs/heads/main",
    "/.git/logs/HEAD",
    "/.git/logs/refs/heads/main",
    "/.git/index",
    "/.git/HEAD",
    "/.git/ORIG_HEAD",
    "/.git/FETCH_HEAD",
    "/.git/CHERRY_PICK_HEAD",
    "/.git/COMMIT_EDITMSG",
    "/.git/packed-refs",
    "/.git/sequencer/todo",
    "/.git/rebase-merge/done",
    "/.git/rebase-apply/patch",
    "/.git/info/exclude",
    "/.git/hooks/pre-commit.sample",
    "/sub/dir/.git/refs/tags/v1",
]


@pytest.mark.parametrize("path", GIT_ORDINARY)
def test_what_git_writes_in_ordinary_work_is_ordinary(path: str) -> None:
    assert category(change(path, M)) == {}


GIT_ELSE = [
    "/.git/commondir",
    "/.git/objects/info/alternates",
    "/.git/objects/info/http-alternates",
    "/.git/config",
    "/.git/config.worktree",
    "/.git/hooks/post-checkout",
    "/.git/info/attributes",
    "/.git/worktrees/w/commondir",
    "/.git/worktrees/w/config.worktree",
    "/.git/modules/sub/config",
    "/.git/modules/sub/objects/ab/cd",  # is `sub` or `sub/objects` a module? unknown
    "/.git/worktrees/w/HEAD",
    "/.git/modules/sub/hooks/pre-commit",
    "/.git/unknown-name",
    "/.git/info/unknown",
    "/sub/.git/description-ish",
]


@pytest.mark.parametrize("path", GIT_ELSE)
def test_everything_else_below_a_git_directory_is_protected(path: str) -> None:
    assert category(change(path, M)) == {path: PROTECTED}


def test_a_link_below_a_git_directory_is_protected() -> None:
    assert category(change("/.git/refs/heads/x", entry="link")) == {"/.git/refs/heads/x": PROTECTED}


def test_a_gitfile_pointing_elsewhere_is_protected_even_when_new() -> None:
    assert category(change("/sub/.git")) == {"/sub/.git": PROTECTED}


def test_a_folder_the_set_makes_a_git_directory_is_judged_as_one() -> None:
    found = category(
        change("/evil", entry="directory"),
        change("/evil/HEAD"),
        change("/evil/config"),
        change("/evil/objects/ab/cd"),
    )

    assert found == {"/evil/config": PROTECTED}  # no such file in the set's upper layer


def new_repository(tmp_path: Path, config: str) -> ChangeSet:
    upper = tmp_path / "upper" / "new" / ".git"
    upper.mkdir(parents=True)
    (upper / "config").write_text(config)
    changes = (
        change("/new", entry="directory"),
        change("/new/.git", entry="directory"),
        change("/new/.git/HEAD"),
        change("/new/.git/config"),
        change("/new/.git/hooks/pre-push.sample", mode=0o755),
    )
    return ChangeSet(changes, str(tmp_path))


INERT = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[user]\n\tname = t\n[x]\n\ty = z\n"


def test_a_new_repository_whose_config_runs_nothing_is_ordinary(tmp_path: Path) -> None:
    assert classify(new_repository(tmp_path, INERT), ()) == {}


@pytest.mark.parametrize(
    "config",
    [
        "[core]\n\tfsmonitor = touch /tmp/x\n",
        "[core]\n\thooksPath = h\n",
        "[core]\n\tpager = evil\n",
        "[core]\n\teditor = evil\n",
        "[core]\n\tsshCommand = evil\n",
        '[filter "lfs"]\n\tclean = evil\n',
        '[diff "x"]\n\ttextconv = evil\n',
        "[diff]\n\texternal = evil\n",
        "[credential]\n\thelper = evil\n",
        "[alias]\n\tst = !evil\n",
        "[include]\n\tpath = ../evil\n",
        '[includeIf "gitdir:/"]\n\tpath = ../evil\n',
        '[merge "x"]\n\tdriver = evil\n',
        "[core]\n\tfsmonitor = \\\n\tevil\n",
        "garbage line\n",
    ],
)
def test_a_new_repository_whose_config_runs_a_program_is_protected(
    tmp_path: Path, config: str
) -> None:
    found = classify(new_repository(tmp_path, config), ())

    assert found == {"/new/.git/config": Finding(PROTECTED, "git runs outside the sandbox")}
    assert git_config_runs(config)


def test_an_inert_config_runs_nothing() -> None:
    assert not git_config_runs(INERT + "[alias]\n\tst = status\n")


HOST_RUN_ROWS = {
    "compiled cache": "/build/__pycache__/app.cpython-311.pyc",
    "pyc beside its source": "/app.pyc",
    "site-packages": "/lib/python3.11/site-packages/x/__init__.py",
    "dist-packages": "/usr/lib/python3/dist-packages/x.py",
    "a new environment's file": "/env/lib/python3.11/anything.txt",
    "pth": "/lib/python3.11/new.pth",
    "sitecustomize": "/anywhere/sitecustomize.py",
    "usercustomize": "/anywhere/usercustomize.py",
    "node_modules/.bin": "/node_modules/.bin/tsc",
    "shared library": "/build/libx.so.1.2",
    "dylib": "/build/libx.dylib",
    "direnv": "/.envrc",
    "editor tasks": "/.vscode/tasks.json",
    "idea": "/.idea/workspace.xml",
    "pre-commit": "/.pre-commit-config.yaml",
    "yarnrc": "/.yarnrc.yml",
}


@pytest.mark.parametrize("path", HOST_RUN_ROWS.values(), ids=HOST_RUN_ROWS.keys())
def test_code_the_host_may_run_later_is_host_run(path: str) -> None:
    found = category(change("/env/pyvenv.cfg"), change(path))

    assert found[path] == HOST_RUN


def test_a_file_with_an_execute_bit_is_host_run() -> None:
    assert category(change("/build/tool", mode=0o755)) == {"/build/tool": HOST_RUN}
    assert category(change("/build/tool", mode=0o644)) == {}


def test_a_workspace_folder_holding_a_pyvenv_cfg_is_an_environment() -> None:
    changes = ChangeSet((change("/.venv/lib/python3.11/site.py"),), "/nonexistent")

    found = classify(changes, (), environment=lambda folder: folder == "/.venv")

    assert found["/.venv/lib/python3.11/site.py"].category == HOST_RUN
    assert classify(changes, ()) == {}


def test_a_deletion_leaves_nothing_to_run() -> None:
    assert category(change("/__pycache__/a.cpython-311.pyc", D)) == {}
    assert category(change("/.git/config", D)) == {"/.git/config": PROTECTED}


def test_ordinary_files_are_not_classified() -> None:
    assert category(change("/src/app.py"), change("/build/out.o"), change("/README.md")) == {}


def test_refusal_names_only_protected_paths() -> None:
    host_run = ChangeSet((change("/x.pyc"),), "/nonexistent")
    protected = ChangeSet((change("/x.pyc"), change("/.git/commondir")), "/nonexistent")

    assert refusal(host_run, ()) is None
    found = refusal(protected, ())
    assert found is not None
    assert found.path == "/.git/commondir"


def test_an_executable_below_a_git_directory_is_host_run_but_gits_samples() -> None:
    found = category(
        change("/.git/objects/ab/cd", mode=0o755),
        change("/.git/hooks/pre-commit.sample", mode=0o755),
    )

    assert found == {"/.git/objects/ab/cd": HOST_RUN}


def test_a_workspace_git_directory_of_any_name_is_judged_as_one() -> None:
    changes = ChangeSet(
        (change("/store/config", M), change("/store/objects/ab/cd")), "/nonexistent"
    )

    found = classify(changes, (), git_directory=lambda folder: folder == "/store")

    assert {path: f.category for path, f in found.items()} == {"/store/config": PROTECTED}
    assert classify(changes, ()) == {}


def test_a_modules_git_directory_is_judged_where_it_is_known() -> None:
    changes = ChangeSet(
        (
            change("/.git/modules/sub/objects/ab/cd"),
            change("/.git/modules/sub/refs/config", M),  # a ref named config
            change("/.git/modules/sub/config", M),
        ),
        "/nonexistent",
    )

    found = classify(changes, (), git_directory=lambda folder: folder == "/.git/modules/sub")

    assert {path: f.category for path, f in found.items()} == {
        "/.git/modules/sub/config": PROTECTED
    }


def test_a_module_the_set_makes_is_the_commands_own(tmp_path: Path) -> None:
    upper = tmp_path / "upper" / ".git" / "modules" / "lib" / "x"
    upper.mkdir(parents=True)
    (upper / "config").write_text(INERT)
    module = "/.git/modules/lib/x"
    changes = ChangeSet(
        (
            change("/.git/modules", entry="directory"),
            change("/.git/modules/lib", entry="directory"),
            change(module, entry="directory"),
            change(f"{module}/HEAD"),
            change(f"{module}/config"),
            change(f"{module}/objects/ab/cd"),
        ),
        str(tmp_path),
    )

    assert classify(changes, ()) == {}
