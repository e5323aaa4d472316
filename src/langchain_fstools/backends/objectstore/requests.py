"""Object store requests as data, performed by obstore's sync or native async calls.

The backend's operations are generators that yield these requests and receive their
results (as `StoreBackend`'s do), so one body serves `run` (obstore's blocking calls)
and `arun` (its async calls, on the event loop: no thread per request). `Gather`
runs several requests at once on the async path and one after the other on the sync
path.

Results speak the backend's terms: a missing object is `None`, a refused conditional
write is `None`, a range starting past the end is `BEYOND_END`; every other failure of
the store becomes `StoreUnavailable` naming obstore's error type and, where its text
says, the cause (`failures`). Listings leave out
the folder entries that stores with a real directory tree (SeaweedFS's filer) list as
empty objects with an empty ETag: no stored object has one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

import obstore
from obstore.exceptions import AlreadyExistsError, NotFoundError, PreconditionError

from langchain_fstools.backends.objectstore.failures import cause_of, unavailable
from langchain_fstools.core import calls
from langchain_fstools.errors import StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from obstore import ObjectMeta, OffsetRange, PutMode
    from obstore.store import ObjectStore

T = TypeVar("T")

PAGE: Final = 1000
"""Objects a listing asks for at once (S3's largest page)."""

BEYOND_END: Final = "beyond end"
"""`Get` result: the range starts at or past the object's end (or the store refused it)."""


@dataclass(frozen=True, slots=True)
class Head:
    """The metadata of one object (`ObjectMeta`), or None when it is missing."""

    key: str


@dataclass(frozen=True, slots=True)
class Get:
    """The bytes of an object from `start` up to `end` (exclusive; None: its end).

    Result: the bytes, None when the object is missing, `BEYOND_END` when a range that
    does not start at 0 cannot be served.
    """

    key: str
    start: int = 0
    end: int | None = None


@dataclass(frozen=True, slots=True)
class Peek:
    """An object's metadata and its bytes `start` to `end` (`(ObjectMeta, bytes)`), in one GET.

    `end` is exclusive (None: the object's end). None when the object is missing;
    `BEYOND_END` when the range cannot be served (an empty object has none).
    """

    key: str
    start: int
    end: int | None


@dataclass(frozen=True, slots=True)
class Put:
    """Write an object whole (`PutResult`); None when its condition (`mode`) is refused."""

    key: str
    data: bytes
    mode: PutMode


@dataclass(frozen=True, slots=True)
class Delete:
    """Remove an object (a missing one is not an error)."""

    key: str


@dataclass(frozen=True, slots=True)
class Scan:
    """Open a listing of the objects below the directory `prefix`, keys after `offset`.

    Result: the stream (an obstore `ListStream`, `PAGE` objects a chunk), for `Pull`.
    Opening sends nothing; each `Pull` asks the store for what it needs.
    """

    prefix: str | None
    offset: str | None = None


@dataclass(frozen=True, slots=True)
class Pull:
    """The next chunk of a `Scan`'s stream (store folder entries left out); None: its end."""

    stream: Any = field(compare=False)


@dataclass(frozen=True, slots=True)
class Probe:
    """Some objects below the directory `prefix` (from the first `count`; [] if none)."""

    prefix: str | None
    count: int = 10


@dataclass(frozen=True, slots=True)
class Tidy:
    """Remove a store's own folder entry at `key` (a no-op where there is none)."""

    key: str


@dataclass(frozen=True, slots=True)
class Gather:
    """Several requests, concurrently where the driver can; their results in order."""

    requests: tuple[Request, ...]


Request = Head | Get | Peek | Put | Delete | Scan | Pull | Probe | Tidy | Gather
StoreEffect = Generator[Request, Any, T]
"""A computation over an object store: yields requests, receives their results."""


def run(store: ObjectStore, effect: StoreEffect[T]) -> T:
    """Drive `effect` with obstore's blocking calls (`core.calls.drive`).

    A request the store fails is raised inside `effect` (`StoreUnavailable`), so an
    effect can find out what a request whose reply was lost did.
    """
    return calls.drive(effect, functools.partial(_perform, store))


async def arun(store: ObjectStore, effect: StoreEffect[T]) -> T:
    """Drive `effect` with obstore's async calls (failures raised inside it, as `run`)."""
    return await calls.adrive(effect, functools.partial(_aperform, store))


MARKER: Final = ".fstools-dir"
"""Name of the empty object that keeps an empty directory in existence."""

FOLDER_ETAGS: Final = frozenset({'""', "", None})
"""The ETags of a store's folder entries: no stored object has an empty one."""


def is_folder_entry(meta: ObjectMeta) -> bool:
    """Whether a listed object is a store's folder entry, not an object."""
    return meta.get("e_tag") in FOLDER_ETAGS


def _perform(store: ObjectStore, request: Request) -> Any:
    if isinstance(request, Gather):
        return [_perform(store, inner) for inner in request.requests]
    if isinstance(request, Tidy):
        with contextlib.suppress(Exception):
            obstore.delete(store, request.key)
        return None
    try:
        return _call(store, request)
    except _MISSING:
        return _missing(request)
    except _REFUSED:
        return None
    except (StoreUnavailable, NotImplementedError):
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure of the store: `_failed` names it
        return _failed(request, exc)


async def _aperform(store: ObjectStore, request: Request) -> Any:
    if isinstance(request, Gather):
        return list(await asyncio.gather(*(_aperform(store, r) for r in request.requests)))
    if isinstance(request, Tidy):
        with contextlib.suppress(Exception):
            await obstore.delete_async(store, request.key)
        return None
    try:
        return await _acall(store, request)
    except _MISSING:
        return _missing(request)
    except _REFUSED:
        return None
    except (StoreUnavailable, NotImplementedError, asyncio.CancelledError):
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure of the store: `_failed` names it
        return _failed(request, exc)


def _failed(request: Request, exc: Exception) -> Any:
    """`BEYOND_END` for a ranged read the store refuses; else `StoreUnavailable` naming why.

    Raises:
        StoreUnavailable: the store failed (refused, unreachable, timed out, denied).
    """
    ranged = isinstance(request, Peek) or (
        isinstance(request, Get) and (request.start or request.end is not None)
    )
    if ranged and cause_of(exc) is None:
        return BEYOND_END
    raise unavailable(exc, _described(request)) from exc


def _described(request: Request) -> str:
    """`"Get src/app.py"`: the request's kind and key, for the log."""
    key = getattr(request, "key", None) or getattr(request, "prefix", None) or ""
    return f"{type(request).__name__} {key}".rstrip()


_MISSING = (FileNotFoundError, NotFoundError)
_REFUSED = (AlreadyExistsError, PreconditionError)


def _opened(store: ObjectStore, scan: Scan) -> Any:
    """The stream of a `Scan` (polled by `Pull`, sync or async)."""
    return obstore.list(store, scan.prefix, offset=scan.offset, chunk_size=PAGE)


def _missing(request: Request) -> Any:
    """What a request answers when the store says not found: nothing, or no entries."""
    return [] if isinstance(request, Probe) else None


def _call(store: ObjectStore, request: Request) -> Any:  # noqa: PLR0911 - one branch a kind
    match request:
        case Head(key):
            return obstore.head(store, key)
        case Get(key, start, end):
            return _get(store, key, start, end)
        case Peek(key, start, end):
            result = obstore.get(store, key, options={"range": _range(start, end)})
            return result.meta, bytes(result.bytes())
        case Put(key, data, mode):
            return obstore.put(store, key, data, mode=mode)
        case Delete(key):
            return obstore.delete(store, key)
        case Scan():
            return _opened(store, request)
        case Pull(stream):
            return _objects(next(stream, None))
        case Probe(prefix, count):
            return _first(obstore.list(store, prefix, chunk_size=count))
    raise TypeError(request)  # pragma: no cover - Gather is handled by the caller


async def _acall(store: ObjectStore, request: Request) -> Any:  # noqa: PLR0911
    match request:
        case Head(key):
            return await obstore.head_async(store, key)
        case Get(key, start, end):
            return await _aget(store, key, start, end)
        case Peek(key, start, end):
            result = await obstore.get_async(store, key, options={"range": _range(start, end)})
            return result.meta, bytes(await result.bytes_async())
        case Put(key, data, mode):
            return await obstore.put_async(store, key, data, mode=mode)
        case Delete(key):
            return await obstore.delete_async(store, key)
        case Scan():
            return _opened(store, request)
        case Pull(stream):
            return _objects(await anext(stream, None))
        case Probe(prefix, count):
            return await _afirst(obstore.list(store, prefix, chunk_size=count))
    raise TypeError(request)  # pragma: no cover - Gather is handled by the caller


def _range(start: int, end: int | None) -> tuple[int, int] | OffsetRange:
    """The range option of obstore's `get` for bytes `start` to `end` (None: to the end)."""
    return {"offset": start} if end is None else (start, end)


def _get(store: ObjectStore, key: str, start: int, end: int | None) -> bytes:
    if end is not None:
        return bytes(obstore.get_range(store, key, start=start, end=end))
    if start == 0:
        return bytes(obstore.get(store, key).bytes())
    return bytes(obstore.get(store, key, options={"range": _range(start, end)}).bytes())


async def _aget(store: ObjectStore, key: str, start: int, end: int | None) -> bytes:
    if end is not None:
        return bytes(await obstore.get_range_async(store, key, start=start, end=end))
    if start == 0:
        result = await obstore.get_async(store, key)
    else:
        result = await obstore.get_async(store, key, options={"range": _range(start, end)})
    return bytes(await result.bytes_async())


async def _afirst(stream: Any) -> list[ObjectMeta]:
    return _objects(await anext(stream, None)) or []


def _first(stream: Any) -> list[ObjectMeta]:
    return _objects(next(stream, None)) or []


def _objects(chunk: Sequence[ObjectMeta] | None) -> list[ObjectMeta] | None:
    """A listing chunk without the store's folder entries (None: the listing ended)."""
    if chunk is None:
        return None
    # `is_folder_entry`, inlined: this runs once per object listed
    return [meta for meta in chunk if meta.get("e_tag") not in FOLDER_ETAGS]


__all__ = [
    "BEYOND_END",
    "FOLDER_ETAGS",
    "MARKER",
    "PAGE",
    "Delete",
    "Gather",
    "Get",
    "Head",
    "Peek",
    "Probe",
    "Pull",
    "Put",
    "Request",
    "Scan",
    "StoreEffect",
    "Tidy",
    "arun",
    "is_folder_entry",
    "run",
]
