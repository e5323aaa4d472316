"""Snapshots that scale with the value: storage per update independent of the state's size."""

from __future__ import annotations

import copy
import pickle
from typing import Any, NotRequired, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langchain_fstools.backends.state import FilesChannel, file_record, merge_files, record_bytes
from langchain_fstools.channels.cadence import ScaledDeltaChannel


def _merge(current: dict[str, int] | None, writes: list[dict[str, int]]) -> dict[str, int]:
    merged = dict(current or {})
    for write in writes:
        merged.update(write)
    return merged


@pytest.mark.parametrize(("entries", "cadence"), [(0, 50), (99, 50), (101, 50), (1000, 500)])
def test_the_cadence_is_the_minimum_or_half_the_entries(entries: int, cadence: int) -> None:
    channel = ScaledDeltaChannel(_merge, dict, snapshot_frequency=50)
    assert channel.snapshot_frequency == 50  # no value yet
    channel.update([{str(n): n for n in range(entries)}])
    assert channel.snapshot_frequency == cadence


def test_copies_and_restores_keep_the_minimum_not_the_scaled_cadence() -> None:
    channel = ScaledDeltaChannel(_merge, dict, snapshot_frequency=50)
    channel.update([{str(n): n for n in range(1000)}])
    copied = channel.copy()
    assert copied.get() == channel.get()
    assert copied.snapshot_frequency == 500
    copied.update([{"x": 1}])
    assert "x" not in channel.get()  # a copy, not the same dict
    restored = channel.from_checkpoint(None)
    assert restored.snapshot_frequency == 50  # empty again: back to the minimum
    copied.value = {}
    assert copied.snapshot_frequency == 50  # the copy did not keep 500 as its minimum


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))],  # noqa: S301 - our own bytes
)
def test_python_copies_and_pickles_keep_the_minimum(duplicate: Any) -> None:
    channel = ScaledDeltaChannel(merge_files, dict, snapshot_frequency=50)
    channel.key = "files"
    channel.update([{f"/{n}": file_record(b"x") for n in range(1000)}])
    twin = duplicate(channel)
    assert (twin.key, twin.reducer, twin.get()) == ("files", merge_files, channel.get())
    assert twin.snapshot_frequency == 500
    twin.value = {}
    assert twin.snapshot_frequency == 50


class _State(TypedDict):
    files: NotRequired[FilesChannel]
    path: str
    seed: int


def _write(state: _State) -> dict[str, Any]:
    return {"files": {state["path"]: file_record(str(state["seed"]).encode())}}


def _run(seeded: int, updates: int) -> tuple[InMemorySaver, dict[str, bytes], Any]:
    builder = StateGraph(_State)
    builder.add_node("write", _write)
    builder.add_edge(START, "write")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    seed = {f"/seed/{n}": file_record(b"x" * 1000) for n in range(seeded)}
    graph.update_state(config, {"files": seed})
    expected = dict.fromkeys(seed, b"x" * 1000)
    for n in range(updates):
        path = f"/work/{n % 7}"
        graph.invoke({"path": path, "seed": n}, config)
        expected[path] = str(n).encode()
    return saver, expected, graph.get_state(config).values["files"]


def _snapshots(saver: InMemorySaver) -> int:
    """Snapshots of `files` after the seed (which `update_state` stores whole)."""
    stored = sum(1 for key, blob in saver.blobs.items() if key[2] == "files" and blob[0] != "empty")
    return stored - 1


def _bytes(saver: InMemorySaver) -> int:
    return len(pickle.dumps((dict(saver.storage), dict(saver.writes), dict(saver.blobs))))


def test_a_large_state_is_not_stored_again_every_fifty_updates() -> None:
    small, small_expected, small_files = _run(seeded=10, updates=120)
    large, large_expected, large_files = _run(seeded=1000, updates=120)
    assert {p: record_bytes(r) for p, r in small_files.items()} == small_expected
    assert {p: record_bytes(r) for p, r in large_files.items()} == large_expected
    assert _snapshots(small) >= 2  # 10 files: a snapshot every 50 updates, as before
    assert _snapshots(large) == 0  # 1,000 files: one every 500 updates
    seeded_bytes = 1000 * 1000
    # what the large thread stores beyond its seed is about what the small one stores
    assert _bytes(large) - seeded_bytes < 2 * _bytes(small)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 300),
    st.lists(st.tuples(st.integers(0, 400), st.booleans()), min_size=1, max_size=180),
)
def test_replay_across_scaled_snapshots_is_exact(seeded: int, ops: list[tuple[int, bool]]) -> None:
    """Any sequence of writes and deletes reads back the same, snapshot or not."""

    class State(TypedDict):
        files: NotRequired[FilesChannel]
        op: tuple[int, bool]

    def node(state: State) -> dict[str, Any]:
        number, delete = state["op"]
        return {"files": {f"/f{number}": None if delete else file_record(str(number).encode())}}

    builder = StateGraph(State)
    builder.add_node("op", node)
    builder.add_edge(START, "op")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    expected = {f"/f{n}": str(n).encode() for n in range(seeded)}
    graph.update_state(config, {"files": {p: file_record(b) for p, b in expected.items()}})
    for number, delete in ops:
        graph.invoke({"op": (number, delete)}, config)
        if delete:
            expected.pop(f"/f{number}", None)
        else:
            expected[f"/f{number}"] = str(number).encode()
    files = graph.get_state(config).values.get("files", {})
    assert {p: record_bytes(r) for p, r in files.items()} == expected
    assert merge_files(None, [files]) == files
