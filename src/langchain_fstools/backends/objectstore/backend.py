"""`ObjectStoreBackend`: the backend contract mapped onto objects.

Layout. A virtual path is a key under the backend's prefix (`/src/app.py` ->
`<prefix>src/app.py`); a directory is a key prefix, listed a page at a time
(`paging`: subdirectories are folded into one entry, big ones skipped). A
directory with nothing in it keeps a marker object named `MARKER` (`mkdir` writes
one, and deleting the last entry of a directory writes one for it), which no listing
or search shows and no tool may write.

Versions. A file's version is its ETag (with the store's version id, where it gives
one). Writes are conditional on the store itself: an update is a PUT with `If-Match`
on the version the caller read, a create a PUT with `If-None-Match: *`; of two
writers racing on one object, one wins and the other gets `VersionConflict`. A store
without conditional writes is named at construction (see `conditional_writes`), and
there the check is a HEAD right before the PUT (the last writer can win). A store
that claims them proves it at the backend's first write (once; construction makes no
request): a PUT with a wrong `If-Match` and a create of an existing key (the root's
marker) must both be refused, or that write and every later one fail with
`ConditionalWritesIgnored` (s3rver accepts both unchecked).

Costs. `stat` is one HEAD (plus one LIST for a directory), `read_bytes` one GET (a
ranged GET for a window), `list_page` a LIST request per 1,000 keys it needs (a
subdirectory's keys past the first request are skipped on stores that seek), and
`list_dir` the same for the whole directory; a write checks that no
parent is a file and that the path is not a directory (one HEAD per parent and one
LIST, concurrent on the async path), then PUTs and HEADs the result. A view bound to
one tool call (`bind`) saves requests within the call: its stat GETs the first 8 KiB
instead of a HEAD and serves the next read from them, and it reads ahead while an
object is read front to back.

Sync and async share one body: each operation is a generator of `requests`, driven
by obstore's blocking calls or by its native async calls.
"""

from __future__ import annotations

import copy
import errno
import logging
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import obstore.store

from langchain_fstools.backends.modes import os_error
from langchain_fstools.backends.objectstore import paging, requests
from langchain_fstools.backends.objectstore.paging import ListingOrder, directory_info
from langchain_fstools.backends.objectstore.requests import (
    BEYOND_END,
    MARKER,
    Delete,
    Gather,
    Get,
    Head,
    Peek,
    Probe,
    Put,
    StoreEffect,
    Tidy,
)
from langchain_fstools.backends.objectstore.search import ObjectStoreSearch
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo, check_limit
from langchain_fstools.core import paths
from langchain_fstools.errors import (
    ConditionalWritesIgnored,
    InvalidPath,
    StoreUnavailable,
    VersionConflict,
)
from langchain_fstools.formats.encoding import SNIFF_BYTES

if TYPE_CHECKING:
    from collections.abc import Hashable

    from obstore import ObjectMeta, PutMode
    from obstore.store import ObjectStore

    from langchain_fstools.search.contract import NativeSearch

logger = logging.getLogger(__name__)

ConditionalWrites = Literal["full", "create-only", "none"]
"""What a store checks itself: creates and updates, creates only, or nothing."""


class ObjectStoreBackend(Backend):
    """Files as objects in S3, GCS, Azure Blob or any S3-compatible store, via obstore.

    One backend for every store obstore reaches (AWS S3, MinIO, SeaweedFS, Garage,
    Cloudflare R2, Ceph, Google Cloud Storage, Azure Blob, local files, memory). The
    workspace lives under an optional key prefix, so one bucket can hold many. Reads
    of a window fetch a byte range; `glob` and `grep` list the prefix page by page and
    fetch objects concurrently; writes are compare-and-swap on the store (see the
    module docstring). `execute` is not supported.

    Args:
        store: An obstore store (`obstore.store.S3Store(...)`, `GCSStore`,
            `AzureStore`, `MemoryStore`, ...), or a URL such as `s3://bucket`,
            `gs://bucket`, `az://container`, `memory:///` that
            `obstore.store.from_url` understands.
        prefix: Key prefix of the workspace root (`"agents/user-1"`); `/` separates
            levels. Default: `""` (the whole bucket).
        conditional_writes: What the store checks itself: `"full"` (updates and
            creates), `"create-only"` or `"none"`. `"none"` accepts the risk of a store
            that ignores conditions (unsafe with concurrent writers: versions are
            checked by a HEAD before each PUT, and the last writer can win). Default:
            what the store's type and configuration say (`conditional_writes()`),
            proven at the first write.
        **options: Options for `from_url` when `store` is a URL (credentials,
            `endpoint`, `region`, `client_options`, ...).

    Raises:
        ValueError: a prefix with empty, `.` or `..` levels, options given with a
            store object, a URL obstore cannot open, or an unknown `conditional_writes`.

    Warns:
        UserWarning: the store cannot check conditional writes itself (a local
            filesystem store, an HTTP store, S3 with `conditional_put="disabled"`).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, ObjectStoreBackend

        backend = ObjectStoreBackend("s3://my-bucket", prefix="agents/user-1", region="eu-west-1")
        agent = create_agent(model, middleware=[FilesystemMiddleware(backend=backend)])
        ```
    """

    kind = "objectstore"

    def __init__(
        self,
        store: ObjectStore | str,
        *,
        prefix: str = "",
        conditional_writes: ConditionalWrites | None = None,
        **options: Any,
    ) -> None:
        """Open the store (from a URL if given one) and check what it can do."""
        self.store: ObjectStore = _opened(store, options)
        self.prefix = _checked_prefix(prefix)
        self.conditional_writes: ConditionalWrites = _chosen(self.store, conditional_writes)
        """What the store checks itself; see `conditional_writes()`."""
        self._proof = _Proof(pending=conditional_writes is None)
        """Whether the store still has to prove the checks it claims (shared by views)."""
        if conditional_writes is None and self.conditional_writes != "full":
            warnings.warn(
                f"{type(self.store).__name__} cannot check conditional updates"
                + ("" if self.conditional_writes == "create-only" else " or creates")
                + ": ObjectStoreBackend checks versions with a HEAD before each write,"
                " so of two writers racing on one file the last can win.",
                UserWarning,
                stacklevel=2,
            )
        self.listing_order: ListingOrder = paging.listing_order(self.store)
        """How the store lists keys, which decides how far a page's listing runs."""
        self._search: NativeSearch | None = None
        self.read_ahead: ReadAhead | None = None
        """The read-ahead buffer of a view bound to one call (see `bind`); None here."""

    def storage_key(self) -> Hashable:
        """The store object and the key prefix."""
        return ("objectstore", id(self.store), self.prefix)

    def native_search(self) -> NativeSearch:
        """The search for `glob` and `grep`: listing pages, concurrent fetches (`search`)."""
        if self._search is None:
            self._search = ObjectStoreSearch(self)
        return self._search

    def bind(self, runtime: Any) -> Backend:
        """A view for one tool call: the same store, with a read-ahead buffer of its own.

        When the call reads one object front to back in small ranges (the line scan of
        a first window), the view fetches `READ_AHEAD` bytes at once and serves the next
        ranges from them; the buffer dies with the call.
        """
        del runtime
        view = copy.copy(self)
        view.read_ahead = ReadAhead()
        return view

    # ----- keys ------------------------------------------------------------------------------

    def key(self, path: str) -> str:
        """The object key of a canonical virtual path (not the root).

        Raises:
            InvalidPath: a level of the path is the reserved marker name.
        """
        if MARKER in path.split("/"):
            raise InvalidPath(path, f"the name {MARKER} is reserved for directory markers")
        return self.prefix + path[1:]

    def directory_key(self, path: str) -> str | None:
        """The listing prefix of a directory (None: the whole store)."""
        if path == paths.ROOT:
            return self.prefix.rstrip("/") or None
        return self.key(path)

    def path_of(self, key: str) -> str:
        """The virtual path of an object key under the prefix."""
        return "/" + key[len(self.prefix) :]

    def info(self, path: str, meta: ObjectMeta) -> FileInfo:
        """A file's metadata from its object's."""
        return FileInfo(
            path, EntryKind.FILE, meta["size"], meta["last_modified"].timestamp(), version_of(meta)
        )

    # ----- the core, sync ----------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`: a HEAD (and a LIST when no object has its key)."""
        return requests.run(self.store, self._stat(path))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of an object, or `size` bytes from `start` (a ranged GET)."""
        return requests.run(self.store, self._read_bytes(path, start, size))

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Bytes of an object at `expected_version`: one ranged GET, its metadata compared."""
        return requests.run(self.store, self._read_bytes(path, start, size, expected_version))

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write an object whole; conditional on its version (If-Match) if asked."""
        return requests.run(self.store, self._write_bytes(path, data, expected_version))

    def delete(self, path: str) -> None:
        """Remove an object, or an empty directory's marker."""
        requests.run(self.store, self._delete(path))

    def mkdir(self, path: str) -> None:
        """Create a directory (a marker object) unless it already holds something."""
        requests.run(self.store, self._mkdir(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries directly inside a directory, sorted by name (listed in pages)."""
        return requests.run(self.store, self._list_page(path, None, None))

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """A page of a directory's entries, listing only as far as the page needs."""
        check_limit(limit)
        return requests.run(self.store, self._list_page(path, after, limit))

    def move(self, source: str, destination: str) -> FileInfo:
        """Copy an object, then delete the source if it is still the version copied."""
        return requests.run(self.store, self._move(source, destination))

    # ----- the core, async ---------------------------------------------------------------------

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`, on obstore's async calls."""
        return await requests.arun(self.store, self._stat(path))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`, on obstore's async calls."""
        return await requests.arun(self.store, self._read_bytes(path, start, size))

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`, on obstore's async calls."""
        return await requests.arun(
            self.store, self._read_bytes(path, start, size, expected_version)
        )

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`, on obstore's async calls."""
        return await requests.arun(self.store, self._write_bytes(path, data, expected_version))

    async def adelete(self, path: str) -> None:
        """Async `delete`, on obstore's async calls."""
        await requests.arun(self.store, self._delete(path))

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`, on obstore's async calls."""
        await requests.arun(self.store, self._mkdir(path))

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`, on obstore's async calls."""
        return await requests.arun(self.store, self._list_page(path, None, None))

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Async `list_page`, on obstore's async calls."""
        check_limit(limit)
        return await requests.arun(self.store, self._list_page(path, after, limit))

    async def aexists(self, path: str) -> bool:
        """Async `exists`, on obstore's async calls."""
        try:
            await self.astat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`, on obstore's async calls."""
        return await requests.arun(self.store, self._move(source, destination))

    # ----- operations ----------------------------------------------------------------------------

    def _stat(self, path: str) -> StoreEffect[FileInfo]:
        path = paths.normalize(path)
        if path == paths.ROOT:
            return directory_info(path)
        key = self.key(path)
        meta = yield from self._head(key)
        if meta is not None:
            return self.info(path, meta)
        error = yield from self._missing(path)
        if error is None:
            return directory_info(path)
        raise error

    def _head(self, key: str) -> StoreEffect[ObjectMeta | None]:
        """An object's metadata; a bound view also keeps its first bytes for the call.

        A view bound to a call GETs the first `SNIFF_BYTES` instead of a HEAD (one
        request either way): the read that usually follows a stat (telling text from
        binary, or a whole small file) is then served from them, at the same version.
        """
        ahead = self.read_ahead
        if ahead is None:
            meta: ObjectMeta | None = yield Head(key)
            return meta
        peeked = yield Peek(key, 0, SNIFF_BYTES)
        if peeked is None:
            return None
        if peeked == BEYOND_END:  # an empty object: no range to serve
            meta = yield Head(key)
            return meta
        meta, head = peeked
        ahead.keep(key, 0, head, whole=len(head) < meta["size"], version=version_of(meta))
        ahead.last = ("", -1)
        return meta

    def _read_bytes(
        self, path: str, start: int, size: int | None, expected_version: str | None = None
    ) -> StoreEffect[bytes]:
        path = paths.normalize(path)
        if path == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if start < 0 or (size is not None and size < 0):
            raise os_error(OSError, errno.EINVAL, path)
        key = self.key(path)
        if size == 0:
            meta = yield Head(key)
            if meta is None:
                raise (yield from self._missing(path)) or _is_a_directory(path)
            _check_version(path, meta, expected_version)
            return b""
        end = None if size is None else start + size
        ahead = self.read_ahead
        if ahead is None:
            return (yield from self._fetch(path, key, start, end, expected_version))
        served = ahead.serve(key, start, end, expected_version)
        if served is not None:
            return served
        if end is None:
            return (yield from self._fetch(path, key, start, end, expected_version))
        if not ahead.follows(key, start):
            ahead.last = (key, end)
            return (yield from self._fetch(path, key, start, end, expected_version))
        block = yield from self._fetch(path, key, start, start + READ_AHEAD, expected_version)
        ahead.keep(key, start, block, whole=len(block) == READ_AHEAD, version=expected_version)
        ahead.last = (key, end)
        return block[: end - start]

    def _fetch(
        self, path: str, key: str, start: int, end: int | None, expected_version: str | None = None
    ) -> StoreEffect[bytes]:
        """Bytes `start` to `end` of the object at `key` (fewer at its end).

        With `expected_version`, only from that version: the GET's own metadata says
        which version it read (one request, no HEAD before it).
        """

        def fetching(end: int | None) -> Get | Peek:
            return Get(key, start, end) if expected_version is None else Peek(key, start, end)

        answer = yield fetching(end)
        if answer == BEYOND_END:
            meta = yield Head(key)
            if meta is None:
                raise (yield from self._missing(path)) or _is_a_directory(path)
            _check_version(path, meta, expected_version)
            if start >= meta["size"]:
                return b""
            answer = yield fetching(min(end or meta["size"], meta["size"]))
        if answer is None:
            raise (yield from self._missing(path)) or _is_a_directory(path)
        if expected_version is not None:
            meta, answer = answer
            _check_version(path, meta, expected_version)
        return bytes(answer)

    def _write_bytes(
        self, path: str, data: bytes, expected_version: str | None
    ) -> StoreEffect[FileInfo]:
        path = paths.normalize(path)
        if self.read_ahead is not None:
            self.read_ahead.forget()
        if path == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        key = self.key(path)
        yield from self._proven()
        yield from self._check_file_slot(path)
        if expected_version is not None and not self._checks(expected_version):
            current = yield Head(key)
            actual = version_of(current) if current is not None else None
            if actual != (None if expected_version == ABSENT else expected_version):
                raise VersionConflict(path, expected_version, actual)
            expected_version = None
        try:
            written = yield Put(key, bytes(data), _mode(expected_version))
        except StoreUnavailable:  # the reply was lost: whether the object was stored is read
            stored = yield from self._holding(key, data)
            if stored is None:
                raise
            return self.info(path, stored)
        if written is None:
            current = yield Head(key)
            assert expected_version is not None  # noqa: S101 - only a condition is refused
            raise VersionConflict(
                path, expected_version, version_of(current) if current is not None else None
            )
        meta = yield Head(key)
        token = version_of({**written, "size": len(data)})
        if meta is not None and version_of(meta) == token:
            return self.info(path, meta)
        return FileInfo(path, EntryKind.FILE, len(data), time.time(), token)

    def _holding(self, key: str, data: bytes) -> StoreEffect[ObjectMeta | None]:
        """The object at `key` if it holds `data` (a write whose reply was lost landed).

        Raises:
            StoreUnavailable: the store does not answer the re-read either.
        """
        meta = yield Head(key)
        if meta is None or meta["size"] != len(data):
            return None
        found = yield Get(key)
        return meta if found is not None and bytes(found) == data else None

    def _proven(self) -> StoreEffect[None]:
        """Prove, once, that the store refuses the conditional writes it claims to check.

        The probe is the root's marker object (hidden from every listing): written, then
        written again with a wrong `If-Match` (where updates are claimed) and as a
        create (where creates are). Both must be refused.

        Raises:
            ConditionalWritesIgnored: the store accepted one (now, and at every write).
        """
        proof = self._proof
        if proof.ignored:
            raise ConditionalWritesIgnored(_described(self.store), proof.ignored)
        if not proof.pending or self.conditional_writes == "none":
            return
        probe = self.prefix + MARKER
        yield Put(probe, b"", "overwrite")
        ignored: list[str] = []
        updates = self.conditional_writes == "full"
        if updates and (yield Put(probe, b"", {"e_tag": PROBE_ETAG})) is not None:
            ignored.append("If-Match")
        if (yield Put(probe, b"", "create")) is not None:
            ignored.append("If-None-Match")
        proof.pending, proof.ignored = False, tuple(ignored)
        if ignored:
            logger.error("%s", ConditionalWritesIgnored(_described(self.store), proof.ignored))
            raise ConditionalWritesIgnored(_described(self.store), proof.ignored)

    def _check_file_slot(self, path: str) -> StoreEffect[None]:
        """Refuse a write where a directory is, or below a file."""
        ancestors = _ancestors(path)
        found = yield Gather(
            (
                Probe(self.key(path)),
                *(Head(self.key(ancestor)) for ancestor in ancestors),
            )
        )
        if found[0]:
            raise os_error(IsADirectoryError, errno.EISDIR, path)
        if any(meta is not None for meta in found[1:]):
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)

    def _checks(self, expected_version: str) -> bool:
        """Whether the store itself checks this condition."""
        if self.conditional_writes == "full":
            return True
        return self.conditional_writes == "create-only" and expected_version == ABSENT

    def _delete(self, path: str) -> StoreEffect[None]:
        path = paths.normalize(path)
        if self.read_ahead is not None:
            self.read_ahead.forget()
        if path == paths.ROOT:
            raise InvalidPath(path, "the workspace root cannot be deleted")
        key = self.key(path)
        if (yield Head(key)) is not None:
            try:
                yield Delete(key)
            except StoreUnavailable:  # the reply was lost: whether it is gone is read
                if (yield Head(key)) is not None:
                    raise
        else:
            inside = yield Probe(key)
            if not inside:
                raise (yield from self._missing(path)) or _is_a_directory(path)
            if any(meta["path"] != f"{key}/{MARKER}" for meta in inside):
                raise os_error(OSError, errno.ENOTEMPTY, path)
            yield Delete(f"{key}/{MARKER}")
            yield Tidy(key)
        yield from self._keep_parent(path)

    def _keep_parent(self, path: str) -> StoreEffect[None]:
        """Give the parent of a removed entry a marker if nothing else keeps it."""
        parent = paths.parent(path)
        if parent != paths.ROOT and not (yield Probe(self.key(parent))):
            yield Put(f"{self.key(parent)}/{MARKER}", b"", "overwrite")

    def _mkdir(self, path: str) -> StoreEffect[None]:
        path = paths.normalize(path)
        if path == paths.ROOT:
            return
        key = self.key(path)
        found = yield Gather(
            (
                Head(key),
                Probe(key),
                *(Head(self.key(ancestor)) for ancestor in _ancestors(path)),
            )
        )
        if found[0] is not None or any(meta is not None for meta in found[2:]):
            raise os_error(FileExistsError, errno.EEXIST, path)
        if not found[1]:
            yield Put(f"{key}/{MARKER}", b"", "overwrite")

    def _list_page(
        self, path: str, after: str | None, limit: int | None
    ) -> StoreEffect[list[FileInfo]]:
        path = paths.normalize(path)
        found = yield from paging.page(
            self.directory_key(path),
            path,
            after=after,
            limit=limit,
            order=self.listing_order,
            version=version_of,
        )
        if found.met or path == paths.ROOT:
            return found.entries
        if (yield Head(self.key(path))) is not None:
            raise os_error(NotADirectoryError, errno.ENOTDIR, path)
        error = yield from self._missing(path)
        if error is not None:
            raise error
        return found.entries  # a directory, with nothing after `after`

    def _move(self, source: str, destination: str) -> StoreEffect[FileInfo]:
        origin, target = paths.normalize(source), paths.normalize(destination)
        if self.read_ahead is not None:
            self.read_ahead.forget()
        if origin == paths.ROOT:
            raise os_error(IsADirectoryError, errno.EISDIR, origin)
        key = self.key(origin)
        meta = yield Head(key)
        if meta is None:
            raise (yield from self._missing(origin)) or _is_a_directory(origin)
        if origin == target:
            return self.info(origin, meta)
        data = yield Get(key)
        if data is None:
            raise (yield from self._missing(origin)) or _is_a_directory(origin)
        info = yield from self._write_bytes(target, bytes(data), None)
        now = yield Head(key)
        actual = version_of(now) if now is not None else None
        if actual != version_of(meta):
            raise VersionConflict(origin, version_of(meta), actual)
        yield Delete(key)
        yield from self._keep_parent(origin)
        return info

    def _missing(self, path: str) -> StoreEffect[OSError | None]:
        """Why no object has `path`'s key: None for a directory, else the error.

        Raises nothing itself: NotADirectoryError below a file, FileNotFoundError else.
        """
        found = yield Gather(
            (
                Probe(self.key(path)),
                *(Head(self.key(ancestor)) for ancestor in _ancestors(path)),
            )
        )
        if found[0]:
            return None
        if any(meta is not None for meta in found[1:]):
            return os_error(NotADirectoryError, errno.ENOTDIR, path)
        return os_error(FileNotFoundError, errno.ENOENT, path)


READ_AHEAD: Final = 8 * 1024 * 1024
"""Bytes a bound view fetches at once while one object is read front to back."""


@dataclass
class ReadAhead:
    """The block fetched ahead for one call, and where its last read of an object ended."""

    key: str = ""
    start: int = 0
    data: bytes = b""
    whole: bool = True
    """Whether `data` is a full block (else it reaches the object's end)."""
    version: str | None = None
    """The object version the block was read from, when its GET said (None: unknown)."""
    last: tuple[str, int] = ("", -1)

    def follows(self, key: str, start: int) -> bool:
        """Whether a read of `key` from `start` continues the previous one."""
        return self.last == (key, start)

    def serve(
        self, key: str, start: int, end: int | None, version: str | None = None
    ) -> bytes | None:
        """The bytes from the block, if it holds the range (None: to the object's end).

        With `version`, only from a block known to be of that version.
        """
        stop = self.start + len(self.data)
        if key != self.key or start < self.start or start > stop:
            return None
        if (end is None or end > stop) and self.whole:
            return None
        if version is not None and version != self.version:
            return None
        self.last = (key, stop if end is None else end)
        return self.data[start - self.start : None if end is None else end - self.start]

    def keep(self, key: str, start: int, data: bytes, *, whole: bool, version: str | None) -> None:
        """Hold a block just fetched (of `version`, if known)."""
        self.key, self.start, self.data, self.whole = key, start, data, whole
        self.version = version

    def forget(self) -> None:
        """Drop the block and the last read: the call is changing objects."""
        self.key, self.data, self.version, self.last = "", b"", None, ("", -1)


# ----- helpers -----------------------------------------------------------------------------


def version_of(meta: Any) -> str:
    """A version token from an object's metadata or a put's result.

    The ETag, followed by the version id where the store keeps versions; a store that
    gives neither gets its modification time and size.
    """
    e_tag, version = meta["e_tag"], meta.get("version")
    if not e_tag:
        stamp = meta.get("last_modified")
        e_tag = f"{stamp.timestamp() if stamp else ''}-{meta.get('size', '')}"
    return f"{e_tag}{VERSION_SEPARATOR}{version}" if version else str(e_tag)


VERSION_SEPARATOR: Final = "\x00"
"""Between an ETag and a version id in a token (no ETag or version id holds NUL)."""


def _check_version(path: str, meta: ObjectMeta, expected_version: str | None) -> None:
    """Refuse an object read at another version than `expected_version` (None: any)."""
    if expected_version is not None and version_of(meta) != expected_version:
        raise VersionConflict(path, expected_version, version_of(meta))


def _mode(expected_version: str | None) -> PutMode:
    """The PUT mode that makes a write conditional on `expected_version`."""
    if expected_version is None:
        return "overwrite"
    if expected_version == ABSENT:
        return "create"
    e_tag, _, version = expected_version.partition(VERSION_SEPARATOR)
    return {"e_tag": e_tag, "version": version} if version else {"e_tag": e_tag}


def _ancestors(path: str) -> list[str]:
    """The directories above `path`, root excluded, top down."""
    found: list[str] = []
    current = paths.parent(path)
    while current != paths.ROOT:
        found.append(current)
        current = paths.parent(current)
    return found[::-1]


def _is_a_directory(path: str) -> OSError:
    return os_error(IsADirectoryError, errno.EISDIR, path)


@dataclass
class _Proof:
    """What the store has shown of its conditional writes (shared by a backend's views)."""

    pending: bool
    """Whether the first write must still prove them."""
    ignored: tuple[str, ...] = ()
    """The conditions the store accepted unchecked (then every write fails)."""


PROBE_ETAG: Final = '"fstools-probe-matches-no-object"'
"""The `If-Match` ETag of the probe: no object has it, so a store must refuse the PUT."""


def _chosen(store: ObjectStore, given: ConditionalWrites | None) -> ConditionalWrites:
    """`given`, or what `store` checks by its type (ValueError for an unknown value)."""
    if given is None:
        return conditional_writes(store)
    if given not in {"full", "create-only", "none"}:
        raise ValueError(
            f"conditional_writes must be 'full', 'create-only' or 'none', not {given!r}"
        )
    return given


def _described(store: ObjectStore) -> str:
    """The store as obstore describes it, with its endpoint (no credentials)."""
    config = getattr(store, "config", None)
    endpoint = config.get("endpoint") if isinstance(config, dict) else None
    return repr(store) + (f" at {endpoint}" if endpoint else "")


def conditional_writes(store: ObjectStore) -> ConditionalWrites:
    """What conditional writes `store` checks itself.

    Cloud and S3-compatible stores check both (`If-Match`, `If-None-Match`); the
    local filesystem store checks creates only; HTTP (WebDAV) stores, and S3 stores
    configured with `conditional_put="disabled"`, check neither.
    """
    if isinstance(store, obstore.store.LocalStore):
        return "create-only"
    if isinstance(store, obstore.store.HTTPStore):
        return "none"
    if isinstance(store, obstore.store.S3Store):
        setting = str(store.config.get("conditional_put", "etag")).lower()
        return "none" if setting == "disabled" else "full"
    return "full"


def _opened(store: ObjectStore | str, options: dict[str, Any]) -> ObjectStore:
    """The store itself, or the one `from_url` opens for a URL."""
    if not isinstance(store, str):
        if options:
            raise ValueError(
                "options apply to a store URL only; configure the store object instead"
            )
        return store
    try:
        return obstore.store.from_url(store, **options)
    except Exception as exc:
        raise ValueError(f"obstore cannot open {store!r}: {exc}") from exc


def _checked_prefix(prefix: str) -> str:
    """The prefix as stored (`a/b/`, or empty); ValueError for empty or dot levels."""
    levels = prefix.strip("/").split("/") if prefix.strip("/") else []
    for level in levels:
        if level in {"", ".", ".."} or level == MARKER:
            raise ValueError(f"the prefix {prefix!r} has an empty, '.', '..' or reserved level")
    return "".join(level + "/" for level in levels)


__all__ = ["MARKER", "ObjectStoreBackend", "conditional_writes", "version_of"]
