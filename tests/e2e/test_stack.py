"""The middleware next to the rest of the LangGraph / LangChain stack.

Forks, `update_state(values)`, `invoke(previous_state)`; the "unchanged" reply after
`ContextEditingMiddleware` and `SummarizationMiddleware` took the earlier result away; a
graph without the `files` channel; seeding; the middleware's tools on their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.errors import InvalidStateRecord
from langchain_fstools.testing import ScriptedChatModel

UNCHANGED = "File unchanged since your last read"


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def scripted(*messages: AIMessage) -> ScriptedChatModel:
    return ScriptedChatModel(turns=list(messages))


def results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


def agent_over(model: ScriptedChatModel, *, history: bool, checkpointer: Any = None) -> Any:
    return create_agent(
        model,
        middleware=[FilesystemMiddleware(backend=StateBackend(), history=history)],
        checkpointer=checkpointer,
    )


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("history", [False, True])
def test_invoke_with_the_previous_state(history: bool) -> None:
    first = agent_over(
        scripted(call("write_file", "w1", file_path="/a.txt", content="one\n"), AIMessage("ok")),
        history=history,
    )
    previous = first.invoke(user("write"))
    second = agent_over(
        scripted(
            call("edit_file", "e1", file_path="/a.txt", old_string="one", new_string="two"),
            AIMessage("ok"),
        ),
        history=history,
    )
    state = second.invoke(
        {**previous, "messages": [*previous["messages"], *user("edit")["messages"]]}
    )
    assert results(state)["e1"].status == "success"
    assert state["files"]["/a.txt"]["content"] == "two\n"
    assert ("file_history" in state) is history
    if history:
        assert [r["tool_call_id"] for r in state["file_history"]] == ["w1", "e1"]


@pytest.mark.parametrize("history", [False, True])
def test_fork_from_a_past_checkpoint_and_update_state_with_values(history: bool) -> None:
    saver = InMemorySaver()
    config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
    agent = agent_over(
        scripted(
            call("write_file", "w1", file_path="/a.txt", content="one\n"),
            call("write_file", "w2", file_path="/b.txt", content="two\n"),
            AIMessage("ok"),
            call("write_file", "w3", file_path="/c.txt", content="three\n"),
            AIMessage("forked"),
        ),
        history=history,
        checkpointer=saver,
    )
    agent.invoke(user("write two files"), config)
    # The checkpoint right after the first write (before the model asked for the second).
    past = next(
        s
        for s in agent.get_state_history(config)
        if sorted(s.values.get("files", {})) == ["/a.txt"] and s.next == ("model",)
    )
    forked = agent.invoke(None, past.config)
    assert sorted(forked["files"]) == ["/a.txt", "/c.txt"]  # /b.txt was never written here

    # update_state with a whole earlier value, as a user restoring a snapshot would.
    agent.update_state(config, dict(past.values))
    values = agent.get_state(config).values
    assert values["files"]["/a.txt"]["content"] == "one\n"
    if history:
        ids = [r["tool_call_id"] for r in values["file_history"]]
        assert ids == ["w1", "w3"]  # each record once, none lost
    else:
        assert "file_history" not in values


def test_history_off_has_no_history_channel() -> None:
    agent = agent_over(scripted(AIMessage("hi")), history=False)
    assert "file_history" not in agent.invoke(user("hi"))
    assert "file_history" not in agent.get_input_jsonschema()["properties"]


def reread_script() -> list[AIMessage]:
    return [
        call("write_file", "w1", file_path="/notes.md", content="remember the milk\n"),
        call("read_file", "r1", file_path="/notes.md"),
        call("ls", "l1", path="/"),
        call("read_file", "r2", file_path="/notes.md"),
        AIMessage("done"),
    ]


def test_a_repeated_read_is_short_while_the_result_is_in_view() -> None:
    state = agent_over(scripted(*reread_script()), history=False).invoke(user("read twice"))
    assert str(results(state)["r2"].content).startswith(UNCHANGED)


def test_context_editing_clears_the_result_so_the_read_returns_content() -> None:
    agent = create_agent(
        scripted(*reread_script()),
        middleware=[
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1, keep=1)]),
            FilesystemMiddleware(backend=StateBackend()),
        ],
    )
    state = agent.invoke(user("read twice"))
    second = results(state)["r2"]
    assert not str(second.content).startswith(UNCHANGED)
    assert "remember the milk" in str(second.content)


async def test_context_editing_async() -> None:
    agent = create_agent(
        scripted(*reread_script()),
        middleware=[
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1, keep=1)]),
            FilesystemMiddleware(backend=StateBackend()),
        ],
    )
    state = await agent.ainvoke(user("read twice"))
    assert "remember the milk" in str(results(state)["r2"].content)


def test_summarisation_removes_the_result_so_the_read_returns_content() -> None:
    summariser = scripted(AIMessage("Summary: the agent wrote and read /notes.md."))
    agent = create_agent(
        scripted(*reread_script()),
        middleware=[
            SummarizationMiddleware(summariser, trigger=("messages", 6), keep=("messages", 1)),
            FilesystemMiddleware(backend=StateBackend()),
        ],
    )
    state = agent.invoke(user("read twice"))
    assert "r1" not in results(state)  # summarised away
    second = results(state)["r2"]
    assert "remember the milk" in str(second.content)


# ----- a missing channel, malformed seeds, tools outside a graph --------------------------------


def test_missing_files_channel_is_an_error_and_nothing_is_reported_done() -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(FileToolkit(StateBackend()).get_tools()))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    asked = call("write_file", "w1", file_path="/a.txt", content="hi\n")
    (reply,) = graph.compile().invoke({"messages": [asked]})["messages"][1:]
    assert reply.status == "error"
    assert "no 'files' channel" in reply.content
    assert "FilesystemState" in reply.content
    assert "Created" not in reply.content


def test_seed_helper_and_deepagents_records_feed_the_tools() -> None:
    agent = agent_over(
        scripted(
            call("read_file", "r1", file_path="/notes.md"),
            call("read_file", "r2", file_path="/old.md"),
            call("read_file", "r3", file_path="/plain.md"),
            AIMessage("done"),
        ),
        history=False,
    )
    files: dict[str, Any] = {
        **StateBackend.seed({"/notes.md": "seeded\n"}),
        "/old.md": {"content": ["from", "deepagents"], "modified_at": "2024-01-02T00:00:00Z"},
        "/plain.md": "plain text\n",
    }
    out = results(agent.invoke({**user("read"), "files": files}))
    assert "seeded" in str(out["r1"].content)
    assert "deepagents" in str(out["r2"].content)
    assert "plain text" in str(out["r3"].content)


def test_a_malformed_seed_fails_at_the_input_naming_the_state() -> None:
    agent = agent_over(scripted(AIMessage("never reached")), history=False)
    with pytest.raises(InvalidStateRecord, match=r"'files' channel .* StateBackend\.seed"):
        agent.invoke({**user("hi"), "files": {"/notes.md": 42}})


def test_middleware_tools_work_on_their_own_on_local_disk(tmp_path: Path) -> None:
    tools = {t.name: t for t in FilesystemMiddleware(backend=LocalBackend(tmp_path)).tools}
    assert (
        tools["write_file"]
        .invoke({"file_path": "/a.txt", "content": "hello\n"})
        .startswith("Created /a.txt")
    )
    assert "hello" in tools["read_file"].invoke({"file_path": "/a.txt"})
    assert "/a.txt" in tools["ls"].invoke({"path": "/"})
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    # The evicted-results folder lives in graph state: outside a graph it only refuses.
    refused = tools["write_file"].invoke({"file_path": "/large_tool_results/x", "content": "x"})
    assert refused.startswith("Error:")
    assert not (tmp_path / "large_tool_results").exists()


def test_middleware_tools_on_state_backend_outside_a_graph_say_why() -> None:
    (ls,) = [t for t in FilesystemMiddleware(backend=StateBackend()).tools if t.name == "ls"]
    assert "must run inside a graph" in ls.invoke({"path": "/"})
