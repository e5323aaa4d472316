"""The `kept_branches` channel: its reducer, its age limit, and what `merge` is offered on."""

from __future__ import annotations

import time
from typing import Any

from langchain_fstools import FilesystemMiddleware, StateBackend
from langchain_fstools.core import calls
from langchain_fstools.tools import merge_branch
from langchain_fstools.tools.merge_branch import (
    KEPT_KEY,
    MOST_KEPT,
    MergeArgs,
    kept_snapshot,
    merge_kept,
)
from langchain_fstools.tools.targets import Target


def entry(at: float, path: str = "/m.py") -> dict[str, Any]:
    snapshot = {
        "max_files": 10,
        "max_bytes": 100,
        "touched": {path: [b"x", "file", "v", 0, "", None]},
    }
    return {"at": at, "branch": snapshot}


def test_an_update_adds_and_none_drops() -> None:
    now = time.time()
    kept = merge_kept(None, {"a": entry(now), "b": entry(now)})
    assert set(kept) == {"a", "b"}
    assert set(merge_kept(kept, {"a": None, "c": entry(now)})) == {"b", "c"}
    assert merge_kept(kept, {"zzz": None}) == kept  # dropping what is not kept: no change


def test_past_the_most_kept_the_oldest_go_first() -> None:
    kept = merge_kept({}, {f"b{i}": entry(1000.0 + i) for i in range(MOST_KEPT + 3)})
    assert len(kept) == MOST_KEPT
    assert "b0" not in kept
    assert f"b{MOST_KEPT + 2}" in kept


def test_a_branch_kept_past_the_hour_is_gone() -> None:
    now = time.time()
    state = {KEPT_KEY: {"old": entry(now - merge_branch.KEEP_SECONDS - 1), "new": entry(now)}}
    assert kept_snapshot(state, "old") is None
    assert kept_snapshot(state, "new") == state[KEPT_KEY]["new"]["branch"]
    assert kept_snapshot(state, "missing") is None
    assert kept_snapshot({}, "new") is None


def test_merge_is_offered_while_a_branch_is_kept_and_names_its_paths() -> None:
    files = FilesystemMiddleware(backend=StateBackend(), branches=True)
    tool = next(t for t in files.tools if isinstance(t, merge_branch.MergeTool))
    assert not tool.usable({}, [])
    assert tool.targets(MergeArgs(branch="t-1")) == [Target("write")]
    assert tool.usable({KEPT_KEY: {"t-1": entry(time.time(), "/a.py")}}, [])
    assert [t.path for t in tool.targets(MergeArgs(branch="t-1"))] == ["/a.py"]
    assert not tool.usable({KEPT_KEY: {"t-1": entry(0.0)}}, [])  # too old


DAMAGED = [None, "x", {"at": "soon"}, {"at": 5.0}, {"branch": {"touched": "no"}}]


def test_damaged_entries_in_the_state_crash_nothing() -> None:
    # a hand-edited state, an old checkpoint: the reducer, the offer and a merge hold
    now = time.time()
    junk = {f"d{i}": entry for i, entry in enumerate(DAMAGED) if entry is not None}
    kept = merge_kept({}, {**junk, "good": entry(now)})
    assert set(kept) == {*junk, "good"}
    assert list(kept)[-1] == "good"  # what is not an entry counts as the oldest
    files = FilesystemMiddleware(backend=StateBackend(), branches=True)
    tool = next(t for t in files.tools if isinstance(t, merge_branch.MergeTool))
    assert not tool.usable({KEPT_KEY: junk}, [])
    broken = {"at": now, "branch": {"max_files": 1, "max_bytes": 1, "touched": {"/a": [1]}}}
    state = {KEPT_KEY: {"t-1": broken}}
    assert kept_snapshot(state, "t-1") == broken["branch"]
    merging = merge_branch.merged_kept(StateBackend(), state, "t-1")
    text, update, artifact = calls.run(merging, StateBackend())
    assert text.startswith("Error: the kept changes in the state are damaged")
    assert update == {KEPT_KEY: {"t-1": None}}
    assert artifact is None
