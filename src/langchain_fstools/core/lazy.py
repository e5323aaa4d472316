"""Public names imported on first use (PEP 562), so importing a package loads nothing above it."""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

from langchain_fstools.core import renamed

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose names live in submodules.

    Args:
        package: The package's `__name__`.
        homes: Each public name and the module defining it.

    Returns:
        The two functions to assign to the package's `__getattr__` and `__dir__`. A name
        is imported on first access and then kept in the package's namespace; a
        deepagents name gets a pointer to ours (`core.renamed`).
    """
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise renamed.missing(package, name)
        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *homes})

    return getattr_, dir_


__all__ = ["lazy_names"]
