"""Waiting for a `Diagnostics`' servers to start, as a test's first step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools.lsp import TextChange

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.lsp import Diagnostics


def started(diagnostics: Diagnostics, root: Path) -> int:
    """Start the Python servers and wait until they run: a deletion asks them nothing.

    A start may take longer than a check's timeout on a loaded machine: the check then
    says "not ready" after waiting at least its timeout, and the start goes on, ending
    within `start_timeout`; so this many checks see it end, started or given up.

    Returns:
        How many servers run.
    """
    gone = [TextChange("/gone.py", None, None)]
    for _ in range(int(diagnostics.start_timeout / diagnostics.timeout) + 2):
        report = diagnostics.check(str(root), gone)
        if not report.notes or not report.notes[0].startswith("Diagnostics not ready:"):
            break
    assert report.notes == (), report.notes
    return len(diagnostics.server_pids())
