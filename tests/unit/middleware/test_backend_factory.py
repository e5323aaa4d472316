"""deepagents' backend factory: `backend=` a function of each call's runtime."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langgraph.store.memory import InMemoryStore

from langchain_fstools import (
    FilesystemMiddleware,
    FileToolkit,
    LocalBackend,
    StateBackend,
    StoreBackend,
)
from langchain_fstools.backends.factory import FactoryBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.errors import NotInGraph
from langchain_fstools.testing import ScriptedChatModel, tool_call

if TYPE_CHECKING:
    from pathlib import Path


def _run(
    middleware: FilesystemMiddleware,
    turns: list[Any],
    *,
    context: Any = None,
    sync: bool = True,
) -> tuple[ScriptedChatModel, list[ToolMessage], dict[str, Any]]:
    model = ScriptedChatModel(turns=[*turns, "done"])
    agent = create_agent(model, middleware=[middleware])
    question = {"messages": [{"role": "user", "content": "work"}]}
    state = (
        agent.invoke(question, context=context)
        if sync
        else asyncio.run(agent.ainvoke(question, context=context))
    )
    return model, [m for m in state["messages"] if isinstance(m, ToolMessage)], state


@pytest.mark.parametrize("sync", [True, False])
def test_deepagents_state_backend_lambda_works_unchanged(sync: bool) -> None:
    middleware = FilesystemMiddleware(backend=lambda rt: StateBackend(rt))
    turns = [
        tool_call("write_file", file_path="/notes.md", content="hello\n"),
        tool_call("read_file", file_path="/notes.md"),
    ]
    model, results, state = _run(middleware, turns, sync=sync)
    assert [result.status for result in results] == ["success", "success"]
    assert "hello" in str(results[1].content)
    assert "/notes.md" in state["files"]
    assert "execute" not in model.offered[0]  # state runs no commands


@pytest.mark.parametrize("sync", [True, False])
def test_deepagents_store_backend_lambda_uses_the_graph_s_store(sync: bool) -> None:
    store = InMemoryStore()
    model = ScriptedChatModel(
        turns=[tool_call("write_file", file_path="/memo.md", content="kept\n"), "done"]
    )
    middleware = FilesystemMiddleware(backend=lambda rt: StoreBackend(rt))
    agent = create_agent(model, middleware=[middleware], store=store)
    question = {"messages": [{"role": "user", "content": "remember"}]}
    state = agent.invoke(question) if sync else asyncio.run(agent.ainvoke(question))
    (result,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert result.status == "success"
    assert any("memo.md" in item.key for item in store.search(("filesystem",)))


@pytest.mark.parametrize("sync", [True, False])
def test_a_factory_chooses_each_user_s_workspace_from_the_runtime_context(
    tmp_path: Path, sync: bool
) -> None:
    (tmp_path / "ann").mkdir()
    (tmp_path / "bob").mkdir()
    workspaces = {name: LocalBackend(tmp_path / name) for name in ("ann", "bob")}
    given: list[str | None] = []

    def per_user(runtime: Any) -> Backend:
        given.append(runtime.tool_call_id)
        return workspaces[runtime.context["user"]]

    middleware = FilesystemMiddleware(backend=per_user)
    for user in ("ann", "bob"):
        write = tool_call("write_file", file_path="/mine.txt", content=f"{user}\n")
        _, results, _ = _run(middleware, [write], context={"user": user}, sync=sync)
        assert results[0].status == "success"
    assert (tmp_path / "ann" / "mine.txt").read_text() == "ann\n"
    assert (tmp_path / "bob" / "mine.txt").read_text() == "bob\n"
    assert None in given  # the model calls' runtime: no tool call
    assert any(call_id is not None for call_id in given)  # each tool call's


@pytest.mark.parametrize("sync", [True, False])
def test_execute_is_offered_where_the_resolved_backend_runs_commands(
    tmp_path: Path, sync: bool
) -> None:
    local = LocalBackend(tmp_path, execute=True, sandbox=None)
    state = StateBackend()

    def chosen(runtime: Any) -> Backend:
        return local if runtime.context["commands"] else state

    middleware = FilesystemMiddleware(backend=chosen)
    assert "execute" in {tool.name for tool in middleware.tools}
    model, _, _ = _run(middleware, [], context={"commands": True}, sync=sync)
    assert "execute" in model.offered[0]
    model, _, _ = _run(middleware, [], context={"commands": False}, sync=sync)
    assert "execute" not in model.offered[0]


def test_execute_called_on_a_backend_without_commands_is_an_error_sentence() -> None:
    middleware = FilesystemMiddleware(backend=lambda rt: StateBackend(rt))
    _, results, _ = _run(middleware, [tool_call("execute", command="ls")])
    assert results[0].status == "error"
    assert str(results[0].content).startswith("Error")


def test_a_factory_returning_no_backend_fails_the_call_in_one_sentence() -> None:
    toolkit = FileToolkit(lambda rt: "not a backend", tools=["ls"])  # type: ignore[arg-type,return-value]
    (tool,) = toolkit.get_tools()
    runtime = ToolRuntime(
        state={"messages": []},
        context=None,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="c1",
        store=None,
    )
    message = tool.invoke(
        {"type": "tool_call", "name": "ls", "id": "c1", "args": {"path": "/", "runtime": runtime}}
    )
    assert message.status == "error"
    assert "the backend factory returned str, not a backend instance" in str(message.content)


def test_the_toolkit_resolves_the_factory_at_each_call(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    calls: list[str] = []
    local = LocalBackend(tmp_path)

    def factory(runtime: Any) -> Backend:
        calls.append(runtime.tool_call_id)
        return local

    (tool,) = FileToolkit(factory, tools=["ls"]).get_tools()
    for call_id in ("c1", "c2"):
        runtime = ToolRuntime(
            state={"messages": []},
            context=None,
            config={},
            stream_writer=lambda _: None,
            tool_call_id=call_id,
            store=None,
        )
        args = {"path": "/", "runtime": runtime}
        message = tool.invoke({"type": "tool_call", "name": "ls", "id": call_id, "args": args})
        assert "a.txt" in str(message.content)
    assert calls == ["c1", "c2"]


def test_a_class_is_still_refused_with_the_instance_to_give() -> None:
    with pytest.raises(TypeError, match="not the class StateBackend"):
        FilesystemMiddleware(backend=StateBackend)  # type: ignore[arg-type]


@pytest.mark.parametrize("sync", [True, False])
def test_a_per_user_factory_serves_the_permission_review_too(tmp_path: Path, sync: bool) -> None:
    """The review's dry runs bind the backend outside a tool call: with the run's context."""
    (tmp_path / "ann").mkdir()
    workspaces = {"ann": LocalBackend(tmp_path / "ann")}
    middleware = FilesystemMiddleware(
        backend=lambda rt: workspaces[rt.context["user"]], mode="accept_edits"
    )
    write = tool_call("write_file", file_path="/mine.txt", content="ann\n")
    _, results, _ = _run(middleware, [write], context={"user": "ann"}, sync=sync)
    assert results[0].status == "success"
    assert (tmp_path / "ann" / "mine.txt").read_text() == "ann\n"


def test_unbound_the_factory_backend_has_no_files_and_says_why() -> None:
    backend = FactoryBackend(lambda rt: StateBackend(rt))
    with pytest.raises(NotInGraph, match="a factory of the graph runtime"):
        backend.stat("/a.txt")
    assert backend.command_root() is None
    assert backend.contains_commands() is False  # asked about, never assumed contained
