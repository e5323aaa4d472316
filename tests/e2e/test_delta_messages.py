"""`FilesystemAgentState`: the conversation stored as deltas, read back the same.

Through `create_agent` with a checkpointer: a fresh graph object reads back the thread
its predecessor wrote; forks, `update_state`, summarisation (`REMOVE_ALL_MESSAGES`),
approvals and `HumanInTheLoopMiddleware` interrupts, and `stream_mode="messages"` all
work as with the default channel, and each message is stored once.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemAgentState, FilesystemMiddleware, StateBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

CONFIG: Any = {"configurable": {"thread_id": "t"}}


WORK = [
    tool_call("write_file", call_id="w1", file_path="/a.txt", content="one\ntwo\n"),
    tool_call("read_file", call_id="r1", file_path="/a.txt"),
    tool_call("edit_file", call_id="e1", file_path="/a.txt", old_string="two", new_string="three"),
    AIMessage("done"),
]


def agent_over(
    script: list[AIMessage],
    checkpointer: Any,
    *,
    schema: Any = FilesystemAgentState,
    middleware: tuple[Any, ...] = (),
    **settings: Any,
) -> Any:
    return create_agent(
        ScriptedChatModel(turns=script),
        middleware=[*middleware, FilesystemMiddleware(backend=StateBackend(), **settings)],
        checkpointer=checkpointer,
        state_schema=schema,
    )


def conversation(messages: list[BaseMessage]) -> list[tuple[str, str, str | None]]:
    """What a conversation says, without the ids a default channel draws at random."""
    return [(m.type, str(m.content), getattr(m, "tool_call_id", None)) for m in messages]


def stored_messages(saver: InMemorySaver) -> tuple[list[bytes], list[Any]]:
    """The `messages` blobs of every checkpoint, and every stored write to the channel."""
    blobs = [data for (_, _, channel, _), (_, data) in saver.blobs.items() if channel == "messages"]
    writes = [
        saver.serde.loads_typed(value)
        for writes in saver.writes.values()
        for _, channel, value, _ in writes.values()
        if channel == "messages"
    ]
    return blobs, writes


def test_a_fresh_graph_reads_back_the_conversation_stored_once() -> None:
    saver = InMemorySaver()
    final = agent_over(WORK, saver).invoke({"messages": [("user", "go")]}, CONFIG)
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == final["messages"]
    default = agent_over(WORK, InMemorySaver(), schema=None).invoke(
        {"messages": [("user", "go")]}, CONFIG
    )
    assert conversation(final["messages"]) == conversation(default["messages"])
    blobs, writes = stored_messages(saver)
    assert all(data == b"" for data in blobs)  # no checkpoint holds the whole list
    stored = [m for w in writes for m in (w if isinstance(w, list) else [w])]
    ids = [m.id for m in stored if isinstance(m, BaseMessage)]
    assert sorted(ids) == sorted(m.id for m in final["messages"][1:])  # each once
    # the user's tuple had no id: it gets the same derived one on every replay
    assert (
        final["messages"][0].id == agent_over([], saver).get_state(CONFIG).values["messages"][0].id
    )


def test_the_thread_continues_from_a_fresh_graph() -> None:
    saver = InMemorySaver()
    agent_over(WORK, saver).invoke({"messages": [("user", "go")]}, CONFIG)
    more = [tool_call("read_file", call_id="r2", file_path="/a.txt"), AIMessage("read it")]
    state = agent_over(more, saver).invoke({"messages": [("user", "again")]}, CONFIG)
    assert conversation(state["messages"])[-4:] == [
        ("human", "again", None),
        ("ai", "", None),
        ("tool", state["messages"][-2].content, "r2"),
        ("ai", "read it", None),
    ]
    assert "three" in str(state["messages"][-2].content)  # the edit happened before
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == state["messages"]


def test_a_fork_from_an_earlier_checkpoint_and_update_state() -> None:
    saver = InMemorySaver()
    script = [
        *WORK[:2],
        AIMessage("first"),
        tool_call("ls", call_id="l1", path="/"),
        AIMessage("forked"),
    ]
    agent = agent_over(script, saver)
    agent.invoke({"messages": [("user", "go")]}, CONFIG)
    past = next(
        s
        for s in agent.get_state_history(CONFIG)
        if [getattr(m, "tool_call_id", None) for m in s.values["messages"]][-1:] == ["w1"]
    )
    forked = agent.invoke(None, past.config)
    assert [getattr(m, "tool_call_id", None) for m in forked["messages"]] == [
        None,
        None,
        "w1",
        None,
        "l1",
        None,
    ]  # the read never happened on this branch
    assert forked["messages"][:3] == past.values["messages"]
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == forked["messages"]

    note = HumanMessage("a note", id="note")
    agent.update_state(CONFIG, {"messages": [RemoveMessage(id=forked["messages"][-1].id), note]})
    values = agent_over([], saver).get_state(CONFIG).values
    assert values["messages"] == [*forked["messages"][:-1], note]
    agent.update_state(CONFIG, {"messages": past.values["messages"]})  # a whole earlier value
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == values["messages"]


def test_summarisation_replaces_the_history_and_the_thread_goes_on() -> None:
    saver = InMemorySaver()
    summary = AIMessage("Summary: /a.txt was written and read.")
    summariser = ScriptedChatModel(turns=[summary] * 4)
    summarising = SummarizationMiddleware(summariser, trigger=("messages", 5), keep=("messages", 1))
    agent = agent_over(WORK, saver, middleware=(summarising,))
    state = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    contents = [str(m.content) for m in state["messages"]]
    assert any("Summary: /a.txt was written and read." in c for c in contents)
    assert "w1" not in {getattr(m, "tool_call_id", None) for m in state["messages"]}
    assert contents[-1] == "done"
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == state["messages"]
    later = agent_over([AIMessage("still here")], saver).invoke(
        {"messages": [("user", "and now?")]}, CONFIG
    )
    assert later["messages"][: len(state["messages"])] == state["messages"]
    assert conversation(later["messages"][-2:]) == [
        ("human", "and now?", None),
        ("ai", "still here", None),
    ]


@pytest.mark.parametrize("asks", ["ours", "langchain"])
def test_interrupts_resume_on_a_fresh_graph(asks: str) -> None:
    saver = InMemorySaver()
    model = ScriptedChatModel(turns=WORK)  # one script across the graph objects

    def fresh() -> Any:
        if asks == "ours":
            middleware = [FilesystemMiddleware(backend=StateBackend(), mode="default")]
        else:
            middleware = [
                HumanInTheLoopMiddleware(interrupt_on={"edit_file": True}),
                FilesystemMiddleware(backend=StateBackend()),
            ]
        return create_agent(
            model, middleware=middleware, checkpointer=saver, state_schema=FilesystemAgentState
        )

    result = fresh().invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    asked = 0
    while result.interrupts:
        asked += 1
        before = fresh().get_state(CONFIG).values["messages"]
        approve = Command(resume={"decisions": [{"type": "approve"}]})
        result = fresh().invoke(approve, CONFIG, version="v2")
        assert result.value["messages"][: len(before)] == before
    assert asked == (2 if asks == "ours" else 1)  # ours asks for the write and the edit
    messages = result.value["messages"]
    statuses = {m.tool_call_id: m.status for m in messages if isinstance(m, ToolMessage)}
    assert statuses == {"w1": "success", "r1": "success", "e1": "success"}
    assert result.value["files"]["/a.txt"]["content"] == "one\nthree\n"
    assert fresh().get_state(CONFIG).values["messages"] == messages


def test_stream_mode_messages_streams_the_turns_and_results() -> None:
    saver = InMemorySaver()
    agent = agent_over(WORK, saver)
    streamed = [
        message
        for message, _ in agent.stream(
            {"messages": [("user", "go")]}, CONFIG, stream_mode="messages"
        )
    ]
    final = agent.get_state(CONFIG).values["messages"]
    assert [m.id for m in streamed] == [m.id for m in final[1:]]
    results = [m for m in final if isinstance(m, ToolMessage)]
    assert [m for m in streamed if isinstance(m, ToolMessage)] == results


async def test_async_run_and_read_back() -> None:
    saver = InMemorySaver()
    final = await agent_over(WORK, saver).ainvoke({"messages": [("user", "go")]}, CONFIG)
    restored = await agent_over([], saver).aget_state(CONFIG)
    assert restored.values["messages"] == final["messages"]
    assert restored.values["files"]["/a.txt"]["content"] == "one\nthree\n"


def test_a_thread_of_the_default_channel_continues_with_this_schema() -> None:
    saver = InMemorySaver()
    default = agent_over(WORK, saver, schema=None).invoke({"messages": [("user", "go")]}, CONFIG)
    state = agent_over([AIMessage("hello again")], saver).invoke(
        {"messages": [("user", "hi")]}, CONFIG
    )
    assert state["messages"][: len(default["messages"])] == default["messages"]
    assert conversation(state["messages"][-2:]) == [
        ("human", "hi", None),
        ("ai", "hello again", None),
    ]
    assert agent_over([], saver).get_state(CONFIG).values["messages"] == state["messages"]
