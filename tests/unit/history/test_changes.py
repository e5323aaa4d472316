"""File history: the channel reducer, rewind plans, and all-or-nothing restores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.core import calls
from langchain_fstools.errors import ChangedOutsideAgent, ChangeNotKept, UnknownChange
from langchain_fstools.history import changes as history
from langchain_fstools.history.changes import (
    ChangeRecord,
    HistoryUpdate,
    Restore,
    change_record,
    merge_history,
    plan_rewind,
    restore,
)


def record(
    call: str, index: int, path: str, before: bytes | None, after: str | None
) -> ChangeRecord:
    return change_record(
        tool_call_id=call, index=index, path=path, before=before, kept=True, after=after
    )


def test_reducer_is_a_batching_invariant_fold() -> None:
    a, b, c = (
        record("c1", 0, "/a", b"1", "v1"),
        record("c2", 0, "/a", b"2", "v2"),
        record("c3", 0, "/b", None, "v3"),
    )
    xs: list[HistoryUpdate] = [HistoryUpdate(add=[a]), HistoryUpdate(add=[b])]
    ys: list[HistoryUpdate] = [
        HistoryUpdate(drop=["c1:0"], add=[c]),
        HistoryUpdate(stamp={"c2:0": "v9"}),
    ]
    once = merge_history(None, xs + ys)
    assert merge_history(merge_history(None, xs), ys) == once
    assert [(r["id"], r["after"]) for r in once] == [("c2:0", "v9"), ("c3:0", "v3")]


def test_reducer_keeps_the_newest_records_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "MAX_RECORDS", 3)
    monkeypatch.setattr(history, "MAX_BYTES", 5)
    adds = [record(f"c{n}", 0, "/a", b"xx", None) for n in range(5)]
    kept = merge_history(None, [HistoryUpdate(add=adds)])
    assert [r["tool_call_id"] for r in kept] == ["c3", "c4"]


def test_rewind_plan_restores_each_file_to_its_first_earlier_content() -> None:
    records = [
        record("c1", 0, "/a", b"0", "v1"),
        record("c2", 0, "/a", b"1", "v2"),
        record("c2", 1, "/b", None, "w1"),
        record("c3", 0, "/a", b"2", "v3"),
    ]
    assert plan_rewind(records, "c2") == [Restore("/a", b"1", "v3"), Restore("/b", None, "w1")]
    with pytest.raises(UnknownChange):
        plan_rewind(records, "c9")


def test_rewind_past_a_change_too_large_to_keep_is_refused() -> None:
    big = change_record(tool_call_id="c1", index=0, path="/a", before=b"x", kept=False, after="v")
    with pytest.raises(ChangeNotKept):
        plan_rewind([big], "c1")


def test_binary_content_round_trips() -> None:
    data = b"\xff\x00\xfe"
    assert history.earlier_bytes(record("c1", 0, "/a", data, None)) == data


def test_a_failed_restore_puts_back_what_it_already_restored(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    first = backend.write_bytes("/a.txt", b"agent a")
    second = backend.write_bytes("/b.txt", b"agent b")

    class FailOnB(LocalBackend):
        def write_bytes(self, path: str, data: bytes, **kwargs: Any) -> Any:
            if path == "/b.txt":
                raise OSError(28, "No space left on device", path)
            return super().write_bytes(path, data, **kwargs)

    steps = [
        Restore("/a.txt", b"old a", first.version),
        Restore("/b.txt", b"old b", second.version),
    ]
    with pytest.raises(OSError, match="No space"):
        calls.run(restore(steps), FailOnB(tmp_path))
    assert (tmp_path / "a.txt").read_bytes() == b"agent a"
    assert (tmp_path / "b.txt").read_bytes() == b"agent b"


def test_a_restore_validates_every_file_before_writing(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    first = backend.write_bytes("/a.txt", b"agent a")
    backend.write_bytes("/b.txt", b"agent b")
    steps = [Restore("/a.txt", b"old a", first.version), Restore("/b.txt", None, "stale")]
    with pytest.raises(ChangedOutsideAgent):
        calls.run(restore(steps), backend)
    assert (tmp_path / "a.txt").read_bytes() == b"agent a"


def test_merge_history_takes_a_whole_history_back() -> None:
    first = change_record(tool_call_id="a", index=0, path="/a", before=None, kept=True, after="v1")
    second = change_record(tool_call_id="b", index=0, path="/b", before=None, kept=True, after="v2")
    current = merge_history([], [HistoryUpdate(add=[first])])
    # A subagent's final state (or invoke(previous_state)) hands the whole list back.
    merged = merge_history(current, [[first, second], None])
    assert merged == [first, second]
    assert merge_history(merged, [[first]]) == [first, second]  # nothing repeated or lost
    batched = merge_history([], [HistoryUpdate(add=[first]), [first, second]])
    assert batched == merge_history(
        merge_history([], [HistoryUpdate(add=[first])]), [[first, second]]
    )


def test_a_call_the_history_keeps_whole_is_rewindable() -> None:
    records = [record("c1", n, f"/f{n}", b"x" * 10, "v") for n in range(history.MAX_RECORDS)]
    assert history.unrewindable(records) is None


def test_a_call_with_more_records_than_kept_is_not_rewindable() -> None:
    records = [record("c1", n, f"/f{n}", None, "v") for n in range(history.MAX_RECORDS + 1)]
    assert history.unrewindable(records) == (
        f"it changed {history.MAX_RECORDS + 1:,} files and the history keeps at most"
        f" {history.MAX_RECORDS}"
    )


def test_a_call_with_more_earlier_content_than_kept_is_not_rewindable() -> None:
    records = [
        record("c1", n, f"/f{n}", b"x" * (history.MAX_BYTES // 4 + 1), "v") for n in range(4)
    ]
    assert "8 MiB" in (history.unrewindable(records) or "")


def test_a_call_with_a_file_too_large_to_keep_is_not_rewindable() -> None:
    big = change_record(tool_call_id="c1", index=1, path="/big", before=b"x", kept=False, after="v")
    assert history.unrewindable([record("c1", 0, "/a", b"a", "v"), big]) == (
        "the earlier content of /big was too large for the history to keep"
    )


_RECORDS = [record(f"c{i}", 0, f"/{i % 3}", b"x", f"v{i}") for i in range(6)]
_IDS = [r["id"] for r in _RECORDS]
_UPDATES = st.builds(
    lambda add, drop, stamp: HistoryUpdate(add=add, drop=drop, stamp=stamp),
    st.lists(st.sampled_from(_RECORDS), unique_by=lambda r: r["id"], max_size=3),
    st.lists(st.sampled_from(_IDS), max_size=3),
    st.dictionaries(st.sampled_from(_IDS), st.sampled_from(["s1", "s2", None]), max_size=2),
)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(_RECORDS), unique_by=lambda r: r["id"], max_size=4),
    _UPDATES,
    _UPDATES,
)
def test_a_combined_update_does_what_both_do_in_order(
    current: list[ChangeRecord], first: HistoryUpdate, then: HistoryUpdate
) -> None:
    # what an agent step sends when two commits of one node each recorded changes
    assert merge_history(current, [history.combined_updates(first, then)]) == merge_history(
        current, [first, then]
    )
