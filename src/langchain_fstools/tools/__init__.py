"""The file tools, one module each, all `BaseTool` subclasses over any backend."""

from langchain_fstools.tools._base import ToolContext, ToolSettings
from langchain_fstools.tools.apply_patch import ApplyPatchTool
from langchain_fstools.tools.edit_file import EditFileTool
from langchain_fstools.tools.execute import ExecuteTool
from langchain_fstools.tools.glob import GlobTool
from langchain_fstools.tools.grep import GrepTool
from langchain_fstools.tools.ls import LsTool
from langchain_fstools.tools.notebook_edit import NotebookEditTool
from langchain_fstools.tools.read_file import ReadFileTool
from langchain_fstools.tools.write_file import WriteFileTool

__all__ = [
    "ApplyPatchTool",
    "EditFileTool",
    "ExecuteTool",
    "GlobTool",
    "GrepTool",
    "LsTool",
    "NotebookEditTool",
    "ReadFileTool",
    "ToolContext",
    "ToolSettings",
    "WriteFileTool",
]
