"""The extras the README lists are the extras pyproject.toml defines, and `test` holds
them; a feature whose extra is missing says so in one sentence with its pip install."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]
README = (ROOT / "README.md").read_text()


def _listed_extras() -> list[str]:
    """The first column of the README's table of extras."""
    table = README.split("| extra | adds |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.MULTILINE)


def test_every_extra_the_readme_lists_exists() -> None:
    listed = _listed_extras()
    assert "docs" in listed
    assert sorted(listed) == sorted(EXTRAS)


def test_every_extra_the_docs_install_exists() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    installed = {
        extra
        for page in pages
        for group in re.findall(r"langchain-fstools\[([a-z0-9,-]+)\]", page.read_text())
        for extra in group.split(",")
    }
    installed |= {
        extra
        for page in pages
        for group in re.findall(r"pip install -e '\.\[([a-z0-9,-]+)\]'", page.read_text())
        for extra in group.split(",")
    }
    assert installed
    assert installed <= set(EXTRAS)


def test_the_test_extra_holds_every_extra_but_bench() -> None:
    held = set(EXTRAS["test"])
    for extra, requirements in EXTRAS.items():
        if extra not in {"test", "bench"}:
            assert set(requirements) <= held, extra


MISSING = {
    "mcp": "MCP server needs the mcp extra: pip install '.[mcp]' in a checkout of",
    "obstore": "needs the objectstore extra: pip install '.[objectstore]' in a checkout of",
}


def _without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where `module` cannot be imported."""
    probe = f"import sys\nsys.modules[{module!r}] = None\n{code}"
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("mcp", ["mcp", "--root", "."]),
        ("obstore", ["mcp", "--objectstore", "memory:///"]),
    ],
)
def test_a_command_whose_extra_is_missing_says_so_in_one_sentence(
    module: str, args: list[str]
) -> None:
    done = _without(
        module, f"from langchain_fstools.commands import main\nsys.exit(main({args!r}))"
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert MISSING[module] in done.stderr


@pytest.mark.parametrize(
    ("module", "code"),
    [
        ("obstore", "from langchain_fstools import ObjectStoreBackend"),
        ("mcp", "from langchain_fstools.mcp import create_server"),
    ],
)
def test_an_import_whose_extra_is_missing_raises_the_sentence(module: str, code: str) -> None:
    done = _without(module, code)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("langchain_fstools.errors.MissingExtra: ")
    assert MISSING[module] in last
