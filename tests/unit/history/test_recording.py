"""RecordingBackend: the folders a call creates are recorded, and undoing removes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.core import calls
from langchain_fstools.history.changes import plan_rewind, restore
from langchain_fstools.history.recording import RecordingBackend
from langchain_fstools.tools.runtime import StateRuntime


class _Call:
    """A runtime naming tool call `c1`, over `state`."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.tool_call_id = "c1"
        self.state = state


def _recording(backend: Backend, state: dict[str, Any] | None = None) -> RecordingBackend:
    bound = RecordingBackend(backend).bind(_Call(state if state is not None else {}))
    assert isinstance(bound, RecordingBackend)
    return bound


def test_mkdir_records_each_folder_it_created_deepest_first(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    recording = _recording(LocalBackend(tmp_path))
    recording.mkdir("/src/build/x")
    assert [(r["path"], r.get("folder")) for r in recording.records] == [
        ("/src/build/x", True),
        ("/src/build", True),
    ]


def test_mkdir_of_an_existing_folder_records_nothing(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    recording = _recording(LocalBackend(tmp_path))
    recording.mkdir("/build")
    assert recording.records == []


def test_undoing_a_mkdir_removes_the_folders_it_created(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    backend = LocalBackend(tmp_path)
    recording = _recording(backend)
    recording.mkdir("/src/build/x")

    removed = calls.run(restore(plan_rewind(recording.records, "c1")), backend)

    assert sorted(removed) == ["/src/build", "/src/build/x"]
    assert [p.name for p in tmp_path.iterdir()] == ["src"]
    assert list((tmp_path / "src").iterdir()) == []


def test_a_created_folder_that_got_a_file_since_stays(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    recording = _recording(backend)
    recording.mkdir("/build/x")
    backend.write_bytes("/build/later.txt", b"later")

    removed = calls.run(restore(plan_rewind(recording.records, "c1")), backend)

    assert removed == {"/build/x": None}
    assert (tmp_path / "build" / "later.txt").read_bytes() == b"later"


def test_a_file_that_took_a_created_folders_place_stays(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    recording = _recording(backend)
    recording.mkdir("/build")
    backend.delete("/build")
    backend.write_bytes("/build", b"a file now")

    assert calls.run(restore(plan_rewind(recording.records, "c1")), backend) == {}
    assert (tmp_path / "build").read_bytes() == b"a file now"


def test_a_state_backends_created_folders_are_recorded_and_removed() -> None:
    state: dict[str, Any] = {"files": {}}
    recording = _recording(StateBackend(), state)
    recording.mkdir("/build/x")
    state["files"] = recording.state_update()["files"]
    assert [r["path"] for r in recording.records] == ["/build/x", "/build"]
    bound = StateBackend().bind(StateRuntime(state))

    removed = calls.run(restore(plan_rewind(recording.records, "c1")), bound)

    assert sorted(removed) == ["/build", "/build/x"]
    assert not bound.exists("/build")


def test_a_new_files_folders_are_not_recorded_twice(tmp_path: Path) -> None:
    recording = _recording(LocalBackend(tmp_path))
    recording.write_bytes("/build/out/a.o", b"a")
    recording.mkdir("/build/out")
    assert [(r["path"], r.get("created_folders")) for r in recording.records] == [
        ("/build/out/a.o", ["/build/out", "/build"])
    ]
