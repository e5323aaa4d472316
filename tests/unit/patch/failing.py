"""A backend wrapper whose N-th file write fails, to exercise the patch rollback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_fstools.backends.protocol import Backend, FileInfo


class FailingWrites(Backend):
    """Delegates to `inner`; the `fail_on`-th `write_bytes` raises PermissionError.

    Bound views share one counter with the wrapper that made them.
    """

    def __init__(self, inner: Backend, fail_on: int, counter: list[int] | None = None) -> None:
        self.inner = inner
        self.fail_on = fail_on
        self.counter = counter if counter is not None else [0]
        self.kind = inner.kind  # type: ignore[misc]

    def bind(self, runtime: Any) -> Backend:
        return FailingWrites(self.inner.bind(runtime), self.fail_on, self.counter)

    def state_update(self) -> dict[str, Any]:
        return self.inner.state_update()

    def stat(self, path: str) -> FileInfo:
        return self.inner.stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        return self.inner.read_bytes(path, start, size)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        self.counter[0] += 1
        if self.counter[0] == self.fail_on:
            raise PermissionError(13, "Permission denied", path)
        return self.inner.write_bytes(path, data, expected_version=expected_version)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def mkdir(self, path: str) -> None:
        self.inner.mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir(path)


class InterferingWrites(FailingWrites):
    """Delegates to `inner`; right before the `on`-th `write_bytes`, runs `interfere`.

    Another writer's changes, made at an exact point of a commit.
    """

    def __init__(self, inner: Backend, on: int, interfere: Callable[[], None]) -> None:
        super().__init__(inner, fail_on=0)
        self.on = on
        self.interfere = interfere

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        if self.counter[0] + 1 == self.on:
            self.interfere()
        return super().write_bytes(path, data, expected_version=expected_version)
