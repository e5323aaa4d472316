"""Commands in a branch of `LocalBackend`: they see the branch, and what they change
stays in it until the merge (the branch's changes laid under each command's view)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend
from langchain_fstools.backends.branch import BranchBackend
from langchain_fstools.testing import tool_call
from tests.e2e.test_branches import build, results, subagent

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from langchain_core.tools import BaseTool

pytestmark = pytest.mark.integration


@pytest.fixture
def base(tmp_path: Path) -> Iterator[LocalBackend]:
    assert shutil.which("bwrap"), "bubblewrap is not installed (see .ci/run)"
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "old.txt").write_text("old\n")
    (tmp_path / ".git").mkdir()  # a repository, whose hooks git runs outside the sandbox
    backend = LocalBackend(tmp_path, execute=True)
    yield backend
    backend.close()


def execute(branch: BranchBackend) -> BaseTool:
    return next(t for t in FileToolkit(branch).get_tools() if t.name == "execute")


def run(branch: BranchBackend, command: str) -> str:
    return str(execute(branch).invoke({"command": command}))


def test_a_build_in_one_branch_does_not_appear_in_the_other(
    base: LocalBackend, tmp_path: Path
) -> None:
    first, second = BranchBackend(base), BranchBackend(base)
    said = run(first, "mkdir build && echo built > build/out.txt && echo ok")
    assert "ok" in said
    assert first.read_bytes("/build/out.txt") == b"built\n"
    assert "No such file" in run(second, "cat build/out.txt")
    assert not (tmp_path / "build").exists()  # the workspace is untouched
    assert first.merge().clean
    assert (tmp_path / "build" / "out.txt").read_text() == "built\n"


def test_a_command_sees_the_branch_edits_and_deletions(base: LocalBackend) -> None:
    branch = BranchBackend(base)
    branch.write_bytes("/m.py", b"x = 2\n")
    branch.write_bytes("/new/made.txt", b"made\n")
    branch.delete("/old.txt")
    said = run(branch, "cat m.py new/made.txt; ls")
    assert "x = 2" in said
    assert "made" in said
    assert "old.txt" not in said


def test_what_a_command_changes_over_the_branch_is_taken_into_it(
    base: LocalBackend, tmp_path: Path
) -> None:
    branch = BranchBackend(base)
    branch.write_bytes("/new.txt", b"new\n")
    said = run(branch, "rm new.txt && sed -i s/1/3/ m.py && rm old.txt")
    assert "D /new.txt" in said, said
    assert not branch.exists("/new.txt")
    assert not branch.exists("/old.txt")
    assert branch.read_bytes("/m.py") == b"x = 3\n"
    assert (tmp_path / "old.txt").exists()  # not before the merge
    assert branch.merge().clean
    assert not (tmp_path / "old.txt").exists()
    assert not (tmp_path / "new.txt").exists()
    assert (tmp_path / "m.py").read_text() == "x = 3\n"


def test_a_planted_git_hook_is_refused_in_a_branch_too(base: LocalBackend) -> None:
    branch = BranchBackend(base)
    said = run(branch, "mkdir .git/hooks && echo 'rm -rf ~' > .git/hooks/pre-commit")
    assert "nothing the command changed was kept" in said
    assert "/.git/hooks" in said
    assert not branch.exists("/.git/hooks/pre-commit")


def test_background_processes_do_not_run_in_a_branch(base: LocalBackend) -> None:
    said = str(execute(BranchBackend(base)).invoke({"command": "sleep 1", "background": True}))
    assert "Error" in said


class Outputs(BaseCallbackHandler):
    """The results of the tools the subagents called, by call id."""

    def __init__(self) -> None:
        self.by_call: dict[str, str] = {}

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        if isinstance(output, ToolMessage):
            self.by_call[output.tool_call_id] = output.text


def test_parallel_subagents_build_on_their_own_branches(base: LocalBackend, tmp_path: Path) -> None:
    pytest.importorskip("deepagents")
    files = FilesystemMiddleware(backend=base, branches=True)

    def builder(name: str) -> dict[str, Any]:
        command = f"mkdir -p build && echo {name} > build/{name}.txt && ls build"
        call = tool_call("execute", call_id=f"{name}-1", command=command)
        return subagent(name, files, call, "Built.")

    outputs = Outputs()
    state = build(base, builder("a"), builder("b"), files=files).invoke(
        {"messages": [{"role": "user", "content": "Build."}]}, {"callbacks": [outputs]}
    )
    found = results(state)
    assert all(found[f"t-{n}"].status == "success" for n in ("a", "b")), found
    # each build saw its own output only; both are in the workspace after the merges
    assert "a.txt" in outputs.by_call["a-1"]
    assert "b.txt" not in outputs.by_call["a-1"]
    assert "b.txt" in outputs.by_call["b-1"]
    assert "a.txt" not in outputs.by_call["b-1"]
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["a.txt", "b.txt"]
