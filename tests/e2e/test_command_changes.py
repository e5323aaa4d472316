"""What a command changed is reviewed before the workspace changes: kept whole or not at all.

Each attack of the issue, through `create_agent` with a scripted model (and, where no
permission layer is involved, through a bare toolkit): a planted git hook or fsmonitor,
an overwritten file of the interpreter's environment, a credential file, a path a rule
denies, a path changed meanwhile. Each is refused whole (the harmless files the same
command wrote are not kept either), and ordinary work (git commit, a new repository, a
build) is kept and listed.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.history.changes import MAX_RECORDS
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.shell.sandbox import sandbox
from langchain_fstools.shell.sandbox.protected import Refusal, host_code_paths, refusal
from langchain_fstools.shell.sandbox.sandbox import find_bwrap
from langchain_fstools.testing import ScriptedChatModel
from tests.e2e.agent_runs import run_command

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.e2e.agent_runs import Outcome

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

GIT = "git -c user.name=t -c user.email=t@e -c init.defaultBranch=main -c commit.gpgsign=false"
MODES = ["none", "bypass"]
"""No permission layer, and the mode that runs a command without asking first."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace holding a git repository with one commit."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    subprocess.run(
        ["bash", "-c", f"{GIT} init -q && {GIT} add a.txt && {GIT} commit -qm a"],
        cwd=folder,
        check=True,
    )
    return folder


def run(root: Path, command: str, mode: str, **middleware: Any) -> Outcome:
    settings: dict[str, Any] = {} if mode == "none" else {"mode": mode}
    return run_command(LocalBackend(root, execute=True), command, **settings, **middleware)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("command", "planted"),
    [
        ("printf '#!/bin/sh\\ncp ~/.aws/x /tmp\\n' > .git/hooks/post-checkout", ".git/hooks"),
        (f"{GIT} config core.fsmonitor 'cp ~/.aws/x /tmp'", ".git/config"),
        ("echo '*.py filter=evil' > .git/info/attributes", ".git/info/attributes"),
    ],
    ids=["hook", "fsmonitor", "filter"],
)
def test_what_git_runs_on_the_host_is_not_committed(
    root: Path, mode: str, command: str, planted: str
) -> None:
    hooks = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
    config = (root / ".git" / "config").read_text()

    outcome = run(root, f"echo kept? > other.txt && {command}", mode)

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert f"it changed /{planted}" in outcome.text
    assert "which commands may not change (git runs outside the sandbox)" in outcome.text
    assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == hooks
    assert (root / ".git" / "config").read_text() == config
    assert not (root / ".git" / "info" / "attributes").exists()
    assert not (root / "other.txt").exists()  # all or nothing


@pytest.mark.parametrize(
    "command",
    [
        f"rm -rf .git && {GIT} init -q && {GIT} config core.fsmonitor evil",
        "mkdir -p t && ln -s ../.git/hooks t/h && echo evil > t/h/post-checkout",
        "mkdir -p .git/worktrees/x && echo '[core] fsmonitor = evil' > .git/worktrees/x/config.worktree",
        "mkdir -p .git/modules/sub/hooks && echo evil > .git/modules/sub/hooks/post-checkout",
        "printf '[submodule \"s\"]\n\tpath = s\n\turl = ./s\n' > .gitmodules",
        "rm -rf .git",
    ],
    ids=[
        "repository replaced",
        "hook through a link",
        "worktree config",
        "module hook",
        "gitmodules",
        "repository removed",
    ],
)
def test_every_spelling_of_a_change_to_what_git_runs_is_refused(root: Path, command: str) -> None:
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))

    outcome = run(root, command, "none")

    assert outcome.message is not None
    assert outcome.message.status == "error", outcome.text
    assert "which commands may not change (git" in outcome.text
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before


@pytest.mark.parametrize("mode", MODES)
def test_git_commit_and_a_new_repository_are_kept(root: Path, mode: str) -> None:
    command = (
        f"echo b > b.txt && {GIT} add b.txt && {GIT} commit -qm b"
        f" && {GIT} init -q new && cp -r .git/hooks new/.git/ && {GIT} -C new config x.y z"
    )

    outcome = run(root, command, mode)

    assert outcome.ran, outcome.text
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True, check=True
    )
    assert log.stdout.split() == ["b", "a"]
    assert (root / "new" / ".git" / "config").read_text().endswith("[x]\n\ty = z\n")
    assert "\nA /b.txt\n" in outcome.text
    assert "\n/.git/: " in outcome.text
    assert "\n/new/: " in outcome.text


@pytest.mark.parametrize("mode", MODES)
def test_a_credential_file_is_not_committed(root: Path, mode: str) -> None:
    outcome = run(root, "mkdir -p .ssh && echo key >> .ssh/authorized_keys", mode)

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "it changed /.ssh, which commands may not change (holds credentials)" in outcome.text
    assert not (root / ".ssh").exists()


@pytest.mark.parametrize("mode", MODES)
def test_the_interpreters_own_environment_is_not_committed(mode: str) -> None:
    """The workspace holds the running interpreter's environment (`LocalBackend(".")`)."""
    prefix = Path(sys.prefix).resolve()
    workspace = prefix.parent
    site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    probe = site_packages / f"fstools-probe-{secrets.token_hex(4)}.py"
    relative = probe.relative_to(workspace)
    if not host_code_paths(str(workspace), []):
        pytest.skip("the interpreter's environment is not inside a folder of its own")

    outcome = run(workspace, f"echo 'import os' > {relative}", mode)

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "holds code this program runs outside the sandbox" in outcome.text
    assert not probe.exists()


def test_a_path_a_rule_denies_commits_nothing(root: Path) -> None:
    rule = Permission(operations=["write"], paths=["/secret"], action="deny")

    outcome = run(
        root, "mkdir -p secret && echo x > secret/x && echo y > y.txt", "bypass", permissions=[rule]
    )

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "a permission rule denies changing /secret" in outcome.text
    assert not (root / "secret").exists()
    assert not (root / "y.txt").exists()


def test_a_file_changed_while_the_command_ran_commits_nothing(root: Path) -> None:
    theirs = threading.Timer(1.0, lambda: (root / "a.txt").write_text("theirs\n"))
    theirs.start()

    outcome = run(root, "sleep 2 && echo mine >> a.txt && echo n > new.txt", "none")
    theirs.join()

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "/a.txt also changed in the workspace while it ran" in outcome.text
    assert (root / "a.txt").read_text() == "theirs\n"
    assert not (root / "new.txt").exists()


def test_a_large_change_set_is_summarised(root: Path) -> None:
    outcome = run(root, "mkdir out && for i in $(seq 100 129); do echo $i > out/$i; done", "none")

    assert outcome.ran, outcome.text
    assert outcome.text.endswith("\nChanged (30 paths):\n/out/: 30 added")
    assert len(list((root / "out").iterdir())) == 30


def test_a_small_change_set_is_listed_path_by_path(root: Path) -> None:
    outcome = run(root, "mkdir out && echo 1 > out/1 && rm a.txt && echo m > b", "none")

    assert outcome.text.endswith("\nChanged:\nD /a.txt\nA /b\nA /out/1")


def _set(*changes: Change) -> ChangeSet:
    return ChangeSet(changes, "/nonexistent")


def test_a_pth_file_of_an_existing_environment_is_refused() -> None:
    pth = Change("/env/lib/site-packages/evil.pth", ChangeKind.ADDED, "file", 0o644, 1)

    assert refusal(_set(pth), []) == Refusal(pth.path, "Python runs at every start")


def test_a_pth_file_of_an_environment_the_command_replaced_is_refused() -> None:
    gone = Change("/env/lib/site-packages", ChangeKind.DELETED, "directory", before="v")
    made = Change("/env/lib/site-packages", ChangeKind.ADDED, "directory", 0o755)
    pth = Change("/env/lib/site-packages/evil.pth", ChangeKind.ADDED, "file")

    assert refusal(_set(gone, made, pth), []) == Refusal(pth.path, "Python runs at every start")


def test_a_pth_file_of_an_environment_the_command_made_is_its_own() -> None:
    made = Change("/env/lib/site-packages", ChangeKind.ADDED, "directory", 0o755)
    pth = Change("/env/lib/site-packages/distutils-precedence.pth", ChangeKind.ADDED, "file")

    assert refusal(_set(made, pth), []) is None


def test_host_code_is_refused_at_any_depth_below_it() -> None:
    binary = Change("/.venv/bin/rg", ChangeKind.MODIFIED, "file", 0o755, 10, before="v")

    found = refusal(_set(binary), ["/.venv"])

    assert found == Refusal("/.venv/bin/rg", "holds code this program runs outside the sandbox")
    assert refusal(_set(binary), ["/.venv2"]) is None


def test_rewind_restores_what_a_command_changed(root: Path) -> None:
    (root / "gone.txt").write_text("gone\n")
    middleware = FilesystemMiddleware(backend=LocalBackend(root, execute=True), history=True)
    command = "echo new > a.txt && echo n > n.txt && rm gone.txt"
    turns = [
        AIMessage(
            content="", tool_calls=[{"name": "execute", "args": {"command": command}, "id": "c1"}]
        ),
        AIMessage(content="done"),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=turns), middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [("user", "go")]}, config)
    assert (root / "a.txt").read_text() == "new\n"

    restored = middleware.rewind(agent, config, to="c1")

    assert sorted(restored) == ["/a.txt", "/gone.txt", "/n.txt"]
    assert (root / "a.txt").read_text() == "a\n"
    assert (root / "gone.txt").read_text() == "gone\n"
    assert not (root / "n.txt").exists()


def _rewound(root: Path, turn: AIMessage, between: Callable[[], object] = list) -> list[str]:
    """Run `turn` (tool call id `c1`) with history on, call `between`, then rewind `c1`.

    Returns the restored paths.
    """
    middleware = FilesystemMiddleware(backend=LocalBackend(root, execute=True), history=True)
    agent = create_agent(
        ScriptedChatModel(turns=[turn, AIMessage(content="done")]),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [("user", "go")]}, config)
    between()
    return middleware.rewind(agent, config, to="c1")


def test_rewind_removes_the_folders_a_command_created_for_its_files(root: Path) -> None:
    command = "mkdir -p build/out && echo x > build/out/x.o && echo y > build/y.o"
    call = {"name": "execute", "args": {"command": command}, "id": "c1"}
    assert (root / "build").exists() is False

    restored = _rewound(root, AIMessage(content="", tool_calls=[call]))

    assert sorted(restored) == ["/build", "/build/out", "/build/out/x.o", "/build/y.o"]
    assert not (root / "build").exists()


def test_rewind_removes_the_folders_a_command_only_created(root: Path) -> None:
    call = {"name": "execute", "args": {"command": "mkdir build"}, "id": "c1"}

    assert _rewound(root, AIMessage(content="", tool_calls=[call])) == ["/build"]

    assert not (root / "build").exists()


def test_rewind_removes_a_nested_mkdir_p_and_keeps_the_folder_that_was_there(root: Path) -> None:
    (root / "src").mkdir()
    command = "mkdir -p src/build/x/y && mkdir -p out/a out/b && echo z > out/b/z"
    call = {"name": "execute", "args": {"command": command}, "id": "c1"}

    restored = _rewound(root, AIMessage(content="", tool_calls=[call]))

    assert sorted(restored) == [
        "/out",
        "/out/a",
        "/out/b",
        "/out/b/z",
        "/src/build",
        "/src/build/x",
        "/src/build/x/y",
    ]
    assert sorted(p.name for p in root.iterdir()) == [".git", "a.txt", "src"]
    assert list((root / "src").iterdir()) == []


def test_rewind_leaves_a_created_empty_folder_that_got_a_file_later(root: Path) -> None:
    call = {"name": "execute", "args": {"command": "mkdir -p build/x"}, "id": "c1"}
    later = root / "build" / "later.txt"

    restored = _rewound(
        root, AIMessage(content="", tool_calls=[call]), lambda: later.write_text("l")
    )

    assert restored == ["/build/x"]
    assert sorted(p.name for p in (root / "build").iterdir()) == ["later.txt"]


def test_rewind_removes_the_folders_a_write_file_created(root: Path) -> None:
    args = {"file_path": "/docs/api/index.md", "content": "# API\n"}
    call = {"name": "write_file", "args": args, "id": "c1"}

    restored = _rewound(root, AIMessage(content="", tool_calls=[call]))

    assert sorted(restored) == ["/docs", "/docs/api", "/docs/api/index.md"]
    assert not (root / "docs").exists()


def test_rewind_leaves_the_folders_that_were_there_before(root: Path) -> None:
    (root / "empty").mkdir()
    args = {"file_path": "/empty/new/file.txt", "content": "new\n"}
    call = {"name": "write_file", "args": args, "id": "c1"}

    restored = _rewound(root, AIMessage(content="", tool_calls=[call]))

    assert restored == ["/empty/new", "/empty/new/file.txt"]

    assert not (root / "empty" / "new").exists()
    assert (root / "empty").is_dir()  # empty now, as before: it was not the change's


def test_rewind_leaves_a_created_folder_that_holds_another_file(root: Path) -> None:
    command = "mkdir logs && echo a > logs/a.log"
    call = {"name": "execute", "args": {"command": command}, "id": "c1"}
    mine = root / "logs" / "mine.log"

    _rewound(root, AIMessage(content="", tool_calls=[call]), lambda: mine.write_text("mine\n"))

    assert sorted(p.name for p in (root / "logs").iterdir()) == ["mine.log"]


def test_renaming_a_masked_folders_parent_leaves_the_secret_hidden(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace is a home directory: `.config/gh` is masked in every command."""
    secret = root / ".config" / "gh" / "hosts.yml"
    secret.parent.mkdir(parents=True)
    secret.write_text("oauth_token: SECRET\n")
    (root / ".config" / "other.txt").write_text("other\n")
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setattr(sandbox, "home_directories", lambda: [str(root)])

    first = run(root, "mv .config .config.moved; cat .config.moved/gh/hosts.yml", "none")
    second = run(root, "cat .config.moved/gh/hosts.yml .config/gh/hosts.yml", "none")

    assert "SECRET" not in first.text
    assert "SECRET" not in second.text
    assert secret.read_text() == "oauth_token: SECRET\n"


def _committed_by_a_command(root: Path, command: str, **middleware: Any) -> str:
    """The result of `command` run by `execute` through an agent keeping history."""
    backend = LocalBackend(root, execute=True)
    return run_command(backend, command, history=True, **middleware).text


def test_a_change_set_too_large_for_the_history_says_it_cannot_be_rewound(root: Path) -> None:
    many = MAX_RECORDS + 1
    text = _committed_by_a_command(root, f"for n in $(seq {many}); do echo $n > f$n.txt; done")

    assert (root / f"f{many}.txt").read_text() == f"{many}\n"  # committed
    assert f"cannot be rewound: it changed {many:,} files" in text
    assert "undo_edit and rewind cannot restore" in text


def test_a_file_too_large_for_the_history_says_its_command_cannot_be_rewound(root: Path) -> None:
    text = _committed_by_a_command(root, "echo more >> a.txt", history_record_bytes=1)

    assert (root / "a.txt").read_text() == "a\nmore\n"
    assert "cannot be rewound: the earlier content of /a.txt was too large" in text


def test_a_change_set_the_history_keeps_says_nothing_of_rewinding(root: Path) -> None:
    text = _committed_by_a_command(root, "echo b > b.txt")

    assert "A /b.txt" in text
    assert "rewound" not in text


def test_a_set_that_does_not_fit_on_the_disk_changes_nothing(tmp_path: Path) -> None:
    """On an 8 MiB disk, a command's 10 MiB are refused whole, and the model is told why."""
    workspace = tmp_path / "small"
    workspace.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(workspace)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (CI runs as root): {mounted.stderr.strip()}")
    try:
        (workspace / "old.txt").write_text("old\n")
        command = (
            "rm old.txt && mkdir -p build/deep && head -c 5M /dev/zero > build/one.bin"
            " && head -c 5M /dev/zero > build/two.bin"
        )
        outcome = run(workspace, command, "none")
        assert outcome.message is not None
        assert outcome.message.status == "error"
        assert "Error: the disk is full, so nothing was written: the changes need 10.0 MiB" in (
            outcome.text
        )
        assert sorted(p.name for p in workspace.iterdir()) == ["old.txt"]
    finally:
        subprocess.run(["umount", "-l", str(workspace)], check=True)


@pytest.mark.parametrize("mode", ["accept_edits", "default"])
def test_what_a_command_made_that_is_not_kept_is_named_in_its_result(root: Path, mode: str) -> None:
    outcome = run(root, "mkfifo pipe && mkdir -m 1777 shared && echo x > kept.txt", mode)

    assert "Not kept: /pipe (FIFOs, sockets and devices are not kept" in outcome.text
    assert "Not kept: /shared (empty, named as files hidden" in outcome.text
    assert "A /kept.txt" in outcome.text
    assert not (root / "pipe").exists()
