"""The `file_reads` channel: stored as deltas, accepting updates and whole values."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, StateBackend
from langchain_fstools.demo import seed_state
from langchain_fstools.testing import ScriptedChatModel
from langchain_fstools.tools.reads import ReadRecord, merge_read_updates

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def record(version: str, last: int = 1) -> ReadRecord:
    return ReadRecord(version=version, ranges=[[1, last]], total_lines=last, view="lines")


def reading_agent(saver: InMemorySaver) -> Any:
    turns = [
        AIMessage(
            "",
            tool_calls=[{"name": "read_file", "args": {"file_path": f"/{name}"}, "id": name}],
        )
        for name in ("a.txt", "b.txt", "c.txt")
    ]
    return create_agent(
        ScriptedChatModel(turns=[*turns, AIMessage("done")]),
        middleware=[FilesystemMiddleware(backend=StateBackend())],
        checkpointer=saver,
    )


def run(saver: InMemorySaver) -> Any:
    agent = reading_agent(saver)
    files = seed_state({"/a.txt": "a\n", "/b.txt": "b\n", "/c.txt": "c\n"})
    agent.invoke({"messages": [{"role": "user", "content": "go"}], "files": files}, CONFIG)
    return agent


def test_the_batch_reducer_is_batching_invariant_and_takes_whole_values() -> None:
    start = {"/a": record("1"), "/b": record("1")}
    first = [{"/a": record("2")}, None, {"/b": None}]
    second = [{"/c": record("1")}, {"/a": record("3"), "/c": None}]
    assert merge_read_updates(merge_read_updates(start, first), second) == merge_read_updates(
        start, first + second
    )
    assert merge_read_updates(start, [*first, *second]) == {"/a": record("3")}
    whole = {"/a": record("9"), "/z": record("1")}
    assert merge_read_updates(start, [whole]) == {**start, **whole}
    assert start == {"/a": record("1"), "/b": record("1")}  # inputs never mutated


def test_checkpoints_store_each_read_record_once() -> None:
    saver = InMemorySaver()
    run(saver)
    stored = [
        data for (_, _, channel, _), (_, data) in saver.blobs.items() if channel == "file_reads"
    ]
    assert stored
    assert all(data == b"" for data in stored)  # no full copy in any checkpoint
    written = [
        saver.serde.loads_typed(value)
        for writes in saver.writes.values()
        for _, channel, value, _ in writes.values()
        if channel == "file_reads"
    ]
    assert [list(update) for update in written] == [["/a.txt"], ["/b.txt"], ["/c.txt"]]


def test_update_state_takes_a_record_mapping() -> None:
    saver = InMemorySaver()
    agent = run(saver)
    assert sorted(agent.get_state(CONFIG).values["file_reads"]) == ["/a.txt", "/b.txt", "/c.txt"]
    agent.update_state(CONFIG, {"file_reads": {"/d.txt": record("v"), "/a.txt": None}})
    reads = agent.get_state(CONFIG).values["file_reads"]
    assert sorted(reads) == ["/b.txt", "/c.txt", "/d.txt"]
    assert reads["/d.txt"] == record("v")
    whole = dict(reads)
    agent.update_state(CONFIG, {"file_reads": whole})  # a whole value, as a fork hands back
    assert agent.get_state(CONFIG).values["file_reads"] == whole
    restored = reading_agent(saver).get_state(CONFIG).values["file_reads"]
    assert restored == whole  # rebuilt from the stored deltas
