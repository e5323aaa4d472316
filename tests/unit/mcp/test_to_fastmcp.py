"""Every FileToolkit tool converts with langchain-mcp-adapters' `to_fastmcp`, and runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from langchain_mcp_adapters.tools import to_fastmcp

from langchain_fstools import FileToolkit, LocalBackend, StateBackend
from langchain_fstools.mcp import create_server
from langchain_fstools.tools.toolkit import TOOL_CLASSES

if TYPE_CHECKING:
    from pathlib import Path


def test_every_tool_converts_with_the_model_facing_schema(tmp_path: Path) -> None:
    tools = FileToolkit(LocalBackend(tmp_path, execute=True), diagnostics=True).get_tools()
    assert sorted(t.name for t in tools) == sorted(TOOL_CLASSES)
    for tool in tools:
        converted = to_fastmcp(tool)
        assert converted.name == tool.name
        assert converted.description == tool.description
        assert "runtime" not in converted.parameters["properties"]
        assert converted.parameters == tool.tool_call_schema.model_json_schema()


async def test_converted_tools_keep_read_before_write(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    tools = {t.name: to_fastmcp(t) for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    edit = {"file_path": "/notes.txt", "old_string": "alpha", "new_string": "beta"}

    refused = await tools["edit_file"].run(edit)
    assert "read" in str(refused).lower()
    assert (tmp_path / "notes.txt").read_text() == "alpha\n"

    assert "alpha" in str(await tools["read_file"].run({"file_path": "/notes.txt"}))
    await tools["edit_file"].run(edit)
    assert (tmp_path / "notes.txt").read_text() == "beta\n"


def test_a_plain_invoke_needs_no_runtime(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    tools = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    assert "one" in tools["read_file"].invoke({"file_path": "/a.txt"})
    tools["write_file"].invoke({"file_path": "/a.txt", "content": "two\n"})
    assert (tmp_path / "a.txt").read_text() == "two\n"


def test_create_server_refuses_state_backends_and_unasked_execute(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="graph state"):
        create_server(StateBackend())
    with pytest.raises(ValueError, match="execute=True"):
        create_server(LocalBackend(tmp_path, execute=True), tools=["execute"])
