"""FilesystemMiddleware: hooks on hand-built requests, then through create_agent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.demo import seed_state
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.testing import ScriptedChatModel


def backend_for(kind: str, tmp_path: Path) -> tuple[Backend, dict[str, Any]]:
    if kind == "local":
        (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
        return LocalBackend(tmp_path), {}
    return StateBackend(), {"files": seed_state({"/a.py": "x = 1\ny = 2\n"})}


def test_unknown_tool_or_setting_refused_up_front() -> None:
    with pytest.raises(ValueError, match="unknown tools"):
        FilesystemMiddleware(backend=StateBackend(), tools=["rm"])
    with pytest.raises(ValueError, match="unknown setting"):
        FilesystemMiddleware(backend=StateBackend(), readlimit=3)


def test_subset_of_tools() -> None:
    middleware = FilesystemMiddleware(backend=StateBackend(), tools=["read_file", "grep"])
    assert [t.name for t in middleware.tools] == ["read_file", "grep"]


@pytest.mark.parametrize("kind", ["local", "state"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_prompt_tools_state_and_parallel_guard(kind: str, mode: str, tmp_path: Path) -> None:
    backend, seed = backend_for(kind, tmp_path)
    turns = [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"file_path": "/a.py"}, "id": "r1"}]
        ),
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "edit_file",
                    "args": {"file_path": "/a.py", "old_string": "x = 1", "new_string": "x = 10"},
                    "id": "e1",
                },
                {
                    "name": "edit_file",
                    "args": {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 20"},
                    "id": "e2",
                },
                {
                    "name": "write_file",
                    "args": {"file_path": "/b.py", "content": "b\n"},
                    "id": "w1",
                },
            ],
        ),
        AIMessage("done"),
    ]
    model = ScriptedChatModel(turns=turns)
    agent = create_agent(
        model,
        system_prompt="You are careful.",
        middleware=[middleware := FilesystemMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    payload = {"messages": [{"role": "user", "content": "go"}], **seed}
    config = {"configurable": {"thread_id": "t"}}
    state = (
        agent.invoke(payload, config)
        if mode == "sync"
        else asyncio.run(agent.ainvoke(payload, config))
    )
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results["e1"].status == "success", results["e1"].content
    assert results["e2"].status == "error"
    assert results["e2"].content.startswith(
        "Error: another call in this turn already changes /a.py;"
    )
    assert results["w1"].status == "success"
    content = (
        (tmp_path / "a.py").read_text() if kind == "local" else state["files"]["/a.py"]["content"]
    )
    assert content == "x = 10\ny = 2\n"
    system = model.calls[0][0]
    assert isinstance(system, SystemMessage)
    assert system.text == "You are careful."  # the descriptions say how to use the tools
    assert middleware.system_prompt == ""


def test_without_prompt_section(tmp_path: Path) -> None:
    model = ScriptedChatModel(turns=[AIMessage("ok")])
    agent = create_agent(
        model, middleware=[FilesystemMiddleware(backend=LocalBackend(tmp_path), system_prompt=None)]
    )
    agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert not any(isinstance(m, SystemMessage) for m in model.calls[0])


def test_parallel_guard_sees_the_paths_of_a_patch(tmp_path: Path) -> None:
    backend, _ = backend_for("local", tmp_path)
    patch_a = "*** Begin Patch\n*** Update File: a.py\n-y = 2\n+y = 20\n*** End Patch"
    patch_c = "*** Begin Patch\n*** Add File: /c.py\n+c = 3\n*** End Patch"
    turns = [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"file_path": "/a.py"}, "id": "r1"}]
        ),
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "edit_file",
                    "args": {"file_path": "/a.py", "old_string": "x = 1", "new_string": "x = 10"},
                    "id": "e1",
                },
                {"name": "apply_patch", "args": {"patch": patch_a}, "id": "p1"},
                {"name": "apply_patch", "args": {"patch": patch_c}, "id": "p2"},
            ],
        ),
        AIMessage("done"),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=turns),
        middleware=[FilesystemMiddleware(backend=backend)],
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert results["e1"].status == "success"
    assert results["p1"].status == "error"
    assert results["p1"].content.startswith(
        "Error: another call in this turn already changes /a.py;"
    )
    assert results["p2"].status == "success", results["p2"].content
    assert (tmp_path / "a.py").read_text() == "x = 10\ny = 2\n"
    assert (tmp_path / "c.py").read_text() == "c = 3\n"


def test_changing_calls_that_share_an_id_in_one_turn_are_all_refused(tmp_path: Path) -> None:
    turns = [
        AIMessage(
            "",
            tool_calls=[
                {"name": "write_file", "args": {"file_path": "/b.py", "content": "b\n"}, "id": "w"},
                {"name": "write_file", "args": {"file_path": "/c.py", "content": "c\n"}, "id": "w"},
                {"name": "ls", "args": {}, "id": "l"},
            ],
        ),
        AIMessage("done"),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=turns),
        middleware=[FilesystemMiddleware(backend=LocalBackend(tmp_path))],
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    replies = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    refused = [m for m in replies if m.tool_call_id == "w"]
    assert len(refused) == 2
    for message in refused:
        assert message.status == "error"
        assert message.content.startswith("Error: several calls in this turn have the id w,")
    assert not (tmp_path / "b.py").exists()
    assert not (tmp_path / "c.py").exists()
    assert next(m for m in replies if m.tool_call_id == "l").status == "success"


def test_tools_leave_their_state_update_to_the_middleware(tmp_path: Path) -> None:
    """LangGraph deep-copies a Command a tool returns, not one a middleware returns."""
    del tmp_path
    middleware = FilesystemMiddleware(backend=StateBackend())
    edit = {"file_path": "/a.py", "old_string": "y = 2", "new_string": "y = 3"}
    turns = [
        AIMessage(
            "", tool_calls=[{"name": "read_file", "args": {"file_path": "/a.py"}, "id": "r"}]
        ),
        AIMessage("", tool_calls=[{"name": "edit_file", "args": edit, "id": "e"}]),
        AIMessage("done"),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=turns), middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    seed = {"files": seed_state({"/a.py": "x = 1\ny = 2\n"})}
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}], **seed}, config)
    assert [m.status for m in state["messages"] if isinstance(m, ToolMessage)] == ["success"] * 2
    assert state["files"]["/a.py"]["content"] == "x = 1\ny = 3\n"
    assert state["file_reads"]["/a.py"]["version"] == state["files"]["/a.py"]["version"]
    assert middleware.toolkit.context.deferred_updates == {}


def test_a_tool_under_the_middleware_returns_a_plain_message() -> None:
    middleware = FilesystemMiddleware(backend=StateBackend())
    (read,) = [t for t in middleware.tools if t.name == "read_file"]
    runtime = ToolRuntime(
        state={"messages": [], "files": seed_state({"/a.py": "x\n"}), "file_reads": {}},
        context=None,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="r1",
        store=None,
    )
    call = {"type": "tool_call", "name": "read_file", "id": "r1"}
    deferred = middleware.toolkit.context.deferred_updates
    alone = read.invoke({**call, "args": {"file_path": "/a.py", "runtime": runtime}})
    assert isinstance(alone, Command)  # outside the middleware's call: its own update
    assert not deferred
    deferred["", "r1"] = {}  # what the middleware does around the calls it wraps
    message = read.invoke({**call, "args": {"file_path": "/a.py", "runtime": runtime}})
    assert isinstance(message, ToolMessage)
    assert message.content == "1\tx"
    assert list(deferred) == [("", "r1")]
    assert list(deferred["", "r1"]["file_reads"]) == ["/a.py"]


class _Mine(FilesystemMiddleware):
    """A user's subclass."""


@pytest.mark.parametrize("cls", [FilesystemMiddleware, _Mine])
def test_steps_around_the_model_only_with_a_permission_gate(cls: type[Any]) -> None:
    def nodes(**settings: Any) -> list[str]:
        middleware = cls(backend=StateBackend(), **settings)
        assert isinstance(middleware, cls)
        agent = create_agent(ScriptedChatModel(turns=[]), middleware=[middleware])
        return list(agent.get_graph().nodes)

    assert nodes() == ["__start__", "model", "tools", "__end__"]  # no checkpoint for nothing
    gated = [
        "__start__",
        "model",
        "tools",
        "FilesystemMiddleware.before_model",  # asks about what waiting commands changed
        "FilesystemMiddleware.after_model",
        "__end__",
    ]
    assert nodes(mode="default") == gated
    assert nodes(permissions=[Permission(operations=["read"], paths=["/x"], action="deny")]) == (
        gated
    )
