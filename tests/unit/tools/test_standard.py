"""langchain-tests standard tool tests, for every tool, on local disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    LsTool,
    ReadFileTool,
    ToolContext,
    WriteFileTool,
)


class _OnLocalDisk:
    tool_class: type[BaseTool]
    example: dict[str, Any]
    root: Path

    @pytest.fixture(autouse=True)
    def _workspace(self, tmp_path: Path) -> None:
        self.root = tmp_path
        (tmp_path / "notes.txt").write_text("first line\nsecond line\n")

    @property
    def tool_constructor(self) -> type[BaseTool]:
        return self.tool_class

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"context": ToolContext(LocalBackend(self.root, execute=True))}

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
