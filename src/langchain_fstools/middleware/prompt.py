"""The system-prompt section the middleware appends: how to use the tools present."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import SystemMessage

from langchain_fstools.formats import syntax
from langchain_fstools.tools.describe import describe

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.tools import BaseTool

SYSTEM_PROMPT_TEMPLATE = """## Files

You have file tools over a workspace whose root is `/`.
- Paths are absolute workspace paths, such as `/src/app.py`.
-[ls] List a directory with `ls`.
-[glob] Find files by name with `glob`, not with a shell.
-[grep] Search file contents with `grep`, not with a shell.
-[read_file] Read files with `read_file`, in windows (`offset`, `limit`) when long. Read a
  file before you edit or overwrite it; if it changed since, read it again.
-[edit_file] Change existing files with `edit_file` (exact text replacement).
-[write_file] Use `write_file` for new files or complete rewrites.
-[notebook_edit] Edit Jupyter notebooks with `notebook_edit`.
-[apply_patch] For many changes at once, in one file or several, send one `apply_patch`.
-[mutating] Change a file at most once per turn: when one turn asks for several changes to
  the same file, only the first is made; make the others in the next turn.
-[execute] With `execute`, run programs (tests, builds, git) from the workspace root with
  relative paths; read, search and change files with the file tools, not the shell.
-[eviction] A tool result too large for the conversation is saved under
  `/large_tool_results/`; the notice says where. Read it back with `read_file` (`offset`,
  `limit`) or `grep`.
-[syntax_unchecked] Your changes are not syntax-checked here (the tree-sitter grammars, the
  langchain-fstools[syntax] extra, are not installed): after changing code, run the
  project's own checks (a compiler, linter or tests) where you can."""
"""The prompt section, marked as in `tools.describe`: bullets follow the tools present."""

SYSTEM_PROMPT = describe(
    SYSTEM_PROMPT_TEMPLATE,
    present=None,
    values={"mutating": True, "eviction": True, "syntax_unchecked": False},
)
"""The section appended to the agent's system prompt, with every tool present."""


def prompt_for(tools: Sequence[BaseTool], *, eviction: bool, syntax_check: str) -> str:
    """`SYSTEM_PROMPT_TEMPLATE` with the bullets for `tools` (and eviction when on).

    A bullet says changes are not syntax-checked when the check is on but the `syntax`
    extra is not installed and some tool changes files.
    """
    mutating = any(not (tool.metadata or {}).get("read_only") for tool in tools)
    return describe(
        SYSTEM_PROMPT_TEMPLATE,
        present={tool.name for tool in tools},
        values={
            "mutating": mutating,
            "eviction": eviction,
            "syntax_unchecked": mutating and syntax_check != "off" and not syntax.available(),
        },
    )


def with_prompt(request: ModelRequest, section: str | None) -> ModelRequest:
    """`request` with `section` appended to its system message (as it is without one)."""
    if not section:
        return request
    block = {"type": "text", "text": section}
    blocks = [*request.system_message.content_blocks, block] if request.system_message else [block]
    return request.override(system_message=SystemMessage(content=blocks))  # type: ignore[arg-type]


__all__ = ["SYSTEM_PROMPT", "SYSTEM_PROMPT_TEMPLATE", "prompt_for", "with_prompt"]
