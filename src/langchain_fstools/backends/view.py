"""Backend views: a backend wrapped to see less or to remember more.

`BackendView` forwards every call to the backend it wraps, sync and async, so a view
overrides only what it changes: the guarded view (`backends.guarded`) hides and refuses
paths, the history recorder (`history.recording`) remembers what changed, a rerooted
mount (`backends.mounted`) renames paths. A test lists what must be forwarded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.core import paths
from langchain_fstools.errors import PartialWrite

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator, Sequence

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.changesets import ChangeReview, ChangeSet
    from langchain_fstools.core.results import Deletion, ExecutionResult, Write
    from langchain_fstools.search.contract import NativeSearch, SearchPart
    from langchain_fstools.shell.sandbox.overlay import Layer
    from langchain_fstools.shell.session.background import Processes

T = TypeVar("T")


class BackendView(Backend):
    """A backend that forwards every call to `inner`; subclasses change some."""

    def __init__(self, inner: Backend) -> None:
        """Wrap `inner`."""
        self.inner = inner
        self.supports_execute = inner.supports_execute

    @property
    def kind(self) -> str:  # type: ignore[override]  # a view reports its inner backend's kind
        """The wrapped backend's kind."""
        return self.inner.kind

    @property
    def traced_kind(self) -> str:
        """The wrapped backend's traced kind."""
        return self.inner.traced_kind

    def native_search(self) -> NativeSearch | None:
        """The wrapped backend's native search."""
        return self.inner.native_search()

    def storage_key(self) -> Hashable:
        """The wrapped backend's storage: a view keeps no files of its own."""
        return self.inner.storage_key()

    def storage_overlaps(self, key: Hashable) -> bool:
        """Forwarded."""
        return self.inner.storage_overlaps(key)

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The wrapped backend's search parts."""
        return self.inner.search_parts(directory)

    def run_blocking(self, function: Callable[[], T]) -> T:
        """Run as the wrapped backend runs blocking work."""
        return self.inner.run_blocking(function)

    async def arun_blocking(self, function: Callable[[], T]) -> T:
        """Async `run_blocking`, as the wrapped backend does it."""
        return await self.inner.arun_blocking(function)

    def state_update(self) -> dict[str, Any]:
        """The wrapped backend's graph-state writes."""
        return self.inner.state_update()

    def stat(self, path: str) -> FileInfo:
        """Forwarded."""
        return self.inner.stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Forwarded."""
        return self.inner.read_bytes(path, start, size)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Forwarded."""
        return self.inner.read_checked(path, start, size, expected_version=expected_version)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Forwarded."""
        return self.inner.write_bytes(path, data, expected_version=expected_version)

    def delete(self, path: str) -> None:
        """Forwarded."""
        self.inner.delete(path)

    def mkdir(self, path: str) -> None:
        """Forwarded."""
        self.inner.mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        return self.inner.list_dir(path)

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """Forwarded."""
        return self.inner.list_page(path, after=after, limit=limit)

    def exists(self, path: str) -> bool:
        """Forwarded."""
        return self.inner.exists(path)

    def move(self, source: str, destination: str) -> FileInfo:
        """Forwarded."""
        return self.inner.move(source, destination)

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Forwarded (the wrapped backend's own batch: one sync for all, say)."""
        return self.inner.write_many(writes, deletions, receipt=receipt)

    def committed(self, receipt: str) -> bool:
        """Forwarded."""
        return self.inner.committed(receipt)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Forwarded."""
        return self.inner.walk(path)

    def resolve(self, path: str) -> str:
        """Forwarded."""
        return self.inner.resolve(path)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Forwarded."""
        return self.inner.execute(command, timeout=timeout, output_limit=output_limit)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Forwarded."""
        return self.inner.execute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layer
        )

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Forwarded."""
        return self.inner.commit(changes)

    def judge_changes(self, changes: ChangeSet) -> ChangeReview:
        """Forwarded."""
        return self.inner.judge_changes(changes)

    def processes(self) -> Processes | None:
        """Forwarded."""
        return self.inner.processes()

    def contains_commands(self) -> bool:
        """Forwarded."""
        return self.inner.contains_commands()

    def contains_background(self) -> bool:
        """Forwarded."""
        return self.inner.contains_background()

    def hides_from_commands(self) -> bool:
        """Forwarded."""
        return self.inner.hides_from_commands()

    def command_root(self) -> str | None:
        """Forwarded."""
        return self.inner.command_root()

    def command_network(self) -> bool | tuple[str, ...] | None:
        """Forwarded."""
        return self.inner.command_network()

    async def astat(self, path: str) -> FileInfo:
        """Forwarded."""
        return await self.inner.astat(path)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Forwarded."""
        return await self.inner.aread_bytes(path, start, size)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Forwarded."""
        return await self.inner.aread_checked(path, start, size, expected_version=expected_version)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Forwarded."""
        return await self.inner.awrite_bytes(path, data, expected_version=expected_version)

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Forwarded."""
        return await self.inner.awrite_many(writes, deletions, receipt=receipt)

    async def acommitted(self, receipt: str) -> bool:
        """Forwarded."""
        return await self.inner.acommitted(receipt)

    async def adelete(self, path: str) -> None:
        """Forwarded."""
        await self.inner.adelete(path)

    async def amkdir(self, path: str) -> None:
        """Forwarded."""
        await self.inner.amkdir(path)

    async def aresolve(self, path: str) -> str:
        """Forwarded."""
        return await self.inner.aresolve(path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        return await self.inner.alist_dir(path)

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Forwarded."""
        return await self.inner.alist_page(path, after=after, limit=limit)

    async def aexists(self, path: str) -> bool:
        """Forwarded."""
        return await self.inner.aexists(path)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Forwarded."""
        return await self.inner.amove(source, destination)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Forwarded."""
        return await self.inner.aexecute(command, timeout=timeout, output_limit=output_limit)

    async def aexecute_changes(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Forwarded."""
        return await self.inner.aexecute_changes(
            command, timeout=timeout, output_limit=output_limit, layer=layer
        )

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Forwarded."""
        return await self.inner.acommit(changes)

    async def ajudge_changes(self, changes: ChangeSet) -> ChangeReview:
        """Forwarded."""
        return await self.inner.ajudge_changes(changes)


def as_given(
    partial: PartialWrite, sent: Sequence[Write | Deletion], given: Sequence[Write | Deletion]
) -> PartialWrite:
    """`partial`, raised by a batch of rewritten paths (`sent`), naming the paths as `given`."""
    names = {s.path: g.path for s, g in zip(sent, given, strict=True)}
    written = tuple(names.get(path, path) for path in partial.written)
    return PartialWrite(written, partial.cause)


__all__ = ["BackendView", "as_given"]
