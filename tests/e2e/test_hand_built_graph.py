"""The tools in a plain ToolNode inside a hand-built StateGraph."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from langchain_fstools import FileToolkit, StateBackend
from langchain_fstools.backends.state import FilesChannel
from langchain_fstools.tools.reads import ReadRecord, merge_reads


class MyState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    files: NotRequired[FilesChannel]
    file_reads: NotRequired[Annotated[dict[str, ReadRecord], merge_reads]]


def planner(state: MyState) -> dict[str, Any]:
    """Emit one scripted tool call per step, by how many tool results exist."""
    done = sum(isinstance(m, ToolMessage) for m in state["messages"])
    script = [
        ("write_file", {"file_path": "/plan.md", "content": "step 1\n"}),
        ("edit_file", {"file_path": "/plan.md", "old_string": "1", "new_string": "one"}),
        ("read_file", {"file_path": "/plan.md"}),
    ]
    if done >= len(script):
        return {"messages": [AIMessage(content="finished")]}
    name, args = script[done]
    return {
        "messages": [
            AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{done}"}])
        ]
    }


def route(state: MyState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def test_tool_node_in_own_graph() -> None:
    builder = StateGraph(MyState)
    builder.add_node("planner", planner)
    builder.add_node("tools", ToolNode(FileToolkit(StateBackend()).get_tools()))
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", route, ["tools", END])
    builder.add_edge("tools", "planner")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g"}}
    state = graph.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "success", "success"]
    assert results[2].content == "1\tstep one"
    assert state["files"]["/plan.md"]["content"] == "step one\n"
    assert "/plan.md" in state["file_reads"]
