"""Which language servers check which files: a small table users can extend.

A `ServerSpec` names a server, the command that starts it speaking LSP over stdio, the
file extensions it checks and the LSP language id of those files. `DEFAULT_SERVERS`
holds the Python defaults, installed from PyPI wheels by the `lsp` extra (`ruff server`
for lint, `ty server` for types), and servers of other languages that are used when
their program is on PATH. A server whose program is missing is skipped.
`servers_wanted` says whether the toolkits' default (`diagnostics="auto"`) runs them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How to start one language server, and which files it checks.

    Attributes:
        command: The program and its arguments; the server speaks LSP on stdio.
        extensions: The file extensions it checks, with their dot (`".py"`).
        language_id: The LSP language id of those files (`"python"`).
    """

    command: tuple[str, ...]
    extensions: frozenset[str]
    language_id: str

    def program(self) -> str | None:
        """The server's program as found (PATH, then beside this Python), or None."""
        name = self.command[0]
        if Path(name).is_absolute():
            return name if os.access(name, os.X_OK) else None
        return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


_PYTHON = frozenset({".py", ".pyi"})
_TYPESCRIPT = frozenset({".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"})
_C = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"})

DEFAULT_SERVERS: Mapping[str, ServerSpec] = {
    "ruff": ServerSpec(("ruff", "server"), _PYTHON, "python"),
    "ty": ServerSpec(("ty", "server"), _PYTHON, "python"),
    "typescript": ServerSpec(("typescript-language-server", "--stdio"), _TYPESCRIPT, "typescript"),
    "gopls": ServerSpec(("gopls",), frozenset({".go"}), "go"),
    "rust-analyzer": ServerSpec(("rust-analyzer",), frozenset({".rs"}), "rust"),
    "clangd": ServerSpec(("clangd",), _C, "cpp"),
}
"""The servers used unless replaced: name -> spec. Each is used when its program exists."""


DIAGNOSTICS_ENV = "LANGCHAIN_FSTOOLS_DIAGNOSTICS"
"""The environment variable that turns the default (`diagnostics="auto"`) off: `off`."""

_OFF = frozenset({"off", "0", "false", "no"})


def servers_wanted() -> bool:
    """Whether `diagnostics="auto"` runs the default servers (on a backend on local disk).

    Yes where the `lsp` extra is installed (pygls imports), unless `DIAGNOSTICS_ENV`
    is `off` (or `0`, `false`, `no`).
    """
    if os.environ.get(DIAGNOSTICS_ENV, "").strip().lower() in _OFF:
        return False
    return importlib.util.find_spec("pygls") is not None


def server_table(servers: Mapping[str, ServerSpec | None] | None) -> dict[str, ServerSpec]:
    """The defaults with `servers` laid over them (a name mapped to None removes one).

    Raises:
        ValueError: a spec with no command or no extension.
    """
    table = dict(DEFAULT_SERVERS)
    for name, spec in (servers or {}).items():
        if spec is None:
            table.pop(name, None)
        elif not spec.command or not spec.extensions:
            raise ValueError(f"language server {name!r} needs a command and extensions")
        else:
            table[name] = spec
    return table


__all__ = ["DEFAULT_SERVERS", "DIAGNOSTICS_ENV", "ServerSpec", "server_table", "servers_wanted"]
