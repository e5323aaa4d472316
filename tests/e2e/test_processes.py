"""Background processes and a shell that remembers, through `create_agent` and a toolkit.

A scripted model starts a loopback web server in the background, asks it from a later
command of the same thread, reads the server's request log, feeds an interactive
program's stdin and kills it; `cd` and `export` carry over; what a background process
wrote reaches the workspace only through the review of its changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend
from langchain_fstools.backends.local.local_processes import LocalProcesses
from langchain_fstools.shell.sandbox.sandbox import find_bwrap
from langchain_fstools.testing import ScriptedChatModel, tool_call


def _call(name: str, **args: Any) -> Any:
    """The tool call a model would make (for invoking a tool of a toolkit)."""
    return tool_call(name, **args).tool_calls[0]


pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

PORT = 18000 + os.getpid() % 1000
"""A port inside the sandbox's own network namespace (no host port is used)."""


def _messages(backend: LocalBackend, *turns: Any, **middleware: Any) -> list[ToolMessage]:
    agent = create_agent(
        ScriptedChatModel(turns=[*turns, "done"]),
        middleware=[FilesystemMiddleware(backend=backend, **middleware)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "processes"}}
    result = agent.invoke({"messages": [("user", "go")]}, config)
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_a_background_server_answers_a_later_command_of_the_thread(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    server = f"python3 -m http.server {PORT} --bind 127.0.0.1"
    ask = (
        'python3 -c "import urllib.request, time\n'
        "for _ in range(50):\n"
        "    try:\n"
        f"        print(urllib.request.urlopen('http://127.0.0.1:{PORT}/').status); break\n"
        '    except OSError: time.sleep(0.1)"'
    )
    try:
        started, asked, log, killed = _messages(
            backend,
            tool_call("execute", command=server, background=True),
            tool_call("execute", command=ask),
            tool_call("process", action="read", process_id="p1"),
            tool_call("process", action="kill", process_id="p1"),
        )
    finally:
        backend.close()
    assert started.artifact["process_id"] == "p1"
    assert asked.content.startswith("200"), asked.content
    assert '"GET / HTTP/1.1" 200' in str(log.content)
    assert "p1 killed" in str(killed.content)


def test_input_reaches_a_process_and_its_file_arrives_only_through_review(
    tmp_path: Path,
) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    program = 'while read line; do echo "got $line"; echo "$line" >> lines.txt; done'
    toolkit = FileToolkit(backend)
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    try:
        tools["execute"].invoke(_call("execute", command=program, background=True))
        tools["process"].invoke(_call("process", action="write", process_id="p1", input="one\n"))
        deadline = time.monotonic() + 10
        seen = ""
        while "got one" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
            before_review = (tmp_path / "lines.txt").exists()
            assert not before_review, "a background process wrote the workspace unreviewed"
            message = tools["process"].invoke(_call("process", action="read", process_id="p1"))
            seen += str(message.content)
        assert "got one" in seen
        assert "A /lines.txt" in seen
        assert (tmp_path / "lines.txt").read_text() == "one\n"
        tools["process"].invoke(_call("process", action="write", process_id="p1", input="two\n"))
        time.sleep(0.3)
        final = tools["process"].invoke(_call("process", action="kill", process_id="p1"))
    finally:
        backend.close()
    assert "M /lines.txt" in str(final.content)
    assert (tmp_path / "lines.txt").read_text() == "one\ntwo\n"


def test_cd_and_export_persist_through_the_agent(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    backend = LocalBackend(tmp_path, execute=True)
    try:
        moved, shown = _messages(
            backend,
            tool_call("execute", command="cd src && export GREETING=hello"),
            tool_call("execute", command="echo $GREETING; pwd"),
        )
    finally:
        backend.close()
    assert f"now in {tmp_path / 'src'}" in str(moved.content)
    assert str(shown.content).startswith(f"hello\n{tmp_path / 'src'}\n")


def test_a_slow_command_moves_to_the_background_and_is_read_later(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        moved, later = _messages(
            backend,
            tool_call("execute", command="echo early; sleep 1.5; echo late", yield_after=0.5),
            tool_call("execute", command="sleep 2"),
        )
    finally:
        backend.close()
    assert "moved to the background as process p1" in str(moved.content)
    assert "early" in str(moved.content)
    assert later.status == "success"


def test_an_unknown_process_id_is_an_error_that_says_where_processes_live(
    tmp_path: Path,
) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        (message,) = _messages(backend, tool_call("process", action="read", process_id="p9"))
    finally:
        backend.close()
    assert message.status == "error"
    assert "worker process that started them" in str(message.content)


def test_a_program_that_needs_a_terminal_gets_one_when_asked(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    program = "python3 -c 'import sys; print(sys.stdin.isatty(), sys.stdout.isatty())'"
    try:
        tools["execute"].invoke(_call("execute", command=program, background=True, tty=True))
        tools["execute"].invoke(_call("execute", command=program, background=True))
        seen = {"p1": "", "p2": ""}
        deadline = time.monotonic() + 20
        while not all("exited" in text for text in seen.values()):
            assert time.monotonic() < deadline, seen
            time.sleep(0.05)
            for ident in seen:
                message = tools["process"].invoke(_call("process", action="read", process_id=ident))
                seen[ident] += str(message.content)
    finally:
        backend.close()
    assert "True True\r\n" in seen["p1"]  # a terminal ends its lines with \r\n
    assert "False False\n" in seen["p2"]


def test_a_ninth_background_process_is_refused_with_the_documented_sentence(
    tmp_path: Path,
) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        started = [
            tools["execute"].invoke(_call("execute", command="sleep 60", background=True))
            for _ in range(9)
        ]
    finally:
        backend.close()
    assert all(message.status != "error" for message in started[:8])
    refused = started[8]
    assert refused.status == "error"
    assert refused.content == (
        "Error: this session already runs 8 background processes, the most it may;"
        " kill one (process tool, action kill) before starting another."
    )


def test_a_background_processs_sparse_file_is_committed_sparse_on_another_file_system() -> None:
    """Its review copies the file, and so does the commit to a workspace on a tmpfs: holes stay."""
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="fstools-sparse-"))
    backend = LocalBackend(folder, execute=True)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        tools["execute"].invoke(
            _call(
                "execute",
                command="truncate -s 512M big.bin; sleep 0.5; printf x >> big.bin",
                background=True,
            )
        )
        seen = ""
        deadline = time.monotonic() + 60  # a loaded machine: the review copies 512 MiB of holes
        while "exited" not in seen and time.monotonic() < deadline:
            read = tools["process"].invoke(_call("process", action="read", process_id="p1"))
            seen += str(read.content)
            time.sleep(0.1)
        # A read may review the file between truncate and printf: the read after the exit
        # reviews whatever the process wrote last.
        seen += str(
            tools["process"].invoke(_call("process", action="read", process_id="p1")).content
        )
        assert "exited" in seen, seen
        assert "A /big.bin" in seen, seen
        committed = (folder / "big.bin").stat()
        assert committed.st_size == 512 * 2**20 + 1
        assert committed.st_blocks * 512 < 1 << 20  # still sparse
    finally:
        backend.close()
        shutil.rmtree(folder)


def test_what_a_process_writes_as_it_ends_during_a_read_is_reviewed_at_the_next_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read reviews a running process; it then writes and ends before the read is done."""
    backend = LocalBackend(tmp_path, execute=True)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    finished = LocalProcesses.reviewed

    def after_the_process_ended(self: LocalProcesses, background: Any) -> None:
        deadline = time.monotonic() + 20
        while background.running and time.monotonic() < deadline:
            time.sleep(0.05)
        finished(self, background)

    try:
        tools["execute"].invoke(
            _call("execute", command="sleep 1; echo late > late.txt", background=True)
        )
        with monkeypatch.context() as patch:
            patch.setattr(LocalProcesses, "reviewed", after_the_process_ended)
            first = tools["process"].invoke(_call("process", action="read", process_id="p1"))
        second = tools["process"].invoke(_call("process", action="read", process_id="p1"))
    finally:
        backend.close()

    assert "is running" in str(first.content)
    assert "A /late.txt" in str(second.content), second.content
    assert (tmp_path / "late.txt").read_text() == "late\n"


@pytest.mark.parametrize("sandbox", ["default", "none"])
def test_a_process_on_its_own_view_is_said_to_need_a_restart_after_edits(
    tmp_path: Path, sandbox: str
) -> None:
    """Its view keeps the files it looked up; started again, it runs the edited file."""
    (tmp_path / "served.txt").write_text("one\n")
    backend = LocalBackend(
        tmp_path, execute=True, **({"sandbox": None} if sandbox == "none" else {})
    )
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    loop = "while :; do cat served.txt; sleep 0.1; done"
    try:
        started = tools["execute"].invoke(_call("execute", command=loop, background=True))
        told = "kill it and start it again" in str(started.content)
        assert told == (sandbox == "default"), started.content
        tools["read_file"].invoke(_call("read_file", file_path="/served.txt"))
        edited = tools["edit_file"].invoke(
            _call("edit_file", file_path="/served.txt", old_string="one", new_string="two")
        )
        assert edited.status == "success", edited.content
        tools["process"].invoke(_call("process", action="kill", process_id="p1"))
        tools["execute"].invoke(_call("execute", command=loop, background=True))
        seen = ""
        deadline = time.monotonic() + 20
        while "two" not in seen and time.monotonic() < deadline:
            time.sleep(0.1)
            seen += str(
                tools["process"].invoke(_call("process", action="read", process_id="p2")).content
            )
        assert "two" in seen, seen
    finally:
        backend.close()
