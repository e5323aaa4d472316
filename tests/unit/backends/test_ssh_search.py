"""The program shipped to an SSH host's Python (backends.ssh.search), run locally.

A fresh interpreter started as the backend starts the host's, with the same loader
and input, must give what `search.host.main` gives in this process.
"""

from __future__ import annotations

import importlib.util
import io
import json
import marshal
import subprocess
import sys
import types
import zlib
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.backends import shipping
from langchain_fstools.backends.ssh import search as ssh_search
from langchain_fstools.search.contract import GrepRequest
from langchain_fstools.search.host import decode, grep_request, main


def run_here(cwd: Path, *, compiled: bool = False) -> ssh_search.HostRun:
    """Run the shipped program with this interpreter, as the backend runs the host's."""

    def run(build: Any, seconds: float) -> tuple[bytes, bool]:
        done = subprocess.run(
            ["/bin/sh", "-c", ssh_search.command(sys.executable)],
            input=ssh_search.program_input(build(str(cwd.resolve())), compiled=compiled),
            capture_output=True,
            cwd=cwd,
            timeout=seconds,
            check=False,
        )
        return done.stdout, False

    return run


@pytest.mark.parametrize("compiled", [False, True], ids=["sources", "compiled"])
def test_a_fresh_interpreter_gives_what_main_gives(tmp_path: Path, *, compiled: bool) -> None:
    (tmp_path / "a.py").write_text("needle\nother\nneedle again\n")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    (tmp_path / "ignored.py").write_text("needle\n")
    # Files in the working directory never shadow a module of the program (-I).
    (tmp_path / "json.py").write_text("raise SystemExit('shadowed')\n")
    (tmp_path / "zlib.py").write_text("raise SystemExit('shadowed')\n")
    request = GrepRequest("needle", "/", mode="content", after=1)
    here = io.BytesIO()
    main(grep_request(str(tmp_path.resolve()), request, 30), here)
    run = run_here(tmp_path, compiled=compiled)
    shipped, _ = run(lambda root: grep_request(root, request, 30), 60)
    assert shipped == here.getvalue()
    assert [hits.path for hits in decode(shipped, timed_out=False).hits] == ["/a.py"]


def test_the_probe_names_the_interpreter_and_its_bytecode(tmp_path: Path) -> None:
    reply = ssh_search.probe(run_here(tmp_path), 60)
    assert reply is not None
    assert reply.executable == sys.executable
    assert reply.bytecode == importlib.util.MAGIC_NUMBER.hex()


def test_compiled_modules_are_refused_by_another_bytecode(tmp_path: Path) -> None:
    # The loader checks the magic number the request names against its own.
    data = ssh_search.program_input({"op": "probe"}, compiled=True)
    request, modules = data.split(b"\n", 1)
    other = json.dumps({**json.loads(request), "bytecode": "00000000"}).encode()
    done = subprocess.run(
        ["/bin/sh", "-c", ssh_search.command(sys.executable)],
        input=other + b"\n" + modules,
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert not done.stdout


def test_an_interpreter_older_than_the_floor_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh_search, "MIN_PYTHON", (sys.version_info.major + 1, 0))
    assert ssh_search.probe(run_here(tmp_path), 60) is None


def test_only_what_the_engine_runs_is_shipped() -> None:
    shipped = json.loads(zlib.decompress(ssh_search.program_input({}).split(b"\n", 1)[1]))
    modules = set(shipped["modules"])
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
    assert shipped["modules"]["langchain_fstools"] == ""  # the package's own __init__ is not run


def test_the_compiled_program_holds_the_same_modules() -> None:
    sources = json.loads(zlib.decompress(ssh_search.program_input({}).split(b"\n", 1)[1]))
    data = ssh_search.program_input({}, compiled=True)
    request, compiled = data.split(b"\n", 1)
    code = marshal.loads(zlib.decompress(compiled))  # noqa: S302 - our own output
    assert json.loads(request) == {"bytecode": importlib.util.MAGIC_NUMBER.hex()}
    assert code["modules"].keys() == sources["modules"].keys()
    assert all(isinstance(module, types.CodeType) for module in code["modules"].values())
    assert (code["packages"], code["withheld"]) == (sources["packages"], sources["withheld"])


def test_optional_imports_of_shipped_packages_are_withheld() -> None:
    shipped = json.loads(zlib.decompress(ssh_search.program_input({}).split(b"\n", 1)[1]))
    # pathspec tries typing_extensions, whose `deprecated` would load asyncio on the host.
    assert "typing_extensions" in shipped["withheld"]
    # re2 is tried by pathspec, but the program imports it too: the host's is used.
    assert "re2" not in shipped["withheld"]


def test_a_search_on_the_host_loads_neither_asyncio_nor_a_withheld_module(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / ".gitignore").write_text("b.txt\n")  # pathspec is used
    # An interpreter that runs the loader (`-I -S -c loader`) and then names every
    # module loaded on its standard error.
    watch = tmp_path / "watch.py"
    watch.write_text(
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(' '.join(sys.modules)))\n"
        "exec(sys.argv[-1], {'__name__': '__main__'})\n"
    )
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S {watch} "$@"\n')
    python.chmod(0o755)
    request = grep_request(str(tmp_path.resolve()), GrepRequest("needle", "/"), 30)
    done = subprocess.run(
        ["/bin/sh", "-c", ssh_search.command(str(python))],
        input=ssh_search.program_input(request, compiled=True),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    assert [hits.path for hits in decode(done.stdout, timed_out=False).hits] == ["/a.txt"]
    imported = set(done.stderr.decode().split())
    assert "pathspec.gitignore" in imported
    assert not imported & {"asyncio", "typing_extensions", "hyperscan"}


def test_a_package_with_compiled_parts_is_left_to_the_host() -> None:
    assert shipping._pure_python_package("pydantic_core") == []
    assert shipping._pure_python_package("pathspec")
