"""The tools a model call is offered: each file tool while it can be of use."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.history.changes import change_record, folder_record
from langchain_fstools.lsp import Diagnostics, ServerSpec
from langchain_fstools.testing import ScriptedChatModel, tool_call
from langchain_fstools.tools.base import ToolContext
from langchain_fstools.tools.toolkit import TOOL_CLASSES
from langchain_fstools.tools.undo_edit import UndoEditTool
from tests.media import one_cell_notebook
from tests.unit.mcp.servers import file_server

if TYPE_CHECKING:
    from pathlib import Path


def _workspace(tmp_path: Path) -> LocalBackend:
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "analysis.ipynb").write_bytes(one_cell_notebook())
    return LocalBackend(tmp_path)


def _run(
    middleware: FilesystemMiddleware, turns: list[Any], request: str = "work", *, sync: bool = True
) -> tuple[ScriptedChatModel, list[ToolMessage]]:
    model = ScriptedChatModel(turns=[*turns, "done"])
    agent = create_agent(model, middleware=[middleware])
    question = {"messages": [{"role": "user", "content": request}]}
    state = agent.invoke(question) if sync else asyncio.run(agent.ainvoke(question))
    return model, [m for m in state["messages"] if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("sync", [True, False])
def test_notebook_edit_is_offered_once_a_notebook_was_listed(tmp_path: Path, sync: bool) -> None:
    middleware = FilesystemMiddleware(backend=_workspace(tmp_path))
    model, _ = _run(
        middleware, [tool_call("ls", path="/"), tool_call("ls", path="/work")], sync=sync
    )
    offered = [set(names) for names in model.offered]
    assert len(offered) == 3
    assert "notebook_edit" not in offered[0]
    assert "notebook_edit" not in offered[1]  # `/` shows the folder, not the notebook
    assert "notebook_edit" in offered[2]
    assert offered[2] == {tool.name for tool in middleware.tools}


def test_a_request_naming_a_notebook_offers_notebook_edit_at_once(tmp_path: Path) -> None:
    middleware = FilesystemMiddleware(backend=_workspace(tmp_path))
    model, _ = _run(middleware, [], request="Tidy up work/Analysis.IPYNB")
    assert "notebook_edit" in model.offered[0]


def test_notebook_edit_called_before_it_was_offered_still_answers(tmp_path: Path) -> None:
    middleware = FilesystemMiddleware(backend=_workspace(tmp_path))
    edit = {"notebook_path": "/work/analysis.ipynb", "cell_id": "c1", "new_source": "x = 2"}
    read = tool_call("read_file", file_path="/work/analysis.ipynb")
    model, results = _run(
        middleware, [tool_call("notebook_edit", **edit), read, tool_call("notebook_edit", **edit)]
    )
    assert "notebook_edit" not in model.offered[0]
    assert results[0].status == "error"
    assert "Read it with read_file first" in str(results[0].content)  # it ran, and says why
    assert results[2].status == "success"
    cell = json.loads((tmp_path / "work" / "analysis.ipynb").read_text())["cells"][0]
    assert "".join(cell["source"]) == "x = 2"


@pytest.mark.parametrize("sync", [True, False])
def test_undo_edit_is_offered_while_there_is_a_change_to_undo(tmp_path: Path, sync: bool) -> None:
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), history=True)
    turns = [
        tool_call("ls", path="/"),
        tool_call("write_file", file_path="/new.txt", content="hi\n"),
        tool_call("undo_edit", file_path="/new.txt"),
    ]
    model, results = _run(middleware, turns, sync=sync)
    assert [result.status for result in results] == ["success"] * 3
    assert ["undo_edit" in names for names in model.offered] == [False, False, True, False]
    assert not (tmp_path / "new.txt").exists()


def test_undo_edit_is_not_offered_for_created_folders_alone(tmp_path: Path) -> None:
    tool = UndoEditTool(context=ToolContext(LocalBackend(tmp_path)))
    folder = folder_record(tool_call_id="c1", index=0, path="/build")
    file = change_record(tool_call_id="c2", index=0, path="/a", before=None, kept=True, after="v")
    assert tool.usable({"file_history": [folder]}, []) is False
    assert tool.usable({"file_history": [folder, file]}, []) is True


def test_undo_edit_called_with_nothing_to_undo_says_so(tmp_path: Path) -> None:
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), history=True)
    model, results = _run(middleware, [tool_call("undo_edit", file_path="/a.txt")])
    assert "undo_edit" not in model.offered[0]
    assert results[0].status == "error"
    assert "no recorded change to /a.txt" in str(results[0].content)


def test_tools_of_the_agent_itself_are_always_offered(tmp_path: Path) -> None:
    def notebook_note(text: str) -> str:
        """Keep a note about notebooks."""
        return text

    model = ScriptedChatModel(turns=["done"])
    middleware = FilesystemMiddleware(backend=_workspace(tmp_path))
    create_agent(model, tools=[notebook_note], middleware=[middleware]).invoke(
        {"messages": [{"role": "user", "content": "hi"}]}
    )
    assert "notebook_note" in model.offered[0]


def test_over_mcp_every_tool_is_listed_from_the_start(tmp_path: Path) -> None:
    """MCP clients load the tool list once: nothing is withheld there (`diagnostics`
    is listed where there are language servers)."""
    listed = {tool.name for tool in file_server(tmp_path, diagnostics=True).listing}
    assert listed == set(TOOL_CLASSES)
    without = {tool.name for tool in file_server(tmp_path, diagnostics=False).listing}
    assert without == set(TOOL_CLASSES) - {"diagnostics"}


def _checked_by_ruff(tmp_path: Path) -> FilesystemMiddleware:
    """A workspace of a Python file and notes, with ruff as its only language server."""
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    servers = Diagnostics(servers={"ty": None})
    return FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=servers)


@pytest.mark.parametrize("sync", [True, False])
def test_diagnostics_is_offered_once_a_file_a_server_checks_was_named(
    tmp_path: Path, sync: bool
) -> None:
    middleware = _checked_by_ruff(tmp_path)
    turns = [tool_call("ls", path="/"), tool_call("ls", path="/src")]
    model, _ = _run(middleware, turns, request="Tidy up notes.md", sync=sync)
    offered = [set(names) for names in model.offered]
    assert ["diagnostics" in names for names in offered] == [False, False, True]
    assert offered[2] >= {"diagnostics", "read_file", "edit_file"}


def test_a_request_naming_a_source_file_offers_diagnostics_at_once(tmp_path: Path) -> None:
    model, _ = _run(_checked_by_ruff(tmp_path), [], request="What is wrong in src/App.PY?")
    assert "diagnostics" in model.offered[0]


def test_diagnostics_is_not_offered_for_files_no_server_checks(tmp_path: Path) -> None:
    servers = Diagnostics(servers={"ty": None, "typescript": None})
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=servers)
    model, _ = _run(middleware, [], request="Fix web/app.ts")
    assert "diagnostics" not in model.offered[0]
    assert "diagnostics" in {tool.name for tool in middleware.tools}  # registered all along


def test_diagnostics_is_withheld_once_the_only_server_of_a_file_is_found_missing(
    tmp_path: Path,
) -> None:
    """A server counts until its program is looked up (the first change of one of its
    files): no PATH search at a model call."""
    servers = Diagnostics(servers={"ty": None, "ruff": None})
    servers.servers["typescript"] = ServerSpec(
        ("no-such-typescript-server-51",), frozenset({".ts"}), "typescript"
    )
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=servers)
    write = tool_call("write_file", file_path="/app.ts", content="let x = 1;\n")
    model, results = _run(middleware, [write], request="Write app.ts")
    assert results[0].status == "success"
    assert ["diagnostics" in names for names in model.offered] == [True, False]
