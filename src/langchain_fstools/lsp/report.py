"""What a change did to the language servers' diagnostics, as plain data.

No server code here (nor pygls): the tools build `TextChange`s and render a
`DiagnosticsReport` without the `lsp` extra installed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One diagnostic, at a virtual path, 1-based line and column."""

    path: str
    line: int
    column: int
    severity: str
    code: str
    message: str
    server: str
    cell: str | None = None
    """The notebook cell the line is in (lines then count from the cell's first)."""

    def key(self) -> tuple[str, str, str, str, str]:
        """What tells two diagnostics apart across a change (not the line: lines move)."""
        return (self.path, self.server, self.severity, self.code, self.message)


@dataclass(frozen=True, slots=True)
class TextChange:
    """A file's text before and after a change (None: it did not exist / was deleted).

    A notebook is checked as one document of its code cells (`document`, a name the
    servers see, whose extension picks them); `old_cells` and `new_cells` give each
    cell's id and first line (0-based) in the texts, so a diagnostic names its cell.
    """

    path: str
    old_text: str | None
    new_text: str | None
    document: str | None = None
    old_cells: tuple[tuple[int, str], ...] = ()
    new_cells: tuple[tuple[int, str], ...] = ()

    @property
    def checked_as(self) -> str:
        """The path the servers see."""
        return self.document or self.path


@dataclass(frozen=True)
class DiagnosticsReport:
    """What a change did to the servers' diagnostics.

    Attributes:
        introduced: Diagnostics after the change that were not there before.
        fixed: Diagnostics before the change that are gone after it.
        notes: One sentence per server that could not answer (missing, crashed, slow).
    """

    introduced: tuple[Diagnostic, ...] = ()
    fixed: tuple[Diagnostic, ...] = ()
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        """Whether there is anything to tell."""
        return bool(self.introduced or self.fixed or self.notes)


__all__ = ["Diagnostic", "DiagnosticsReport", "TextChange"]
