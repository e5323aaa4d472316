"""An approval is part of the thread: asked in one process, resumed in another.

The first process runs each scenario's thread up to its interrupt (`approval_process
start`); the files then change, or not; a second Python process, sharing only the
SQLite checkpoint database and the files, approves every ask (`approval_process
resume`). What the person was shown is what is applied: a file changed in between
makes the call fail as stale and stays as it is; an unchanged one gets exactly the
previewed change. Covers an `apply_patch` Delete, a `write_file` of a new file and
`execute` (a patch sent through it, and a plain command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.approval_process import EXPECTED, change_in_between, prepare
from tests.e2e.approval_process import outcome as ends

REPOSITORY = Path(__file__).resolve().parents[2]
STALE = "changed after the change was approved, so nothing was applied"


def run(phase: str, database: Path | str, root: Path) -> Any:
    """Run one phase in a fresh interpreter; its JSON report."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.approval_process", phase, str(database), str(root)],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def both_processes(root: Path, database: Path | str) -> tuple[Any, Any]:
    """Start every thread in one process, change files, resume in another; both reports."""
    prepare(root)
    shown = run("start", database, root)
    change_in_between(root)
    return shown, run("resume", database, root)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    """The workspace after both processes, with what each showed and reported."""
    base = tmp_path_factory.mktemp("approvals")
    root = base / "root"
    root.mkdir()
    shown, results = both_processes(root, base / "checkpoints.sqlite")
    return root, shown, results


def test_each_thread_ends_as_expected(outcome: tuple[Path, Any, Any]) -> None:
    root, _, results = outcome
    assert ends(root, results) == EXPECTED


def test_every_thread_stopped_at_one_ask_showing_its_change(
    outcome: tuple[Path, Any, Any],
) -> None:
    _, shown, _ = outcome
    asks = {thread: [a["name"] for (a,) in requests] for thread, requests in shown.items()}
    assert asks == {
        "delete-changed": ["apply_patch"],
        "delete-unchanged": ["apply_patch"],
        "new-file-changed": ["write_file"],
        "new-file-unchanged": ["write_file"],
        "execute-patch-changed": ["execute"],
        "execute-unchanged": ["execute"],
    }
    ((delete,),) = shown["delete-changed"]
    assert "-tmp note\n" in delete["diff"]


def test_a_delete_approved_then_resumed_elsewhere_after_a_change_is_stale(
    outcome: tuple[Path, Any, Any],
) -> None:
    root, _, results = outcome
    status, content = results["delete-changed"]["c2"]
    assert status == "error"
    assert STALE in content
    assert (root / "note.txt").read_text() == "important, keep\n"


def test_a_delete_resumed_elsewhere_unchanged_is_applied(outcome: tuple[Path, Any, Any]) -> None:
    root, _, results = outcome
    assert results["delete-unchanged"]["c2"][0] == "success"
    assert not (root / "note2.txt").exists()


def test_a_new_file_that_appeared_meanwhile_is_stale(outcome: tuple[Path, Any, Any]) -> None:
    root, _, results = outcome
    status, content = results["new-file-changed"]["c1"]
    assert status == "error"
    assert STALE in content
    assert (root / "new.txt").read_text() == "someone else's\n"


def test_a_new_file_resumed_elsewhere_is_written_exactly(outcome: tuple[Path, Any, Any]) -> None:
    root, _, results = outcome
    assert results["new-file-unchanged"]["c1"][0] == "success"
    assert (root / "new2.txt").read_bytes() == b"hello\n"


def test_a_patch_through_execute_on_a_changed_file_is_stale(
    outcome: tuple[Path, Any, Any],
) -> None:
    root, _, results = outcome
    status, content = results["execute-patch-changed"]["c1"]
    assert status == "error", content
    assert STALE in content
    assert (root / "app.py").read_text() == "x = 1\ny = 1\n"


def test_a_command_approved_in_one_process_runs_in_the_other(
    outcome: tuple[Path, Any, Any],
) -> None:
    root, _, results = outcome
    status, content = results["execute-unchanged"]["c1"]
    assert status == "success", content
    assert (root / "ran.txt").read_text() == "ran\n"
