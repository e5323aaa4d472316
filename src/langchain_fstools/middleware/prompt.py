"""The system-prompt section the middleware appends: what the descriptions cannot say."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import SystemMessage

from langchain_fstools.formats import syntax
from langchain_fstools.tools.describe import describe

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.tools import BaseTool

SYSTEM_PROMPT_TEMPLATE = """\
-[syntax_unchecked] Your changes are not syntax-checked here (the tree-sitter grammars, the
  langchain-fstools[syntax] extra, are not installed): after changing code, run the
  project's own checks (a compiler, linter or tests) where you can."""
"""Only what the tool descriptions cannot say, marked as in `tools.describe`.

Every model call pays for the prompt, so the rules of each tool are in its description
(read before changing, the patch format, the shell's limits) and the errors say the
rest when it happens (one change per file per turn, where an evicted result went). What
remains is a fact of the installation, not of a tool: with the grammars installed, the
section is empty and nothing is added.
"""

SYSTEM_PROMPT = describe(SYSTEM_PROMPT_TEMPLATE, present=None, values={"syntax_unchecked": True})
"""The section in its fullest form (every bullet kept); the middleware keeps what applies."""


def prompt_for(tools: Sequence[BaseTool], *, syntax_check: str) -> str:
    """`SYSTEM_PROMPT_TEMPLATE` for `tools`: empty but for what applies.

    A bullet says changes are not syntax-checked when the check is on but the `syntax`
    extra is not installed and some tool changes files.
    """
    mutating = any(not (tool.metadata or {}).get("read_only") for tool in tools)
    unchecked = mutating and syntax_check != "off" and not syntax.available()
    return describe(
        SYSTEM_PROMPT_TEMPLATE,
        present={tool.name for tool in tools},
        values={"syntax_unchecked": unchecked},
    )


def with_prompt(request: ModelRequest, section: str | None) -> ModelRequest:
    """`request` with `section` appended to its system message (as it is without one)."""
    if not section:
        return request
    block = {"type": "text", "text": section}
    blocks = [*request.system_message.content_blocks, block] if request.system_message else [block]
    return request.override(system_message=SystemMessage(content=blocks))  # type: ignore[arg-type]


__all__ = ["SYSTEM_PROMPT", "SYSTEM_PROMPT_TEMPLATE", "prompt_for", "with_prompt"]
