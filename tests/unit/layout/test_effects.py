"""Effects are data: one created but never run does nothing, so none may be dropped."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import get_args

import langchain_fstools
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.core.calls import Method

SRC = Path(langchain_fstools.__file__).parent


def _returns_effect(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    annotation = node.returns
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return (isinstance(annotation, ast.Name) and annotation.id == "Effect") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "Effect"
    )


def _effect_functions(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _returns_effect(node)
    }


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _reachable(
    tree: ast.Module, module: str, effects: dict[str, set[str]]
) -> tuple[set[str], dict[str, set[str]]]:
    """Effect functions callable by bare name, and per imported module alias its effects."""
    local = effects.get(module, set()) | _effect_functions(tree)
    imported: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                bound = alias.asname or alias.name
                if f"{node.module}.{alias.name}" in effects:
                    imported[bound] = effects[f"{node.module}.{alias.name}"]
                elif alias.name in effects.get(node.module, set()):
                    local.add(bound)
    return local, imported


def dropped_effects(source: str, module: str, effects: dict[str, set[str]]) -> list[str]:
    """Statements in `source` that create an effect and throw it away.

    Args:
        source: A module's code.
        module: Its dotted name.
        effects: For each module, the names of its functions and methods returning `Effect`.
    """
    tree = ast.parse(source)
    local, imported = _reachable(tree, module, effects)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        function = node.value.func
        if isinstance(function, ast.Name):
            dropped = function.id in local
        elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            owner = function.value.id
            dropped = (owner in {"self", "cls"} and function.attr in local) or (
                function.attr in imported.get(owner, set())
            )
        else:
            dropped = False
        if dropped:
            found.append(f"{module}:{node.lineno}")
    return found


def _all_effects() -> dict[str, set[str]]:
    return {
        _module(path): _effect_functions(ast.parse(path.read_text(encoding="utf-8")))
        for path in SRC.rglob("*.py")
    }


def test_no_effect_is_created_and_dropped() -> None:
    effects = _all_effects()
    found = [
        place
        for path in SRC.rglob("*.py")
        for place in dropped_effects(path.read_text(encoding="utf-8"), _module(path), effects)
    ]
    assert found == []


def test_the_scan_finds_a_dropped_effect() -> None:
    source = textwrap.dedent(
        """
        from langchain_fstools.core import calls
        from langchain_fstools.core.calls import mkdir

        def body(path: str) -> Effect[None]:
            calls.delete(path)
            mkdir(path)
            yield from calls.delete(path)
            helper(path)

        def helper(path: str) -> Effect[None]:
            yield from calls.delete(path)
        """
    )
    found = dropped_effects(source, "example", _all_effects())
    assert found == ["example:6", "example:7", "example:9"]


def test_every_call_method_is_a_backend_method_with_an_async_twin() -> None:
    for method in get_args(Method):
        assert callable(getattr(Backend, method)), method
        assert callable(getattr(Backend, "a" + method)), method
