"""Directory listings over a flat stream of keys: a page at a time, big subtrees skipped.

An object store has no directories: the entries of a directory are the first levels of
the keys below its prefix. `page` streams those keys (`Scan`, then `Pull` one chunk of
`PAGE` at a time) and folds each key into its entry: a key directly inside the
directory is a file, a longer one names a subdirectory (its first level), the
directory's own marker is no entry. Memory holds one chunk and the page being built,
never the directory's whole listing.

How far the stream must run depends on the order the store lists keys in
(`listing_order`):
    "seek"    sorted, and the store itself starts a listing after any key (S3 and
              S3-compatible stores, GCS, memory): when a chunk ends inside a
              subdirectory, the stream starts again after that subtree, so a
              subdirectory of any size costs one request, not one per `PAGE` keys.
    "sorted"  sorted, but the start is applied by the client (Azure): starting again
              would re-read everything before it, so the stream runs on.
    "any"     no order (the local filesystem and HTTP stores): every key is read.

In both sorted orders the stream stops once no later key can give an entry the page
keeps. Keys come in byte order (AWS, GCS, memory) or depth first by name (SeaweedFS's
filer). Either way, a later key's first level is at least the current key's first
level cut before its first character below `/` (`lowest_after`): the only names that
come later yet sort earlier are such prefixes (the directory `a` is listed after the
file `a.txt`, because `a.txt` < `a/...` as keys). Correctness never rests on a skip: a
key inside a subdirectory already seen folds into the entry made for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

import obstore.store

from langchain_fstools.backends.objectstore.requests import MARKER, Pull, Scan, StoreEffect
from langchain_fstools.core.records import DIRECTORY_VERSION
from langchain_fstools.core.results import EntryKind, FileInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    from obstore import ObjectMeta
    from obstore.store import ObjectStore

ListingOrder = Literal["seek", "sorted", "any"]
"""How a store lists keys: sorted and seekable, sorted only, or in no order."""

LAST: Final = "\U0010ffff"
"""The greatest character: `dir/` + LAST sorts after every key below `dir/` but those
that start with it (which fold into `dir`'s entry when the stream meets them)."""


def listing_order(store: ObjectStore) -> ListingOrder:
    """How `store` lists keys (see the module docstring); "any" for a store not known."""
    if isinstance(store, SEEKING):
        return "seek"
    if isinstance(store, obstore.store.AzureStore):
        return "sorted"
    return "any"


SEEKING: Final = (obstore.store.S3Store, obstore.store.GCSStore, obstore.store.MemoryStore)
"""Stores that list keys in order and start a listing after a key themselves."""


@dataclass(frozen=True, slots=True)
class Page:
    """The entries of one page, and whether the listing met any object at all.

    An object met (even the directory's marker) proves the directory exists; a page
    without one needs a closer look (it may be missing, or a file).
    """

    entries: list[FileInfo]
    met: bool


def page(
    prefix: str | None,
    directory: str,
    *,
    after: str | None,
    limit: int | None,
    order: ListingOrder,
    version: Callable[[ObjectMeta], str],
) -> StoreEffect[Page]:
    """The entries of `directory`, sorted by name, named after `after`, at most `limit`.

    Args:
        prefix: The directory's key prefix (None: the whole store).
        directory: Its virtual path.
        after: Only entries whose name sorts after this one (None: from the first).
        limit: Most entries returned (None: every entry).
        order: How the store lists keys (`listing_order`).
        version: A file's version token from its object's metadata.
    """
    head = prefix + "/" if prefix else ""
    entries = _Entries(len(head), directory.rstrip("/") + "/", after, version)
    met = False
    stream = yield Scan(prefix, None if after is None else head + after)
    while (chunk := (yield Pull(stream))) is not None:
        if not chunk:
            continue
        met = True
        entries.fold(chunk, limit)
        last = chunk[-1]["path"]
        name, slash, _ = last[len(head) :].partition("/")
        if order != "any" and entries.complete(limit, name):
            break
        skip = head + name + "/" + LAST
        if order == "seek" and slash and skip > last:
            stream = yield Scan(prefix, skip)
    return Page(entries.sorted(), met)


@dataclass
class _Entries:
    """The entries found so far: the `limit` first by name, each once."""

    start: int
    """Where a key's part below the directory begins."""
    folder: str
    """The directory's virtual path, with a trailing `/`."""
    after: str | None
    version: Callable[[ObjectMeta], str]
    found: dict[tuple[str, bool], FileInfo] = field(default_factory=dict)
    """(name, whether a file) -> entry: a directory sorts before a file of its name."""

    def fold(self, chunk: list[ObjectMeta], limit: int | None) -> None:
        """Fold a chunk of keys into entries, keeping the first `limit`."""
        start, folder, after, found = self.start, self.folder, self.after, self.found
        version, file = self.version, EntryKind.FILE
        for meta in chunk:  # once per object: no helper calls but the version's
            name, slash, _ = meta["path"][start:].partition("/")
            if after is not None and name <= after:
                continue
            if slash:
                if (name, False) not in found:
                    found[name, False] = directory_info(folder + name)
            elif name != MARKER:
                stamp = meta["last_modified"].timestamp()
                found[name, True] = FileInfo(
                    folder + name, file, meta["size"], stamp, version(meta)
                )
        if limit is not None and len(found) > limit:
            for key in sorted(found)[limit:]:
                del found[key]

    def complete(self, limit: int | None, name: str) -> bool:
        """Whether no key listed after one whose first level is `name` can enter the page."""
        found = self.found
        return limit is not None and len(found) == limit and lowest_after(name) > max(found)[0]

    def sorted(self) -> list[FileInfo]:
        """The entries, sorted by name."""
        return [self.found[key] for key in sorted(self.found)]


def lowest_after(name: str) -> str:
    """The least first level a key listed after one whose first level is `name` can have.

    `name` cut before its first character (after the first) that sorts below `/`, else
    `name` itself.
    """
    for index in range(1, len(name)):
        if name[index] < "/":
            return name[:index]
    return name


def directory_info(path: str) -> FileInfo:
    """The entry of a directory (a prefix has no metadata of its own)."""
    return FileInfo(path, EntryKind.DIRECTORY, 0, 0.0, DIRECTORY_VERSION)


__all__ = ["ListingOrder", "Page", "directory_info", "listing_order", "lowest_after", "page"]
