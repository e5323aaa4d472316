"""Commands on `SandboxBackend(DockerSandbox)` are change sets: listed, kept out of the
workspace until commit, committed whole, refused when stale, reviewed through the tools;
the container's disk filling up keeps nothing (a real Docker Engine)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.errors import DiskFull, VersionConflict
from langchain_fstools.shell.sandbox.limits import Limits, MiB
from langchain_fstools.shell.sandbox.overlay import upper_path
from langchain_fstools.testing import ScriptedChatModel

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox
    from tests.integration.docker.conftest import DockerEngine

pytestmark = pytest.mark.integration

CONFIG: Any = {"configurable": {"thread_id": "t"}}

SCRIPT = (
    "echo more >> notes.txt; rm -r old; mkdir -p build;"
    " printf '\\000\\001\\377' > build/blob.bin; ln -s ../notes.txt build/notes;"
    " chmod 4755 src/app.py; echo done"
)

TREE = "find . -printf '%y %m %p %l\\n' | sort; cat notes.txt src/app.py"
"""What a test compares of the workspace, asked of the container itself."""


@pytest.fixture
def backend(docker_sandbox: DockerSandbox) -> SandboxBackend:
    made = SandboxBackend(docker_sandbox)
    made.write_bytes("/src/app.py", b"print('hi')\n")
    made.write_bytes("/notes.txt", b"one\n")
    made.write_bytes("/old/gone.txt", b"bye\n")
    return made


def _tree(sandbox: DockerSandbox) -> str:
    return sandbox.execute(TREE).output


def test_a_commands_set_is_listed_and_the_workspace_is_unchanged_until_commit(
    backend: SandboxBackend, docker_sandbox: DockerSandbox
) -> None:
    before = _tree(docker_sandbox)
    result = backend.execute_changes(SCRIPT, timeout=30, output_limit=10_000)
    assert result.output == "done\n"
    changes = result.changes
    assert changes is not None
    listed = [(c.kind.value, c.path, c.entry) for c in changes.changes]
    assert listed == [
        ("A", "/build", "directory"),
        ("A", "/build/blob.bin", "file"),
        ("A", "/build/notes", "link"),
        ("M", "/notes.txt", "file"),
        ("D", "/old", "directory"),
        ("D", "/old/gone.txt", "file"),
        ("M", "/src/app.py", "file"),
    ]
    by_path = {c.path: c for c in changes.changes}
    assert Path(upper_path(changes, "/build/blob.bin")).read_bytes() == b"\x00\x01\xff"
    assert by_path["/src/app.py"].mode == 0o755  # set-uid dropped
    assert _tree(docker_sandbox) == before

    backend.commit(changes)
    changes.discard()

    after = _tree(docker_sandbox)
    assert "l 777 ./build/notes ../notes.txt" in after
    assert "f 755 ./src/app.py" in after
    assert "./old" not in after
    assert backend.read_bytes("/notes.txt") == b"one\nmore\n"
    assert backend.read_bytes("/build/blob.bin") == b"\x00\x01\xff"


def test_a_set_whose_path_changed_meanwhile_is_refused_whole(backend: SandboxBackend) -> None:
    result = backend.execute_changes(
        "echo new > fresh.txt; echo x >> notes.txt", timeout=30, output_limit=1000
    )
    assert result.changes is not None
    backend.write_bytes("/notes.txt", b"someone else\n")
    with pytest.raises(VersionConflict):
        backend.commit(result.changes)
    result.changes.discard()
    assert not backend.exists("/fresh.txt")
    assert backend.read_bytes("/notes.txt") == b"someone else\n"


def test_default_mode_asks_and_reject_leaves_the_workspace_as_before(
    backend: SandboxBackend, docker_sandbox: DockerSandbox
) -> None:
    before = _tree(docker_sandbox)
    call = AIMessage(
        content="",
        tool_calls=[{"name": "execute", "args": {"command": SCRIPT}, "id": "c1"}],
    )
    model = ScriptedChatModel(turns=[call, AIMessage(content="done")])
    files = FilesystemMiddleware(backend=backend, mode="default")
    graph = create_agent(model, middleware=[files], checkpointer=InMemorySaver())

    first = graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
    assert first.interrupts
    graph.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), CONFIG, version="v2"
    )

    assert _tree(docker_sandbox) == before
    messages = graph.get_state(CONFIG).values["messages"]
    (result,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert "nothing was kept" in str(result.content)


def test_rewind_restores_what_a_command_changed(backend: SandboxBackend) -> None:
    call = AIMessage(
        content="",
        tool_calls=[{"name": "execute", "args": {"command": "echo new > notes.txt"}, "id": "c1"}],
    )
    model = ScriptedChatModel(turns=[call, AIMessage(content="done")])
    files = FilesystemMiddleware(backend=backend, mode="accept_edits", history=True)
    graph = create_agent(model, middleware=[files], checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "go")]}, CONFIG)
    assert backend.read_bytes("/notes.txt") == b"new\n"

    assert files.rewind(graph, CONFIG, to="c1") == ["/notes.txt"]

    assert backend.read_bytes("/notes.txt") == b"one\n"


def test_a_command_filling_the_disk_keeps_nothing(docker_engine: DockerEngine) -> None:
    with docker_engine.sandbox(limits=Limits(memory=512 * MiB, tmp_size=8 * MiB)) as sandbox:
        assert sandbox.execute("mkdir /dev/shm/ws").exit_code == 0
        backend = SandboxBackend(sandbox, "/dev/shm/ws")
        backend.write_bytes("/notes.txt", b"one\n")
        result = backend.execute_changes(
            "echo x >> notes.txt; head -c 20000000 /dev/urandom > big",
            timeout=30,
            output_limit=1000,
        )
        assert "No space left" in result.output
        assert sandbox.execute("ls /dev/shm/ws").output == "notes.txt\n"
        assert backend.read_bytes("/notes.txt") == b"one\n"
        assert result.changes is not None
        with pytest.raises(DiskFull):
            backend.commit(result.changes)
        result.changes.discard()
        assert sandbox.execute("ls -a /dev/shm/ws").output == ".\n..\nnotes.txt\n"


def test_a_sandbox_gone_before_a_command_is_one_sentence(
    docker_engine: DockerEngine,
) -> None:
    sandbox = docker_engine.sandbox()
    backend = SandboxBackend(sandbox)
    backend.write_bytes("/notes.txt", b"one\n")
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    sandbox.close()  # another client removed the container

    call = {"command": "echo x >> notes.txt"}
    message = tools["execute"].invoke(
        {"type": "tool_call", "id": "c1", "name": "execute", "args": call}
    )

    assert message.status == "error"
    (sentence,) = [line for line in str(message.content).splitlines() if line]
    assert sentence.startswith("Error: ")
    assert sentence.endswith(".")


def test_an_output_flood_is_cut_in_the_middle_and_its_changes_kept(
    backend: SandboxBackend,
) -> None:
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    command = "yes flood | head -c 20000000; echo; echo x >> notes.txt; echo end"

    out = tools["execute"].invoke({"command": command})

    assert out.startswith("flood\n")
    assert "bytes of output omitted" in out
    assert "end\nExit code: 0" in out
    assert backend.read_bytes("/notes.txt") == b"one\nx\n"
