"""The extras the README lists are the extras pyproject.toml defines, and `test` holds them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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
