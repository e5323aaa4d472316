"""Optional dependencies: a feature whose extra is missing says which, and how to add it."""

from __future__ import annotations

from importlib import import_module

from langchain_fstools.errors import MissingExtra


def require(module: str, *, extra: str, feature: str) -> None:
    """Import `module`, or raise `MissingExtra` naming `extra` and its `pip install`.

    Args:
        module: The optional dependency to import (`"obstore"`).
        extra: The package extra that installs it (`"objectstore"`).
        feature: What needs it, as the sentence names it (`"ObjectStoreBackend"`).

    Raises:
        MissingExtra: `module` does not import.
    """
    try:
        import_module(module)
    except ImportError:
        raise MissingExtra(feature, extra, module) from None


__all__ = ["require"]
