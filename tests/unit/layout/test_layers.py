"""The package layout: imports point down the layers, and lower layers load alone."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import langchain_fstools

SRC = Path(langchain_fstools.__file__).parent

LAYERS: dict[str, int] = {
    "_version": 0,
    "errors": 0,
    "core": 1,
    "formats": 2,
    "shell": 3,
    "channels": 3,
    "search": 4,
    "lsp": 4,
    "sandboxes": 4,
    "backends": 5,
    "patch": 6,
    "history": 6,
    "tools": 7,
    "permissions": 8,
    "middleware": 9,
    "mcp": 9,
}
"""Each package's rank: a module may import its own package and packages of lower rank.

`search` sits above `shell`: its spawner (host-side search processes) is confined by
`shell.sandbox.confine`; so does `lsp`, whose language servers run without the network
(`shell.sandbox.confine`'s seccomp filter), below `tools`, which render its diagnostics;
so does `sandboxes`, the sandbox providers we ship, whose containers take `shell`'s `Limits`. `middleware` and `mcp` share the top rank: two front-ends over the same floors
(`permissions`, `history`, `tools`), neither importing the other.

Top-level modules not listed here (the root `__init__`, `__main__`, `demo`, `testing`) are
the application layer and may import anything.
"""

HEAVY = ("langchain_core", "langchain", "langgraph", "asyncssh", "PIL", "pypdf")
"""Third-party packages no layer below `tools` may load at import time."""


SHELL_ROOMS: dict[str, int] = {"policy": 0, "network": 1, "sandbox": 2, "session": 3}
"""Each `shell` subpackage's rank: a room may import its own modules and lower rooms."""

BACKENDS_OF_THEIR_OWN = ("local", "ssh", "objectstore", "sandbox")
"""The backends that are packages: each imports its own modules and the shared ones, never
another backend package's."""


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    relative = path.relative_to(SRC.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every `langchain_fstools` module `path` imports, TYPE_CHECKING blocks included."""
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                keep = len(base) - node.level + (1 if is_package else 0)
                target = ".".join([*base[:keep], *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {name for name in found if name.split(".")[0] == "langchain_fstools"}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in SRC.rglob("*.py")}
    return {
        name: {
            target
            for target in _imports(path, set(modules))
            if target in modules and target != name
        }
        for name, path in modules.items()
    }


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for module, targets in _graph().items():
        source = _package_of(module)
        if source not in LAYERS:
            continue
        for target in targets:
            destination = _package_of(target)
            if destination == source:
                continue
            if destination not in LAYERS or LAYERS[destination] >= LAYERS[source]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def _room_of(module: str, package: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == package else None


def test_every_shell_module_lives_in_a_room() -> None:
    loose = sorted(
        name
        for name in _graph()
        if name.startswith("langchain_fstools.shell.")
        and _room_of(name, "shell") is None
        and name.split(".")[2] not in SHELL_ROOMS
    )
    assert loose == []
    rooms = {path.name for path in (SRC / "shell").iterdir() if (path / "__init__.py").exists()}
    assert rooms == set(SHELL_ROOMS)


def test_shell_rooms_import_only_lower_rooms() -> None:
    wrong = []
    for module, targets in _graph().items():
        room = _room_of(module, "shell")
        if room is None:
            continue
        for target in targets:
            other = _room_of(target, "shell")
            if other is not None and SHELL_ROOMS[other] > SHELL_ROOMS[room]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_a_backend_package_imports_no_other_backend_package() -> None:
    wrong = []
    for module, targets in _graph().items():
        own = _room_of(module, "backends")
        if own not in BACKENDS_OF_THEIR_OWN:
            continue
        for target in targets:
            other = _room_of(target, "backends")
            if other in BACKENDS_OF_THEIR_OWN and other != own:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_import_cycle_between_packages() -> None:
    arrows: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        for target in targets:
            if _package_of(target) != _package_of(module):
                arrows.setdefault(_package_of(module), set()).add(_package_of(target))

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for step in arrows.get(start, ()):
            if step == goal or (step not in seen and reaches(step, goal, seen | {step})):
                return True
        return False

    assert [package for package in arrows if reaches(package, package, set())] == []


def test_no_import_cycle_between_modules() -> None:
    """No two modules import each other, even for types only (store and store_postgres did)."""
    graph = _graph()
    cycles = []
    for start in graph:
        seen: set[str] = set()
        frontier = list(graph[start])
        while frontier:
            module = frontier.pop()
            if module == start:
                cycles.append(start)
                break
            if module not in seen:
                seen.add(module)
                frontier.extend(graph.get(module, ()))
    assert sorted(cycles) == []


_LANGGRAPH = ("langgraph", "langchain_core")  # langgraph's channels and stores load langchain_core
BINDINGS: dict[str, tuple[str, ...]] = {
    "langchain_fstools.formats.image": ("PIL",),
    "langchain_fstools.formats.pdf": ("pypdf", "PIL"),  # pypdf loads Pillow for images
    "langchain_fstools.backends.ssh": ("asyncssh",),
    "langchain_fstools.backends.ssh.backend": ("asyncssh",),
    "langchain_fstools.backends.ssh.connection": ("asyncssh",),
    "langchain_fstools.backends.ssh.exec": ("asyncssh",),
    "langchain_fstools.backends.ssh.files": ("asyncssh",),
    "langchain_fstools.backends.ssh.remote_processes": ("asyncssh",),
    "langchain_fstools.backends.ssh.search": ("asyncssh",),
    "langchain_fstools.channels.cadence": _LANGGRAPH,
    "langchain_fstools.channels.messages": _LANGGRAPH,
    "langchain_fstools.backends.state": _LANGGRAPH,
    "langchain_fstools.backends.store": _LANGGRAPH,
    "langchain_fstools.backends.store_postgres": _LANGGRAPH,
    # deepagents' BaseSandbox, which DockerSandbox implements, loads LangChain
    "langchain_fstools.sandboxes.docker": (*_LANGGRAPH, "langchain"),
}
"""Lower modules that exist to bind a third-party library, and what that loads."""


@pytest.mark.parametrize(
    "package",
    ["errors", "core", "formats", "search", "shell", "channels", "backends", "patch", "sandboxes"],
)
def test_lower_layers_load_without_the_heavy_stack(package: str) -> None:
    modules = sorted(
        name
        for name in _graph()
        if name == f"langchain_fstools.{package}"
        or name.startswith(f"langchain_fstools.{package}.")
    )
    assert modules
    for module in modules:
        probe = (
            "import sys\n"
            f"import {module}\n"
            f"print(' '.join(sorted(name for name in {HEAVY!r} if name in sys.modules)))\n"
        )
        loaded = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        allowed = BINDINGS.get(module, ())
        assert [name for name in loaded if name not in allowed] == [], module


def test_root_exposes_its_public_names_lazily() -> None:
    probe = (
        "import sys, langchain_fstools\n"
        "print(sorted(m for m in sys.modules if m.startswith('langchain_fstools.')))\n"
        "toolkit = langchain_fstools.FileToolkit\n"
        "print('langchain_fstools.tools.toolkit' in sys.modules, toolkit.__module__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "['langchain_fstools.core', 'langchain_fstools.core.lazy', 'langchain_fstools.core.renamed']",
        "True langchain_fstools.tools.toolkit",
    ]
    assert set(langchain_fstools.__all__) <= set(dir(langchain_fstools))


def test_each_root_name_is_its_home_module_s_own() -> None:
    homes: dict[str, str] = vars(langchain_fstools)["_PUBLIC"]
    assert sorted(langchain_fstools.__all__) == sorted(set(homes) - {"__version__"})
    for name, home in homes.items():
        module = importlib.import_module(home)
        assert getattr(langchain_fstools, name) is getattr(module, name), name
        assert name in getattr(module, "__all__", ()), f"{home} does not export {name}"
    checked = _type_checking_imports(SRC / "__init__.py")
    assert checked == homes, "the root's TYPE_CHECKING imports disagree with _PUBLIC"


def _type_checking_imports(path: Path) -> dict[str, str]:
    """Each name the `if TYPE_CHECKING:` block of `path` imports, and its module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name: node.module or ""
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_no_private_module_is_imported_from_outside_its_package() -> None:
    graph = _graph()
    leaks = sorted(
        f"{importer} imports {target}"
        for importer, targets in graph.items()
        for target in targets
        if target.rsplit(".", 1)[-1].startswith("_")
        and importer.rsplit(".", 1)[0] != target.rsplit(".", 1)[0]
        and target != "langchain_fstools._version"
    )
    assert not leaks, "a module imported from outside its package loses the underscore"


def test_no_two_modules_share_a_name() -> None:
    """A name says one thing; the one exception is a backend's own modules.

    Each backend package under `backends/` (`ssh`, `objectstore`) has its `backend` and
    its `search`: the same role, named alike on purpose.
    """
    names: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        role_of_a_backend = path.parent.parent == SRC / "backends" and path.stem in {
            "backend",
            "search",
        }
        if path.stem not in {"__init__", "__main__"} and not role_of_a_backend:
            names.setdefault(path.stem, []).append(_module_name(path))
    assert {name: found for name, found in names.items() if len(found) > 1} == {}


def test_the_middleware_is_a_composition_root_of_about_250_lines() -> None:
    source = (SRC / "middleware" / "filesystem.py").read_text(encoding="utf-8")
    (middleware,) = (
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == "FilesystemMiddleware"
    )
    assert middleware.end_lineno is not None
    assert middleware.end_lineno - middleware.lineno + 1 <= 270
