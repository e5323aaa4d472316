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

Our errors (`langchain_fstools.errors`) are shipped as their skeleton (`skeleton`): each
class with its name, its bases and its fields, and one plain `__init__` for all. Every
run on the host pays for what it imports, and some fifty dataclasses cost more than the
operation they report; the host's exceptions carry the same fields (`vars`), which is
all a reply sends back, and the client raises them as the real classes.
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

SKELETONS = frozenset({"langchain_fstools.errors"})
"""Modules shipped as their skeleton (module docstring): their classes' names, bases and fields."""

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
        sources[module] = skeleton(_source(module)) if module in SKELETONS else _source(module)
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


_FIELDS_INIT = """\
class _Fields:
    _fields = ()
    _defaults = {}

    def __init__(self, *args, **kwargs):
        given = {**self._defaults, **dict(zip(self._fields, args)), **kwargs}
        if len(args) > len(self._fields) or set(given) != set(self._fields):
            raise TypeError(f"{type(self).__name__} takes {self._fields}")
        self.__dict__.update((name, given[name]) for name in self._fields)
"""


def skeleton(source: str) -> str:
    """The classes of `source` with their fields alone: a light twin for another host.

    A dataclass keeps its name, its bases and its fields in order (its bases' first, as
    `dataclass` orders them), and takes them as its `__init__` does, defaults included
    (literals); an instance's `vars` are its fields. Other classes keep their name and
    bases. Methods, docstrings and imports are left out, so the skeleton imports nothing.
    """
    lines = [_FIELDS_INIT]
    fields: dict[str, list[str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(base) for base in node.bases]
        if not any(ast.unparse(d).startswith("dataclass") for d in node.decorator_list):
            lines.append(f"class {node.name}({', '.join(bases)}):\n    pass")
            continue
        own = _annotated(node)
        inherited = [name for base in bases for name in fields.get(base, [])]
        fields[node.name] = [*inherited, *own]
        parents = [base for base in bases if base in fields]  # dataclasses: _Fields in them
        defaults = [f"**{base}._defaults" for base in parents]
        defaults += [f"{name!r}: {value}" for name, value in own.items() if value is not None]
        lines.append(
            f"class {node.name}({', '.join(bases if parents else ['_Fields', *bases])}):\n"
            f"    _fields = {tuple(fields[node.name])!r}\n"
            f"    _defaults = {{{', '.join(defaults)}}}"
        )
    return "\n".join(lines) + "\n"


def _annotated(node: ast.ClassDef) -> dict[str, str | None]:
    """A class body's annotated names, in order, with their default's source (or None)."""
    return {
        item.target.id: None if item.value is None else ast.unparse(item.value)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }


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


__all__ = ["FILE", "SKELETONS", "Program", "compiled", "program", "skeleton", "sources"]
