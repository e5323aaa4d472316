"""File types for grep's `type` filter: ripgrep's own list, on every backend.

The table (`search.rg_types`) is generated from `rg --type-list` of the ripgrep wheel
this package depends on, so `type="lua"` means the same files whether rg or the
pure-Python engine searches, and no backend needs rg to know it.
"""

from __future__ import annotations

from langchain_fstools.search.rg_types import RG_TYPES

FILE_TYPES: dict[str, tuple[str, ...]] = RG_TYPES
"""Each type's filename globs, as ripgrep defines them."""

ALIASES = {
    "javascript": "js",
    "rb": "ruby",
    "rs": "rust",
    "yml": "yaml",
    "shell": "sh",
    "text": "txt",
    "dockerfile": "docker",
}
"""Other names models use for a type (ripgrep's own names win)."""

COMMON = ("py", "js", "ts", "rust", "go", "java", "c", "cpp", "md", "json", "yaml", "sh")
"""Types named first when an unknown type is reported."""


def globs_for(name: str) -> tuple[str, ...] | None:
    """The globs of a file type, or None if the type is unknown."""
    key = name.strip().lower()
    return FILE_TYPES.get(key) or FILE_TYPES.get(ALIASES.get(key, ""))


__all__ = ["ALIASES", "COMMON", "FILE_TYPES", "globs_for"]
