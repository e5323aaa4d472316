"""Notebooks: read_file's cell view and notebook_edit, on every backend, sync and async."""

from __future__ import annotations

import base64
import io
import json

import nbformat
from PIL import Image

from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), (0, 200, 0)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def sample(minor: int = 5) -> bytes:
    book = nbformat.v4.new_notebook()
    book.nbformat_minor = minor
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    intro = nbformat.v4.new_markdown_cell("# Analysis", id="intro")
    load = nbformat.v4.new_code_cell("import math\nprint(math.pi)", id="load")
    load.execution_count = 1
    load.outputs = [nbformat.v4.new_output("stream", name="stdout", text="3.14159\n")]
    plot = nbformat.v4.new_code_cell("show()", id="plot")
    plot.execution_count = 2
    plot.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": png(), "text/plain": "<Figure>"})
    ]
    boom = nbformat.v4.new_code_cell("1/0", id="boom")
    boom.outputs = [
        nbformat.v4.new_output(
            "error",
            ename="ZeroDivisionError",
            evalue="division by zero",
            traceback=["\x1b[31mTraceback\x1b[0m"],
        )
    ]
    book.cells = [intro, load, plot, boom]
    if minor < 5:
        for cell in book.cells:
            del cell["id"]
    return (nbformat.writes(book) + "\n").encode()


def test_cells_with_ids_sources_and_outputs(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    message = run("read_file", file_path="/nb.ipynb")
    assert message.status == "success", message.content
    first, image, rest = message.content
    assert first["text"].startswith(
        "Notebook /nb.ipynb: 4 cells (nbformat 4.5, kernel python3); showing cells 1-4."
    )
    assert (
        '<cell id="load" type="code" execution_count="1">\n1\timport math\n2\tprint(math.pi)\n</cell>'
        in first["text"]
    )
    assert "<output>\n[stdout] 3.14159\n\n</output>" in first["text"]
    assert image["type"] == "image"
    assert image["mime_type"] == "image/png"
    assert (
        "<output error>\nZeroDivisionError: division by zero\nTraceback\n</output>" in rest["text"]
    )


def test_pagination_by_cell(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    page = run("read_file", file_path="/nb.ipynb", offset=2, limit=1)
    assert isinstance(page.content, str)
    assert page.content.startswith(
        "Notebook /nb.ipynb: 4 cells (nbformat 4.5, kernel python3); showing cells 2-2."
    )
    assert page.content.endswith("(Showing cells 2-2 of 4. Continue with offset=3.)")
    assert '<cell id="intro"' not in page.content
    again = run("read_file", file_path="/nb.ipynb", offset=2, limit=1)
    assert again.content.startswith("File unchanged since your last read")


def edit(run: Run, **args: object):
    return run("notebook_edit", notebook_path="/nb.ipynb", **{"new_source": "", **args})


def cells(h: Harness) -> list[dict[str, object]]:
    """The cells on storage, each source joined (nbformat stores a list of lines)."""
    stored = json.loads(h.content("/nb.ipynb"))["cells"]
    for cell in stored:
        cell["source"] = "".join(cell["source"])
    return stored


def test_replace_clears_outputs_and_keeps_the_rest_byte_for_byte(h: Harness, run: Run) -> None:
    original = sample()
    h.seed("/nb.ipynb", original)
    run("read_file", file_path="/nb.ipynb")
    message = edit(run, cell_id="load", new_source="import math\nprint(math.e)")
    assert message.content == "Replaced cell load in /nb.ipynb."
    after = json.loads(h.content("/nb.ipynb"))
    before = json.loads(original)
    assert cells(h)[1]["source"] == "import math\nprint(math.e)"
    assert after["cells"][1]["outputs"] == []
    assert after["cells"][1]["execution_count"] is None
    assert after["metadata"] == before["metadata"]
    assert (after["nbformat"], after["nbformat_minor"]) == (4, 5)
    text = h.content("/nb.ipynb").decode()
    for untouched in (0, 2, 3):
        block = json.dumps(before["cells"][untouched], indent=1, sort_keys=True, ensure_ascii=False)
        assert block.replace("\n", "\n  ") in text


def test_insert_after_at_top_and_delete(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    run("read_file", file_path="/nb.ipynb")
    inserted = edit(run, cell_id="intro", new_source="x = 1", cell_type="code", edit_mode="insert")
    assert inserted.status == "success", inserted.content
    assert [c["source"] for c in cells(h)][:2] == ["# Analysis", "x = 1"]
    top = edit(run, new_source="Top", cell_type="markdown", edit_mode="insert")
    assert top.status == "success"
    assert cells(h)[0]["source"] == "Top"
    assert len({c["id"] for c in cells(h)}) == 6
    assert (
        edit(run, cell_id="boom", edit_mode="delete").content == "Deleted cell boom in /nb.ipynb."
    )
    assert [c["id"] for c in cells(h)][-1] == "plot"


def test_change_cell_type(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    run("read_file", file_path="/nb.ipynb")
    assert (
        edit(run, cell_id="load", new_source="now text", cell_type="markdown").status == "success"
    )
    changed = cells(h)[1]
    assert (changed["cell_type"], changed["id"], changed["source"]) == (
        "markdown",
        "load",
        "now text",
    )
    assert "outputs" not in changed


def test_bad_requests(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    before = h.content("/nb.ipynb")
    assert "has not been read yet" in edit(run, cell_id="load", new_source="x").content
    run("read_file", file_path="/nb.ipynb")
    unknown = edit(run, cell_id="nope", new_source="x")
    assert unknown.content.startswith(
        "Error: invalid cell_id: no cell 'nope'; cells are: intro, load, plot, boom"
    )
    assert (
        "insert needs code, markdown or raw"
        in edit(run, new_source="x", edit_mode="insert").content
    )
    assert "needs the id of a cell" in edit(run, new_source="x").content
    assert (
        run(
            "notebook_edit",
            notebook_path="/nb.ipynb",
            new_source="x",
            cell_type="python",
            cell_id="load",
        ).status
        == "error"
    )
    h.seed("/other.py", b"x = 1\n")
    assert (
        "not a .ipynb file"
        in run("notebook_edit", notebook_path="/other.py", new_source="y").content
    )
    assert h.content("/nb.ipynb") == before


def test_edited_on_storage_after_read_is_refused(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample())
    run("read_file", file_path="/nb.ipynb")
    h.change_behind_the_agents_back("/nb.ipynb", sample(minor=4))
    message = edit(run, cell_id="load", new_source="x")
    assert "has been modified since it was last read" in message.content


def test_old_notebooks_without_ids_use_positions(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", sample(minor=4))
    view = run("read_file", file_path="/nb.ipynb").content[0]["text"]
    assert '<cell id="cell-2" type="code" execution_count="1">' in view
    assert edit(run, cell_id="cell-2", new_source="print(2)").status == "success"
    inserted = edit(run, cell_id="cell-1", new_source="y", cell_type="raw", edit_mode="insert")
    assert inserted.status == "success", inserted.content
    after = json.loads(h.content("/nb.ipynb"))
    assert after["nbformat_minor"] == 4
    assert all("id" not in c for c in after["cells"])
    assert cells(h)[2]["source"] == "print(2)"


def test_corrupt_notebook(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", b'{"cells": "not a list"')
    message = run("read_file", file_path="/nb.ipynb")
    assert message.status == "error"
    assert message.content.startswith("Error: cannot read the notebook /nb.ipynb:")
