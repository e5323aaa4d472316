"""Permission guards the backends' tests wrap backends with (`GuardedBackend`)."""

from __future__ import annotations


class HidePrefix:
    """A guard hiding every entry whose name starts with `prefix`; the rest is open."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def visible(self, path: str) -> bool:
        return not path.rsplit("/", 1)[-1].startswith(self.prefix)

    def readable(self, path: str) -> bool:
        return True

    def writable(self, path: str) -> bool:
        return True

    def expectation(self, path: str) -> None:
        return None
