"""Host-side ripgrep runs confined: a memory limit it names, and nothing above the root read."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.search.spawner import available
from langchain_fstools.shell.sandbox.confine import landlock_abi

LIMIT = 32 << 20
"""The smallest limit a backend takes: a file of one 48 MiB line is over it."""


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    (tmp_path / "long.min.js").write_bytes(b"x" * (48 << 20) + b"\n")
    (tmp_path / "small.py").write_text("needle = 1\n")
    backend = LocalBackend(tmp_path, search_memory_limit=LIMIT)
    if backend.native_search() is None or not available():
        pytest.skip("needs rg and the spawner")
    return backend


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
def test_a_search_over_the_memory_limit_says_which_limit_and_how_to_narrow(
    backend: LocalBackend, mode: str
) -> None:
    (grep,) = FileToolkit(backend, tools=["grep"]).get_tools()
    message = grep.invoke(
        {
            "type": "tool_call",
            "name": "grep",
            "id": "1",
            "args": {"pattern": "needle", "output_mode": mode},
        }
    )
    assert message.status == "error"
    assert "memory limit of 32 MiB" in message.content
    assert "search_memory_limit" in message.content
    assert "glob" in message.content


def test_a_glob_excluding_the_long_file_finds_the_rest(backend: LocalBackend) -> None:
    (grep,) = FileToolkit(backend, tools=["grep"]).get_tools()
    assert grep.invoke({"pattern": "needle", "glob": "*.py"}).strip().endswith("/small.py")


@pytest.mark.parametrize("limit", [0, -1, 1 << 20, 1.5e9, True, "1G"])
def test_a_memory_limit_below_32_mib_or_not_bytes_is_refused(tmp_path: Path, limit: object) -> None:
    with pytest.raises(ValueError, match="search_memory_limit"):
        LocalBackend(tmp_path, search_memory_limit=limit)  # type: ignore[arg-type]


def test_no_memory_limit_is_allowed(tmp_path: Path) -> None:
    assert LocalBackend(tmp_path, search_memory_limit=None).native_search() is not None


@pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")
def test_an_ignore_file_above_the_root_is_not_read_as_the_python_engine_does(
    tmp_path: Path,
) -> None:
    """Searching a folder below the root, rg reads no `.gitignore` above the root."""
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "a.py").write_text("needle\n")
    (tmp_path / "root" / "sub" / "b.txt").write_text("needle\n")
    found = {}
    for ripgrep in (True, False):
        backend = LocalBackend(tmp_path / "root", use_ripgrep=ripgrep)
        (grep,) = FileToolkit(backend, tools=["grep"]).get_tools()
        found[ripgrep] = grep.invoke({"pattern": "needle", "path": "/sub"})
    assert found[True] == found[False]
    assert "a.py" in found[True]
