"""The deepagents recipe — this middleware in `create_deep_agent`.

`create_deep_agent(middleware=[...])` replaces its own middleware of the same name, so
`FilesystemMiddleware` (default name "FilesystemMiddleware") takes the place of
deepagents' file tools in the main agent and in the general-purpose subagent; a
declarative subagent gets it through its own `middleware`. One scripted model plays both
the main agent and the subagent (deepagents' subagent uses the same model).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend
from langchain_fstools.testing import ScriptedChatModel
from tests.e2e.agent_runs import surviving_sleepers

deepagents = pytest.importorskip("deepagents")


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def script(subagent_type: str) -> list[AIMessage]:
    return [
        call("task", "t1", description="Fix the typo in /notes.md", subagent_type=subagent_type),
        # the subagent's turns
        call("read_file", "s1", file_path="/notes.md"),
        call("edit_file", "s2", file_path="/notes.md", old_string="helo", new_string="hello"),
        AIMessage("Fixed the typo in /notes.md."),
        # the main agent again: its own read shows the content (the subagent's read is
        # not in its conversation)
        call("read_file", "p1", file_path="/notes.md"),
        AIMessage("done"),
    ]


def tool_results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


def run(agent: Any, config: dict[str, Any] | None = None) -> dict[str, Any]:
    return agent.invoke(
        {
            "messages": [{"role": "user", "content": "Fix the typo."}],
            "files": StateBackend.seed({"/notes.md": "helo world\n"}),
        },
        config,
    )


@pytest.mark.parametrize("history", [False, True])
def test_general_purpose_subagent_reads_and_edits_with_these_tools(history: bool) -> None:
    model = ScriptedChatModel(turns=list(script("general-purpose")), disable_streaming=True)
    files = FilesystemMiddleware(backend=StateBackend(), history=history)
    agent = deepagents.create_deep_agent(model=model, middleware=[files])
    tools = set(agent.get_graph().nodes["tools"].data.tools_by_name)
    assert tools == {t.name for t in files.tools} | {"task"}  # no deepagents `delete`

    state = run(agent)
    results = tool_results(state)
    assert results["t1"].content == "Fixed the typo in /notes.md."
    assert state["files"]["/notes.md"]["content"] == "hello world\n"
    assert "version" in state["files"]["/notes.md"]  # written by these tools, not deepagents'
    assert "hello world" in str(results["p1"].content)
    if history:
        assert [r["tool_call_id"] for r in state["file_history"]] == ["s2"]
    else:
        assert "file_history" not in state


def test_declarative_subagent_with_the_middleware_and_a_checkpointer() -> None:
    model = ScriptedChatModel(turns=list(script("editor")), disable_streaming=True)
    files = FilesystemMiddleware(backend=StateBackend())
    editor = {
        "name": "editor",
        "description": "Edits files.",
        "system_prompt": "You edit files.",
        "middleware": [files],
    }
    agent = deepagents.create_deep_agent(
        model=model, middleware=[files], subagents=[editor], checkpointer=InMemorySaver()
    )
    state = run(agent, {"configurable": {"thread_id": "t"}})
    assert state["files"]["/notes.md"]["content"] == "hello world\n"
    assert "version" in state["files"]["/notes.md"]  # written by these tools, not deepagents'
    assert "hello world" in str(tool_results(state)["p1"].content)


def test_a_task_calls_sandbox_sessions_end_when_it_returns(tmp_path: Path) -> None:
    duration = f"{7000 + time.monotonic_ns() % 1_000_000}.{os.getpid()}"
    (tmp_path / "sub").mkdir()
    turns = [
        call("execute", "m1", command="cd sub && export WHO=main"),
        call("task", "t1", description="Start a server", subagent_type="general-purpose"),
        # the subagent's turns: a shell of its own, and a process left running
        call("execute", "s1", command=f"sleep {duration}", background=True),
        AIMessage("Started."),
        # the main agent again: its own shell as it left it
        call("execute", "m2", command="echo $WHO; pwd"),
        AIMessage("done"),
    ]
    model = ScriptedChatModel(turns=turns, disable_streaming=True)
    backend = LocalBackend(tmp_path, execute=True)
    files = FilesystemMiddleware(backend=backend)
    agent = deepagents.create_deep_agent(model=model, middleware=[files])
    try:
        state = agent.invoke(
            {"messages": [{"role": "user", "content": "go"}]},
            {"configurable": {"thread_id": "t"}},
        )
        results = tool_results(state)
        assert results["t1"].content == "Started."
        assert str(results["m2"].content).split()[:2] == ["main", str(tmp_path / "sub")]
        assert not surviving_sleepers(duration, grace=5)  # ended with the task call
        assert len(backend._commands._sessions._sessions) == 1  # the main agent's only
    finally:
        backend.close()
