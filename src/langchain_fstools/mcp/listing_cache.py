"""The `tools/list` answer, kept between runs so a server answers before loading its tools.

The listing depends only on how the server was made (the tools served, their settings,
the backend's kind) and on this package's code, not on the files or the client. Building
it imports the tools, `BaseTool`s, whose `langchain_core` module costs about 0.3 s (most
of it LangSmith's types): longer than a minimal MCP server takes to start. So the
command line keeps each listing it builds in the user's cache folder, under a digest of
what it depends on (the code by each module's path, size and modification time, so an
edited or upgraded package is a new key), and a server started the same way answers from
it and loads the tools at its first call, where the listing is built again and the kept
one replaced if it differs. A listing is kept only once a server was built from the
same inputs, so a configuration read back from the cache was already checked.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mcp import types

if TYPE_CHECKING:
    from collections.abc import Sequence

PACKAGE: Final = Path(__file__).resolve().parents[1]
"""This package's folder, whose modules the listing comes from."""

CACHE_FOLDER: Final = Path("langchain-fstools") / "mcp-listings"
"""Where listings are kept, under the user's cache folder."""


def cache_folder() -> Path:
    """The folder listings are kept in: `$XDG_CACHE_HOME` (or `~/.cache`), then `CACHE_FOLDER`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / CACHE_FOLDER


def listing_key(inputs: Sequence[object]) -> str:
    """The digest of what a listing depends on: `inputs` (by `repr`), the SDK, the code."""
    digest = hashlib.sha256()
    digest.update(repr(tuple(inputs)).encode())
    digest.update(f"{sys.version_info[:2]} mcp {importlib.metadata.version('mcp')}".encode())
    package = PACKAGE
    for module in sorted(package.rglob("*.py")):
        found = module.stat()
        digest.update(f"{module.relative_to(package)} {found.st_size} {found.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def kept_listing(folder: Path, key: str) -> list[types.Tool] | None:
    """The listing kept under `key`, or None (none kept, or unreadable)."""
    try:
        data = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        return [types.Tool.model_validate(tool) for tool in data]
    except (OSError, ValueError):
        return None


def keep_listing(folder: Path, key: str, tools: Sequence[types.Tool]) -> None:
    """Keep `tools` under `key` (written whole, then renamed; a failure is not an error)."""
    data = wire(tools)
    target = folder / f"{key}.json"
    fresh = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fresh.write_text(json.dumps(data), encoding="utf-8")
        fresh.replace(target)
    except OSError:
        fresh.unlink(missing_ok=True)


def wire(tools: Sequence[types.Tool]) -> list[dict[str, Any]]:
    """`tools` as sent, to compare two listings."""
    return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]


__all__ = [
    "CACHE_FOLDER",
    "PACKAGE",
    "cache_folder",
    "keep_listing",
    "kept_listing",
    "listing_key",
    "wire",
]
