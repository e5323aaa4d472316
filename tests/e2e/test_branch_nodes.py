"""Branches for the tasks of a `Send` fan-out in a hand-built graph.

`FilesystemMiddleware(...).branches.node(work)` runs each task's work on a branch of its
own and merges the branches once the step's tasks have returned, in the order of their
`Send`s. Here each task runs a `create_agent` agent with the middleware, whose scripted
model edits one function of /m.py.
"""

from __future__ import annotations

import asyncio
import operator
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict

import pytest
from langchain.agents import create_agent
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend
from langchain_fstools.backends.state import FilesChannel
from langchain_fstools.errors import BranchNotMerged
from langchain_fstools.testing import ScriptedChatModel, tool_call
from langchain_fstools.tools.merge_branch import KeptBranchesChannel
from tests.e2e.test_branches import SOURCE, backend, final_text

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.backends.protocol import Backend

__all__ = ["backend"]  # the fixture, shared with test_branches


class Fan(TypedDict):
    edits: list[tuple[str, str]]
    files: NotRequired[FilesChannel]
    notes: Annotated[list[str], operator.add]
    kept_branches: NotRequired[KeptBranchesChannel]


class Task(TypedDict):
    edit: tuple[str, str]
    files: NotRequired[FilesChannel]


def graph(files: FilesystemMiddleware, **node_options: Any) -> Any:
    def work(task: Task) -> dict[str, Any]:
        old, new = task["edit"]
        model = ScriptedChatModel(
            turns=[
                tool_call("read_file", call_id=f"r-{new}", file_path="/m.py"),
                tool_call(
                    "edit_file",
                    call_id=f"e-{new}",
                    file_path="/m.py",
                    old_string=old,
                    new_string=new,
                ),
                "Edited.",
            ],
            disable_streaming=True,
        )
        agent = create_agent(model, middleware=[files])
        start: dict[str, Any] = {"messages": [{"role": "user", "content": "Edit /m.py."}]}
        if "files" in task:
            start["files"] = task["files"]
        agent.invoke(start)
        return {"notes": [f"edited {new}"]}

    def fan(state: Fan) -> list[Send]:
        return [Send("work", {"edit": edit, **_files(state)}) for edit in state["edits"]]

    builder = StateGraph(Fan)
    builder.add_node("work", files.branches.node(work, **node_options))
    builder.add_conditional_edges(START, fan, ["work"])
    builder.add_edge("work", END)
    return builder.compile()


def _files(state: Fan) -> dict[str, Any]:
    return {"files": state["files"]} if "files" in state else {}


def start(backend: Backend, *edits: tuple[str, str]) -> dict[str, Any]:
    initial: dict[str, Any] = {"edits": list(edits), "notes": []}
    if isinstance(backend, StateBackend):
        initial["files"] = StateBackend.seed({"/m.py": SOURCE})
    return initial


@pytest.mark.parametrize("run", ["sync", "async"])
def test_send_tasks_editing_different_functions_both_land(backend: Backend, run: str) -> None:
    files = FilesystemMiddleware(backend=backend)
    app = graph(files)
    initial = start(backend, ("return 1", "return 10"), ("return 2", "return 20"))
    state = app.invoke(initial) if run == "sync" else asyncio.run(app.ainvoke(initial))
    assert sorted(state["notes"]) == ["edited return 10", "edited return 20"]
    expected = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert final_text(backend, state) == expected


def test_a_conflicting_task_raises_by_default_and_reports_when_asked(backend: Backend) -> None:
    files = FilesystemMiddleware(backend=backend)
    edits = (("return 1", "return 10"), ("return 1", "return 11"))
    with pytest.raises(BranchNotMerged, match="not merged") as raised:
        graph(files).invoke(start(backend, *edits))
    assert "The branch is not kept: make the changes yourself." in str(raised.value)
    if isinstance(backend, LocalBackend):  # the first task's merge landed: start again
        backend.write_bytes("/m.py", SOURCE.encode())
    files = FilesystemMiddleware(backend=backend)
    reported = graph(files, on_conflict=lambda report: {"notes": [report]})
    state = reported.invoke(start(backend, *edits))
    (report,) = [n for n in state["notes"] if "not merged" in n]
    assert "now:\n        return 10" in report
    assert "subagent:\n        return 11" in report
    assert "The branch is kept" in report
    assert len(state["kept_branches"]) == 1  # for a merge tool over this state
    assert final_text(backend, state) == SOURCE.replace("return 1", "return 10")


def test_branches_nest_a_task_of_a_task_merges_into_its_parents_branch(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    files = FilesystemMiddleware(backend=LocalBackend(tmp_path))
    seen: dict[str, str] = {}

    def inner(_: dict[str, Any]) -> dict[str, Any]:
        model = ScriptedChatModel(
            turns=[
                tool_call("read_file", call_id="r-in", file_path="/m.py"),
                tool_call(
                    "edit_file", call_id="e-in", file_path="/m.py", old_string="1", new_string="10"
                ),
                "Edited.",
            ]
        )
        create_agent(model, middleware=[files]).invoke({"messages": [("user", "Edit.")]})
        return {}

    inner_graph = StateGraph(dict)
    inner_graph.add_node("inner", files.branches.node(inner))
    inner_graph.add_edge(START, "inner")
    inner_graph.add_edge("inner", END)
    nested = inner_graph.compile()

    def outer(_: dict[str, Any]) -> dict[str, Any]:
        nested.invoke({})
        # the inner task merged into this task's branch, not into the workspace
        seen["workspace"] = (tmp_path / "m.py").read_text()
        model = ScriptedChatModel(
            turns=[tool_call("read_file", call_id="r-out", file_path="/m.py"), "Read."]
        )
        result = create_agent(model, middleware=[files]).invoke({"messages": [("user", "Read.")]})
        seen["branch"] = result["messages"][-2].text
        return {}

    outer_graph = StateGraph(dict)
    outer_graph.add_node("outer", files.branches.node(outer))
    outer_graph.add_edge(START, "outer")
    outer_graph.add_edge("outer", END)
    outer_graph.compile().invoke({})
    assert seen["workspace"] == SOURCE
    assert "return 10" in seen["branch"]
    assert (tmp_path / "m.py").read_text() == SOURCE.replace("return 1", "return 10")
