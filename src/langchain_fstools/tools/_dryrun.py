"""A copy-on-write view of a backend: a tool runs its own planner, nothing is written.

`FileTool.preview` runs a call's body over a `DryRun`: reads go to the backend (or to
what the call already wrote in the dry run), writes, deletes and moves are kept in
memory under the canonical path the backend resolves them to, and commands are
refused. What is left is the call's exact change: each file's pre-image version and
post-image bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools import errors
from langchain_fstools.backends.protocol import ABSENT, Backend
from langchain_fstools.core.records import digest
from langchain_fstools.core.results import EntryKind, FileInfo
from langchain_fstools.formats import encoding
from langchain_fstools.formats.diff import unified_patch
from langchain_fstools.tools.targets import PlannedFile, Preview

if TYPE_CHECKING:
    from langchain_fstools.core.results import ExecutionResult


class DryRun(Backend):
    """`inner` as seen by a call whose writes are kept in memory."""

    def __init__(self, inner: Backend) -> None:
        """Overlay `inner`; nothing changed yet."""
        self.inner = inner
        self.kind = inner.kind  # type: ignore[misc]  # reports the wrapped family
        self._after: dict[str, bytes | None] = {}
        self._before: dict[str, tuple[str, bytes | None]] = {}

    def preview(self) -> Preview:
        """The changes made so far, with their unified diff."""
        files: list[PlannedFile] = []
        for path, after in self._after.items():
            version, old = self._before[path]
            if old == after:
                continue
            files.append(PlannedFile(path, version, after, _text(old), _text(after)))
        diffs = [unified_patch(f.path, f.old_text, f.new_text) for f in files]
        diff = "".join(d for d in diffs if d) or None
        return Preview(tuple(files), diff)

    def resolve(self, path: str) -> str:
        """The inner backend's resolution."""
        return self.inner.resolve(path)

    def stat(self, path: str) -> FileInfo:
        """The overlay's file, or the inner backend's."""
        key = self.inner.resolve(path)
        if key not in self._after:
            return self.inner.stat(path)
        data = self._after[key]
        if data is None:
            raise FileNotFoundError(2, "No such file or directory", key)
        return FileInfo(key, EntryKind.FILE, len(data), 0.0, "dry-run:" + digest(data))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """The overlay's bytes, or the inner backend's."""
        key = self.inner.resolve(path)
        if key not in self._after:
            return self.inner.read_bytes(path, start, size)
        data = self._after[key]
        if data is None:
            raise FileNotFoundError(2, "No such file or directory", key)
        return data[start:] if size is None else data[start : start + size]

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Keep the write in memory, checking `expected_version` as a backend would."""
        key = self._touch(path)
        current = self._version(path)
        if expected_version is not None and current != expected_version:
            raise errors.VersionConflict(key, expected_version, current or None)
        self._after[key] = data
        return self.stat(path)

    def delete(self, path: str) -> None:
        """Keep the removal in memory."""
        self.stat(path)
        self._after[self._touch(path)] = None

    def mkdir(self, path: str) -> None:
        """Nothing to keep: writes create their parents."""
        del path

    def list_dir(self, path: str) -> list[FileInfo]:
        """The inner listing (a dry run plans changes; it does not list them)."""
        return self.inner.list_dir(path)

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """The inner page (as `list_dir`)."""
        return self.inner.list_page(path, after=after, limit=limit)

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Never: a dry run runs no command."""
        del command, timeout, output_limit
        raise errors.ExecutionUnsupported("dry run")

    def _touch(self, path: str) -> str:
        key = self.inner.resolve(path)
        if key not in self._before:
            try:
                info = self.inner.stat(key)
            except FileNotFoundError:
                self._before[key] = (ABSENT, None)
            else:
                old = self.inner.read_bytes(key) if info.is_file else None
                self._before[key] = (info.version, old)
        return key

    def _version(self, path: str) -> str:
        try:
            return self.stat(path).version
        except FileNotFoundError:
            return ABSENT


def _text(data: bytes | None) -> str:
    if not data:
        return ""
    codec = encoding.detect(data)
    return "" if codec is None else codec.decode(data, errors="replace")


__all__ = ["DryRun"]
