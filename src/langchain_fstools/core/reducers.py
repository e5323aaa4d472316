"""Graph-state reducers for path-keyed channels (`files`, `file_reads`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

V = TypeVar("V")


def merge_keyed(
    current: Mapping[str, V] | None, updates: Sequence[Mapping[str, V | None]]
) -> dict[str, V]:
    """Apply updates in order: a value replaces the key's value, None removes the key.

    Deterministic, batching-invariant (as LangGraph's `DeltaChannel` requires), and
    never mutates its inputs.
    """
    merged = dict(current or {})
    for update in updates:
        for key, value in update.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
    return merged


__all__ = ["merge_keyed"]
