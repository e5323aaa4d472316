"""syntax_check: the mutating tools report, or refuse, the syntax errors a change introduces."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from langchain_core.messages import ToolMessage

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from tests.unit.formats.syntax_cases import CASES, IDS, Case
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness

by_case = pytest.mark.parametrize("case", CASES, ids=IDS)


def edit(h: Harness, path: str, old: str, new: str) -> ToolMessage:
    h.call("read_file", file_path=path)
    return h.call("edit_file", file_path=path, old_string=old, new_string=new)


def reported_lines(message: ToolMessage) -> list[int]:
    return [error["line"] for error in message.artifact.get("syntax_errors", [])]


# ----- every language, through edit_file ----------------------------------------------


@by_case
def test_a_breaking_edit_is_reported_with_its_line(tmp_path: Path, case: Case) -> None:
    h = Harness("state", tmp_path)
    h.seed(case.path, case.text.encode())
    message = edit(h, case.path, *case.breaking)
    assert message.status == "success"
    assert reported_lines(message) == [case.break_line]
    assert f"  line {case.break_line}, column " in message.content
    assert h.content(case.path) == case.broken.encode()


@by_case
def test_a_breaking_edit_is_refused_with_its_line(tmp_path: Path, case: Case) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed(case.path, case.text.encode())
    message = edit(h, case.path, *case.breaking)
    assert message.status == "error"
    assert message.content.startswith("Error: this change would introduce 1 syntax error")
    assert f"  line {case.break_line}, column " in message.content
    assert case.breaking[1].strip() in message.content
    assert h.content(case.path) == case.text.encode()


@by_case
def test_fixing_an_error_reports_nothing(tmp_path: Path, case: Case) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed(case.path, case.broken.encode())
    message = edit(h, case.path, case.breaking[1], case.breaking[0])
    assert (message.status, reported_lines(message)) == ("success", [])
    assert "Syntax check" not in message.content
    assert h.content(case.path) == case.text.encode()


@by_case
def test_only_the_new_error_is_reported_next_to_an_old_one(tmp_path: Path, case: Case) -> None:
    h = Harness("state", tmp_path)
    h.seed(case.path, case.with_other.encode())
    message = edit(h, case.path, *case.breaking)
    assert reported_lines(message) == [case.break_line]
    assert f"line {case.other_line}," not in message.content


# ----- the reply, on every backend, sync and async -------------------------------------


def test_the_report_follows_the_diff_and_fills_the_artifact(h: Harness, run: Run) -> None:
    h.seed("/app.py", b"def add(a, b):\n    return a + b\n")
    run("read_file", file_path="/app.py")
    message = run("edit_file", file_path="/app.py", old_string="a + b", new_string="a +")
    text = message.content
    assert text.startswith("Edited /app.py: replaced 1 occurrence.\n")
    assert text.endswith(
        "Syntax check: this change introduced 1 syntax error; fix it with another edit:\n"
        "/app.py (Python):\n"
        "  line 2, column 5 (invalid syntax): return a +"
    )
    assert message.artifact["syntax_errors"] == [
        {
            "path": "/app.py",
            "cell": None,
            "language": "python",
            "line": 2,
            "column": 5,
            "message": "invalid syntax",
            "excerpt": "return a +",
        }
    ]


def test_a_clean_edit_has_no_report(h: Harness, run: Run) -> None:
    h.seed("/app.py", b"x = 1\n")
    run("read_file", file_path="/app.py")
    message = run("edit_file", file_path="/app.py", old_string="1", new_string="2")
    assert "syntax_errors" not in message.artifact
    assert "Syntax check" not in message.content


def test_write_file_reports_every_error_of_a_new_file(h: Harness, run: Run) -> None:
    message = run("write_file", file_path="/new.js", content="let a = ;\nlet b = 1;\nlet c = ;\n")
    assert message.status == "success"
    assert reported_lines(message) == [1, 3]
    assert "introduced 2 syntax errors; fix them" in message.content


def test_write_file_is_refused_without_writing(tmp_path: Path) -> None:
    h = Harness("local", tmp_path, syntax_check="refuse")
    message = h.call("write_file", file_path="/new.json", content='{"a": 1,, "b": 2}\n')
    assert message.status == "error"
    assert "/new.json (JSON):\n  line 1, column " in message.content
    assert not (h.root / "new.json").exists()


def test_a_new_file_by_edit_file_is_checked(tmp_path: Path) -> None:
    h = Harness("state", tmp_path)
    message = h.call(
        "edit_file", file_path="/x.go", old_string="", new_string="package main\nfunc {\n"
    )
    assert reported_lines(message) == [2]


def test_a_shebang_names_the_language(tmp_path: Path) -> None:
    h = Harness("state", tmp_path)
    message = h.call(
        "write_file", file_path="/bin/tool", content="#!/usr/bin/env python3\nprint((1)\n"
    )
    assert "/bin/tool (Python):" in message.content


def test_files_of_unknown_languages_are_not_checked(tmp_path: Path) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    message = h.call("write_file", file_path="/notes.txt", content="def f(:\n")
    assert message.status == "success"


def test_many_errors_are_listed_up_to_five(tmp_path: Path) -> None:
    h = Harness("state", tmp_path)
    content = "".join(f"x{n} = = {n}\n" for n in range(8))
    message = h.call("write_file", file_path="/m.py", content=content)
    assert "introduced 8 syntax errors" in message.content
    assert message.content.endswith(
        "  line 5, column 6 (invalid syntax): x4 = = 4\n  ... and 3 more"
    )
    assert len(message.artifact["syntax_errors"]) == 8


def test_off_checks_nothing(tmp_path: Path) -> None:
    h = Harness("state", tmp_path, syntax_check="off")
    h.seed("/app.py", b"x = 1\n")
    message = edit(h, "/app.py", "x = 1", "x = (1")
    assert (message.status, reported_lines(message)) == ("success", [])


# ----- apply_patch, also through execute ------------------------------------------------

TWO_FILES = """*** Begin Patch
*** Update File: /ok.py
@@
-a = 1
+a = 2
*** Update File: /bad.py
@@
-b = 1
+b = (1
*** End Patch"""


def test_apply_patch_reports_the_broken_file(h: Harness, run: Run) -> None:
    h.seed("/ok.py", b"a = 1\n")
    h.seed("/bad.py", b"b = 1\n")
    message = run("apply_patch", patch=TWO_FILES)
    assert message.status == "success"
    assert [(e["path"], e["line"]) for e in message.artifact["syntax_errors"]] == [("/bad.py", 1)]
    assert "/bad.py (Python):\n  line 1, column " in message.content
    assert (h.content("/ok.py"), h.content("/bad.py")) == (b"a = 2\n", b"b = (1\n")


def test_apply_patch_refuses_the_whole_patch(tmp_path: Path) -> None:
    for kind in ("local", "state"):
        h = Harness(kind, tmp_path / kind, syntax_check="refuse")
        h.seed("/ok.py", b"a = 1\n")
        h.seed("/bad.py", b"b = 1\n")
        message = h.call("apply_patch", patch=TWO_FILES)
        assert message.status == "error"
        assert "/bad.py (Python):\n  line 1, column " in message.content
        assert "/ok.py" not in message.content
        assert (h.content("/ok.py"), h.content("/bad.py")) == (b"a = 1\n", b"b = 1\n")


def test_apply_patch_checks_added_and_moved_files_by_their_new_name(tmp_path: Path) -> None:
    h = Harness("state", tmp_path)
    h.seed("/a.txt", b"x = (\n")
    patch = (
        "*** Begin Patch\n*** Add File: /new.rs\n+fn main( {}\n"
        "*** Update File: /a.txt\n*** Move to: /a.py\n@@\n-x = (\n+x = ((\n*** End Patch"
    )
    message = h.call("apply_patch", patch=patch)
    assert sorted({e["path"] for e in message.artifact["syntax_errors"]}) == ["/a.py", "/new.rs"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_execute_apply_patch_is_refused_whole(tmp_path: Path, mode: str) -> None:
    (tmp_path / "ok.py").write_text("a = 1\n")
    (tmp_path / "bad.py").write_text("b = 1\n")
    (tool,) = FileToolkit(
        LocalBackend(tmp_path, execute=True), tools=["execute"], syntax_check="refuse"
    ).get_tools()
    command = f"apply_patch <<'EOF'\n{TWO_FILES}\nEOF"
    call = {"type": "tool_call", "name": "execute", "id": "c1", "args": {"command": command}}
    message = tool.invoke(call) if mode == "sync" else asyncio.run(tool.ainvoke(call))
    assert message.status == "error"
    assert "/bad.py (Python)" in message.content
    assert (tmp_path / "ok.py").read_text() == "a = 1\n"
    assert (tmp_path / "bad.py").read_text() == "b = 1\n"


# ----- notebooks: code cells in the kernel's language -----------------------------------


def notebook(language: str = "python") -> bytes:
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "k", "display_name": "K", "language": language}
    book.cells = [
        nbformat.v4.new_markdown_cell("# Title", id="intro"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport math\nx = (1\n", id="old"),
        nbformat.v4.new_code_cell("y = 1\nprint(y)", id="calc"),
    ]
    return (nbformat.writes(book) + "\n").encode()


def cell_edit(h: Harness, **args: Any) -> ToolMessage:
    h.call("read_file", file_path="/nb.ipynb")
    return h.call("notebook_edit", notebook_path="/nb.ipynb", **args)


def test_a_notebook_cell_edit_is_reported_in_cell_lines(tmp_path: Path) -> None:
    h = Harness("state", tmp_path)
    h.seed("/nb.ipynb", notebook())
    message = cell_edit(h, cell_id="calc", new_source="y = 1\nprint(y))\n")
    assert message.status == "success"
    assert "cell calc of /nb.ipynb (Python):\n  line 2, column " in message.content
    (error,) = message.artifact["syntax_errors"]
    assert (error["cell"], error["line"], error["excerpt"]) == ("calc", 2, "print(y))")


def test_a_notebook_cell_edit_is_refused(tmp_path: Path) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed("/nb.ipynb", notebook())
    message = cell_edit(h, edit_mode="insert", cell_type="code", new_source="def f(:\n")
    assert message.status == "error"
    assert "cell " in message.content
    assert h.content("/nb.ipynb") == notebook()


def test_magics_and_old_errors_of_a_cell_are_not_reported(tmp_path: Path) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed("/nb.ipynb", notebook())
    source = "%matplotlib inline\n!pip list\nimport math\nx = (1\nfor i in []:\n    %time f(i)\n"
    message = cell_edit(h, cell_id="old", new_source=source)
    assert message.status == "success", message.content
    cells = json.loads(h.content("/nb.ipynb"))["cells"]
    assert "".join(cells[1]["source"]) == source


def test_markdown_cells_and_unknown_kernels_are_not_checked(tmp_path: Path) -> None:
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed("/nb.ipynb", notebook(language="julia"))
    assert cell_edit(h, cell_id="calc", new_source="function (((\n").status == "success"
    shebang = "#!/usr/bin/env python\ndef f(:\n"
    assert cell_edit(h, cell_id="calc", new_source=shebang).status == "success"
    h.seed("/nb.ipynb", notebook())
    assert cell_edit(h, cell_id="intro", new_source="def f(:\n").status == "success"


# ----- settings, and the grammars missing ------------------------------------------------


def test_an_invalid_setting_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="syntax_check must be one of 'report', 'refuse', 'off'"):
        FileToolkit(StateBackend(), syntax_check="strict")
    with pytest.raises(ValueError, match="syntax_check"):
        FilesystemMiddleware(backend=LocalBackend(tmp_path), syntax_check=True)


UNCHECKED = "Your changes are not syntax-checked here"


def test_without_the_grammars_the_check_is_off_and_the_prompt_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), syntax_check="refuse")
    assert middleware.system_prompt is not None
    assert middleware.system_prompt.count(UNCHECKED) == 1
    assert "langchain-fstools[syntax]" in middleware.system_prompt
    h = Harness("state", tmp_path, syntax_check="refuse")
    h.seed("/app.py", b"x = 1\n")
    message = edit(h, "/app.py", "x = 1", "x = (1")
    assert (message.status, reported_lines(message)) == ("success", [])


def test_with_the_grammars_or_the_check_off_the_prompt_has_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on = FilesystemMiddleware(backend=LocalBackend(tmp_path))
    assert on.system_prompt is not None
    assert UNCHECKED not in on.system_prompt
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    off = FilesystemMiddleware(backend=LocalBackend(tmp_path), syntax_check="off")
    assert off.system_prompt is not None
    assert UNCHECKED not in off.system_prompt
    assert (
        FilesystemMiddleware(backend=LocalBackend(tmp_path), system_prompt=None).system_prompt
        is None
    )


def _kept(toolkit: FileToolkit, language: str, text: str) -> bool:
    """Whether the toolkit's tree cache holds `text`'s parse, waiting up to 10 s for it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if toolkit.context.syntax_trees.get(language, text.encode()) is not None:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize(
    ("name", "language"), [("/app.py", "python"), ("/tool", "bash"), ("/notes.txt", None)]
)
def test_a_read_parses_the_file_in_the_background_for_its_first_edit(
    tmp_path: Path, name: str, language: str | None
) -> None:
    text = "#!/bin/bash\necho hi\n" if name == "/tool" else "x = 1\ny = 2\n"
    (tmp_path / name.lstrip("/")).write_text(text)
    toolkit = FileToolkit(LocalBackend(tmp_path))
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    read = tools["read_file"].invoke({"file_path": name})
    assert "x = 1" in read or "echo hi" in read
    if language is None:
        time.sleep(0.2)
        assert toolkit.context.syntax_trees.get("python", text.encode()) is None
        return
    assert _kept(toolkit, language, text)


def test_with_the_check_off_a_read_parses_nothing(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    toolkit = FileToolkit(LocalBackend(tmp_path), syntax_check="off")
    (read,) = [tool for tool in toolkit.get_tools() if tool.name == "read_file"]
    read.invoke({"file_path": "/app.py"})
    time.sleep(0.2)
    assert toolkit.context.syntax_trees.get("python", b"x = 1\n") is None
