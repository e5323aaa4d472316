"""SandboxBackend's recorded commands across a killed helper: nothing unreviewed is kept.

The sandbox is the `sh -c` double with the killing `python3` of the journal's tests
(`test_sandbox_journal.KILLING_PYTHON`), armed for `command_run` or `command_commit`. A
command's put-back killed at any step, or a command whose helper dies while it runs,
leaves the workspace as before it once the next call settled it (and what the command
left running is killed): the next command's set is read against that state. A commit
killed at any step leaves the set whole or absent.
"""

from __future__ import annotations

import binascii
import functools
import time
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend, command_helper
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.errors import StoreUnavailable
from langchain_fstools.tools.render import render_error
from tests.unit.backends.test_sandbox_journal import KILL_POINTS, _Crashing, _fill, _tree

pytestmark = pytest.mark.usefixtures("host_copies_in_tmp_path")

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.core.changesets import ChangeSet

SCRIPT = (
    "echo more >> src/a.py; rm src/b.py link; rm old.txt; mkdir old.txt;"
    " echo in > old.txt/in.txt; mkdir -p build/deep; printf x > build/deep/x.bin;"
    " ln -s ../src/a.py build/a; chmod 700 empty; echo done"
)
"""Files modified, removed and added, a file turned folder, a link made, a folder's mode."""


def _run(backend: SandboxBackend, command: str = SCRIPT) -> ChangeSet:
    result = backend.execute_changes(command, timeout=30, output_limit=10_000)
    assert result.changes is not None
    return result.changes


def _listed(changes: ChangeSet) -> list[tuple[str, str, str]]:
    return [(c.kind.value, c.path, c.entry) for c in changes.changes]


def _leftovers(crashing: _Crashing) -> list[str]:
    """Records, temporaries and folders kept aside that a settled workspace must not hold."""
    found = [p.name for p in crashing.root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]
    found += [p.name for p in crashing.root.rglob(".fstools-stage-*")]
    found += [p.name for p in (crashing.helper / "commands").glob("running.json")]
    found += [p.name for p in (crashing.helper / "commands" / "stage").iterdir()]
    return found + crashing.records()


def _points(total: int) -> list[int]:
    return sorted({1 + (total - 1) * n // (KILL_POINTS - 1) for n in range(KILL_POINTS)})


def test_a_commands_put_back_killed_at_any_step_leaves_the_workspace_as_before(
    tmp_path: Path,
) -> None:
    crashing = _Crashing(tmp_path)
    crashing.sandbox.env["FSTOOLS_KILL_OPS"] = "command_run"
    before = _tree(crashing.root)
    expected = _listed(_run(crashing.backend))
    _fill(crashing.root)  # as every kill below finds it: each file new since the baseline
    total = crashing.calls_of(_run)
    assert _tree(crashing.root) == before
    assert ("A", "/build/deep/x.bin", "file") in expected
    for point in _points(total):
        _fill(crashing.root)
        assert crashing.killed_at(_run, point), f"the command killed at call {point} succeeded"
        crashing.backend.stat("/")  # any call settles what the killed helper left
        assert _tree(crashing.root) == before, f"killed at call {point} of {total}"
        assert not _leftovers(crashing), point
        assert _listed(_run(crashing.backend)) == expected, point  # read against `before`


def test_a_commit_killed_at_any_step_is_whole_or_absent_at_the_next_call(
    tmp_path: Path,
) -> None:
    crashing = _Crashing(tmp_path)
    crashing.sandbox.env["FSTOOLS_KILL_OPS"] = "command_commit"
    before = _tree(crashing.root)
    changes = _run(crashing.backend)
    total = crashing.calls_of(lambda backend: backend.commit(changes))
    after = _tree(crashing.root)
    assert after != before
    assert after["old.txt/in.txt"] == ("file", b"in\n")
    assert after["empty"] == ("dir", 0o700)
    assert not _leftovers(crashing)
    outcomes = []
    for point in _points(total):
        _fill(crashing.root)
        commit = functools.partial(SandboxBackend.commit, changes=_run(crashing.backend))
        assert crashing.killed_at(commit, point), point
        crashing.backend.stat("/")
        found = _tree(crashing.root)
        assert found in (before, after), f"killed at call {point} of {total}: {found}"
        assert not _leftovers(crashing), point
        assert not _run(crashing.backend, "true").changes, point  # the baseline is `found`
        outcomes.append(found == after)
    assert any(outcomes)  # rolled forward after the commit record
    assert not all(outcomes)  # rolled back before it


def test_a_helper_killed_while_its_command_runs_keeps_nothing_of_the_command(
    tmp_path: Path,
) -> None:
    crashing = _Crashing(tmp_path)
    before = _tree(crashing.root)
    record = crashing.helper / "commands" / "running.json"
    command = (  # killed once the record names its group (a kill before is documented)
        f"until grep -q '\"group\": [0-9]' {record}; do sleep 0.01; done;"
        " echo more >> src/a.py; rm old.txt; (sleep 1; echo late > late.txt) &"
        " kill -9 $PPID; sleep 5"
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        _run(crashing.backend, command)
    sentence = render_error(caught.value, tool="execute")
    assert "nothing the command changed is kept" in sentence
    assert (crashing.root / "src" / "a.py").read_text() == "a = 1\nmore\n"  # in place, so far
    crashing.backend.stat("/")  # kills what the command left running, and puts back
    assert _tree(crashing.root) == before
    time.sleep(max(0.0, started + 1.5 - time.monotonic()))
    assert not (crashing.root / "late.txt").exists()  # the command's group was killed
    assert _tree(crashing.root) == before
    assert not _leftovers(crashing)
    changes = _run(crashing.backend, "echo new > n.txt")
    assert _listed(changes) == [("A", "/n.txt", "file")]  # nothing of the killed command


KILLED_MID_COMMAND = (
    "echo more >> src/a.py; rm old.txt link; mkdir -p new/deep; echo x > new/deep/x.txt;"
    " chmod 000 new; kill -9 $PPID"
)
"""Changes left in place by a command whose helper it kills (a folder closed among them)."""


def test_a_put_back_killed_again_while_it_settles_is_finished_by_the_call_after(
    tmp_path: Path,
) -> None:
    crashing = _Crashing(tmp_path)
    before = _tree(crashing.root)

    def killed_mid_command() -> None:
        _fill(crashing.root)
        crashing.backend.stat("/")
        with pytest.raises(StoreUnavailable):
            _run(crashing.backend, KILLED_MID_COMMAND)
        assert (crashing.root / "new").exists()

    killed_mid_command()
    crashing.sandbox.env["FSTOOLS_KILL_OPS"] = "stat"
    total = crashing.calls_of(lambda backend: backend.stat("/"))  # the settling run's calls
    assert total > 10  # the put-back writes, unlinks and makes folders
    assert _tree(crashing.root) == before
    for point in _points(total):
        crashing.sandbox.env["FSTOOLS_KILL_OPS"] = ""
        killed_mid_command()
        crashing.sandbox.env["FSTOOLS_KILL_OPS"] = "stat"
        assert crashing.killed_at(lambda backend: backend.stat("/"), point), point
        crashing.sandbox.env["FSTOOLS_KILL_OPS"] = ""
        crashing.backend.stat("/")
        assert _tree(crashing.root) == before, f"settling killed at call {point} of {total}"
        assert not _leftovers(crashing), point


def test_a_command_runs_only_once_its_group_is_recorded(tmp_path: Path) -> None:
    """The helper could be killed between the command's start and its record: the
    command waits at the gate until the record is written, so none runs unrecorded."""
    marker = tmp_path / "ran"
    seen_while_recording: list[bool] = []

    def recording(group: int) -> None:
        time.sleep(0.3)  # a slow record: the command would have run by now
        seen_while_recording.append(marker.exists())

    answer = command_helper._execute(str(tmp_path), f"echo ran > {marker}", 30, 1000, recording)
    assert seen_while_recording == [False]
    assert answer["exit_code"] == 0
    assert marker.read_text() == "ran\n"


def test_a_command_whose_helper_ended_before_its_record_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def dying(group: int) -> None:
        raise SystemExit(1)  # the helper ends here: its end of the gate closes

    with pytest.raises(SystemExit):
        command_helper._execute(str(tmp_path), f"echo ran > {marker}", 30, 1000, dying)
    time.sleep(0.5)
    assert not marker.exists()


def test_the_gate_leaves_the_command_as_sh_c_runs_it(tmp_path: Path) -> None:
    """Its $0, no arguments, empty input, and none of the gate's descriptors."""
    answer = command_helper._execute(
        str(tmp_path),
        'echo "$0 $# [$(cat)]"; ls /proc/$$/fd > fds; readlink /proc/$$/fd/0 > input',
        30,
        1000,
        lambda group: None,
    )
    stdout = b"".join(
        binascii.a2b_base64(data) for stream, data in answer["head"] if stream == "stdout"
    )
    assert answer["exit_code"] == 0
    assert stdout == b"/bin/sh 0 []\n"
    descriptors = [int(fd) for fd in (tmp_path / "fds").read_text().split()]
    assert [fd for fd in descriptors if fd < 10] == [0, 1, 2]  # dash keeps its own at 10+
    assert (tmp_path / "input").read_text() == "/dev/null\n"
