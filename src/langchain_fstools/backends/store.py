"""Files in a LangGraph `BaseStore` (InMemoryStore, PostgresStore, ...).

Layout. Under the backend's namespace `ns`, a directory is a namespace and a file is a
key, so listing one directory reads that directory only:

    /notes/todo.md  ->  namespace ns + ("notes", "%entries"), key "todo.md"
    /notes          ->  namespace ns + ("%entries",),         key "notes"  (a marker)

Each directory's entries (files and subdirectory markers) live in the namespace of
its path plus the label `%entries`; no encoded name can equal that label, so a prefix
search of that namespace returns exactly one directory, and a prefix search of the
directory's own namespace returns its whole subtree (what glob and grep walk). Store
labels may not contain `.`, so names are escaped (`%` -> `%25`, `.` -> `%2E`) in
namespaces; keys keep the plain name. Every directory has a marker in its parent, so
empty directories exist and parents are found with one batch of gets.

Values mirror the graph-state records: `kind`, `content` (UTF-8 text, or base64 for
other bytes and for text holding NUL, which PostgreSQL's jsonb refuses), `encoding`,
`size`, `version` (a content hash) and `modified_at`. Files are never indexed for
semantic search and carry no TTL.

Writes. A conditional write (`expected_version`) is checked right before the put. On
`PostgresStore` and `AsyncPostgresStore` the check and the put are one SQL statement
(`backends.store_postgres`), a real compare-and-swap: of two racing writers, one wins
and the other gets `VersionConflict`. On other stores the check is a get followed by
a put; two writers in different processes can both pass the check in the window
between them (the last put wins). `InMemoryStore` lives in one process, where the
async path never yields between the two.

Sync and async share one body: each operation is a generator that yields store
requests (a batch of langgraph `Op`s, or a conditional put), driven by `store.batch`
or `await store.abatch`.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langchain_fstools.backends.modes import os_error
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.backends.store_cas import ConditionalPut, ConditionalWrites, Namespace
from langchain_fstools.core import calls, paths
from langchain_fstools.core.records import (
    DIRECTORY_VERSION,
    content_version,
    decode_content,
    encode_content,
)
from langchain_fstools.errors import InvalidPath, NotInGraph, StoreUnavailable, VersionConflict
from langchain_fstools.search.contract import SearchPart

if TYPE_CHECKING:
    from collections.abc import Hashable

    from langgraph.store.base import Op

T = TypeVar("T")

ENTRIES = "%entries"
"""Last namespace label of a directory's entries; no escaped name can equal it."""

DEFAULT_NAMESPACE = ("filesystem",)
"""Namespace used when none is given."""

FIRST_PAGE = 1000
"""Items asked of the first `search` of a directory; a full page asks again, 8x larger.

Each answer is one query (one snapshot): offset pages of a store ordered by update
time can skip or repeat items that share a timestamp, so a directory is re-read whole
with a larger limit instead."""


NamespaceSource = Namespace | Callable[[Any], Namespace]


@dataclass(frozen=True, slots=True)
class StoreBatch:
    """A request: run these ops in one `batch` / `abatch`."""

    ops: tuple[Op, ...]


StoreRequest = StoreBatch | ConditionalPut
StoreEffect = Generator[StoreRequest, Any, T]
"""A computation over a store: yields requests, receives their results."""


class StoreBackend(Backend):
    """Files kept in a LangGraph store, shared across threads (per user, per assistant...).

    The store is the one given, or else the agent's (`create_agent(..., store=...)`,
    reached through the tool runtime). The namespace is a tuple, or a function of the
    runtime that returns one, to keep each user's files apart. `ls` and `glob` cost
    grows with the directory they look at, not with the namespace (see the module
    docstring for the layout). The async tools use the store's async API.

    Args:
        store: The store. Default: the graph's store (`runtime.store`).
        namespace: Namespace tuple, or a function of the tool runtime returning one
            (e.g. `lambda rt: ("fs", rt.context.user_id)`). Labels are non-empty
            strings without `.`. Default: `("filesystem",)`.

    Raises:
        ValueError: a namespace tuple with invalid labels.

    Example:
        ```python
        from langchain.agents import create_agent
        from langgraph.store.memory import InMemoryStore
        from langchain_fstools import FilesystemMiddleware, StoreBackend

        agent = create_agent(
            model,
            middleware=[
                FilesystemMiddleware(
                    backend=StoreBackend(namespace=lambda rt: ("fs", rt.context.user_id))
                )
            ],
            store=InMemoryStore(),
            context_schema=Context,
        )
        ```
    """

    kind = "store"

    def __init__(
        self, store: BaseStore | None = None, *, namespace: NamespaceSource = DEFAULT_NAMESPACE
    ) -> None:
        """Keep the store and the namespace (checked now when it is a tuple).

        A runtime given for `store` (deepagents' `lambda rt: StoreBackend(rt)`) counts
        as None: the graph's store, which the backend reads of each call when bound.
        """
        if store is not None and not isinstance(store, BaseStore) and hasattr(store, "state"):
            store = None  # a ToolRuntime: its store is the graph's, read per call
        self.store = store
        self.namespace = namespace if callable(namespace) else _checked_namespace(namespace)
        self._writes: ConditionalWrites | None = _conditional_writes(store)
        self._bound = False
        self._search_root: str | None = None
        self._cache: _Subtree | None = None

    # ----- binding -------------------------------------------------------------------------

    def storage_key(self) -> Hashable:
        """The store (or the graph's, when none is given) and the namespace (or its function)."""
        return self._storage()

    def _storage(self) -> tuple[str, int | None, int | tuple[str, ...]]:
        namespace = id(self.namespace) if callable(self.namespace) else self.namespace
        return ("store", None if self.store is None else id(self.store), namespace)

    def storage_overlaps(self, key: Hashable) -> bool:
        """Whether `key` is this store's storage, or a namespace inside or around its own.

        A namespace inside another is one of its directories (`("fs", "memories")` is
        `/memories` of `("fs",)`). A namespace function is compared by identity until a
        run binds it (`CompositeBackend` checks again then).
        """
        mine = self._storage()
        if mine == key:
            return True
        if not isinstance(key, tuple) or len(key) != len(mine) or key[:2] != mine[:2]:
            return False
        ours, theirs = mine[2], key[2]
        if not isinstance(ours, tuple) or not isinstance(theirs, tuple):
            return False
        shorter = min(len(ours), len(theirs))
        return ours[:shorter] == theirs[:shorter]

    def bind(self, runtime: Any) -> Backend:
        """Return a backend on this call's store and namespace.

        Args:
            runtime: The injected `ToolRuntime` (its `store`, and what the namespace
                function reads), or None outside a graph.

        Raises:
            NotInGraph: no store, or a namespace function that cannot be evaluated.
        """
        store = self.store if self.store is not None else getattr(runtime, "store", None)
        if store is None:
            raise _no_store()
        namespace = self.namespace
        if callable(namespace):
            try:
                namespace = _checked_namespace(namespace(runtime))
            except Exception as exc:  # any failure of the user's function
                raise NotInGraph(
                    "store",
                    "StoreBackend could not compute its namespace from the graph runtime"
                    f" ({type(exc).__name__}); run the tools inside the graph with the"
                    " context the namespace function reads.",
                ) from exc
        bound = StoreBackend(store, namespace=namespace)
        bound._bound = True
        return bound

    def search_parts(self, directory: str) -> list[SearchPart]:
        """Walk `directory` through the core; a bound backend reads its subtree at once.

        The next `list_dir` of `directory` fetches the whole subtree in one search and
        serves the walk from it until this call writes anything (the tools bind a new
        backend for every call, so nothing outlives one call).
        """
        if self._bound:
            self._search_root = paths.normalize(directory)
        return [SearchPart(directory, None)]

    # ----- the core, sync --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`."""
        return self._run(self._stat(path))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a file, or `size` bytes from `start`."""
        return self._run(self._read_bytes(path, start, size))

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Replace a file's content, creating parents; conditional on a version if asked."""
        return self._run(self._write_bytes(path, data, expected_version))

    def delete(self, path: str) -> None:
        """Remove a file or an empty directory."""
        self._run(self._delete(path))

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""
        self._run(self._mkdir(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries directly inside a directory, sorted by name."""
        return self._run(self._list_dir(path))

    def exists(self, path: str) -> bool:
        """Whether anything exists at `path` (one batch of gets)."""
        return self._run(self._exists(path))

    def move(self, source: str, destination: str) -> FileInfo:
        """Move a file, keeping its version and time; the destination is replaced."""
        return self._run(self._move(source, destination))

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, each directory sorted by name (one search)."""
        subtree = self._run(self._subtree(path))
        yield from subtree.walk(subtree.root)

    # ----- the core, async -------------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`, on the store's async API."""
        return await self._arun(self._stat(path))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`, on the store's async API."""
        return await self._arun(self._read_bytes(path, start, size))

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`, on the store's async API."""
        return await self._arun(self._write_bytes(path, data, expected_version))

    async def adelete(self, path: str) -> None:
        """Async `delete`, on the store's async API."""
        await self._arun(self._delete(path))

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`, on the store's async API."""
        await self._arun(self._mkdir(path))

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`, on the store's async API."""
        return await self._arun(self._list_dir(path))

    async def aexists(self, path: str) -> bool:
        """Async `exists`, on the store's async API."""
        return await self._arun(self._exists(path))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`, on the store's async API."""
        return await self._arun(self._move(source, destination))

    # ----- drivers ---------------------------------------------------------------------------

    def _target(self) -> tuple[BaseStore, Namespace]:
        if self.store is None:
            raise _no_store()
        if callable(self.namespace):
            raise NotInGraph(
                "store",
                "StoreBackend's namespace is computed from the graph runtime, so its tools"
                " must run inside a graph (or give StoreBackend a namespace tuple).",
            )
        return self.store, self.namespace

    def _run(self, effect: StoreEffect[T]) -> T:
        store, _ = self._target()

        def perform(request: StoreRequest) -> Any:
            try:
                if isinstance(request, StoreBatch):
                    return store.batch(request.ops)
                assert self._writes is not None  # noqa: S101 - only yielded then
                return self._writes.put(request)
            except Exception as exc:  # any store failure
                raise StoreUnavailable(type(exc).__name__) from exc

        return calls.drive(effect, perform)

    async def _arun(self, effect: StoreEffect[T]) -> T:
        store, _ = self._target()

        async def perform(request: StoreRequest) -> Any:
            try:
                if isinstance(request, StoreBatch):
                    return await store.abatch(request.ops)
                assert self._writes is not None  # noqa: S101 - only yielded then
                return await self._writes.aput(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any store failure
                raise StoreUnavailable(type(exc).__name__) from exc

        return await calls.adrive(effect, perform)

    # ----- layout ----------------------------------------------------------------------------

    def _directory_namespace(self, directory: str) -> Namespace:
        _, base = self._target()
        return base + tuple(_label(part) for part in directory.split("/") if part)

    def _entries(self, directory: str) -> Namespace:
        return (*self._directory_namespace(directory), ENTRIES)

    def _slot(self, path: str) -> tuple[Namespace, str]:
        return self._entries(paths.parent(path)), path.rsplit("/", 1)[1]

    # ----- lookups ---------------------------------------------------------------------------

    def _chain(self, path: str) -> StoreEffect[list[tuple[str, dict[str, Any] | None]]]:
        """The records of every ancestor of `path` (root excluded) and of `path`, top down."""
        chain: list[str] = []
        current = path
        while current != paths.ROOT:
            chain.append(current)
            current = paths.parent(current)
        chain.reverse()
        if not chain:
            return []
        items = yield StoreBatch(tuple(GetOp(*self._slot(p), refresh_ttl=False) for p in chain))
        return [
            (p, item.value if item is not None else None)
            for p, item in zip(chain, items, strict=True)
        ]

    def _lookup(self, path: str) -> StoreEffect[dict[str, Any] | None]:
        """The record at `path` (the root has none); None when nothing is there.

        Raises:
            NotADirectoryError: an ancestor of `path` is a file.
        """
        cached = self._cached_record(path)
        if cached is not None:
            return cached[1]
        chain = yield from self._chain(path)
        for _, record in chain[:-1]:
            if record is None:
                return None
            if _is_file(record):
                raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        return chain[-1][1] if chain else None

    def _kind(self, path: str) -> StoreEffect[tuple[EntryKind | None, dict[str, Any] | None]]:
        if path == paths.ROOT:
            return EntryKind.DIRECTORY, None
        record = yield from self._lookup(path)
        if record is None:
            return None, None
        return (EntryKind.FILE if _is_file(record) else EntryKind.DIRECTORY), record

    def _search_all(self, namespace: Namespace) -> StoreEffect[list[Item]]:
        """Every item in `namespace` and below it (see `FIRST_PAGE`)."""
        limit = FIRST_PAGE
        while True:
            (items,) = yield StoreBatch((_search(namespace, limit),))
            if len(items) < limit:
                return list(items)
            limit *= 8

    # ----- the search cache ------------------------------------------------------------------

    def _cached_record(self, path: str) -> tuple[str, dict[str, Any] | None] | None:
        """(path, record) from the subtree read for a search, if it covers `path`."""
        cache = self._cache
        if cache is None or path == paths.ROOT or not paths.is_within(path, cache.root):
            return None
        if path == cache.root:
            return None
        children = cache.children.get(paths.parent(path))
        if children is None:
            return None
        return path, children.get(path.rsplit("/", 1)[1])

    def _forget(self) -> None:
        self._cache = None
        self._search_root = None

    def _subtree(self, path: str) -> StoreEffect[_Subtree]:
        """Read every entry below directory `path` with one search."""
        path = paths.normalize(path)
        kind, _ = yield from self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.FILE:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        _, base = self._target()
        items = yield from self._search_all(self._directory_namespace(path))
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for item in items:
            if item.namespace[-1:] != (ENTRIES,):
                continue
            labels = item.namespace[len(base) : -1]
            directory = paths.ROOT + "/".join(_unlabel(label) for label in labels)
            found.setdefault(directory, {})[item.key] = item.value
        reachable: dict[str, dict[str, dict[str, Any]]] = {}
        pending = [path]
        while pending:
            directory = pending.pop()
            entries = reachable[directory] = found.get(directory, {})
            pending += [
                paths.join(directory, name) for name, rec in entries.items() if not _is_file(rec)
            ]
        return _Subtree(path, reachable)

    # ----- operations --------------------------------------------------------------------------

    def _stat(self, path: str) -> StoreEffect[FileInfo]:
        path = paths.normalize(path)
        kind, record = yield from self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        return _info(path, record)

    def _exists(self, path: str) -> StoreEffect[bool]:
        path = paths.normalize(path)
        try:
            kind, _ = yield from self._kind(path)
        except NotADirectoryError:
            return False
        return kind is not None

    def _read_bytes(self, path: str, start: int, size: int | None) -> StoreEffect[bytes]:
        path = paths.normalize(path)
        kind, record = yield from self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.DIRECTORY or record is None:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if start < 0 or (size is not None and size < 0):
            raise os_error(OSError, errno.EINVAL, path)
        data = record_bytes(record)
        if start == 0 and size is None:
            return data
        return data[start:] if size is None else data[start : start + size]

    def _write_bytes(
        self, path: str, data: bytes, expected_version: str | None
    ) -> StoreEffect[FileInfo]:
        path = paths.normalize(path)
        parents, current = yield from self._file_slot(path)
        actual = current.get("version") if current is not None else None
        if expected_version is not None and actual != (
            None if expected_version == ABSENT else expected_version
        ):
            raise VersionConflict(path, expected_version, actual)
        record = file_value(bytes(data))
        namespace, key = self._slot(path)
        try:
            done = yield from self._put_file(namespace, key, record, parents, expected_version)
        except StoreUnavailable:  # the reply was lost: whether the file was stored is read
            if (yield from self._version_at(namespace, key)) != record["version"]:
                raise
            return _info(path, record)
        if not done:
            assert expected_version is not None  # noqa: S101 - only a condition is refused
            now = yield from self._version_at(namespace, key)
            raise VersionConflict(path, expected_version, now)
        return _info(path, record)

    def _put_file(
        self,
        namespace: Namespace,
        key: str,
        record: dict[str, Any],
        parents: tuple[PutOp, ...],
        expected_version: str | None,
    ) -> StoreEffect[bool]:
        """Put `record` (and the missing `parents`), conditionally where the store can.

        Returns:
            False when the store's compare-and-swap refused the condition.
        """
        if expected_version is None or self._writes is None:
            yield StoreBatch((*parents, _put(namespace, key, record)))
            return True
        if parents:
            yield StoreBatch(parents)
        expected = None if expected_version == ABSENT else expected_version
        done: bool = yield ConditionalPut(namespace, key, record, expected)
        return done

    def _version_at(self, namespace: Namespace, key: str) -> StoreEffect[str | None]:
        """The version of the item at `key` now (None: absent)."""
        (now,) = yield StoreBatch((GetOp(namespace, key, refresh_ttl=False),))
        return now.value.get("version") if now is not None else None

    def _missing_parents(
        self,
        path: str,
        ancestors: list[tuple[str, dict[str, Any] | None]],
        under_file: type[OSError],
    ) -> tuple[PutOp, ...]:
        """Markers for the missing ancestors; `under_file` if an ancestor is a file."""
        missing: list[PutOp] = []
        for ancestor, record in ancestors:
            if record is None:
                missing.append(_put(*self._slot(ancestor), directory_value()))
            elif _is_file(record):
                code = errno.EEXIST if under_file is FileExistsError else errno.ENOTDIR
                raise os_error(under_file, code, path)
        return tuple(missing)

    def _delete(self, path: str) -> StoreEffect[None]:
        path = paths.normalize(path)
        if path == paths.ROOT:
            raise InvalidPath(path, "the workspace root cannot be deleted")
        self._forget()
        kind, _ = yield from self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.DIRECTORY:
            (inside,) = yield StoreBatch((_search(self._entries(path), 1),))
            if inside:
                raise os_error(OSError, errno.ENOTEMPTY, path)
        slot = self._slot(path)
        try:
            yield StoreBatch((_put(*slot, None),))
        except StoreUnavailable:  # the reply was lost: whether it is gone is read
            if (yield from self._version_at(*slot)) is not None:
                raise

    def _mkdir(self, path: str) -> StoreEffect[None]:
        path = paths.normalize(path)
        if path == paths.ROOT:
            return
        self._forget()
        chain = yield from self._chain(path)
        missing = self._missing_parents(path, chain, FileExistsError)
        if missing:
            yield StoreBatch(missing)

    def _list_dir(self, path: str) -> StoreEffect[list[FileInfo]]:
        path = paths.normalize(path)
        if self._search_root == path and self._cache is None:
            self._cache = yield from self._subtree(path)
            self._search_root = None
        cache = self._cache
        if cache is not None and path in cache.children:
            return cache.entries(path)
        kind, _ = yield from self._kind(path)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, path)
        if kind is EntryKind.FILE:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        items = yield from self._search_all(self._entries(path))
        return _Subtree(path, {path: {item.key: item.value for item in items}}).entries(path)

    def _file_slot(self, path: str) -> StoreEffect[tuple[tuple[PutOp, ...], dict[str, Any] | None]]:
        """Where a file is about to be written: its missing parents' puts, its record.

        Raises:
            IsADirectoryError: `path` is the root or a directory.
            NotADirectoryError: a parent is a file.
        """
        if path == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        self._forget()
        chain = yield from self._chain(path)
        parents = self._missing_parents(path, chain[:-1], NotADirectoryError)
        current = chain[-1][1]
        if current is not None and not _is_file(current):
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        return parents, current

    def _move(self, source: str, destination: str) -> StoreEffect[FileInfo]:
        origin, target = paths.normalize(source), paths.normalize(destination)
        kind, record = yield from self._kind(origin)
        if kind is None:
            raise os_error(FileNotFoundError, errno.ENOENT, origin)
        if kind is EntryKind.DIRECTORY or record is None:
            raise os_error(IsADirectoryError, errno.EISDIR, origin)
        if origin == target:
            return _info(origin, record)
        parents, _ = yield from self._file_slot(target)
        yield StoreBatch((*parents, _put(*self._slot(target), record)))
        yield StoreBatch((_put(*self._slot(origin), None),))
        return _info(target, record)


@dataclass(slots=True)
class _Subtree:
    """Directory path -> {name: record} for every directory reachable from `root`."""

    root: str
    children: dict[str, dict[str, dict[str, Any]]]

    def entries(self, directory: str) -> list[FileInfo]:
        found = self.children.get(directory, {})
        return [_info(paths.join(directory, name), found[name]) for name in sorted(found)]

    def walk(self, directory: str) -> Iterator[FileInfo]:
        for entry in self.entries(directory):
            yield entry
            if entry.is_dir:
                yield from self.walk(entry.path)


# ----- records -----------------------------------------------------------------------------


def file_value(data: bytes, *, modified_at: float | None = None) -> dict[str, Any]:
    """The store value of a file holding `data`."""
    content, encoding = encode_content(data)
    return {
        "kind": "file",
        "content": content,
        "encoding": encoding,
        "size": len(data),
        "version": content_version("file", data),
        "modified_at": time.time() if modified_at is None else modified_at,
    }


def directory_value() -> dict[str, Any]:
    """The store value of a directory marker."""
    return {"kind": "directory", "version": DIRECTORY_VERSION, "modified_at": time.time()}


def record_bytes(record: dict[str, Any]) -> bytes:
    """The bytes a file value holds."""
    return decode_content(str(record.get("content", "")), record.get("encoding"))


def _is_file(record: dict[str, Any]) -> bool:
    return bool(record.get("kind", "file") != "directory")


def _info(path: str, record: dict[str, Any] | None) -> FileInfo:
    if record is None:  # the root
        return FileInfo(path, EntryKind.DIRECTORY, 0, 0.0, DIRECTORY_VERSION)
    mtime = float(record.get("modified_at", 0.0))
    if not _is_file(record):
        return FileInfo(path, EntryKind.DIRECTORY, 0, mtime, DIRECTORY_VERSION)
    size = record.get("size")
    version = record.get("version")
    if not isinstance(size, int) or not version:  # a value written by hand
        data = record_bytes(record)
        size = len(data)
        version = version or content_version("file", data)
    return FileInfo(path, EntryKind.FILE, size, mtime, str(version))


def _search(namespace: Namespace, limit: int) -> SearchOp:
    return SearchOp(namespace, None, limit, 0, None, refresh_ttl=False)


def _put(namespace: Namespace, key: str, value: dict[str, Any] | None) -> PutOp:
    return PutOp(namespace, key, value, index=False, ttl=None)


# ----- names -------------------------------------------------------------------------------


def _label(name: str) -> str:
    """A path component as a store namespace label (which may not contain `.`)."""
    return name.replace("%", "%25").replace(".", "%2E")


def _unlabel(label: str) -> str:
    return label.replace("%2E", ".").replace("%25", "%")


def _checked_namespace(namespace: Any) -> Namespace:
    """The namespace as a tuple; ValueError unless its labels are valid store labels."""
    if not isinstance(namespace, (tuple, list)) or not namespace:
        raise ValueError(f"the namespace must be a non-empty tuple of strings, not {namespace!r}")
    labels = tuple(namespace)
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise ValueError(
                f"namespace label {label!r} is invalid: labels are non-empty strings"
                " without '.' or NUL"
            )
    if labels[0] == "langgraph":
        raise ValueError("a namespace may not start with 'langgraph' (reserved by LangGraph)")
    return labels


def _no_store() -> NotInGraph:
    return NotInGraph(
        "store",
        "StoreBackend needs a LangGraph store: pass StoreBackend(store=...), or give the"
        " agent one (create_agent(..., store=...)).",
    )


def _conditional_writes(store: BaseStore | None) -> ConditionalWrites | None:
    """The compare-and-swap of stores that have one (PostgreSQL), else None."""
    if store is None or not type(store).__module__.startswith("langgraph.store.postgres"):
        return None
    from langchain_fstools.backends.store_postgres import (  # noqa: PLC0415 - optional extra
        postgres_writes,
    )

    return postgres_writes(store)


__all__ = [
    "DEFAULT_NAMESPACE",
    "ENTRIES",
    "ConditionalPut",
    "StoreBackend",
    "StoreBatch",
    "directory_value",
    "file_value",
    "record_bytes",
]
