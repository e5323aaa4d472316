"""Approval by effect: in `default` mode a contained command runs first, a person approves
what it changed, and only then is anything kept (through `create_agent`, a scripted model
and a checkpointer; resumed by the same agent, another agent, or too late)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from langchain_fstools.testing import ScriptedChatModel

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

CONFIG: Any = {"configurable": {"thread_id": "t"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "a.txt").write_text("old\n")
    return folder


def agent(root: Path, command: str, saver: InMemorySaver, **middleware: Any) -> Any:
    call = AIMessage(
        content="", tool_calls=[{"name": "execute", "args": {"command": command}, "id": "c1"}]
    )
    model = ScriptedChatModel(turns=[call, AIMessage(content="done")])
    files = FilesystemMiddleware(
        backend=LocalBackend(root, execute=True),
        mode=middleware.pop("mode", "default"),
        **middleware,
    )
    return create_agent(model, middleware=[files], checkpointer=saver)


def result_of(graph: Any) -> ToolMessage:
    messages = graph.get_state(CONFIG).values["messages"]
    (found,) = [m for m in messages if isinstance(m, ToolMessage)]
    return found


def test_the_command_runs_first_and_a_person_sees_the_diff_of_its_effect(root: Path) -> None:
    graph = agent(root, "echo new > a.txt && echo n > n.txt", InMemorySaver())

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    (asked,) = first.interrupts
    (request,) = asked.value["action_requests"]
    assert request["name"] == "execute"
    assert request["tool_call_id"] == "c1"
    assert "-old\n+new\n" in request["diff"]
    assert "+n\n" in request["diff"]
    assert (root / "a.txt").read_text() == "old\n"  # nothing kept before the answer
    assert not (root / "n.txt").exists()
    assert "a person decides on these changes" in str(result_of(graph).content)

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "new\n"
    assert (root / "n.txt").read_text() == "n\n"
    message = result_of(graph)
    assert message.status == "success"
    assert "A person approved these changes; they are kept." in str(message.content)
    assert "\nM /a.txt\nA /n.txt" in str(message.content)


def test_rejected_changes_are_not_kept(root: Path) -> None:
    graph = agent(root, "echo new > a.txt", InMemorySaver())
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    decision = {"type": "reject", "message": "not now"}
    graph.invoke(Command(resume={"decisions": [decision]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "old\n"
    assert "A person rejected these changes with reason: not now; nothing was kept." in str(
        result_of(graph).content
    )


def test_a_command_that_changes_nothing_asks_nobody(root: Path) -> None:
    graph = agent(root, "cat a.txt", InMemorySaver())

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert not done.interrupts
    assert str(result_of(graph).content) == "old\nExit code: 0"


def test_another_agent_on_the_same_thread_applies_the_answer(root: Path) -> None:
    saver = InMemorySaver()
    command = "echo new > a.txt"
    agent(root, command, saver).invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    other = agent(root, command, saver)  # another worker: new middleware, same checkpoints
    other.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "new\n"


def test_a_file_changed_before_the_answer_keeps_nothing(root: Path) -> None:
    graph = agent(root, "echo new > a.txt && echo n > n.txt", InMemorySaver())
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    (root / "a.txt").write_text("theirs\n")

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "theirs\n"
    assert not (root / "n.txt").exists()
    message = result_of(graph)
    assert message.status == "error"
    assert "/a.txt changed since the command ran; nothing was kept" in str(message.content)


def test_changes_no_longer_kept_are_stale_never_something_else(root: Path) -> None:
    graph = agent(root, "echo new > a.txt", InMemorySaver())
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    shutil.rmtree(Path(tempfile.gettempdir()) / "fstools-pending")

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "old\n"
    assert "no longer kept" in str(result_of(graph).content)


def test_a_protected_change_asks_in_default_mode_and_is_kept_when_approved(root: Path) -> None:
    graph = agent(root, "mkdir -p .ssh && echo key > .ssh/authorized_keys", InMemorySaver())

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    (asked,) = first.interrupts
    assert "/.ssh/authorized_keys" in asked.value["action_requests"][0]["diff"]
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / ".ssh" / "authorized_keys").read_text() == "key\n"


def test_accept_edits_keeps_ordinary_changes_without_asking(root: Path) -> None:
    graph = agent(root, "echo new > a.txt", InMemorySaver(), mode="accept_edits")

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert not done.interrupts
    assert (root / "a.txt").read_text() == "new\n"


@pytest.mark.parametrize("network", [True, ["pypi.org"]], ids=["whole", "allowed-domains"])
def test_a_command_with_the_network_is_asked_about_before_it_runs(
    root: Path, network: bool | list[str]
) -> None:
    call = AIMessage(
        content="",
        tool_calls=[{"name": "execute", "args": {"command": "echo x > a.txt"}, "id": "c1"}],
    )
    files = FilesystemMiddleware(
        backend=LocalBackend(root, execute=True, sandbox=Sandbox(network=network)), mode="default"
    )
    graph = create_agent(
        ScriptedChatModel(turns=[call, AIMessage(content="done")]),
        middleware=[files],
        checkpointer=InMemorySaver(),
    )

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    (asked,) = first.interrupts
    assert "wants to run `echo x > a.txt`" in asked.value["action_requests"][0]["description"]
    assert (root / "a.txt").read_text() == "old\n"  # it has not run
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")
    assert (root / "a.txt").read_text() == "x\n"  # approved before it ran: its changes kept


def test_rewind_restores_an_approved_commands_changes(root: Path) -> None:
    saver = InMemorySaver()
    call = AIMessage(
        content="",
        tool_calls=[{"name": "execute", "args": {"command": "echo new > a.txt"}, "id": "c1"}],
    )
    files = FilesystemMiddleware(
        backend=LocalBackend(root, execute=True), mode="default", history=True
    )
    graph = create_agent(
        ScriptedChatModel(turns=[call, AIMessage(content="done")]),
        middleware=[files],
        checkpointer=saver,
    )
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")
    assert (root / "a.txt").read_text() == "new\n"

    assert files.rewind(graph, CONFIG, to="c1") == ["/a.txt"]

    assert (root / "a.txt").read_text() == "old\n"


def test_changes_only_to_ignored_paths_are_kept_without_asking(root: Path) -> None:
    (root / ".gitignore").write_text("build/\n*.log\n")
    command = "mkdir -p build/x && echo o > build/x/out.o && echo c > run.log"
    graph = agent(root, command, InMemorySaver())

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert not done.interrupts
    assert (root / "build" / "x" / "out.o").read_text() == "o\n"
    assert (root / "run.log").read_text() == "c\n"


def test_a_person_is_asked_only_about_the_paths_not_ignored(root: Path) -> None:
    (root / ".gitignore").write_text("build/\n")
    graph = agent(root, "mkdir build && echo o > build/out.o && echo new > a.txt", InMemorySaver())

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    (asked,) = first.interrupts
    diff = asked.value["action_requests"][0]["diff"]
    assert "/a.txt" in diff
    assert "build" not in diff


def test_approved_changes_too_large_for_the_history_say_they_cannot_be_rewound(
    root: Path,
) -> None:
    graph = agent(root, "echo more >> a.txt", InMemorySaver(), history=True, history_record_bytes=1)
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert (root / "a.txt").read_text() == "old\nmore\n"
    content = str(result_of(graph).content)
    assert "A person approved these changes; they are kept." in content
    assert "cannot be rewound: the earlier content of /a.txt was too large" in content
