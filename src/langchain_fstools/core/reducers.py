"""Graph-state reducers for path-keyed channels (`files`, `file_reads`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

V = TypeVar("V")


def merge_keyed(
    current: Mapping[str, V] | None, updates: Sequence[Mapping[str, V | None] | None]
) -> dict[str, V]:
    """Apply updates in order: a value replaces the key's value, None removes the key.

    An update may also be a whole value, as LangGraph hands one back (a fork, an
    `update_state`, a subagent's final state): its keys replace the current ones and
    nothing is removed. A None update changes nothing. Deterministic,
    batching-invariant (as LangGraph's `DeltaChannel` requires), and never mutates
    its inputs.
    """
    merged = dict(current or {})
    for update in updates:
        for key, value in (update or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
    return merged


__all__ = ["merge_keyed"]
