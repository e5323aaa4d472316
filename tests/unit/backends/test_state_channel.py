"""StateBackend: the files channel, its reducer, the bound view, and checkpoint size."""

from __future__ import annotations

import pickle
import random
from types import SimpleNamespace
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langchain_fstools import StateBackend
from langchain_fstools.backends.state import FileRecord, FilesChannel, file_record, merge_files
from langchain_fstools.core import calls
from langchain_fstools.errors import NotInGraph


def record(text: str) -> FileRecord:
    return file_record(text.encode())


def test_reducer_merges_and_deletes() -> None:
    a, b = record("a"), record("b")
    assert merge_files({"/x": a}, [{"/y": b}, {"/x": None}]) == {"/y": b}


def test_reducer_is_batching_invariant_and_pure() -> None:
    rng = random.Random(7)  # noqa: S311 - reproducible test data
    paths = [f"/f{i}" for i in range(6)]
    for _ in range(200):
        updates: list[dict[str, FileRecord | None]] = [
            {rng.choice(paths): rng.choice([None, record(str(rng.random()))]) for _ in range(3)}
            for _ in range(rng.randint(0, 6))
        ]
        base = {p: record(p) for p in paths[:3]}
        frozen = dict(base)
        cut = rng.randint(0, len(updates))
        stepwise = merge_files(merge_files(base, updates[:cut]), updates[cut:])
        assert stepwise == merge_files(base, updates)
        assert base == frozen


def test_binary_content_is_base64_and_text_is_utf8() -> None:
    assert file_record(b"\xff\x00")["encoding"] == "base64"
    assert file_record("héllo".encode())["encoding"] == "utf-8"


def test_unbound_and_graphless_use_is_a_clear_error() -> None:
    with pytest.raises(NotInGraph) as unbound:
        StateBackend().read_bytes("/a")
    assert "inside a graph" in unbound.value.missing
    with pytest.raises(NotInGraph):
        StateBackend().bind(None)
    with pytest.raises(NotInGraph):
        StateBackend().bind(SimpleNamespace(state=None))


def test_view_overlays_its_own_writes_and_reports_them() -> None:
    view = StateBackend().bind(SimpleNamespace(state={"files": {"/old.txt": record("old")}}))
    assert view.state_update() == {}
    calls.run(calls.write_bytes("/new.txt", b"new"), view)
    calls.run(calls.delete("/old.txt"), view)
    assert calls.run(calls.read_bytes("/new.txt"), view) == b"new"
    assert not calls.run(calls.exists("/old.txt"), view)
    update = view.state_update()["files"]
    assert update["/old.txt"] is None
    assert update["/new.txt"]["content"] == "new"


def test_tools_outside_a_graph_get_an_error_message() -> None:
    from langchain_fstools import FileToolkit  # noqa: PLC0415

    (read,) = FileToolkit(StateBackend(), tools=["read_file"]).get_tools()
    result = read.invoke(
        {"type": "tool_call", "id": "1", "name": "read_file", "args": {"file_path": "/a"}}
    )
    assert result.status == "error"
    assert "must run inside a graph" in result.content


class _Graph(TypedDict):
    files: NotRequired[FilesChannel]
    step: int


class _PlainGraph(TypedDict):
    files: NotRequired[Annotated[dict[str, FileRecord], lambda a, b: {**a, **b}]]
    step: int


PAYLOAD = 200 * 1024


def _writer(state: dict[str, Any]) -> dict[str, Any]:
    step = state["step"]
    view = StateBackend().bind(SimpleNamespace(state=state))
    calls.run(calls.write_bytes(f"/f{step}.txt", bytes([65 + step]) * PAYLOAD), view)
    return {**view.state_update(), "step": step + 1}


def _saved_bytes(schema: type, steps: int) -> tuple[int, dict[str, Any]]:
    builder = StateGraph(schema)
    builder.add_node("write", _writer)
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    state: dict[str, Any] = {}
    for step in range(steps):
        state = graph.invoke({"step": step}, config)
    stored = pickle.dumps((dict(saver.storage), dict(saver.writes), dict(saver.blobs)))
    return len(stored), state


def test_checkpoints_do_not_grow_with_every_write() -> None:
    delta_bytes, state = _saved_bytes(_Graph, 10)
    plain_bytes, _ = _saved_bytes(_PlainGraph, 10)
    assert sorted(state["files"]) == [f"/f{i}.txt" for i in range(10)]
    assert state["files"]["/f9.txt"]["content"] == "J" * PAYLOAD
    message = f"DeltaChannel {delta_bytes:,} bytes vs plain reducer {plain_bytes:,} bytes"
    assert delta_bytes < plain_bytes / 3, message
    assert delta_bytes < 6 * 1024 * 1024, message
