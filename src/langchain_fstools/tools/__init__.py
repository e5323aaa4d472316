"""The file tools, one module each, all `BaseTool` subclasses over any backend.

Adding a tool:
1. A module named after the tool, with its args schema (a `base.ToolArgs`), its
   description (a template `describe` fills from `settings.ToolSettings`) and a
   `base.FileTool` subclass.
2. `_effect`: the one body, a generator of backend calls (`core.calls`) returning a
   `base.ToolOutcome`; shared steps live in `writing` (atomic, checked writes), `reads`
   (read-before-write records), `searching`, `media_reader` and `render` (errors).
3. `targets`: what a call touches, so permissions and the one-change-per-turn rule need
   no knowledge of the tool; `preview` for a change a person may approve.
4. The class in `toolkit.TOOL_CLASSES`, snapshots of its description and schema
   (`tests/unit/tools/snapshots`), and its tests in `tests/unit/tools/test_<name>.py`.
"""

from langchain_fstools.tools.apply_patch import ApplyPatchTool
from langchain_fstools.tools.base import ToolContext
from langchain_fstools.tools.edit_file import EditFileTool
from langchain_fstools.tools.execute import ExecuteTool
from langchain_fstools.tools.glob import GlobTool
from langchain_fstools.tools.grep import GrepTool
from langchain_fstools.tools.ls import LsTool
from langchain_fstools.tools.notebook_edit import NotebookEditTool
from langchain_fstools.tools.processes import ProcessTool
from langchain_fstools.tools.read_file import ReadFileTool
from langchain_fstools.tools.settings import ToolSettings
from langchain_fstools.tools.show_diagnostics import DiagnosticsTool
from langchain_fstools.tools.write_file import WriteFileTool

__all__ = [
    "ApplyPatchTool",
    "DiagnosticsTool",
    "EditFileTool",
    "ExecuteTool",
    "GlobTool",
    "GrepTool",
    "LsTool",
    "NotebookEditTool",
    "ProcessTool",
    "ReadFileTool",
    "ToolContext",
    "ToolSettings",
    "WriteFileTool",
]
