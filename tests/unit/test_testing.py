"""langchain_fstools.testing: the scripted chat model under create_agent, streamed or not."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.testing import ScriptedChatModel, parallel, tool_call

REQUEST = {"messages": [{"role": "user", "content": "go"}]}


def script() -> list[AIMessage | str]:
    return [
        tool_call("write_file", call_id="w", file_path="/a.txt", content="hi\n"),
        tool_call("read_file", call_id="r", file_path="/a.txt"),
        "All done here.",
    ]


def agent_for(model: ScriptedChatModel) -> object:
    return create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])


def test_tool_call_builds_one_call_with_the_given_arguments() -> None:
    turn = tool_call("grep", call_id="g1", pattern="x", output_mode="content")
    assert turn.tool_calls == [
        {
            "name": "grep",
            "args": {"pattern": "x", "output_mode": "content"},
            "id": "g1",
            "type": "tool_call",
        }
    ]
    assert tool_call("ls").tool_calls[0]["id"] != tool_call("ls").tool_calls[0]["id"]


def test_invoke_runs_the_script_through_create_agent() -> None:
    model = ScriptedChatModel(turns=script())
    state = agent_for(model).invoke(REQUEST)
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results["w"].status == "success"
    assert "hi" in str(results["r"].content)
    assert state["messages"][-1].content == "All done here."
    assert model.remaining == 0
    assert len(model.calls) == 3
    assert isinstance(model.calls[0][-1], HumanMessage)
    assert isinstance(model.calls[2][-1], ToolMessage)


@pytest.mark.parametrize("streaming", [True, False])
def test_stream_mode_messages_carries_the_tool_calls_and_the_text(streaming: bool) -> None:
    model = ScriptedChatModel(turns=script(), disable_streaming=not streaming)
    pieces = [
        message
        for message, _ in agent_for(model).stream(REQUEST, stream_mode="messages")
        if not isinstance(message, ToolMessage)
    ]
    calls = [call["id"] for message in pieces for call in message.tool_calls]
    assert calls == ["w", "r"]
    text = "".join(str(m.content) for m in pieces)
    assert text == "All done here."
    chunked = all(isinstance(m, AIMessageChunk) for m in pieces)
    assert chunked is streaming
    assert len(pieces) == (5 if streaming else 3)  # three words streamed one by one


async def test_astream_messages_and_ainvoke() -> None:
    model = ScriptedChatModel(turns=[tool_call("ls", call_id="l", path="/"), "Listed."])
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])
    seen = [message async for message, _ in agent.astream(REQUEST, stream_mode="messages")]
    assert [c["id"] for m in seen if isinstance(m, AIMessage) for c in m.tool_calls] == ["l"]
    model = ScriptedChatModel(turns=["Nothing to do."])
    state = await agent_for(model).ainvoke(REQUEST)
    assert state["messages"][-1].content == "Nothing to do."


def test_bind_tools_returns_the_model(tmp_path: Path) -> None:
    model = ScriptedChatModel(turns=["x"])
    tools = FileToolkit(LocalBackend(tmp_path)).get_tools()
    assert model.bind_tools(tools, tool_choice="any") is model


def test_offered_keeps_the_names_bound_at_each_bind(tmp_path: Path) -> None:
    model = ScriptedChatModel(turns=["x"])
    tools = FileToolkit(LocalBackend(tmp_path), tools=["ls", "read_file"]).get_tools()
    schema = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    model.bind_tools(tools)
    model.bind_tools([schema])
    assert model.offered == [["ls", "read_file"], ["lookup"]]


def test_a_used_up_script_says_so() -> None:
    model = ScriptedChatModel(turns=["only one"])
    assert model.invoke("a").content == "only one"
    with pytest.raises(RuntimeError, match="played all 1 of its turns"):
        model.invoke("b")


def test_parallel_puts_several_calls_in_one_turn_that_an_agent_runs_together() -> None:
    turn = parallel(
        tool_call("write_file", call_id="w1", file_path="/a.txt", content="a\n"),
        tool_call("write_file", call_id="w2", file_path="/b.txt", content="b\n"),
    )
    assert [call["id"] for call in turn.tool_calls] == ["w1", "w2"]
    model = ScriptedChatModel(turns=[turn, "Both written."])
    result = agent_for(model).invoke(REQUEST)  # type: ignore[attr-defined]
    assert set(result["files"]) == {"/a.txt", "/b.txt"}
    assert len(model.calls) == 2  # one model call ran both tools


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ((), "at least one"),
        ((AIMessage(content="hi"),), "tool-call turns only"),
        ((tool_call("ls", call_id="x"), tool_call("glob", call_id="x", pattern="*")), "distinct"),
    ],
)
def test_parallel_refuses_what_is_not_one_turn_of_calls(
    turns: tuple[AIMessage, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parallel(*turns)


def test_call_ids_are_numbered_per_model_in_script_order() -> None:
    turns: list[AIMessage | str] = [
        tool_call("ls", path="/"),
        parallel(tool_call("ls", path="/a"), tool_call("glob", call_id="call_2", pattern="*")),
        tool_call("read_file", file_path="/a.txt"),
        "Done.",
    ]
    for model in (ScriptedChatModel(turns=turns), ScriptedChatModel(turns=turns)):
        ids = [[c["id"] for c in t.tool_calls] for t in model.turns if isinstance(t, AIMessage)]
        assert ids == [["call_1"], ["call_3", "call_2"], ["call_4"], []]
        assert all(not t.response_metadata for t in model.turns if isinstance(t, AIMessage))
    first = turns[0]
    assert isinstance(first, AIMessage)
    assert first.tool_calls[0]["id"].startswith("call_auto_")  # the turn given is unchanged
