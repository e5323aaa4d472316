"""The README and docs/ name only what exists: repository files, modules and their names,
command-line flags, pages; and the API reference shows every public name."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest
import yaml

import langchain_fstools
from langchain_fstools.commands import main
from langchain_fstools.tools.base import FileTool
from langchain_fstools.tools.toolkit import TOOL_CLASSES

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TEXTS = {page.relative_to(ROOT).as_posix(): page.read_text() for page in PAGES}
REFERENCE = "\n".join(text for name, text in TEXTS.items() if name.startswith("docs/reference/"))

PUBLIC_MODULES = (
    "langchain_fstools",
    "langchain_fstools.backends",
    "langchain_fstools.errors",
    "langchain_fstools.mcp",
    "langchain_fstools.middleware",
    "langchain_fstools.patch",
    "langchain_fstools.testing",
    "langchain_fstools.tools",
)
"""The modules whose `__all__` is public API (the root and the packages users import)."""

REPOSITORY_PATH = re.compile(
    r"(?<![\w./-])((?:scripts|bench|tests|notebooks|src|docs)/[\w./-]*[\w-])"
)
PACKAGE = ROOT / "src" / "langchain_fstools"
SUBPACKAGES = "|".join(sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
PACKAGE_PATH = re.compile(rf"`((?:{SUBPACKAGES})/[\w./-]*\.py)`")
"""A module named by its path inside the package, like `channels/cadence.py`."""
DOTTED_NAME = re.compile(r"\blangchain_fstools(?:\.\w+)+")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)


def _resolve(dotted: str) -> Any:
    """The module or attribute `dotted` names; AttributeError or ImportError if none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(dotted)


PYTHON_BLOCK = re.compile(r"^```python\n.*?^```$", re.DOTALL | re.MULTILINE)
"""Python blocks run in the tests (tests/integration/test_readme.py): their paths are
the example's own files."""


def test_every_repository_path_the_docs_name_exists() -> None:
    named = {
        (page, path)
        for page, text in TEXTS.items()
        for path in REPOSITORY_PATH.findall(PYTHON_BLOCK.sub("", text))
    }
    assert named
    assert sorted(f"{page}: {path}" for page, path in named if not (ROOT / path).exists()) == []


def test_every_package_module_path_the_docs_name_exists() -> None:
    named = {(page, path) for page, text in TEXTS.items() for path in PACKAGE_PATH.findall(text)}
    assert named
    assert sorted(f"{page}: {path}" for page, path in named if not (PACKAGE / path).exists()) == []


def test_every_module_and_name_the_docs_name_resolves() -> None:
    missing = []
    for page, text in TEXTS.items():
        for dotted in set(DOTTED_NAME.findall(text)):
            try:
                _resolve(dotted)
            except (ImportError, AttributeError):
                missing.append(f"{page}: {dotted}")
    assert sorted(missing) == []


def test_every_attribute_of_a_root_name_the_docs_name_exists() -> None:
    names = "|".join(sorted(langchain_fstools.__all__, key=len, reverse=True))
    attribute = re.compile(rf"\b({names})\.([a-z_]\w*)")
    named = {
        (page, owner, name)
        for page, text in TEXTS.items()
        for span in CODE.findall(text)
        for owner, name in attribute.findall(span)
    }
    assert ("docs/testing.md", "StateBackend", "seed") in named
    missing = [
        f"{page}: {owner}.{name}"
        for page, owner, name in sorted(named)
        if not hasattr(getattr(langchain_fstools, owner), name)
    ]
    assert missing == []


def _flags(*command: str) -> set[str]:
    """The options `python -m langchain_fstools <command> --help` lists."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
        main([*command, "--help"])
    return set(re.findall(r"--[a-z][a-z0-9-]*", shown.getvalue()))


@pytest.mark.parametrize("command", ["mcp", "demo"])
def test_every_flag_the_docs_give_a_command_exists(command: str) -> None:
    known = _flags(command) | _flags()
    given = {
        (page, flag)
        for page, text in TEXTS.items()
        for span in CODE.findall(text)
        if re.search(rf"langchain_fstools\W+{command}\b", span)
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span)
    }
    assert given
    assert sorted(f"{page}: {flag}" for page, flag in given if flag not in known) == []


def test_the_readme_links_pages_that_exist_under_their_titles() -> None:
    nav: dict[str, str] = {}

    def collect(entries: list[Any]) -> None:
        for entry in entries:
            for title, target in entry.items():
                if isinstance(target, list):
                    collect(target)
                else:
                    nav[target] = title

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # noqa: S506 - a plain loader
    collect(config["nav"])
    links = re.findall(r"\[([^\]]+)\]\(docs/([\w/-]+\.md)\)", TEXTS["README.md"])
    assert len(links) > 10
    for text, target in links:
        assert (ROOT / "docs" / target).exists(), target
        if not text.startswith("`"):
            assert text == nav[target], (
                f"README links {target} as {text!r}, the site as {nav[target]!r}"
            )


def _documented(module: ModuleType, name: str, entries: list[str]) -> bool:
    """Whether a `::: entry` of the reference shows `module.name`: the object itself, under
    its own name, or the whole module defining it."""
    value = getattr(module, name)
    for entry in entries:
        if entry.rsplit(".", 1)[-1] == name and _resolve(entry) is value:
            return True
        if (inspect.isclass(value) or inspect.isfunction(value)) and entry == value.__module__:
            return True
    return False


def test_every_public_name_is_in_the_api_reference() -> None:
    entries = re.findall(r"^::: ([\w.]+)", REFERENCE, re.MULTILINE)
    missing = [
        f"{module_name}.{name}"
        for module_name in PUBLIC_MODULES
        for name in importlib.import_module(module_name).__all__
        if not _documented(importlib.import_module(module_name), name, entries)
    ]
    assert missing == []


def test_the_what_to_import_table_names_every_root_name() -> None:
    page = TEXTS["docs/getting-started.md"]
    table = page.split("\n## What to import\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    named = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[2])}
    assert named == set(langchain_fstools.__all__)


def test_the_errors_reference_names_the_errors_the_root_exports() -> None:
    said = TEXTS["docs/reference/errors.md"].split("importable from the\npackage root:", 1)[1]
    named = set(re.findall(r"`(\w+)`", said.split("\n\n", 1)[0]))
    errors = importlib.import_module("langchain_fstools.errors")
    exported = {name for name in langchain_fstools.__all__ if hasattr(errors, name)}
    assert named == exported


def test_the_tools_table_lists_every_argument_of_each_tool() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", TEXTS["docs/tools.md"], re.MULTILINE)
    listed = {
        tool: {argument.split("=")[0].strip() for argument in arguments.split(", ")}
        for tool, arguments in rows
    }
    assert "execute" in listed
    for tool, arguments in listed.items():
        fields = (
            cast("type[FileTool]", TOOL_CLASSES[tool])
            .model_fields["args_schema"]
            .default.model_fields
        )
        assert arguments == {field.alias or name for name, field in fields.items()}, tool


SENTENCE_END = re.compile(r"[.:;!?)`*\]]$")
"""How a paragraph or a list item of prose ends (performance figures and the
reference's `:::` directives are not prose)."""


@pytest.mark.parametrize(
    "page",
    [
        page
        for page in TEXTS
        if not page.startswith("docs/reference/") and "performance" not in page
    ],
)
def test_no_paragraph_of_the_docs_stops_mid_sentence(page: str) -> None:
    prose = re.sub(r"```.*?```", "\n\n", TEXTS[page], flags=re.DOTALL)
    paragraphs = (block.strip() for block in re.split(r"\n\s*\n", prose))
    items = (
        item.strip()
        for block in paragraphs
        if block and not block.startswith(("#", "|", "<", "!", "---", ">"))
        for item in re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", block)
    )
    assert [item[-60:] for item in items if item and not SENTENCE_END.search(item)] == []
