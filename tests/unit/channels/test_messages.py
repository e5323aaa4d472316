"""The delta `messages` channel's reducer: `add_messages`, write by write, replayable."""

from __future__ import annotations

import copy
from functools import reduce
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from langchain_fstools.channels.messages import merge_messages

IDS = ["a", "b", "c"]
"""A small pool, so replacements and removals hit existing messages often."""

START = [HumanMessage("seed", id="a"), AIMessage("reply", id="b")]

texts = st.sampled_from(["hi", "ok", "", "done"])
ids = st.sampled_from(IDS)

with_id: st.SearchStrategy[Any] = st.one_of(
    st.builds(lambda t, i: HumanMessage(t, id=i), texts, ids),
    st.builds(lambda t, i: AIMessage(t, id=i), texts, ids),
    st.builds(lambda t, i: AIMessageChunk(content=t, id=i), texts, ids),
    st.builds(lambda t, i: ToolMessage(t, tool_call_id="x", id=i), texts, ids),
    st.builds(lambda t, i: {"role": "user", "content": t, "id": i}, texts, ids),
    st.builds(lambda i: RemoveMessage(id=i), ids),
    st.just(RemoveMessage(id=REMOVE_ALL_MESSAGES)),
)
without_id: st.SearchStrategy[Any] = st.one_of(
    texts,
    st.builds(lambda t: ("ai", t), texts),
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(HumanMessage, texts),
)


def writes_of(message: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    """Lists of writes: each a message-like alone or a list of them."""
    return st.lists(st.one_of(message, st.lists(message, max_size=4)), max_size=6)


def outcome(reducer: Any, *args: Any) -> Any:
    """The reducer's result, or the error it raised (both sides must agree on either)."""
    try:
        return reducer(*args)
    except ValueError as error:
        return ("ValueError", str(error))


def folded(state: list[Any], writes: list[Any]) -> list[Any]:
    """What the default channel computes: `add_messages` applied to each write in turn."""
    return reduce(add_messages, writes, state)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(writes=writes_of(with_id))
def test_equals_add_messages_write_by_write_on_messages_with_ids(writes: list[Any]) -> None:
    start = list(START)
    assert outcome(merge_messages, start, writes) == outcome(folded, start, writes)


@settings(max_examples=300, deadline=None)
@given(
    writes=writes_of(st.one_of(with_id, without_id)),
    cut=st.integers(min_value=0, max_value=6),
)
def test_is_batching_invariant_and_deterministic(writes: list[Any], cut: int) -> None:
    start = list(START)
    before, after = writes[:cut], writes[cut:]
    whole = outcome(merge_messages, start, writes)
    try:
        in_two = merge_messages(merge_messages(start, before), after)
    except ValueError as error:
        in_two = ("ValueError", str(error))
    assert in_two == whole
    assert outcome(merge_messages, start, writes) == whole  # replayed: the same ids
    if isinstance(whole, list):
        assert all(m.id for m in whole)


@settings(max_examples=100, deadline=None)
@given(writes=writes_of(st.one_of(with_id, without_id)))
def test_never_mutates_its_inputs(writes: list[Any]) -> None:
    start = [HumanMessage("seed", id="s"), HumanMessage("no id")]
    kept = copy.deepcopy((start, writes))
    outcome(merge_messages, start, writes)
    assert (start, writes) == kept


def test_messages_without_ids_get_distinct_ids_that_replay_the_same() -> None:
    writes: list[Any] = ["hi", ("ai", "hello"), "hi", {"role": "user", "content": "hi"}]
    first = merge_messages([], writes)
    assert [m.content for m in first] == ["hi", "hello", "hi", "hi"]
    assert len({m.id for m in first}) == 4
    assert [m.id for m in merge_messages([], writes)] == [m.id for m in first]
    assert [m.id for m in merge_messages(merge_messages([], writes[:2]), writes[2:])] == [
        m.id for m in first
    ]


def test_remove_all_messages_replaces_the_conversation() -> None:
    state = merge_messages([], [[HumanMessage("a", id="1"), AIMessage("b", id="2")]])
    summary = HumanMessage("summary", id="3")
    after = merge_messages(state, [[RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, state[1]]])
    assert after == [summary, state[1]]


def test_a_removal_and_a_re_add_in_one_write_keep_the_place_in_two_writes_move_it() -> None:
    state = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    again = HumanMessage("a again", id="1")
    in_one = merge_messages(state, [[RemoveMessage(id="1"), again]])
    in_two = merge_messages(state, [[RemoveMessage(id="1")], [again]])
    assert [m.id for m in in_one] == ["1", "2"]  # as add_messages does in one call
    assert [m.id for m in in_two] == ["2", "1"]  # as two steps of the default channel do


def test_removing_an_unknown_id_is_the_error_add_messages_gives() -> None:
    with pytest.raises(ValueError, match="doesn't exist \\('zz'\\)"):
        merge_messages([HumanMessage("a", id="1")], [RemoveMessage(id="zz")])


def test_chunks_become_messages_and_a_none_write_changes_nothing() -> None:
    state = merge_messages([], [AIMessageChunk(content="part", id="1"), None])
    assert state == [AIMessage("part", id="1")]
    assert type(state[0]) is AIMessage
