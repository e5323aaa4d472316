"""The file tools on a sandbox that cannot serve them: one sentence, nothing written."""

from __future__ import annotations

import time
from pathlib import Path

from langchain_core.messages import ToolMessage

from langchain_fstools import FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend
from tests.unit.backends.sandbox_double import ShellSandbox


def call(toolkit: FileToolkit, name: str, **args: object) -> ToolMessage:
    tool = next(tool for tool in toolkit.get_tools() if tool.name == name)
    message = tool.invoke({"type": "tool_call", "name": name, "id": "call_1", "args": args})
    assert isinstance(message, ToolMessage)
    return message


def test_a_sandbox_without_python3_is_one_sentence_for_the_model(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    sandbox = ShellSandbox(path=str(tmp_path / "no-bin"))
    backend = SandboxBackend(
        sandbox, str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    toolkit = FileToolkit(backend)
    for name, args in [
        ("read_file", {"file_path": "/a.txt"}),
        ("write_file", {"file_path": "/a.txt", "content": "x"}),
    ]:
        message = call(toolkit, name, **args)
        assert message.status == "error"
        assert message.content == (
            "Error: the file store failed: the sandbox has no python3, which the file tools"
            " need there (sandbox). This is a setup problem, not your arguments: tell the user."
        )
    assert list((tmp_path / "workspace").iterdir()) == []


def test_a_background_process_through_the_execute_and_process_tools(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    backend = SandboxBackend(
        ShellSandbox(), str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    toolkit = FileToolkit(backend)
    try:
        started = call(toolkit, "execute", command="echo hello; sleep 30", background=True)
        assert started.content == (
            'Started process p1 in the background. Read its output with process(action="read",'
            ' process_id="p1").'
        )
        read = call(toolkit, "process", action="read", process_id="p1")
        for _ in range(50):
            if "hello" in str(read.content):
                break
            time.sleep(0.1)
            read = call(toolkit, "process", action="read", process_id="p1")
        assert str(read.content).startswith("hello\np1 is running (")
        listed = call(toolkit, "process", action="list")
        assert "`echo hello; sleep 30`" in str(listed.content)
        killed = call(toolkit, "process", action="kill", process_id="p1")
        assert "p1 killed after " in str(killed.content)
        assert killed.artifact["running"] is False
    finally:
        backend.close()


def test_a_provider_s_timeout_is_the_local_timeout_sentence(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    sandbox = ShellSandbox(path=str(tmp_path / "no-bin"), timeout_exit=124)
    backend = SandboxBackend(
        sandbox, str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    message = call(
        FileToolkit(backend), "execute", command="echo begun; exec /bin/sleep 30", timeout=1
    )
    assert message.status == "error"
    assert message.content == (
        "begun\nError: the command did not finish within 1 second and was killed, with"
        " everything it started. Give it a larger timeout, or run less at once (e.g. a"
        " subset of the tests)."
    )
