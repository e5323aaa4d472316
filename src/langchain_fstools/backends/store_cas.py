"""Compare-and-swap for stores: what `StoreBackend` asks of a store that can do it.

`StoreBackend` writes conditionally through `ConditionalWrites` when its store has
them (`backends.store_postgres` for PostgreSQL); other stores fall back to a check then
a put. Both sides import this module, never each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Namespace = tuple[str, ...]
"""A store namespace."""


@dataclass(frozen=True, slots=True)
class ConditionalPut:
    """A request: put `value` only if the item's version is `expected` (None: absent).

    Answered with True when the put happened.
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    expected: str | None


class ConditionalWrites(Protocol):
    """A store-specific compare-and-swap (see `backends.store_postgres`)."""

    def put(self, request: ConditionalPut) -> bool:
        """Put if the version matches; True when it did."""

    async def aput(self, request: ConditionalPut) -> bool:
        """Async `put`."""


__all__ = ["ConditionalPut", "ConditionalWrites", "Namespace"]
