"""`ToolSettings`: every tool's limits and defaults, validated once at construction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from langchain_fstools.core.tokens import TokenCounter, default_counter
from langchain_fstools.formats import syntax
from langchain_fstools.formats.image import ImageLimits
from langchain_fstools.shell.policy.policy import CommandPolicy

if TYPE_CHECKING:
    from langchain_fstools.lsp.diagnostics import Diagnostics


@dataclass(frozen=True)
class ToolSettings:
    """Limits shared by the tools of one toolkit.

    Attributes:
        read_limit: Rows read_file returns when no limit is given. Default: 2000.
        read_token_budget: Most tokens one read_file result may hold. Default: 25000.
        ls_limit: Most entries ls lists. Default: 1000.
        max_edit_bytes: Largest file edit_file and write_file rewrite. Default: 64 MiB.
        diff_lines: Most diff lines shown after an edit or write. Default: 40.
        glob_limit: Most paths glob returns. Default: 100.
        grep_head_limit: Entries grep returns when `head_limit` is not given; 0 for
            all. Default: 250.
        search_timeout: Seconds glob and grep may run before returning what they
            found. Default: 20.
        read_max_bytes: Largest text file read_file reads without offset or limit;
            0 for no cap. Default: 256 KiB.
        max_media_bytes: Largest image or PDF read_file opens. Default: 128 MiB.
        image_limits: What images are scaled to fit. Default: `ImageLimits()`.
        pdf_pages_without_range: Most pages of a PDF read without `pages`. Default: 10.
        pdf_pages_per_call: Most PDF pages per read. Default: 20.
        pdf_file_blocks: Also attach the selected PDF pages as a `file` block, for
            models that read PDFs natively. Default: False.
        count_tokens: Token counter. Default: `tokens.default_counter()`.
        execute_timeout: Seconds a command may run when execute gets no `timeout`.
            Default: 120.
        execute_max_timeout: Largest `timeout` execute accepts. Default: 3600.
        execute_output_limit: Most bytes of a command's output kept (its head and its
            tail). Default: 100,000.
        command_policy: Which commands execute runs. Default: `CommandPolicy()`, which
            refuses the dangerous ones (sudo, rm -rf /, mkfs, ...).
        syntax_check: What edit_file, write_file, apply_patch (also through execute)
            and notebook_edit do when a change introduces syntax errors: `"report"`
            them with the result, `"refuse"` the change (nothing is written), or
            `"off"`. Needs the `syntax` extra (tree-sitter grammars); without it nothing
            is checked. Default: `"report"`.
        diagnostics: Language servers that check every change (`lsp.Diagnostics`),
            True for the default servers, False for none, or `"auto"`: the default
            servers where the `lsp` extra is installed and the backend keeps its files
            on local disk, unless the environment variable
            `LANGCHAIN_FSTOOLS_DIAGNOSTICS` is `off`; else none, silently. A change's
            result then ends with the diagnostics it introduced and those it fixed.
            Needs the `lsp` extra and a backend on local disk. Default: `"auto"`.

    Counts are ints of at least 1 (`diff_lines`, `grep_head_limit` and
    `read_max_bytes` may be 0); times are seconds above 0, and `execute_timeout` is at
    most `execute_max_timeout`.

    Raises:
        ValueError: a setting out of its range, or `syntax_check` not one of `"report"`,
            `"refuse"`, `"off"`.
        TypeError: a setting of the wrong type.
    """

    read_limit: int = 2000
    read_token_budget: int = 25_000
    ls_limit: int = 1000
    max_edit_bytes: int = 64 * 1024 * 1024
    diff_lines: int = 40
    glob_limit: int = 100
    grep_head_limit: int = 250
    search_timeout: float = 20.0
    read_max_bytes: int = 256 * 1024
    max_media_bytes: int = 128 * 1024 * 1024
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    pdf_pages_without_range: int = 10
    pdf_pages_per_call: int = 20
    pdf_file_blocks: bool = False
    count_tokens: TokenCounter = field(default_factory=default_counter)
    execute_timeout: float = 120.0
    execute_max_timeout: float = 3600.0
    execute_output_limit: int = 100_000
    command_policy: CommandPolicy = field(default_factory=CommandPolicy)
    syntax_check: syntax.SyntaxCheck = "report"
    diagnostics: Diagnostics | bool | Literal["auto"] = "auto"

    def __post_init__(self) -> None:
        """Refuse a setting the tools could not use, in one sentence.

        Raises:
            TypeError: a setting of the wrong type.
            ValueError: a setting out of range.
        """
        for name in _COUNTS_FROM_ONE + _COUNTS_FROM_ZERO:
            _check_count(name, getattr(self, name), low=1 if name in _COUNTS_FROM_ONE else 0)
        for name in _SECONDS:
            _check_seconds(name, getattr(self, name))
        if self.execute_timeout > self.execute_max_timeout:
            raise ValueError(
                f"execute_timeout ({self.execute_timeout}) must not exceed execute_max_timeout"
                f" ({self.execute_max_timeout})"
            )
        if not isinstance(self.pdf_file_blocks, bool):
            raise TypeError("pdf_file_blocks must be True or False")
        if not isinstance(self.image_limits, ImageLimits):
            raise TypeError("image_limits must be an ImageLimits")
        if not isinstance(self.command_policy, CommandPolicy):
            raise TypeError("command_policy must be a CommandPolicy")
        if not callable(self.count_tokens):
            raise TypeError("count_tokens must be a function from text to a token count")
        if self.syntax_check not in syntax.SYNTAX_CHECKS:
            choices = ", ".join(repr(choice) for choice in syntax.SYNTAX_CHECKS)
            raise ValueError(f"syntax_check must be one of {choices}, not {self.syntax_check!r}")
        if not (
            isinstance(self.diagnostics, bool)
            or self.diagnostics == "auto"
            or hasattr(self.diagnostics, "check")
        ):
            raise TypeError('diagnostics must be a Diagnostics, True, False or "auto"')


def _check_count(name: str, value: object, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be {low} or more, not {value}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be more than 0 seconds, not {value}")


_COUNTS_FROM_ONE = (
    "read_limit",
    "read_token_budget",
    "ls_limit",
    "max_edit_bytes",
    "glob_limit",
    "max_media_bytes",
    "pdf_pages_without_range",
    "pdf_pages_per_call",
    "execute_output_limit",
)
_COUNTS_FROM_ZERO = ("diff_lines", "grep_head_limit", "read_max_bytes")
"""Settings where 0 means none or no limit."""
_SECONDS = ("search_timeout", "execute_timeout", "execute_max_timeout")


__all__ = ["ToolSettings"]
