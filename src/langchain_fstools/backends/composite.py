"""CompositeBackend: mount other backends at top-level directories of one workspace."""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langchain_fstools.backends import paths
from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_fstools.backends.execution import ExecutionResult
    from langchain_fstools.backends.search import SearchPart

MOUNT_VERSION = "mount"


class CompositeBackend(Backend):
    """One workspace made of several backends: a default, and mounts by directory.

    A mount such as `{"/large_tool_results/": StateBackend()}` sends every path in that
    top-level directory to its backend, which sees the full virtual path (paths are not
    re-rooted, so two state-backed mounts never collide). `ls /` shows mount points as
    directories even before they hold anything; searches cover every mount and use each
    part's native search where it has one.

    Args:
        default: Where every path outside a mount goes.
        routes: Mount point (a top-level directory, e.g. `"/memories/"`) → backend.

    Example:
        ```python
        from langchain_fstools import CompositeBackend, LocalBackend, StateBackend

        backend = CompositeBackend(
            LocalBackend("./repo"), {"/large_tool_results/": StateBackend()}
        )
        ```
    """

    kind = "composite"

    def __init__(self, default: Backend, routes: Mapping[str, Backend]) -> None:
        """Mount `routes` over `default`; raises ValueError for a mount that is not top-level."""
        self.default = default
        self.routes: dict[str, Backend] = {}
        for prefix, backend in routes.items():
            mount = paths.normalize(prefix)
            if mount == paths.ROOT or "/" in mount[1:]:
                raise ValueError(f"mount {prefix!r} must be one top-level directory, like '/name/'")
            self.routes[mount] = backend
        self.supports_execute = default.supports_execute

    # ----- routing ---------------------------------------------------------------------

    def _backend(self, path: str) -> Backend:
        return (
            self.routes.get("/" + path.split("/", 2)[1], self.default)
            if path != "/"
            else self.default
        )

    def bind(self, runtime: Any) -> Backend:
        """Bind every part to the run."""
        bound = CompositeBackend(self.default.bind(runtime), {})
        bound.routes = {mount: backend.bind(runtime) for mount, backend in self.routes.items()}
        return bound

    def state_update(self) -> dict[str, Any]:
        """The graph-state writes of every part, channel by channel."""
        merged: dict[str, Any] = {}
        for part in (self.default, *self.routes.values()):
            for channel, update in part.state_update().items():
                merged[channel] = {**merged.get(channel, {}), **update}
        return merged

    def native_search(self) -> None:
        """No single native search: see `search_parts`."""

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The default's part (mounts excluded) plus each mount below `directory`."""
        if directory in self.routes or self._backend(directory) is not self.default:
            return self._backend(directory).search_parts(directory)
        inside = [m for m in self.routes if paths.is_within(m, directory)]
        parts = [
            replace(p, excluded=(*p.excluded, *inside))
            for p in self.default.search_parts(directory)
        ]
        for mount in inside:
            if self.routes[mount].exists(mount):
                parts += self.routes[mount].search_parts(mount)
        return parts

    # ----- the core ----------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata from the owning part; a mount point is always a directory."""
        path = paths.normalize(path)
        try:
            return self._backend(path).stat(path)
        except FileNotFoundError:
            if path in self.routes:
                return FileInfo(path, EntryKind.DIRECTORY, 0, 0.0, MOUNT_VERSION)
            raise

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes from the owning part."""
        path = paths.normalize(path)
        return self._backend(path).read_bytes(path, start, size)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write through the owning part."""
        path = paths.normalize(path)
        if path in self.routes:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        return self._backend(path).write_bytes(path, data, expected_version=expected_version)

    def delete(self, path: str) -> None:
        """Delete through the owning part."""
        path = paths.normalize(path)
        self._backend(path).delete(path)

    def mkdir(self, path: str) -> None:
        """Create a directory in the owning part."""
        path = paths.normalize(path)
        self._backend(path).mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries from the owning part; at the root, mount points join the default's."""
        path = paths.normalize(path)
        if path in self.routes:
            try:
                return self.routes[path].list_dir(path)
            except FileNotFoundError:
                return []
        entries = self._backend(path).list_dir(path)
        if path != paths.ROOT:
            return entries
        shown = {e.path: e for e in entries if e.path not in self.routes}
        for mount in self.routes:
            shown[mount] = self.stat(mount)
        return [shown[p] for p in sorted(shown, key=lambda p: p.rsplit("/", 1)[-1])]

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename within one part; across parts, copy then delete."""
        source, destination = paths.normalize(source), paths.normalize(destination)
        owner = self._backend(source)
        if owner is self._backend(destination):
            return owner.move(source, destination)
        return super().move(source, destination)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Commands run on the default backend."""
        return self.default.execute(command, timeout=timeout, output_limit=output_limit)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`, on the default backend."""
        return await self.default.aexecute(command, timeout=timeout, output_limit=output_limit)


__all__ = ["CompositeBackend"]
