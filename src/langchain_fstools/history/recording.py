"""RecordingBackend: a view that records every file change of a tool call.

Wrap the tools' backend in it and every mutation through any tool (write, edit,
notebook edits, patches) is recorded, with no tool knowing: the view captures a file's
bytes before `write_bytes`, `delete` or `move`, and its version after, and reports the
records as a `file_history` state update (see `langchain_fstools.history.changes`).

Files are recorded, with the folders a new file's change created (so removing the file
again removes them when left empty), and so are the folders a call created with no file
of its own (`mkdir`, a command's `mkdir -p build/x`), which undoing removes while they
are empty; a directory moved or removed is not. A command's committed change set is
recorded path by path, under the command's tool call id, so undoing the call restores
what the command changed. Calls outside a graph run (no tool call id) are not recorded.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeAlias

from langchain_fstools.backends.view import BackendView, as_given
from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.errors import InvalidPath, PartialWrite
from langchain_fstools.history.changes import (
    HISTORY_KEY,
    MAX_RECORD_BYTES,
    ChangeRecord,
    HistoryUpdate,
    change_record,
    folder_record,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_fstools.backends.protocol import Backend, FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.core.results import Deletion, Write


_Before: TypeAlias = tuple[bytes | None, bool, tuple[str, ...]]
"""A file before a change: its bytes (None if absent), whether they fit in a record, and
the folders the change creates for it."""


class RecordingBackend(BackendView):
    """Record the before-content and after-version of every file a call changes.

    Args:
        inner: The backend to record changes to.
        max_record_bytes: Largest earlier content kept per change; a larger file is
            recorded without it, and cannot be restored. Default: `MAX_RECORD_BYTES`.
    """

    def __init__(self, inner: Backend, *, max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        """Record changes to `inner`."""
        super().__init__(inner)
        self.max_record_bytes = max_record_bytes
        self.tool_call_id: str | None = None
        self.records: list[ChangeRecord] = []

    def bind(self, runtime: Any) -> Backend:
        """Bind the inner backend; record this call's changes under its tool call id."""
        bound = self.inner.bind(runtime)
        tool_call_id = getattr(runtime, "tool_call_id", None)
        if not isinstance(tool_call_id, str):
            return bound
        view = RecordingBackend(bound, max_record_bytes=self.max_record_bytes)
        view.tool_call_id = tool_call_id
        return view

    def state_update(self) -> dict[str, Any]:
        """The inner backend's update plus this call's change records."""
        update = self.inner.state_update()
        if self.records:
            update = {**update, HISTORY_KEY: HistoryUpdate(add=list(self.records))}
        return update

    # ----- recorded changes, one body for sync and async ---------------------------------

    def _capture(self, path: str) -> Effect[_Before]:
        """`path` before a change: its bytes, whether they fit, the folders it creates."""
        try:
            info = yield from calls.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            missing = yield from _missing_folders(path)
            return None, True, missing
        if not info.is_file:
            return None, True, ()
        if info.size > self.max_record_bytes:
            return b"", False, ()
        data = yield from calls.read_bytes(path)
        return data, True, ()

    def _record(self, path: str, before: _Before, after: str | None) -> None:
        if self.tool_call_id is None:
            return
        content, kept, created = before
        self.records.append(
            change_record(
                tool_call_id=self.tool_call_id,
                index=len(self.records),
                path=path,
                before=content,
                kept=kept,
                after=after,
                created_folders=created if after is not None else (),
            )
        )

    def _record_folders(self, folders: Sequence[str]) -> None:
        """Record `folders` as created by this call, but those a file record names already."""
        if self.tool_call_id is None:
            return
        named = {f for r in self.records for f in r.get("created_folders", ())}
        for folder in folders:
            if folder not in named:
                self.records.append(
                    folder_record(
                        tool_call_id=self.tool_call_id, index=len(self.records), path=folder
                    )
                )

    def _write(self, path: str, data: bytes, expected_version: str | None) -> Effect[FileInfo]:
        canonical = paths.normalize(path)
        before = yield from self._capture(canonical)
        info = yield from calls.write_bytes(canonical, data, expected_version=expected_version)
        self._record(info.path, before, info.version)
        return info

    def _write_many(
        self, writes: Sequence[Write], deletions: Sequence[Deletion], receipt: str | None
    ) -> Effect[list[FileInfo]]:
        canonical = [replace(write, path=paths.normalize(write.path)) for write in writes]
        removed = [replace(d, path=paths.normalize(d.path)) for d in deletions]
        befores: list[_Before] = []
        for write in canonical:
            befores.append((yield from self._capture(write.path)))  # noqa: PERF401 - an effect
        gone: list[tuple[str, _Before | None]] = []
        for deletion in removed:
            info = yield from calls.stat(deletion.path)
            before = (yield from self._capture(info.path)) if info.is_file else None
            gone.append((info.path, before))
        try:
            infos = yield from calls.write_many(canonical, removed, receipt=receipt)
        except PartialWrite as partial:
            done = set(partial.written)
            for write, before in zip(canonical, befores, strict=True):
                if write.path not in done:
                    continue
                try:
                    info = yield from calls.stat(write.path)
                except OSError:
                    continue  # gone again: nothing to restore it to later
                self._record(write.path, before, info.version)
            self._record_removed([(path, before) for path, before in gone if path in done])
            sent: list[Write | Deletion] = [*canonical, *removed]
            raise as_given(partial, sent, [*writes, *deletions]) from partial.cause
        for info, before in zip(infos, befores, strict=True):
            self._record(info.path, before, info.version)
        self._record_removed(gone)
        return infos

    def _record_removed(self, removed: Sequence[tuple[str, _Before | None]]) -> None:
        """Record the removal of each file of `removed` (a directory's `before` is None)."""
        for path, before in removed:
            if before is not None:
                self._record(path, before, None)

    def _delete(self, path: str) -> Effect[None]:
        canonical = paths.normalize(path)
        info = yield from calls.stat(canonical)
        before = (yield from self._capture(canonical)) if info.is_file else None
        yield from calls.delete(canonical)
        if before is not None:
            self._record(info.path, before, None)

    def _mkdir(self, path: str) -> Effect[None]:
        canonical = paths.normalize(path)
        missing: tuple[str, ...] = ()
        if canonical != paths.ROOT:
            missing = yield from _missing_folders(posixpath.join(canonical, "_"))
        yield from calls.mkdir(canonical)
        self._record_folders(missing)

    def _move(self, source: str, destination: str) -> Effect[FileInfo]:
        source, destination = paths.normalize(source), paths.normalize(destination)
        source_info = yield from calls.stat(source)
        if not source_info.is_file:
            moved: FileInfo = yield from calls.move(source, destination)
            return moved
        before_source = yield from self._capture(source)
        before_destination = yield from self._capture(destination)
        info = yield from calls.move(source, destination)
        self._record(source, before_source, None)
        self._record(info.path, before_destination, info.version)
        return info

    def _commit(self, changes: ChangeSet) -> Effect[list[FileInfo]]:
        """Commit a command's change set, recording each file it changed (one record a file).

        A folder it added is recorded too (when no new file's record names it already);
        links and other changes to directories are not, nor names that are not UTF-8 (no
        tool can name them to restore them).
        """
        recorded = [c for c in changes.changes if c.entry == "file" and _nameable(c.path)]
        deleted = {c.path for c in changes.changes if c.kind is ChangeKind.DELETED}
        added_folders = [
            c.path
            for c in changes.changes
            if c.entry == "directory"
            and c.kind is ChangeKind.ADDED
            and c.path not in deleted
            and _nameable(c.path)
        ]
        befores: list[_Before] = []
        for change in recorded:
            befores.append((yield from self._capture(change.path)))  # noqa: PERF401 - an effect
        infos = yield from calls.commit(changes)
        versions = {info.path: info.version for info in infos}
        for change, before in zip(recorded, befores, strict=True):
            after = None if change.kind is ChangeKind.DELETED else versions.get(change.path)
            if change.kind is ChangeKind.DELETED or after is not None:
                self._record(change.path, before, after)
        self._record_folders(sorted(added_folders, key=lambda f: f.count("/"), reverse=True))
        return infos

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Commit a command's changes, recording each file's earlier content."""
        return calls.run(self._commit(changes), self.inner)

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`."""
        return await calls.arun(self._commit(changes), self.inner)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write, recording the file's earlier content."""
        return calls.run(self._write(path, data, expected_version), self.inner)

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Write and remove as one batch, recording each file's earlier content."""
        return calls.run(self._write_many(writes, deletions, receipt), self.inner)

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`."""
        return await calls.arun(self._write_many(writes, deletions, receipt), self.inner)

    def delete(self, path: str) -> None:
        """Delete, recording a file's earlier content."""
        calls.run(self._delete(path), self.inner)

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents, recording those it created."""
        calls.run(self._mkdir(path), self.inner)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await calls.arun(self._mkdir(path), self.inner)

    def move(self, source: str, destination: str) -> FileInfo:
        """Move, recording both ends."""
        return calls.run(self._move(source, destination), self.inner)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return await calls.arun(self._write(path, data, expected_version), self.inner)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await calls.arun(self._delete(path), self.inner)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await calls.arun(self._move(source, destination), self.inner)


def _missing_folders(path: str) -> Effect[tuple[str, ...]]:
    """The folders above `path` that do not exist, deepest first (stops at one that does)."""
    missing: list[str] = []
    folder = posixpath.dirname(path)
    while folder != paths.ROOT:
        try:
            yield from calls.stat(folder)
        except (FileNotFoundError, NotADirectoryError):
            missing.append(folder)
            folder = posixpath.dirname(folder)
            continue
        break
    return tuple(missing)


def _nameable(path: str) -> bool:
    try:
        paths.normalize(path)
    except InvalidPath:
        return False
    return True


__all__ = ["RecordingBackend"]
