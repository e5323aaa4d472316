"""The installed distribution's version, read once on first use of `__version__`."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("langchain-fstools")
    """The installed distribution's version (PEP 440)."""
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
