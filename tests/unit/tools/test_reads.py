"""Read records: accumulation, coverage, reducers, per-thread fallback."""

from __future__ import annotations

from types import SimpleNamespace

from langchain_fstools.tools.reads import (
    READS_KEY,
    ReadTracker,
    after_read,
    after_write,
    merge_reads,
    saw_everything,
)


def test_windows_at_one_version_accumulate_to_everything() -> None:
    first = after_read(None, version="v1", first=1, last=10, total_lines=None, view="lines:1:10")
    assert not saw_everything(first)
    second = after_read(first, version="v1", first=11, last=20, total_lines=20, view="lines:11:10")
    assert second["ranges"] == [[1, 20]]
    assert saw_everything(second)


def test_gap_means_not_everything() -> None:
    a = after_read(None, version="v1", first=1, last=5, total_lines=None, view="lines:1:5")
    b = after_read(a, version="v1", first=8, last=10, total_lines=10, view="lines:8:5")
    assert b["ranges"] == [[1, 5], [8, 10]]
    assert not saw_everything(b)


def test_new_version_starts_afresh() -> None:
    a = after_read(None, version="v1", first=1, last=10, total_lines=10, view="lines:1:10")
    b = after_read(a, version="v2", first=5, last=6, total_lines=None, view="lines:5:2")
    assert b["ranges"] == [[5, 6]]
    assert b["total_lines"] is None


def test_own_whole_write_counts_as_full_read() -> None:
    assert saw_everything(
        after_write(None, previous_version="", version="v", total_lines=3, whole=True)
    )
    assert saw_everything(
        after_write(None, previous_version="", version="v", total_lines=0, whole=True)
    )


def test_an_edit_of_a_partly_read_file_does_not_count_as_seeing_the_rest() -> None:
    partial = after_read(None, version="v1", first=1, last=5, total_lines=None, view="lines:1:5")
    edited = after_write(partial, previous_version="v1", version="v2", total_lines=100)
    assert edited["version"] == "v2"
    assert not saw_everything(edited)


def test_an_edit_of_a_fully_read_file_keeps_it_fully_seen() -> None:
    full = after_read(None, version="v1", first=1, last=3, total_lines=3, view="lines:1:3")
    assert saw_everything(after_write(full, previous_version="v1", version="v2", total_lines=4))


def test_an_edit_against_an_unread_or_older_version_sees_nothing_more() -> None:
    old = after_read(None, version="v0", first=1, last=3, total_lines=3, view="lines:1:3")
    assert not saw_everything(after_write(old, previous_version="v1", version="v2", total_lines=3))
    assert not saw_everything(after_write(None, previous_version="v1", version="v2", total_lines=3))


def test_reducer_replaces_and_forgets() -> None:
    rec = after_write(None, previous_version="", version="v", total_lines=1, whole=True)
    merged = merge_reads({"/a": rec, "/b": rec}, {"/a": None, "/c": rec})
    assert set(merged) == {"/b", "/c"}


def test_tracker_uses_state_channel_when_present_else_thread() -> None:
    tracker = ReadTracker()
    in_graph = SimpleNamespace(state={READS_KEY: {}}, config={})
    assert tracker.ledger(in_graph).in_state
    t1 = SimpleNamespace(state={}, config={"configurable": {"thread_id": "1"}})
    t2 = SimpleNamespace(state={}, config={"configurable": {"thread_id": "2"}})
    ledger = tracker.ledger(t1)
    ledger.put("/a", after_write(None, previous_version="", version="v", total_lines=1, whole=True))
    tracker.commit(t1, ledger)
    assert tracker.ledger(t1).get("/a") is not None
    assert tracker.ledger(t2).get("/a") is None
