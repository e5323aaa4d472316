"""A worker killed at a subagent's merge: the thread resumed in a new process loses nothing.

The first process (`branch_crash_process run`) launches two subagents in one turn, each
editing /m.py on its branch, and SIGKILLs itself at a merge point: as the first merge
is about to commit, after it committed (between the two merges), or after the second
one committed. A second process resumes the thread from the SQLite checkpoint database
alone (`invoke`; and `ainvoke` with an `AsyncSqliteSaver`): both edits are in the files
exactly once, and both `task` results say they were merged, with status success. A merge
that committed before the kill is known by its receipt, not by what the files hold: it
is not applied again even when the file changed since. And a
subagent killed while still at work, after its edit's step was checkpointed: the
resumed subagent goes on from there, and its edit, made before the kill, lands once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_branches import SOURCE

pytest.importorskip("deepagents")

REPOSITORY = Path(__file__).resolve().parents[2]
BOTH = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")


def run(
    phase: str, database: str, kind: str, root: Path, kill: str, driver: str = "sync"
) -> subprocess.CompletedProcess[str]:
    """One phase in a fresh interpreter (`driver`: `invoke`, or `ainvoke` for "async")."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.e2e.branch_crash_process",
            phase,
            database,
            kind,
            str(root),
            kill,
            driver,
        ],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def killed_and_resumed(
    database: str, kind: str, root: Path, kill: str, driver: str = "sync"
) -> dict[str, Any]:
    """Run the thread until the kill, resume it in another process; the resumed report."""
    (root / "m.py").write_text(SOURCE)
    killed = run("run", database, kind, root, kill, driver)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = run("resume", database, kind, root, kill, driver)
    assert resumed.returncode == 0, resumed.stderr
    report: dict[str, Any] = json.loads(resumed.stdout)
    return report


def assert_both_merged_once(report: dict[str, Any]) -> None:
    assert report["text"] == BOTH
    for name in ("a", "b"):
        status, text = report["tasks"][f"t-{name}"]
        assert status == "success", text
        assert f"{name} edited /m.py." in text
        assert "They were merged: /m.py." in text  # a merge applied before the kill too


@pytest.mark.parametrize("kill", ["before-1", "after-1", "after-2"])
@pytest.mark.parametrize("kind", ["state", "local"])
def test_a_merge_cut_by_a_kill_is_finished_by_the_resumed_thread(
    tmp_path: Path, kind: str, kill: str
) -> None:
    report = killed_and_resumed(str(tmp_path / "checkpoints.sqlite"), kind, tmp_path, kill)
    assert_both_merged_once(report)


@pytest.mark.parametrize("kind", ["state", "local"])
def test_on_the_async_path_a_kill_between_two_merges_loses_nothing(
    tmp_path: Path, kind: str
) -> None:
    database = str(tmp_path / "checkpoints.sqlite")
    assert_both_merged_once(killed_and_resumed(database, kind, tmp_path, "after-1", "async"))


@pytest.mark.parametrize(
    ("kind", "driver"), [("state", "sync"), ("local", "sync"), ("local", "async")]
)
def test_a_subagent_killed_while_at_work_keeps_the_edits_it_made_before(
    tmp_path: Path, kind: str, driver: str
) -> None:
    database = str(tmp_path / "checkpoints.sqlite")
    report = killed_and_resumed(database, kind, tmp_path, "mid", driver)
    assert report["text"] == SOURCE.replace("return 1", "return 10")
    status, text = report["tasks"]["t-a"]
    assert status == "success", text
    assert "a edited /m.py." in text


def test_a_merge_committed_before_the_kill_is_not_applied_again_after_a_later_change(
    tmp_path: Path,
) -> None:
    # a's merge committed, then the worker died before the checkpoint; someone changes
    # a's line before the thread resumes: merged again by content, a's change would
    # conflict with it (or, undone, be made twice); by its receipt, it is left alone
    database = str(tmp_path / "checkpoints.sqlite")
    (tmp_path / "m.py").write_text(SOURCE)
    killed = run("run", database, "local", tmp_path, "after-1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    merged = (tmp_path / "m.py").read_text()
    assert merged.count("return 10") + merged.count("return 20") == 1
    later = merged.replace("return 10\n", "return 100\n").replace("return 20\n", "return 200\n")
    (tmp_path / "m.py").write_text(later)
    resumed = run("resume", database, "local", tmp_path, "after-1")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["text"] == later.replace("return 1\n", "return 10\n").replace(
        "return 2\n", "return 20\n"
    )
    for name in ("a", "b"):
        status, text = report["tasks"][f"t-{name}"]
        assert status == "success", text
        assert "They were merged: /m.py." in text
