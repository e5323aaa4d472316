"""Every notebook in examples/ runs to the end without an error (nbclient + ipykernel)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.ipynb"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_notebook_runs(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    errors = [
        o for cell in book.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors
