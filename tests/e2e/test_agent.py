"""End to end: create_agent + a scripted chat model + InMemorySaver, on both backends.

Read, edit, write; resume the thread; read-before-write still enforced after resuming.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_fstools import (
    FilesystemMiddleware,
    FilesystemState,
    FileToolkit,
    LocalBackend,
    StateBackend,
)
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import file_bytes
from langchain_fstools.demo import seed_state
from langchain_fstools.testing import ScriptedChatModel, tool_call


def call(name: str, n: int, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])


FIRST_TURN = [
    call("read_file", 1, file_path="/app.py"),
    call("edit_file", 2, file_path="/app.py", old_string="1", new_string="2"),
    call("write_file", 3, file_path="/notes/todo.md", content="- ship\n"),
    call("edit_file", 4, file_path="/other.py", old_string="a", new_string="b"),
    AIMessage(content="done"),
]
SECOND_TURN = [
    call("edit_file", 5, file_path="/app.py", old_string="2", new_string="3"),
    call("write_file", 6, file_path="/other.py", content="overwritten\n"),
    call("read_file", 7, file_path="/other.py"),
    call("write_file", 8, file_path="/other.py", content="overwritten\n"),
    AIMessage(content="done again"),
]


INITIAL_FILES = {"/app.py": "x = 1\n", "/other.py": "a\n"}


class Scenario:
    def __init__(self, kind: str, tmp_path: Path, checkpointer: Any = None) -> None:
        self.kind = kind
        initial = INITIAL_FILES
        if kind == "local":
            for path, text in initial.items():
                (tmp_path / path.lstrip("/")).write_text(text)
            self.backend: Backend = LocalBackend(tmp_path)
            self.seed: dict[str, Any] = {}
        else:
            self.backend = StateBackend()
            self.seed = {"files": seed_state(initial)}
        self.root = tmp_path
        self.checkpointer = checkpointer or InMemorySaver()
        self.config = {"configurable": {"thread_id": "t1"}}

    def agent(self, script: list[AIMessage]) -> Any:
        """A fresh agent and toolkit (nothing kept in process) on the shared checkpointer."""
        return create_agent(
            ScriptedChatModel(turns=script),
            tools=FileToolkit(self.backend).get_tools(),
            state_schema=FilesystemState,
            checkpointer=self.checkpointer,
        )

    def file(self, state: dict[str, Any], path: str) -> str:
        if self.kind == "local":
            return (self.root / path.lstrip("/")).read_text()
        return str(state["files"][path]["content"])


def tool_results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("kind", ["local", "state"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_read_edit_write_resume(kind: str, mode: str, tmp_path: Path) -> None:
    s = Scenario(kind, tmp_path)
    run_scenario(s, kind, mode, tmp_path)


@pytest.mark.parametrize("kind", ["local", "state"])
def test_resume_from_sqlite_checkpoints(kind: str, tmp_path: Path) -> None:
    """Files and read records survive real serialisation, in a fresh connection."""
    database = tmp_path / "checkpoints.sqlite"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with SqliteSaver.from_conn_string(str(database)) as saver:
        s = Scenario(kind, workspace, saver)
        state = s.agent(FIRST_TURN).invoke(
            {"messages": [{"role": "user", "content": "go"}], **s.seed}, s.config
        )
        assert s.file(state, "/app.py") == "x = 2\n"
    with SqliteSaver.from_conn_string(str(database)) as reopened:
        s.checkpointer = reopened
        state = s.agent(SECOND_TURN).invoke(
            {"messages": [{"role": "user", "content": "again"}]}, s.config
        )
        results = tool_results(state)
        assert results["c5"].status == "success", results["c5"].content
        assert results["c6"].status == "error"
        assert s.file(state, "/app.py") == "x = 3\n"
        assert s.file(state, "/other.py") == "overwritten\n"


def run_scenario(s: Scenario, kind: str, mode: str, tmp_path: Path) -> None:

    def turn(script: list[AIMessage], text: str, extra: dict[str, Any]) -> dict[str, Any]:
        agent = s.agent(script)
        payload = {"messages": [{"role": "user", "content": text}], **extra}
        if mode == "sync":
            return agent.invoke(payload, s.config)
        return asyncio.run(agent.ainvoke(payload, s.config))

    state = turn(FIRST_TURN, "fix it", s.seed)
    results = tool_results(state)
    assert [results[f"c{n}"].status for n in range(1, 5)] == [
        "success",
        "success",
        "success",
        "error",
    ]
    assert "has not been read yet" in str(results["c4"].content)
    assert s.file(state, "/app.py") == "x = 2\n"
    assert s.file(state, "/notes/todo.md") == "- ship\n"
    assert state["messages"][-1].content == "done"

    # Resume the thread with a new agent and toolkit: files and read records come back
    # from the checkpoint, so /app.py (read in turn one) can be edited without a re-read.
    state = turn(SECOND_TURN, "again", {})
    results = tool_results(state)
    assert results["c5"].status == "success", results["c5"].content
    assert s.file(state, "/app.py") == "x = 3\n"
    assert results["c6"].status == "error"
    assert "has not been read yet" in str(results["c6"].content)
    assert results["c8"].status == "success"
    assert s.file(state, "/other.py") == "overwritten\n"
    if kind == "state":
        assert not (tmp_path / "app.py").exists()


@pytest.mark.parametrize("kind", ["local", "state"])
def test_own_changes_do_not_count_as_reading_the_rest_through_an_agent(
    kind: str, tmp_path: Path
) -> None:
    """A partial read + edit, or a patch of an unread file, never allows a full overwrite."""
    s = Scenario(kind, tmp_path)
    long_text = "".join(f"line {n}\n" for n in range(1, 101))
    if kind == "local":
        (tmp_path / "long.txt").write_text(long_text)
    else:
        s.seed = {"files": seed_state({**INITIAL_FILES, "/long.txt": long_text})}
    patch = "*** Begin Patch\n*** Update File: /other.py\n@@\n-a\n+b\n*** End Patch"
    script = [
        call("read_file", 1, file_path="/long.txt", limit=5),
        call("edit_file", 2, file_path="/long.txt", old_string="line 2\n", new_string="two\n"),
        call("write_file", 3, file_path="/long.txt", content="gone\n"),
        call("apply_patch", 4, patch=patch),
        call("write_file", 5, file_path="/other.py", content="clobbered\n"),
        AIMessage(content="done"),
    ]
    state = s.agent(script).invoke(
        {"messages": [{"role": "user", "content": "go"}], **s.seed}, s.config
    )
    results = tool_results(state)
    assert [results[f"c{n}"].status for n in range(1, 6)] == [
        "success",
        "success",
        "error",
        "success",
        "error",
    ]
    assert "only part of /long.txt has been read" in str(results["c3"].content)
    assert "only part of /other.py has been read" in str(results["c5"].content)
    assert s.file(state, "/long.txt").count("\n") == 100
    assert s.file(state, "/other.py") == "b\n"


def test_file_bytes_reads_a_file_out_of_an_agent_result() -> None:
    model = ScriptedChatModel(
        turns=[tool_call("write_file", file_path="/src/app.py", content="x = 1\n"), "Done."]
    )
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])
    result = agent.invoke({"messages": [{"role": "user", "content": "write it"}]})
    assert file_bytes(result["files"], "/src/app.py") == b"x = 1\n"
    assert file_bytes(result["files"], "src//app.py") == b"x = 1\n"  # spelled as tools accept
    assert list(result["files"]) == ["/src/app.py"]  # no record for the parent folder
    with pytest.raises(IsADirectoryError):
        file_bytes(result["files"], "/src")
    with pytest.raises(FileNotFoundError):
        file_bytes(result["files"], "/src/missing.py")
