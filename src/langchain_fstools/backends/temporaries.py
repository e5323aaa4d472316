"""The temporary files that atomic writes rename into place, named alike on every backend."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from typing import Final

TEMP_SUFFIX: Final = ".fstools-tmp"
"""Suffix of the temporary files atomic writes rename into place."""

_STEM_BYTES: Final = 200
"""Bytes of the target's name kept in a temporary's name (255 is the usual name limit)."""


def temporary_name(name: str, tag: str | None = None) -> str:
    """A `.{name}.{tag}.fstools-tmp` name beside `name`, at most 233 bytes long (with a short tag).

    Args:
        name: The target's name.
        tag: What tells this temporary from others, known beforehand (a journaled
            commit's token and the entry's number). Default: 12 random hex digits (from
            `os.urandom`, as `secrets` takes them; `secrets` itself loads `hashlib`,
            which a sandbox's short-lived helper would pay for on every run).
    """
    stem = name.encode("utf-8", "surrogateescape")[:_STEM_BYTES].decode("utf-8", "ignore")
    return f".{stem}.{tag or os.urandom(6).hex()}{TEMP_SUFFIX}"


__all__ = ["TEMP_SUFFIX", "temporary_name"]
