"""What a tool touches is declared by the tool; nothing outside `tools/` knows
a tool by its name (no comparison, membership test, `match` case or table keyed by one).

`execute` is also the name of an operation (`policy.Operation`) and of a backend method
(`core.calls`), `glob` of grep's argument (and of the word in ripgrep's glob errors), and
`grep` of a git subcommand (`git grep -O` runs a pager: `shell.code_strings`): there they
may appear, but never compared with a tool call's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from langchain_fstools.tools.toolkit import TOOL_CLASSES
from langchain_fstools.tools.undo_edit import UndoEditTool

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "langchain_fstools"
TOOL_NAMES = frozenset({*TOOL_CLASSES, UndoEditTool.model_fields["name"].default})
ALSO_ANOTHER_WORD = frozenset({"execute", "glob", "grep"})


def _names(node: ast.AST) -> set[str]:
    """Tool names among the string constants directly in `node` (or its tuple/set/list)."""
    values = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {v.value for v in values if isinstance(v, ast.Constant) and v.value in TOOL_NAMES}


def _mentions_a_name(node: ast.AST) -> bool:
    """Whether an expression reads something called `name` (a tool or tool call's name)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "name":
            return True
        if isinstance(sub, ast.Name) and "name" in sub.id:
            return True
        if isinstance(sub, ast.Subscript) and _names_key(sub.slice):
            return True
    return False


def _names_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "name"


def branches_on_tool_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every tool name a module compares with, matches or keys by."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                others = [o for o in operands if o is not operand]
                named = any(map(_mentions_a_name, others))
                found += [
                    (node.lineno, name)
                    for name in _names(operand)
                    if name not in ALSO_ANOTHER_WORD or named
                ]
        elif isinstance(node, ast.Dict):
            found += [
                (node.lineno, name)
                for key in node.keys
                if key is not None
                for name in _names(key) - ALSO_ANOTHER_WORD
            ]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, name) for name in _names(node.value) - ALSO_ANOTHER_WORD]
    return sorted(found)


def test_no_module_outside_tools_branches_on_a_tool_name() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if "tools" not in path.relative_to(PACKAGE).parts[:1]
        and (hits := branches_on_tool_names(path.read_text()))
    }
    assert offenders == {}


def test_the_scan_finds_each_kind_of_branch() -> None:
    source = """
if call["name"] == "edit_file": pass
if tool.name in {"ls", "glob"}: pass
TABLE = {"read_file": 1}
match name:
    case "write_file": pass
if request.tool_call["name"] == "execute": pass
if target.operation == "execute": pass
"""
    assert branches_on_tool_names(source) == [
        (2, "edit_file"),
        (3, "glob"),
        (3, "ls"),
        (4, "read_file"),
        (6, "write_file"),
        (7, "execute"),
    ]
