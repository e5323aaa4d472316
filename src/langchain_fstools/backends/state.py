"""Files kept in the agent's LangGraph state, under the `files` channel.

The channel is a `DeltaChannel`: checkpoints store the writes of each step (and a full
snapshot as often as `channels.cadence` decides) rather than a full copy of every file at
every step, so a thread's checkpoints do not grow with the square of its writes. Each
update maps a path to its new record, or to None to delete it.

Tools reach the files through `StateBackend.bind(runtime)`: a view over
`runtime.state["files"]` plus the writes of the current tool call (later reads in the
same call see earlier writes). The tool returns `view.state_update()` in a `Command`,
and the channel's reducer merges it into the state.

Directories are implicit in file paths (`/a/b.txt` makes `/a` a directory) and can also
be explicit records, so empty directories exist. The root `/` always exists.
"""

from __future__ import annotations

import bisect
import errno
import posixpath
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    cast,
)

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (schemas)

from langchain_fstools.backends.modes import os_error
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.channels.cadence import MINIMUM_CADENCE, ScaledDeltaChannel
from langchain_fstools.core import paths
from langchain_fstools.core.records import (
    DIRECTORY_VERSION,
    content_version,
    decode_content,
    encode_content,
)
from langchain_fstools.core.reducers import merge_keyed
from langchain_fstools.errors import InvalidPath, InvalidStateRecord, NotInGraph, VersionConflict

FILES_KEY = "files"
"""Name of the graph-state channel holding the files."""


class FileRecord(TypedDict):
    """One file or directory in graph state (build file records with `file_record`)."""

    content: str
    """The bytes, as UTF-8 text or base64 (see `encoding`); empty for directories."""
    encoding: Literal["utf-8", "base64"]
    """`utf-8` when the bytes decode strictly as UTF-8, else `base64`."""
    kind: Literal["file", "directory"]
    """What the path names."""
    modified_at: float
    """Seconds since the epoch."""
    size: int
    """Size in bytes (0 for directories), so listing and search need not decode."""
    version: str
    """Kind plus content hash (`file:<blake2b-8 hex>`); changes whenever the bytes do."""


def merge_files(
    current: Mapping[str, FileRecord] | None,
    updates: Sequence[Mapping[str, FileRecord | str | bytes | None] | None],
) -> dict[str, FileRecord]:
    """Reducer of the `files` channel: later records replace earlier ones, None deletes.

    An update may be a whole value handed back by LangGraph (a fork, `update_state`, a
    subagent's final state); its records replace those of their paths. Plain text or
    bytes for a path become a file record (modified at the epoch, so the reducer stays
    deterministic; `StateBackend.seed` stamps the current time); records in the
    deepagents shape (`content` as text or a list of lines) are kept as they are and
    read as files. Anything else raises `InvalidStateRecord`, so a bad input fails
    where it enters the state, not later in a tool.

    Deterministic and batching-invariant, as `DeltaChannel` requires
    (`merge_files(merge_files(s, xs), ys) == merge_files(s, xs + ys)`); never mutates
    its inputs.
    """
    return merge_keyed(current, [_accepted(update) for update in updates])


def _accepted(
    update: Mapping[str, FileRecord | str | bytes | None] | None,
) -> Mapping[str, FileRecord | None] | None:
    """`update` with plain seeds made records; raises `InvalidStateRecord` for junk."""
    if update is None:
        return None
    if not isinstance(update, Mapping):
        raise InvalidStateRecord("(the channel)", f"a value of type {type(update).__name__}")
    if all(value is None or _is_record(value) for value in update.values()):
        return update  # type: ignore[return-value]  # checked just above
    return {
        path: None if value is None else _as_record(path, value, 0.0)
        for path, value in update.items()
    }


def _is_record(value: object) -> bool:
    """Whether `value` is a record this backend reads as is (ours, or deepagents')."""
    if type(value) is not dict and not isinstance(value, Mapping):  # dict: the fast common case
        return False
    content = value.get("content")
    return isinstance(content, str) and isinstance(value.get("modified_at", 0.0), float | int)


def _checked(path: str, record: object) -> FileRecord:
    """`record` if this backend reads it as is, else made readable (or refused)."""
    return record if _is_record(record) else _as_record(path, record, 0.0)  # type: ignore[return-value]  # checked


def _as_record(path: str, value: object, now: float) -> FileRecord:
    """A readable record from a seed: text, bytes, or a deepagents-style record."""
    if isinstance(value, str):
        return file_record(value.encode("utf-8"), modified_at=now)
    if isinstance(value, bytes | bytearray):
        return file_record(bytes(value), modified_at=now)
    if not isinstance(value, Mapping):
        raise InvalidStateRecord(path, f"a value of type {type(value).__name__}")
    content = value.get("content")
    if isinstance(content, list) and all(isinstance(line, str) for line in content):
        content = "\n".join(content)  # deepagents' earlier format: a list of lines
    if not isinstance(content, str):
        raise InvalidStateRecord(path, "a record without text 'content'")
    record: dict[str, Any] = dict(value)
    record["content"] = content
    record["modified_at"] = _timestamp(value.get("modified_at"), now)
    if record.get("encoding") not in {"utf-8", "base64"}:
        record["encoding"] = "utf-8"
    return cast("FileRecord", record)  # other keys (deepagents' created_at) are kept


def _timestamp(value: object, default: float) -> float:
    """Seconds since the epoch from a number or an ISO 8601 string (deepagents')."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return default
    return default


FilesChannel = Annotated[
    dict[str, FileRecord], ScaledDeltaChannel(merge_files, snapshot_frequency=MINIMUM_CADENCE)
]
"""State annotation of the `files` channel; declare the field `NotRequired[FilesChannel]`.

`NotRequired` stays outside the alias so type checkers keep the field's type (mypy
rejects `NotRequired` inside a type alias); LangGraph reads the channel either way.
"""


class FilesState(TypedDict):
    """The state a graph needs for `StateBackend`: merge it into your own state."""

    files: NotRequired[FilesChannel]
    """Files in graph state, path → `FileRecord`. Updates map a path to its new record,
    or to None to delete it; checkpoints store deltas, not copies."""


def file_record(data: bytes, *, modified_at: float | None = None) -> FileRecord:
    """Make the record of a file holding `data` (for seeding a graph's state, too).

    Args:
        data: The file's bytes.
        modified_at: Modification time. Default: now.
    """
    content, encoding = encode_content(data)
    return FileRecord(
        content=content,
        encoding=encoding,
        kind="file",
        modified_at=time.time() if modified_at is None else modified_at,
        size=len(data),
        version=content_version("file", data),
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


def record_bytes(record: FileRecord) -> bytes:
    """Return the bytes a file record holds."""
    return decode_content(record["content"], record.get("encoding"))


def file_bytes(files: Mapping[str, FileRecord] | None, path: str) -> bytes:
    """Return the bytes of the file at `path` in a graph's `files` (e.g. a result's).

    The records' shape (`content` as UTF-8 text or base64 per `encoding`, `kind`) is
    decoded here, so callers need not know it.

    Args:
        files: `result["files"]` of an agent run, or any state's `files` value.
        path: The file's workspace path (`/src/app.py`; normalised as the tools do).

    Raises:
        FileNotFoundError: no file at `path`.
        IsADirectoryError: `path` is a directory.

    Example:
        ```python
        from langchain_fstools.backends.state import file_bytes, file_record

        files = {"/notes.txt": file_record(b"hello\n")}
        assert file_bytes(files, "/notes.txt") == b"hello\n"
        ```
    """
    normalized = paths.normalize(path)
    record = (files or {}).get(normalized)
    if record is None:
        below = _prefix(normalized)
        if any(key.startswith(below) for key in files or {}):
            raise os_error(IsADirectoryError, errno.EISDIR, normalized)
        raise os_error(FileNotFoundError, errno.ENOENT, normalized)
    if not _is_file(record):
        raise os_error(IsADirectoryError, errno.EISDIR, normalized)
    return record_bytes(record)


def _is_file(record: FileRecord) -> bool:
    return record.get("kind", "file") != "directory"


class StateBackend(Backend):
    """Files in the agent's graph state (the `files` channel).

    Nothing touches disk; files are checkpointed with the thread. Use it inside a graph
    whose state has the `files` channel (`FilesystemState`, or `FilesState` merged into
    your own state). Unbound (outside a tool call), every method raises `NotInGraph`,
    and so does a call in a graph whose state has no `files` channel: a write there
    would be lost, so none is reported.

    Give the agent files to start with through its input: `StateBackend.seed` turns
    text or bytes per path into the `files` value.

    Args:
        optional: Outside a graph, or without the `files` channel, act as an empty
            directory that refuses writes instead of failing every call (for a mount
            that only fills inside a graph). Default: False.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, StateBackend

        agent = create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])
        agent.invoke({
            "messages": [{"role": "user", "content": "Summarise /notes.md"}],
            "files": StateBackend.seed({"/notes.md": "text", "/logo.png": png_bytes}),
        })
        ```
    """

    kind = "state"
    calls_may_block = False
    shares_namespace = True

    def __init__(self, runtime: object = None, /, *, optional: bool = False) -> None:
        """Keep files in graph state; see the class docstring for `optional`.

        `runtime` is deepagents' spelling (`lambda rt: StateBackend(rt)`), taken and
        ignored: the backend reads the runtime of each call when it is bound.
        """
        del runtime
        self.optional = optional

    @staticmethod
    def seed(
        files: Mapping[str, str | bytes], *, modified_at: float | None = None
    ) -> dict[str, FileRecord]:
        """The `files` value holding `files`, for a graph's input or `update_state`.

        Args:
            files: Absolute path → content: text (stored as UTF-8) or bytes.
            modified_at: Modification time of every file. Default: now.

        Raises:
            InvalidPath: a path that cannot name a file in the workspace.
            TypeError: content that is neither text nor bytes.

        Example:
            ```python
            inputs = {"messages": [...], "files": StateBackend.seed({"/a.md": "# A"})}
            ```
        """
        now = time.time() if modified_at is None else modified_at
        seeded: dict[str, FileRecord] = {}
        for path, content in files.items():
            if not isinstance(content, str | bytes | bytearray):
                raise TypeError(
                    f"StateBackend.seed needs text or bytes for {path!r}, not"
                    f" {type(content).__name__}"
                )
            seeded[paths.normalize(path)] = _as_record(path, content, now)
        return seeded

    def bind(self, runtime: Any) -> Backend:
        """Return a view over `runtime.state["files"]` that records this call's writes.

        Args:
            runtime: The injected `ToolRuntime` (anything with a `.state` mapping).

        Raises:
            NotInGraph: no runtime, a runtime without a graph-state mapping, or a state
                without the `files` channel (unless `optional`).
        """
        state = getattr(runtime, "state", None)
        if not isinstance(state, Mapping):
            if self.optional:
                return _StateView({}, refusal=_not_in_graph())
            raise _not_in_graph()
        if FILES_KEY not in state:
            if self.optional:
                return _StateView({}, refusal=_no_channel())
            raise _no_channel()
        files = state[FILES_KEY]
        return _StateView(files if isinstance(files, Mapping) else {})

    def stat(self, path: str) -> FileInfo:
        """Unbound: raises `NotInGraph`."""
        del path
        raise _not_in_graph()

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Unbound: raises `NotInGraph`."""
        del path, start, size
        raise _not_in_graph()

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Unbound: raises `NotInGraph`."""
        del path, data, expected_version
        raise _not_in_graph()

    def delete(self, path: str) -> None:
        """Unbound: raises `NotInGraph`."""
        del path
        raise _not_in_graph()

    def mkdir(self, path: str) -> None:
        """Unbound: raises `NotInGraph`."""
        del path
        raise _not_in_graph()

    def list_dir(self, path: str) -> list[FileInfo]:
        """Unbound: raises `NotInGraph`."""
        del path
        raise _not_in_graph()


def _not_in_graph() -> NotInGraph:
    return NotInGraph(
        "state",
        "StateBackend keeps files in LangGraph state, so its tools must run inside a "
        "graph (create_agent, or a StateGraph with a ToolNode) whose state includes the "
        "'files' channel (use FilesystemState).",
    )


def _no_channel() -> NotInGraph:
    return NotInGraph(
        "state",
        "this graph's state has no 'files' channel, so StateBackend has nowhere to keep "
        "files and nothing was changed; add the channel to the graph's state "
        "(state_schema=FilesystemState, or FilesState merged into your own state).",
    )


_Tree = dict[str, dict[str, EntryKind]]
"""Directory path → {entry name: kind}, for every directory that exists."""


class _StateView(Backend):
    """The files of one graph state plus the writes of the current tool call.

    The base mapping is never mutated; writes go to an overlay that `state_update`
    reports. Most calls ask about one directory: the base paths, sorted once per call
    (near-linear, as state keeps them mostly in order), answer it by bisection, in
    O(log n + entries below it); a call that lists a second directory (a walk) builds a
    directory index once, kept up to date by writes.
    """

    kind = "state"
    calls_may_block = False

    def __init__(
        self, files: Mapping[str, FileRecord], *, refusal: NotInGraph | None = None
    ) -> None:
        self._base = files
        """The state's records as given: each is checked when it is used (`_checked`), so
        a call pays for the records it touches, not for every file in state."""
        self._refusal = refusal
        """Why this view refuses writes (an unbound optional backend), or None."""
        self._pending: dict[str, FileRecord | None] = {}
        self._decoded: dict[str, bytes] = {}
        self._tree: _Tree | None = None
        self._scanned = False
        self._sorted: list[str] | None = None

    def state_update(self) -> dict[str, Any]:
        """`{"files": {path: record or None}}` for what this call changed, or `{}`."""
        changes = {
            path: record
            for path, record in self._pending.items()
            if record is not self._base.get(path)
        }
        return {FILES_KEY: changes} if changes else {}

    # ----- lookups ---------------------------------------------------------------------

    def _record(self, path: str) -> FileRecord | None:
        if path in self._pending:
            return self._pending[path]
        record = self._base.get(path)
        return None if record is None else _checked(path, record)

    def _records(self) -> Mapping[str, FileRecord]:
        base = self._base
        if not all(_is_record(record) for record in base.values()):
            base = {path: _checked(path, record) for path, record in base.items()}
        if not self._pending:
            return base
        merged = {p: r for p, r in base.items() if p not in self._pending}
        merged.update((p, r) for p, r in self._pending.items() if r is not None)
        return merged

    def _index(self) -> _Tree:
        if self._tree is None:
            tree: _Tree = {paths.ROOT: {}}
            for path, record in self._records().items():
                _link(tree, path, record)
            self._tree = tree
        return self._tree

    def _children(self, directory: str) -> dict[str, EntryKind]:
        """The entries directly inside `directory`: a scan, or the index once it pays."""
        if self._tree is None and not self._scanned:
            self._scanned = True
            children: dict[str, EntryKind] = {}
            for path in self._below(directory):
                _enter(children, path[len(_prefix(directory)) :], self._record(path))
            return children
        return self._index().get(directory, {})

    def _below(self, directory: str) -> Iterator[str]:
        """The paths of the records strictly below `directory`."""
        prefix = _prefix(directory)
        if self._sorted is None:
            self._sorted = sorted(self._base)
        base = self._sorted
        for position in range(bisect.bisect_left(base, prefix), len(base)):
            path = base[position]
            if not path.startswith(prefix):
                break
            if path != paths.ROOT and path not in self._pending:
                yield path
        for path, record in self._pending.items():
            if record is not None and path != paths.ROOT and path.startswith(prefix):
                yield path

    def _has_entries(self, directory: str) -> bool:
        """Whether anything lies below `directory`."""
        if self._tree is not None:
            return bool(self._tree.get(directory))
        if directory == paths.ROOT:  # any record counts, also one not spelled from the root
            return any(p != paths.ROOT and p not in self._pending for p in self._base) or any(
                r is not None and p != paths.ROOT for p, r in self._pending.items()
            )
        return next(self._below(directory), None) is not None

    def _kind(self, path: str) -> EntryKind | None:
        """What `path` names, or None; NotADirectoryError if an ancestor is a file."""
        ancestor = paths.parent(path)
        while ancestor != paths.ROOT:
            record = self._record(ancestor)
            if record is not None and _is_file(record):
                raise os_error(NotADirectoryError, errno.ENOTDIR, path)
            ancestor = paths.parent(ancestor)
        if path == paths.ROOT:
            return EntryKind.DIRECTORY
        record = self._record(path)
        if record is not None:
            return EntryKind.FILE if _is_file(record) else EntryKind.DIRECTORY
        return EntryKind.DIRECTORY if self._has_entries(path) else None

    def _existing(self, path: str) -> EntryKind:
        kind = self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        return kind

    def _info(self, path: str, kind: EntryKind) -> FileInfo:
        record = self._record(path)
        if record is None:  # an implicit directory
            return FileInfo(path, EntryKind.DIRECTORY, 0, 0.0, DIRECTORY_VERSION)
        mtime = float(record.get("modified_at", 0.0))
        if kind is EntryKind.DIRECTORY:
            return FileInfo(path, kind, 0, mtime, record.get("version", DIRECTORY_VERSION))
        size = record.get("size")
        version = record.get("version")
        if not isinstance(size, int) or not version:  # a record written by hand
            data = self._bytes(path, record)
            size, version = len(data), version or content_version("file", data)
        return FileInfo(path, kind, size, mtime, version)

    def _bytes(self, path: str, record: FileRecord) -> bytes:
        cached = self._decoded.get(path)
        if cached is None:
            cached = self._decoded[path] = record_bytes(record)
        return cached

    # ----- changes ---------------------------------------------------------------------

    def _put(self, path: str, record: FileRecord | None) -> None:
        if self._refusal is not None:
            raise self._refusal
        self._pending[path] = record
        self._decoded.pop(path, None)
        if self._tree is None:
            return
        if record is not None:
            _link(self._tree, path, record)
        else:
            self._tree.get(paths.parent(path), {}).pop(posixpath.basename(path), None)
            self._tree.pop(path, None)

    def _ensure_parents(self, path: str) -> None:
        """Give every missing or implicit ancestor of `path` a directory record."""
        missing: list[str] = []
        ancestor = paths.parent(path)
        while ancestor != paths.ROOT and self._record(ancestor) is None:
            missing.append(ancestor)
            ancestor = paths.parent(ancestor)
        for directory in reversed(missing):
            self._put(directory, _directory_record())

    # ----- the core --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`."""
        path = paths.normalize(path)
        return self._info(path, self._existing(path))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a file, or `size` bytes from `start`."""
        path = paths.normalize(path)
        record = self._record(path)
        if self._existing(path) is EntryKind.DIRECTORY or record is None:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if start < 0 or (size is not None and size < 0):
            raise os_error(OSError, errno.EINVAL, path)
        data = self._bytes(path, record)
        if start == 0 and size is None:
            return data
        return data[start:] if size is None else data[start : start + size]

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Replace a file's content, creating parents; conditional on a version if asked."""
        path = paths.normalize(path)
        if self._kind(path) is EntryKind.DIRECTORY:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if expected_version is not None:
            current = self._record(path)
            actual = self._info(path, EntryKind.FILE).version if current is not None else None
            if actual != (None if expected_version == ABSENT else expected_version):
                raise VersionConflict(path, expected_version, actual)
        data = bytes(data)
        # No records for the parents: the file's path makes them directories. They get
        # records only when their last entry goes (`delete`, `move`), to stay as POSIX.
        self._put(path, file_record(data))
        self._decoded[path] = data
        return self._info(path, EntryKind.FILE)

    def delete(self, path: str) -> None:
        """Remove a file or an empty directory; its parent directory stays."""
        path = paths.normalize(path)
        if path == paths.ROOT:
            raise InvalidPath(path, "the workspace root cannot be deleted")
        kind = self._existing(path)
        if kind is EntryKind.DIRECTORY and self._has_entries(path):
            raise os_error(OSError, errno.ENOTEMPTY, path)
        self._ensure_parents(path)
        self._put(path, None)

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine.

        Raises:
            FileExistsError: `path` or one of its parents is a file (the protocol's
                contract, which `LocalBackend` follows too).
        """
        path = paths.normalize(path)
        try:
            kind = self._kind(path)
        except NotADirectoryError:
            raise os_error(FileExistsError, errno.EEXIST, path) from None
        if kind is EntryKind.FILE:
            raise os_error(FileExistsError, errno.EEXIST, path)
        if kind is None:
            self._ensure_parents(path)
            self._put(path, _directory_record())

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries directly inside a directory, sorted by name."""
        path = paths.normalize(path)
        if self._existing(path) is EntryKind.FILE:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        children = self._children(path)
        return [self._info(paths.join(path, name), children[name]) for name in sorted(children)]

    def exists(self, path: str) -> bool:
        """Whether anything exists at `path` (False below a file, too)."""
        try:
            return self._kind(paths.normalize(path)) is not None
        except NotADirectoryError:
            return False

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename a file or a directory tree, as POSIX `rename` does, creating parents.

        A file replaces a file, a directory replaces an empty directory; the moved
        records keep their versions and times.
        """
        origin, target = paths.normalize(source), paths.normalize(destination)
        origin_kind = self._existing(origin)
        target_kind = self._kind(target)
        if origin == target:
            return self._info(target, origin_kind)
        self._refuse_rename(origin, origin_kind, target, target_kind)
        self._ensure_parents(origin)  # the source's folders stay, as after POSIX rename
        record = self._record(origin)
        if origin_kind is EntryKind.FILE and record is not None:
            moved = {origin: record}
        else:
            moved = {p: r for p, r in self._records().items() if paths.is_within(p, origin)}
        if origin not in moved:  # an implicit directory becomes an explicit one
            moved[origin] = _directory_record()
        decoded = {path: self._decoded.get(path) for path in moved}
        for path in moved:
            self._put(path, None)
        for path, record in moved.items():
            new_path = target + path[len(origin) :]
            self._put(new_path, record)
            if (data := decoded[path]) is not None:
                self._decoded[new_path] = data
        if origin_kind is EntryKind.DIRECTORY:
            self._tree = None  # implicit subdirectories moved too: rebuild on need
        return self._info(target, origin_kind)

    def _refuse_rename(
        self, origin: str, origin_kind: EntryKind, target: str, target_kind: EntryKind | None
    ) -> None:
        """Raise what POSIX `rename(origin, target)` raises, in the kernel's order."""
        if paths.is_within(target, origin):
            raise os_error(OSError, errno.EINVAL, target)
        if paths.is_within(origin, target):
            raise os_error(OSError, errno.ENOTEMPTY, target)
        if origin_kind is EntryKind.FILE and target_kind is EntryKind.DIRECTORY:
            raise os_error(IsADirectoryError, errno.EISDIR, target)
        if origin_kind is EntryKind.DIRECTORY and target_kind is EntryKind.FILE:
            raise os_error(NotADirectoryError, errno.ENOTDIR, target)
        if target_kind is EntryKind.DIRECTORY and self._has_entries(target):
            raise os_error(OSError, errno.ENOTEMPTY, target)

    # ----- async: in memory, so no threads ---------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`, run inline."""
        return self.stat(path)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`, run inline."""
        return self.read_bytes(path, start, size)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`, run inline."""
        return self.write_bytes(path, data, expected_version=expected_version)

    async def adelete(self, path: str) -> None:
        """Async `delete`, run inline."""
        self.delete(path)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`, run inline."""
        self.mkdir(path)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`, run inline."""
        return self.list_dir(path)

    async def aexists(self, path: str) -> bool:
        """Async `exists`, run inline."""
        return self.exists(path)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`, run inline."""
        return self.move(source, destination)


def _prefix(directory: str) -> str:
    """What the paths below `directory` start with."""
    return directory if directory == paths.ROOT else directory + "/"


def _enter(children: dict[str, EntryKind], relative: str, record: FileRecord | None) -> None:
    """Enter the record at `relative` (below a directory) as `_link` would index it."""
    name, below, _ = relative.partition("/")
    if not below and record is not None and _is_file(record):
        children[name] = EntryKind.FILE  # an explicit file record wins
    else:
        children.setdefault(name, EntryKind.DIRECTORY)


def _link(tree: _Tree, path: str, record: FileRecord) -> None:
    """Enter `path` and its ancestors into the directory index."""
    if not path.startswith(paths.ROOT) or path == paths.ROOT:
        return
    kind = EntryKind.FILE if _is_file(record) else EntryKind.DIRECTORY
    if kind is EntryKind.DIRECTORY:
        tree.setdefault(path, {})
    child = path
    while child != paths.ROOT:
        head, _, name = child.rpartition("/")
        parent = head or paths.ROOT
        siblings = tree.setdefault(parent, {})
        known = siblings.get(name)
        if known is not None:
            if kind is EntryKind.FILE:  # an explicit file record wins
                siblings[name] = kind
            return
        siblings[name] = kind
        child, kind = parent, EntryKind.DIRECTORY


__all__ = [
    "FILES_KEY",
    "FileRecord",
    "FilesChannel",
    "FilesState",
    "StateBackend",
    "file_bytes",
    "file_record",
    "merge_files",
    "record_bytes",
]
