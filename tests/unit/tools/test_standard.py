"""langchain-tests standard tool tests, for every tool, on local disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_fstools import LocalBackend
from langchain_fstools.tools import (
    ApplyPatchTool,
    EditFileTool,
    ExecuteTool,
    GlobTool,
    GrepTool,
    LsTool,
    NotebookEditTool,
    ReadFileTool,
    ToolContext,
    WriteFileTool,
)


class _OnLocalDisk:
    tool_class: type[BaseTool]
    example: dict[str, Any]
    root: Path

    context: ToolContext

    @pytest.fixture(autouse=True)
    def _workspace(self, tmp_path: Path) -> None:
        self.root = tmp_path
        (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
        book = nbformat.v4.new_notebook()
        book.cells = [nbformat.v4.new_code_cell("x = 1", id="first")]
        (tmp_path / "analysis.ipynb").write_text(nbformat.writes(book))
        self.context = ToolContext(LocalBackend(self.root, execute=True))
        # notebook_edit changes only what the agent read: read it through the same context.
        reader = ReadFileTool(context=self.context)
        call = ToolCall(
            name="read_file", args={"file_path": "/analysis.ipynb"}, id="r", type="tool_call"
        )
        assert reader.invoke(call).status == "success"

    @property
    def tool_constructor(self) -> type[BaseTool]:
        return self.tool_class

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"context": self.context}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return dict(self.example)

    def test_example_call_succeeds(self, tool: BaseTool) -> None:
        call = ToolCall(name=tool.name, args=self.example, id="1", type="tool_call")
        message = tool.invoke(call)
        assert message.status == "success", message.content


class _Ls(_OnLocalDisk):
    tool_class = LsTool
    example = {"path": "/"}  # noqa: RUF012


class _Read(_OnLocalDisk):
    tool_class = ReadFileTool
    example = {"file_path": "/notes.txt", "offset": 1, "limit": 10}  # noqa: RUF012


class _Write(_OnLocalDisk):
    tool_class = WriteFileTool
    example = {"file_path": "/new/file.txt", "content": "hello\n"}  # noqa: RUF012


class _Edit(_OnLocalDisk):
    tool_class = EditFileTool
    example = {"file_path": "/created.txt", "old_string": "", "new_string": "hi\n"}  # noqa: RUF012


class _ApplyPatch(_OnLocalDisk):
    tool_class = ApplyPatchTool
    example = {  # noqa: RUF012
        "patch": "*** Begin Patch\n*** Update File: /notes.txt\n-first line\n+1st line\n"
        "*** Add File: /more/notes.md\n+# More\n*** End Patch\n"
    }


class _Glob(_OnLocalDisk):
    tool_class = GlobTool
    example = {"pattern": "**/*.txt", "path": "/"}  # noqa: RUF012


class _Grep(_OnLocalDisk):
    tool_class = GrepTool
    example = {"pattern": "second", "output_mode": "content", "-n": True}  # noqa: RUF012


class _NotebookEdit(_OnLocalDisk):
    tool_class = NotebookEditTool
    example = {"notebook_path": "/analysis.ipynb", "cell_id": "first", "new_source": "x = 2"}  # noqa: RUF012


class _Execute(_OnLocalDisk):
    tool_class = ExecuteTool
    example = {"command": "cat notes.txt | wc -l", "timeout": 30}  # noqa: RUF012


class TestLsUnit(_Ls, ToolsUnitTests):
    pass


class TestLsIntegration(_Ls, ToolsIntegrationTests):
    pass


class TestReadFileUnit(_Read, ToolsUnitTests):
    pass


class TestReadFileIntegration(_Read, ToolsIntegrationTests):
    pass


class TestWriteFileUnit(_Write, ToolsUnitTests):
    pass


class TestWriteFileIntegration(_Write, ToolsIntegrationTests):
    pass


class TestEditFileUnit(_Edit, ToolsUnitTests):
    pass


class TestEditFileIntegration(_Edit, ToolsIntegrationTests):
    pass


class TestApplyPatchUnit(_ApplyPatch, ToolsUnitTests):
    pass


class TestApplyPatchIntegration(_ApplyPatch, ToolsIntegrationTests):
    pass


class TestExecuteUnit(_Execute, ToolsUnitTests):
    pass


class TestExecuteIntegration(_Execute, ToolsIntegrationTests):
    pass


class TestGlobUnit(_Glob, ToolsUnitTests):
    pass


class TestGlobIntegration(_Glob, ToolsIntegrationTests):
    pass


class TestGrepUnit(_Grep, ToolsUnitTests):
    pass


class TestGrepIntegration(_Grep, ToolsIntegrationTests):
    pass


class TestNotebookEditUnit(_NotebookEdit, ToolsUnitTests):
    pass


class TestNotebookEditIntegration(_NotebookEdit, ToolsIntegrationTests):
    pass
