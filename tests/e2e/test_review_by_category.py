"""A command's effect is kept without a person only when it cannot run later (fail closed).

Each reproduction of the attacker review, through `create_agent` with a scripted model:
git's other config files (`commondir`, the command's own repository), code the host
runs from ignored paths (a compiled cache, a `sitecustomize.py`), mode bits (set-uid,
a mode change never shown), and the decisions a rule or a rejection gives. The host-side
consequence is checked for real: the host's `git status`, `python -c 'import app'`,
`.venv/bin/python`, the committed file's mode; and a control shows the same planted
file does run on the host when it is put there directly, so no check passes vacuously.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from langchain_fstools.testing import ScriptedChatModel
from tests.e2e.agent_runs import run_command

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

GIT = "git -c user.name=t -c user.email=t@e -c init.defaultBranch=main -c commit.gpgsign=false"
CONFIG: Any = {"configurable": {"thread_id": "t"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace holding a git repository with one commit, ignoring build outputs."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    (folder / ".gitignore").write_text("build/\n__pycache__/\n.venv/\n")
    subprocess.run(
        ["bash", "-c", f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm a"],
        cwd=folder,
        check=True,
    )
    return folder


class Run:
    """One scripted `execute` call through `create_agent`, and what came back."""

    def __init__(self, root: Path, command: str, mode: str | None, **middleware: Any) -> None:
        call = AIMessage(
            content="", tool_calls=[{"name": "execute", "args": {"command": command}, "id": "c1"}]
        )
        settings = {} if mode is None else {"mode": mode}
        self.graph = create_agent(
            ScriptedChatModel(turns=[call, AIMessage(content="done")]),
            middleware=[
                FilesystemMiddleware(
                    backend=LocalBackend(root, execute=True), **settings, **middleware
                )
            ],
            checkpointer=InMemorySaver(),
        )
        self.first = self.graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    @property
    def request(self) -> dict[str, Any] | None:
        """The action request a person is asked, if any."""
        if not self.first.interrupts:
            return None
        (asked,) = self.first.interrupts
        (request,) = asked.value["action_requests"]
        return dict(request)

    def message(self) -> ToolMessage:
        found = [
            m for m in self.graph.get_state(CONFIG).values["messages"] if isinstance(m, ToolMessage)
        ]
        return found[-1]

    def answer(self, decision: dict[str, Any]) -> ToolMessage:
        self.graph.invoke(Command(resume={"decisions": [decision]}), CONFIG, version="v2")
        return self.message()


# ----- git's other config files ----------------------------------------------------------

COMMONDIR = (
    "mkdir -p evil && cp -r .git/objects .git/refs evil/"
    " && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {marker}\\n'"
    " > evil/config && echo ../evil > .git/commondir"
)
OWN_REPOSITORY = f"{GIT} init -q new && {GIT} -C new config core.fsmonitor 'touch {{marker}}'"


def git_status(folder: Path) -> None:
    subprocess.run(["git", "status", "--short"], cwd=folder, capture_output=True, check=False)


@pytest.mark.parametrize(
    ("command", "repository"),
    [(COMMONDIR, "."), (OWN_REPOSITORY, "new")],
    ids=["commondir", "the command's own repository"],
)
def test_a_planted_fsmonitor_is_the_control_it_runs_on_the_host(
    tmp_path: Path, root: Path, command: str, repository: str
) -> None:
    """The control: planted directly (no sandbox), the host's `git status` runs it."""
    marker = tmp_path / "ran"

    subprocess.run(["bash", "-c", command.format(marker=marker)], cwd=root, check=True)
    git_status(root / repository)

    assert marker.exists()


@pytest.mark.parametrize(
    ("command", "repository", "path"),
    [
        (COMMONDIR, ".", "/.git/commondir"),
        (OWN_REPOSITORY, "new", "/new/.git/config"),
    ],
    ids=["commondir", "the command's own repository"],
)
@pytest.mark.parametrize("mode", [None, "bypass"], ids=["no permission layer", "bypass"])
def test_what_git_would_run_is_refused_where_no_one_can_be_asked(
    tmp_path: Path, root: Path, mode: str | None, command: str, repository: str, path: str
) -> None:
    marker = tmp_path / "ran"

    run = Run(root, command.format(marker=marker), mode)

    assert run.request is None
    message = run.message()
    assert message.status == "error"
    assert f"it changed {path}" in str(message.content)
    assert "git runs outside the sandbox" in str(message.content)
    assert not (root / ".git" / "commondir").exists()
    assert not (root / "new").exists()
    git_status(root)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("command", "path"),
    [(COMMONDIR, "/.git/commondir"), (OWN_REPOSITORY, "/new/.git/config")],
    ids=["commondir", "the command's own repository"],
)
def test_what_git_would_run_asks_in_accept_edits(
    tmp_path: Path, root: Path, command: str, path: str
) -> None:
    marker = tmp_path / "ran"

    run = Run(root, command.format(marker=marker), "accept_edits")

    assert run.request is not None
    assert path in run.request["description"]
    assert not (root / ".git" / "commondir").exists()
    assert not (root / "new").exists()
    git_status(root)
    assert not marker.exists()
    message = run.answer({"type": "reject", "message": "not that"})
    assert message.status == "error"
    assert not marker.exists()


def test_the_git_directory_a_gitfile_points_to_is_judged_as_one(tmp_path: Path, root: Path) -> None:
    subprocess.run(
        ["bash", "-c", f"{GIT} init -q --separate-git-dir=store repo"], cwd=root, check=True
    )
    marker = tmp_path / "ran"

    run = Run(root, f"{GIT} -C repo config core.fsmonitor 'touch {marker}'", "accept_edits")

    assert run.request is not None
    assert "/store/config" in run.request["description"]
    git_status(root / "repo")
    assert not marker.exists()


def test_a_new_repository_that_runs_nothing_is_kept(root: Path) -> None:
    run = Run(root, f"{GIT} init -q new && {GIT} -C new config user.name me", "accept_edits")

    assert run.request is None
    assert run.message().status == "success"
    assert (root / "new" / ".git" / "HEAD").exists()


# ----- code the host runs later, in ignored folders ---------------------------------------

PLANT_PYC = (
    f"{sys.executable} -c \"import importlib.util, marshal, os, sys; st = os.stat('app.py');"
    " code = compile('open(\\'ran\\', \\'w\\').write(\\'x\\')', 'app.py', 'exec');"
    " data = importlib.util.MAGIC_NUMBER + bytes(4) + int(st.st_mtime).to_bytes(4, 'little')"
    " + (st.st_size & 0xFFFFFFFF).to_bytes(4, 'little') + marshal.dumps(code);"
    " os.makedirs('__pycache__', exist_ok=True);"
    " open('__pycache__/app.' + sys.implementation.cache_tag + '.pyc', 'wb').write(data)\""
)


def import_app(root: Path) -> None:
    subprocess.run([sys.executable, "-c", "import app"], cwd=root, check=True)


def test_a_planted_compiled_cache_is_the_control_python_runs_it(root: Path) -> None:
    (root / "app.py").write_text("VALUE = 1\n")

    subprocess.run(["bash", "-c", PLANT_PYC], cwd=root, check=True)
    import_app(root)

    assert (root / "ran").exists()


def test_a_compiled_cache_in_an_ignored_folder_asks_in_default_mode(root: Path) -> None:
    (root / "app.py").write_text("VALUE = 1\n")
    cache = f"/__pycache__/app.{sys.implementation.cache_tag}.pyc"

    run = Run(root, PLANT_PYC, "default")

    assert run.request is not None
    assert cache in run.request["description"]
    assert not (root / "__pycache__").exists()
    import_app(root)
    assert not (root / "ran").exists()


def make_venv(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root / ".venv"], check=True)
    (site,) = (root / ".venv" / "lib").glob("python3*/site-packages")
    return site


def venv_python(root: Path) -> None:
    subprocess.run([str(root / ".venv" / "bin" / "python"), "-c", "pass"], cwd=root, check=True)


def test_a_planted_sitecustomize_is_the_control_the_venv_runs_it(root: Path) -> None:
    site = make_venv(root)

    (site / "sitecustomize.py").write_text("open('ran', 'w').write('x')\n")
    venv_python(root)

    assert (root / "ran").exists()


def test_a_sitecustomize_in_the_ignored_venv_asks_in_default_mode(root: Path) -> None:
    site = make_venv(root)
    relative = (site / "sitecustomize.py").relative_to(root)

    run = Run(root, f"echo \"open('ran', 'w').write('x')\" > {relative}", "default")

    assert run.request is not None
    assert f"/{relative}" in run.request["description"]
    assert not (site / "sitecustomize.py").exists()
    venv_python(root)
    assert not (root / "ran").exists()


def test_an_ignored_build_output_is_still_kept_without_asking(root: Path) -> None:
    run = Run(root, "mkdir -p build && echo o > build/out.o", "default")

    assert run.request is None
    assert (root / "build" / "out.o").read_text() == "o\n"


# ----- modes -------------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="a root agent's set-uid copy of a shell")
def test_a_set_uid_bit_is_never_committed_and_the_result_says_so(root: Path) -> None:
    shell = shutil.which("sh")
    assert shell is not None

    run = Run(root, f"mkdir -p build && cp {shell} build/sh && chmod 4755 build/sh", "bypass")

    message = run.message()
    assert message.status == "success", message.content
    assert "A /build/sh (mode 755; its set-uid/set-gid bit is not kept)" in str(message.content)
    mode = (root / "build" / "sh").stat().st_mode
    assert not mode & stat.S_ISUID
    assert stat.S_IMODE(mode) == 0o755


def test_an_executable_in_an_ignored_folder_asks_in_default_mode(root: Path) -> None:
    run = Run(
        root, "mkdir -p build && printf '#!/bin/sh\\n' > build/x && chmod +x build/x", "default"
    )

    assert run.request is not None
    assert "A /build/x (mode 755)" in run.request["description"]
    assert not (root / "build").exists()


def test_a_change_of_mode_is_shown_in_the_summary_and_the_diff(root: Path) -> None:
    run = Run(root, "chmod +x a.txt", "default")

    assert run.request is not None
    assert "M /a.txt (mode 644 -> 755)" in run.request["description"]
    assert "mode 644 -> 755" in run.request["diff"]
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o644


def test_a_folder_holding_a_masked_folder_moved_commits_no_mask_artifact(root: Path) -> None:
    (root / "proj" / "secret" / "inner").mkdir(parents=True)
    (root / "proj" / "secret" / "inner" / "key").write_text("s\n")
    (root / "proj" / "keep.txt").write_text("k\n")
    hidden = Sandbox(hidden=[str(root / "proj" / "secret")])
    backend = LocalBackend(root, execute=True, sandbox=hidden)

    outcome = run_command(backend, "mv proj proj2", mode="bypass")

    assert outcome.message is not None
    assert outcome.message.status == "success", outcome.text
    assert (root / "proj2" / "keep.txt").read_text() == "k\n"
    assert not (root / "proj2" / "secret").exists()  # not the mask's empty drwxrwxrwt


# ----- one decision table ------------------------------------------------------------------


def test_a_static_allow_rule_keeps_a_contained_commands_changes(root: Path) -> None:
    rule = Permission(operations=["execute"], commands=["touch"])

    run = Run(root, "touch ran.txt", "default", permissions=[rule])

    assert run.request is None
    assert run.message().status == "success"
    assert (root / "ran.txt").exists()


def test_a_static_allow_rule_still_asks_about_host_run_paths(root: Path) -> None:
    rule = Permission(operations=["execute"], commands=["touch"])

    run = Run(root, "touch build.pyc", "default", permissions=[rule])

    assert run.request is not None
    assert "/build.pyc" in run.request["description"]
    assert not (root / "build.pyc").exists()


def test_a_rejected_change_set_is_an_error_with_the_reviewers_message(root: Path) -> None:
    run = Run(root, "echo new > a.txt", "default")

    message = run.answer({"type": "reject", "message": "keep a.txt as it is"})

    assert message.status == "error"
    assert "keep a.txt as it is" in str(message.content)
    assert (root / "a.txt").read_text() == "a\n"
