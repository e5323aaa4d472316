"""Files kept in the agent's LangGraph state, under the `files` channel.

The channel is a `DeltaChannel`: checkpoints store the writes of each step rather than a
full copy of every file, so a thread's checkpoints do not grow with every write. Each
update maps a path to its new record, or to None to delete it.

Tools reach the files through `StateBackend.bind(runtime)`, a view over
`runtime.state["files"]` that also holds the writes of the current call; the tool then
returns those writes in a `Command`, and the reducer merges them.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langgraph.channels.delta import DeltaChannel

from langchain_fstools.backends import paths
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.errors import InvalidPath, NotInGraph, VersionConflict
from langchain_fstools.reducers import merge_keyed

FILES_KEY = "files"
"""Name of the graph-state channel holding the files."""

DIRECTORY_VERSION = "directory"


class FileRecord(TypedDict):
    """One file or directory in graph state."""

    content: str
    """The bytes, as UTF-8 text or base64 (see `encoding`); empty for directories."""
    encoding: Literal["utf-8", "base64"]
    """How `content` holds the bytes."""
    kind: Literal["file", "directory"]
    """What the path names."""
    modified_at: float
    """Seconds since the epoch."""
    size: int
    """Size in bytes (0 for directories)."""
    version: str
    """Content hash; changes whenever the bytes change."""


def merge_files(
    current: Mapping[str, FileRecord] | None,
    updates: Sequence[Mapping[str, FileRecord | None]],
) -> dict[str, FileRecord]:
    """Reducer of the `files` channel: later records replace earlier ones, None deletes."""
    return merge_keyed(current, updates)


FilesChannel = Annotated[dict[str, FileRecord], DeltaChannel(merge_files, snapshot_frequency=50)]
"""State annotation of the `files` channel (declare it `NotRequired[FilesChannel]`)."""


class FilesState(TypedDict):
    """The state a graph needs for `StateBackend`."""

    files: NotRequired[FilesChannel]
    """Files in graph state: path → record."""


def file_record(data: bytes) -> FileRecord:
    """Make the record of a file holding `data`."""
    try:
        content, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode("ascii"), "base64"
    digest = hashlib.blake2b(data, digest_size=8).hexdigest()
    return FileRecord(
        content=content,
        encoding=encoding,  # type: ignore[typeddict-item]
        kind="file",
        modified_at=time.time(),
        size=len(data),
        version=digest,
    )


def _directory_record() -> FileRecord:
    return FileRecord(
        content="",
        encoding="utf-8",
        kind="directory",
        modified_at=time.time(),
        size=0,
        version=DIRECTORY_VERSION,
    )


def _record_bytes(record: FileRecord) -> bytes:
    if record["encoding"] == "base64":
        try:
            return base64.b64decode(record["content"], validate=True)
        except binascii.Error:
            return record["content"].encode("utf-8")
    return record["content"].encode("utf-8")


def _os_error(cls: type[OSError], code: int, path: str) -> OSError:
    return cls(code, os.strerror(code), path)


class StateBackend(Backend):
    """Files in the agent's graph state (the `files` channel).

    Nothing touches disk; files are checkpointed with the thread. Use it inside a graph
    whose state has the `files` channel (`FilesystemState`, or `FilesState` merged into
    your own state). Unbound, every method raises `NotInGraph`.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FileToolkit, FilesystemState, StateBackend

        agent = create_agent(
            model, tools=FileToolkit(StateBackend()).get_tools(), state_schema=FilesystemState
        )
        ```
    """

    kind = "state"

    def bind(self, runtime: Any) -> Backend:
        """Return a view over `runtime.state["files"]` that records this call's writes.

        Raises:
            NotInGraph: no runtime, or a runtime without graph state.
        """
        state = getattr(runtime, "state", None)
        if not isinstance(state, Mapping):
            raise self._not_in_graph()
        return _StateView(state.get(FILES_KEY) or {})

    @staticmethod
    def _not_in_graph() -> NotInGraph:
        return NotInGraph(
            "state",
            "StateBackend keeps files in LangGraph state, so its tools must run inside a "
            "graph (create_agent or a ToolNode) whose state has the 'files' channel "
            "(use FilesystemState).",
        )

    def stat(self, path: str) -> FileInfo:
        """Unbound: raises `NotInGraph`."""
        del path
        raise self._not_in_graph()

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Unbound: raises `NotInGraph`."""
        del path, start, size
        raise self._not_in_graph()

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Unbound: raises `NotInGraph`."""
        del path, data, expected_version
        raise self._not_in_graph()

    def delete(self, path: str) -> None:
        """Unbound: raises `NotInGraph`."""
        del path
        raise self._not_in_graph()

    def mkdir(self, path: str) -> None:
        """Unbound: raises `NotInGraph`."""
        del path
        raise self._not_in_graph()

    def list_dir(self, path: str) -> list[FileInfo]:
        """Unbound: raises `NotInGraph`."""
        del path
        raise self._not_in_graph()


class _StateView(Backend):
    """The files of one graph state plus the writes of the current tool call."""

    kind = "state"

    def __init__(self, files: Mapping[str, FileRecord]) -> None:
        self._files = files
        self._pending: dict[str, FileRecord | None] = {}
        self._decoded: dict[str, bytes] = {}
        self._parents: set[str] | None = None
        """Every directory holding something, built on first need, reset by writes."""

    def state_update(self) -> dict[str, Any]:
        return {FILES_KEY: dict(self._pending)} if self._pending else {}

    # ----- lookups ---------------------------------------------------------------------

    def _record(self, path: str) -> FileRecord | None:
        if path in self._pending:
            return self._pending[path]
        return self._files.get(path)

    def _paths(self) -> Iterable[str]:
        if not self._pending:
            return self._files.keys()
        present = {p for p in self._files if p not in self._pending}
        present.update(p for p, r in self._pending.items() if r is not None)
        return present

    def _has_children(self, path: str) -> bool:
        if self._parents is None:
            self._parents = {p.rpartition("/")[0] or paths.ROOT for p in self._paths()}
            for start in list(self._parents):
                directory = start
                while directory != paths.ROOT:
                    directory = paths.parent(directory)
                    if directory in self._parents:
                        break
                    self._parents.add(directory)
        return path in self._parents

    def _kind(self, path: str) -> EntryKind | None:
        """What `path` names; raises NotADirectoryError if an ancestor is a file."""
        self._check_ancestors(path)
        if path == paths.ROOT:
            return EntryKind.DIRECTORY
        record = self._record(path)
        if record is not None:
            return EntryKind.FILE if record["kind"] == "file" else EntryKind.DIRECTORY
        return EntryKind.DIRECTORY if self._has_children(path) else None

    def _check_ancestors(self, path: str) -> None:
        ancestor = paths.parent(path)
        while ancestor != paths.ROOT:
            record = self._record(ancestor)
            if record is not None and record["kind"] == "file":
                raise _os_error(NotADirectoryError, errno.ENOTDIR, path)
            ancestor = paths.parent(ancestor)

    def _info(self, path: str, kind: EntryKind) -> FileInfo:
        record = self._record(path)
        if kind is EntryKind.FILE and record is not None:
            return FileInfo(path, kind, record["size"], record["modified_at"], record["version"])
        mtime = record["modified_at"] if record is not None else 0.0
        return FileInfo(path, EntryKind.DIRECTORY, 0, mtime, DIRECTORY_VERSION)

    def _bytes(self, path: str, record: FileRecord) -> bytes:
        cached = self._decoded.get(path)
        if cached is None:
            cached = self._decoded[path] = _record_bytes(record)
        return cached

    def _put(self, path: str, record: FileRecord | None) -> None:
        self._pending[path] = record
        self._decoded.pop(path, None)
        self._parents = None

    def _ensure_parents(self, path: str) -> None:
        ancestor = paths.parent(path)
        missing: list[str] = []
        while ancestor != paths.ROOT and self._record(ancestor) is None:
            missing.append(ancestor)
            ancestor = paths.parent(ancestor)
        for directory in missing:
            self._put(directory, _directory_record())

    # ----- the core --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        path = paths.normalize(path)
        kind = self._kind(path)
        if kind is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        return self._info(path, kind)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        path = paths.normalize(path)
        kind = self._kind(path)
        if kind is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        record = self._record(path)
        if kind is EntryKind.DIRECTORY or record is None:
            raise _os_error(IsADirectoryError, errno.EISDIR, path)
        data = self._bytes(path, record)
        return data[start:] if size is None else data[start : start + size]

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        path = paths.normalize(path)
        kind = self._kind(path)
        if kind is EntryKind.DIRECTORY:
            raise _os_error(IsADirectoryError, errno.EISDIR, path)
        if expected_version is not None:
            record = self._record(path)
            actual = record["version"] if record is not None else None
            wanted = None if expected_version == ABSENT else expected_version
            if actual != wanted:
                raise VersionConflict(path, expected_version, actual)
        self._ensure_parents(path)
        record = file_record(bytes(data))
        self._put(path, record)
        return self._info(path, EntryKind.FILE)

    def delete(self, path: str) -> None:
        path = paths.normalize(path)
        if path == paths.ROOT:
            raise InvalidPath(path, "the workspace root cannot be deleted")
        kind = self._kind(path)
        if kind is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.DIRECTORY and self._has_children(path):
            raise _os_error(OSError, errno.ENOTEMPTY, path)
        self._put(path, None)

    def mkdir(self, path: str) -> None:
        path = paths.normalize(path)
        kind = self._kind(path)
        if kind is EntryKind.FILE:
            raise _os_error(FileExistsError, errno.EEXIST, path)
        if kind is None or (path != paths.ROOT and self._record(path) is None):
            self._ensure_parents(path)
            self._put(path, _directory_record())

    def list_dir(self, path: str) -> list[FileInfo]:
        path = paths.normalize(path)
        kind = self._kind(path)
        if kind is None:
            raise _os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.FILE:
            raise _os_error(NotADirectoryError, errno.ENOTDIR, path)
        prefix = "/" if path == paths.ROOT else path + "/"
        names: dict[str, EntryKind] = {}
        for candidate in self._paths():
            if candidate.startswith(prefix):
                name, deeper, _ = candidate[len(prefix) :].partition("/")
                record = self._record(prefix + name)
                is_file = not deeper and record is not None and record["kind"] == "file"
                names[name] = EntryKind.FILE if is_file else EntryKind.DIRECTORY
        return [self._info(prefix + name, names[name]) for name in sorted(names)]

    # ----- async: in memory, so no threads ---------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        return self.stat(path)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        return self.read_bytes(path, start, size)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        return self.write_bytes(path, data, expected_version=expected_version)

    async def adelete(self, path: str) -> None:
        self.delete(path)

    async def amkdir(self, path: str) -> None:
        self.mkdir(path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        return self.list_dir(path)

    async def aexists(self, path: str) -> bool:
        return self.exists(path)

    async def amove(self, source: str, destination: str) -> FileInfo:
        return self.move(source, destination)


__all__ = [
    "FILES_KEY",
    "FileRecord",
    "FilesChannel",
    "FilesState",
    "StateBackend",
    "file_record",
    "merge_files",
]
