"""The file tools on a sandbox that cannot serve them: one sentence, nothing written."""

from __future__ import annotations

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
