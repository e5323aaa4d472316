"""Our own modules, shipped to another host's Python and imported there from memory.

A backend whose files live elsewhere (an SSH server, a sandbox) runs a program there
with that host's `python3 -I -S`: the source of the program's module and of every
module it imports (found by reading their imports), plus the pure-Python third-party
packages among them (pathspec), gathered here once. The host's loader imports them
from a table (`sys.meta_path`), so nothing is installed there. What a shipped
third-party package imports only optionally (inside `try`), and the program itself does
not, is withheld: the host refuses it, so the package runs as it does without it,
whatever the host has installed. Parent packages are shipped empty: importing
`langchain_fstools.backends.x` on the host runs `x` alone.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import marshal
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

FILE = "<fstools>/{}.py"
"""The file name a shipped module's code is compiled with (its dotted name as a path)."""


@dataclass(frozen=True)
class Program:
    """The modules shipped to the host (see the module docstring).

    Attributes:
        sources: Source of every module, by name.
        packages: The names among them that are packages.
        withheld: Modules the shipped third-party packages import only optionally and
            the program does not: the host refuses them.
    """

    sources: dict[str, str]
    packages: list[str]
    withheld: list[str]


@functools.cache
def program(name: str) -> Program:
    """The program whose entry module is `name`, and what it imports (found once)."""
    sources: dict[str, str] = {}
    packages: set[str] = set()
    own_imports: set[str] = set()  # of the program's own modules
    optional: set[str] = set()  # of the shipped third-party modules
    pending = [name]
    while pending:
        module = pending.pop()
        if module in sources:
            continue
        sources[module] = _source(module)
        for parent in _parents(module):
            packages.add(parent)
            sources.setdefault(parent, "")
        for imported in _imports(sources[module]):
            top = imported.partition(".")[0]
            own_imports.add(top)
            if top == name.partition(".")[0]:
                pending.append(imported)
            elif top not in sys.stdlib_module_names:
                for found, source, package in _pure_python_package(top):
                    sources[found] = source
                    optional.update(_optional_imports(source))
                    if package:
                        packages.add(found)
    shipped = {module.partition(".")[0] for module in sources}
    withheld = optional - own_imports - shipped - sys.stdlib_module_names
    return Program(sources, sorted(packages), sorted(withheld))


@functools.cache
def sources(name: str) -> bytes:
    """The program `name` as compressed JSON: its modules' sources, compiled by the host."""
    shipped = program(name)
    data = {"modules": shipped.sources, "packages": shipped.packages, "withheld": shipped.withheld}
    return zlib.compress(json.dumps(data).encode(), 6)


@functools.cache
def compiled(name: str) -> bytes:
    """The program `name` as compressed marshalled code, for a host with our bytecode.

    Compiled as the host compiles sources: without this module's `__future__` flags,
    and with asserts kept (the host's Python runs without `-O`).
    """
    shipped = program(name)
    code = {
        module: compile(
            source, FILE.format(module.replace(".", "/")), "exec", dont_inherit=True, optimize=0
        )
        for module, source in shipped.sources.items()
    }
    data = {"modules": code, "packages": shipped.packages, "withheld": shipped.withheld}
    return zlib.compress(marshal.dumps(data), 6)


def _source(name: str) -> str:
    spec = importlib.util.find_spec(name)
    source = spec.loader.get_source(name) if spec and spec.loader else None  # type: ignore[attr-defined]
    if source is None:
        raise ImportError(name)
    return str(source)


def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for depth in range(1, len(parts)):
        yield ".".join(parts[:depth])


def _imports(source: str) -> Iterator[str]:
    """Modules `source` imports when it runs (imports for type checking only left out)."""
    yield from _imports_in(ast.parse(source).body)


def _imports_in(nodes: list[ast.stmt]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            yield from _imports_in(node.orelse)
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import):
                yield from (alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                yield inner.module
                for alias in inner.names:  # `from package import module`
                    submodule = f"{inner.module}.{alias.name}"
                    if _is_module(submodule):
                        yield submodule


def _optional_imports(source: str) -> set[str]:
    """Top-level modules `source` imports inside `try` blocks: it runs without them."""
    return {
        imported.partition(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Try)
        for imported in _imports_in(node.body)
    }


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _pure_python_package(top: str) -> list[tuple[str, str, bool]]:
    """Every module of a third-party package as (name, source, is package).

    None if the package has compiled parts: the host must then have it installed.
    """
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    if any(p.suffix in {".so", ".pyd", ".dylib"} for p in files):
        return []
    modules = []
    for path in sorted(p for p in files if p.suffix == ".py"):
        parts = path.relative_to(folder).with_suffix("").parts
        package = parts[-1] == "__init__"
        name = ".".join((top, *parts[:-1])) if package else ".".join((top, *parts))
        modules.append((name, path.read_text(encoding="utf-8"), package))
    return modules


__all__ = ["FILE", "Program", "compiled", "program", "sources"]
