"""Commands in a deepagents sandbox are reviewed as local ones: asked about after they ran,
reverted on reject, kept on approval, rewound from history, refused on protected paths
(through `create_agent` or the toolkit, over a `sh -c` sandbox double)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.testing import ScriptedChatModel
from tests.unit.backends.sandbox_double import ShellSandbox

CONFIG: Any = {"configurable": {"thread_id": "t"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    (folder / ".git" / "hooks").mkdir(parents=True)
    (folder / ".git" / "config").write_text("[core]\n")
    (folder / "a.txt").write_text("old\n")
    (folder / "gone.txt").write_text("gone\n")
    return folder


@pytest.fixture
def backend(root: Path) -> SandboxBackend:
    return SandboxBackend(ShellSandbox(), str(root), helper_folder=str(root.parent / "helper"))


def _agent(backend: SandboxBackend, command: str, **middleware: Any) -> tuple[Any, Any]:
    call = AIMessage(
        content="", tool_calls=[{"name": "execute", "args": {"command": command}, "id": "c1"}]
    )
    model = ScriptedChatModel(turns=[call, AIMessage(content="done")])
    files = FilesystemMiddleware(backend=backend, **middleware)
    return create_agent(model, middleware=[files], checkpointer=InMemorySaver()), files


def _result(graph: Any) -> ToolMessage:
    messages = graph.get_state(CONFIG).values["messages"]
    (found,) = [m for m in messages if isinstance(m, ToolMessage)]
    return found


COMMAND = "echo new > a.txt && echo n > n.txt && rm gone.txt"


def test_default_mode_asks_after_the_command_ran_and_keeps_nothing_before(
    backend: SandboxBackend, root: Path
) -> None:
    graph, _ = _agent(backend, COMMAND, mode="default")

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    (asked,) = first.interrupts
    (request,) = asked.value["action_requests"]
    assert "-old\n+new\n" in request["diff"]
    assert (root / "a.txt").read_text() == "old\n"
    assert not (root / "n.txt").exists()
    assert (root / "gone.txt").exists()

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "new\n"
    assert (root / "n.txt").read_text() == "n\n"
    assert not (root / "gone.txt").exists()
    assert "A person approved these changes; they are kept." in str(_result(graph).content)


def test_reject_leaves_the_workspace_as_before(backend: SandboxBackend, root: Path) -> None:
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    graph, _ = _agent(backend, COMMAND, mode="default")
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    decision = {"type": "reject", "message": "not now"}
    graph.invoke(Command(resume={"decisions": [decision]}), CONFIG, version="v2")

    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before
    assert "nothing was kept" in str(_result(graph).content)


def test_rewind_restores_what_a_command_changed(backend: SandboxBackend, root: Path) -> None:
    graph, middleware = _agent(backend, COMMAND, mode="accept_edits", history=True)
    graph.invoke({"messages": [("user", "go")]}, CONFIG)
    assert (root / "a.txt").read_text() == "new\n"

    restored = middleware.rewind(graph, CONFIG, to="c1")

    assert sorted(restored) == ["/a.txt", "/gone.txt", "/n.txt"]
    assert (root / "a.txt").read_text() == "old\n"
    assert (root / "gone.txt").read_text() == "gone\n"
    assert not (root / "n.txt").exists()


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/x"])
def test_a_protected_path_is_refused_and_nothing_is_kept(
    backend: SandboxBackend, root: Path, path: str
) -> None:
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    call = {"command": f"echo '[alias]' > {path}; echo new > a.txt"}
    message = tools["execute"].invoke(
        {"type": "tool_call", "id": "c1", "name": "execute", "args": call}
    )

    assert message.status == "error"
    assert f"Error: nothing the command changed was kept: it changed /{path}," in str(
        message.content
    )
    assert (root / "a.txt").read_text() == "old\n"
    assert (root / ".git" / "config").read_text() == "[core]\n"
    assert not (root / ".git" / "hooks" / "x").exists()


def test_a_toolkit_without_permissions_commits_an_ordinary_set(
    backend: SandboxBackend, root: Path
) -> None:
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    out = tools["execute"].invoke({"command": "echo new > a.txt; echo ok"})
    assert out.startswith("ok\nExit code: 0")
    assert "M /a.txt" in out
    assert (root / "a.txt").read_text() == "new\n"


def test_without_python3_default_mode_asks_before_the_command_runs(
    root: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "echo"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    sandbox = ShellSandbox(path=str(bin_dir))
    backend = SandboxBackend(sandbox, str(root), helper_folder=str(root.parent / "helper"))
    graph, _ = _agent(backend, "echo n > n.txt", mode="default")

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert first.interrupts  # asked before: nothing ran yet
    assert not (root / "n.txt").exists()
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")
    assert (root / "n.txt").read_text() == "n\n"


def test_a_background_process_runs_in_place_so_default_mode_asks_before_it_starts(
    backend: SandboxBackend, root: Path
) -> None:
    """Unlike a command, a background process is not recorded: it is asked about first."""
    call = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "execute",
                "args": {"command": "echo made > made.txt; sleep 30", "background": True},
                "id": "c1",
            }
        ],
    )
    model = ScriptedChatModel(turns=[call, AIMessage(content="done")])
    graph = create_agent(
        model,
        middleware=[FilesystemMiddleware(backend=backend, mode="default")],
        checkpointer=InMemorySaver(),
    )
    try:
        first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
        (asked,) = first.interrupts  # before it ran: nothing made yet
        assert asked.value["action_requests"][0]["name"] == "execute"
        assert not (root / "made.txt").exists()
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")
        assert "Started process p1 in the background." in str(_result(graph).content)
    finally:
        backend.close()
