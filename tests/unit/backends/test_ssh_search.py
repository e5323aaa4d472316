"""The program shipped to an SSH host's Python (backends.ssh.search), run locally.

A fresh interpreter started as the backend starts the host's, with the same loader
and input, must give what `search.host.main` gives in this process.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.backends.ssh import search as ssh_search
from langchain_fstools.search.contract import GrepRequest
from langchain_fstools.search.host import decode, grep_request, main


def run_here(cwd: Path) -> ssh_search.HostRun:
    """Run the shipped program with this interpreter, as the backend runs the host's."""

    def run(build: Any, seconds: float) -> tuple[bytes, bool]:
        done = subprocess.run(
            ["/bin/sh", "-c", ssh_search.command(sys.executable)],
            input=ssh_search.program_input(build(str(cwd.resolve()))),
            capture_output=True,
            cwd=cwd,
            timeout=seconds,
            check=False,
        )
        return done.stdout, False

    return run


def test_a_fresh_interpreter_gives_what_main_gives(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("needle\nother\nneedle again\n")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    (tmp_path / "ignored.py").write_text("needle\n")
    # Files in the working directory never shadow a module of the program (-I).
    (tmp_path / "json.py").write_text("raise SystemExit('shadowed')\n")
    (tmp_path / "zlib.py").write_text("raise SystemExit('shadowed')\n")
    request = GrepRequest("needle", "/", mode="content", after=1)
    here = io.BytesIO()
    main(grep_request(str(tmp_path.resolve()), request, 30), here)
    shipped, _ = run_here(tmp_path)(lambda root: grep_request(root, request, 30), 60)
    assert shipped == here.getvalue()
    assert [hits.path for hits in decode(shipped, timed_out=False).hits] == ["/a.py"]


def test_the_probe_names_the_interpreter(tmp_path: Path) -> None:
    assert ssh_search.probe(run_here(tmp_path), 60) == sys.executable


def test_an_interpreter_older_than_the_floor_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh_search, "MIN_PYTHON", (sys.version_info.major + 1, 0))
    assert ssh_search.probe(run_here(tmp_path), 60) is None


def test_only_what_the_engine_runs_is_shipped() -> None:
    shipped = json.loads(zlib.decompress(ssh_search.program_input({}).split(b"\n", 1)[1]))
    modules = set(shipped["sources"])
    assert {
        "langchain_fstools.search.host",
        "langchain_fstools.search.engine",
        "langchain_fstools.search.ignore",
        "langchain_fstools.core.globs",
        "pathspec",
        "pathspec.gitignore",
    } <= modules
    # Imports made for type checking only are left out, and with them the layers above.
    above = ("langchain_fstools.backends", "langchain_fstools.tools", "langchain_core")
    assert not {module for module in modules if module.startswith(above)}
    assert {"langchain_fstools", "langchain_fstools.search", "pathspec"} <= set(shipped["packages"])
    assert shipped["sources"]["langchain_fstools"] == ""  # the package's own __init__ is not run


def test_a_package_with_compiled_parts_is_left_to_the_host() -> None:
    assert ssh_search._pure_python_package("pydantic_core") == []
    assert ssh_search._pure_python_package("pathspec")
