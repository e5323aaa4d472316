"""glob and grep over an object store: listing pages, then bounded concurrent fetches.

`list_files` lists every object below the search directory with one flat, paginated
LIST (no request per directory), then applies what the pure-Python engine applies
while walking (`search.contract` rule 1): VCS directories are skipped, and the
`.gitignore`, `.ignore`, `.rgignore` files of the workspace (root down to each file)
and `.git/info/exclude` are honoured, their texts fetched concurrently. `grep` fetches
the files it listed with at most `CONCURRENCY` GETs in flight, each through the
engine's matcher as it arrives, so memory holds the objects in flight, not the tree.

Both stop at their deadline with what they found. They run obstore's async calls on
a private event loop, in the thread the tools give native searches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import obstore

from langchain_fstools.backends.objectstore.failures import unavailable
from langchain_fstools.backends.objectstore.requests import FOLDER_ETAGS, MARKER, PAGE
from langchain_fstools.core import paths
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.search.contract import VCS_DIRECTORIES, ListedFile, Listing
from langchain_fstools.search.engine import file_matcher
from langchain_fstools.search.ignore import EXCLUDE_FILE, IGNORE_FILES, IgnoreRules

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

    from obstore import ObjectMeta
    from obstore.store import ObjectStore

    from langchain_fstools.core.results import FileInfo
    from langchain_fstools.search.contract import FileHits, GrepRequest

T = TypeVar("T")

CONCURRENCY: Final = 32
"""Most GETs in flight during one search."""


class Objects(Protocol):
    """What the search needs of an `ObjectStoreBackend`."""

    store: ObjectStore
    prefix: str

    def directory_key(self, path: str) -> str | None:
        """The listing prefix of a directory."""

    async def astat(self, path: str) -> FileInfo:
        """Metadata of `path`."""

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of an object."""


class ObjectStoreSearch:
    """The `NativeSearch` of an `ObjectStoreBackend` (same answers as the engine)."""

    def __init__(self, backend: Objects) -> None:
        """Search the objects of `backend`."""
        self.backend = backend

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """The searchable objects below `directory` that match `globs` (every one).

        `newest` is not used (every file is listed); `excluded` directories are left out.
        """
        del newest
        return _run(lambda: self._list(paths.normalize(directory), globs, deadline, excluded))

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Search the listed objects, `CONCURRENCY` fetched at a time."""
        search = file_matcher(request)
        return _run(lambda: self._grep(request, search, deadline, sink))

    # ----- listing ---------------------------------------------------------------------------

    async def _list(
        self,
        directory: str,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        excluded: tuple[str, ...],
    ) -> Listing:
        tree = _Tree(directory)
        complete = await self._collect(directory, tree, deadline)
        if not complete:
            return Listing(self._kept(tree, globs, excluded), complete=False)
        texts = await self._ignore_texts(tree, deadline)
        if texts is None:
            return Listing([], complete=False)
        tree.texts = texts
        return Listing(self._kept(tree, globs, excluded), complete=True)

    async def _collect(self, directory: str, tree: _Tree, deadline: float) -> bool:
        """List every object below `directory` into `tree`; False if the deadline hit."""
        backend = self.backend
        prefix = backend.directory_key(directory)
        stream = obstore.list(backend.store, prefix, chunk_size=PAGE)
        while True:
            try:
                page: Sequence[ObjectMeta] = await _before(deadline, stream.__anext__())
            except StopAsyncIteration:
                return True
            except TimeoutError:
                return False
            except Exception as exc:  # the store failed: say why, as every other request does
                raise unavailable(exc, f"Scan {prefix or ''}".rstrip()) from exc
            start, files = len(backend.prefix), tree.files
            for meta in page:  # once per object: no helper calls
                key = meta["path"]
                if key.rpartition("/")[2] != MARKER and meta["e_tag"] not in FOLDER_ETAGS:
                    files.append(ListedFile("/" + key[start:], meta["last_modified"].timestamp()))

    async def _ignore_texts(self, tree: _Tree, deadline: float) -> dict[str, str] | None:
        """The text of every ignore file in force (path -> text); None past the deadline."""
        wanted = [EXCLUDE_FILE]
        parts = [part for part in tree.top.split("/") if part]
        for depth in range(len(parts)):
            base = "/" + "/".join(parts[:depth])
            wanted += [paths.join(base, name) for name in IGNORE_FILES]
        names = set(IGNORE_FILES)
        wanted += [
            listed.path
            for listed in tree.files
            if listed.path.rsplit("/", 1)[1] in names and not _in_vcs(listed.path)
        ]
        try:
            found: list[str | None] = await _before(deadline, _gather_limited(self._text, wanted))
        except TimeoutError:
            return None
        return {path: text for path, text in zip(wanted, found, strict=True) if text}

    async def _text(self, path: str) -> str | None:
        try:
            data = await self.backend.aread_bytes(path)
        except OSError:
            return None
        return data.decode("utf-8", "replace")

    def _kept(
        self, tree: _Tree, globs: tuple[tuple[str, ...], ...], excluded: tuple[str, ...]
    ) -> list[ListedFile]:
        keep = compile_glob_groups(globs)
        top = len(tree.top) if tree.top != paths.ROOT else 0
        kept: list[ListedFile] = []
        searched: dict[str, IgnoreRules | None] = {}  # directory -> its rules, None: skipped
        for listed in tree.files:  # once per object: plain string work
            path = listed.path
            directory = path.rpartition("/")[0] or paths.ROOT
            if directory not in searched:
                searched[directory] = (
                    tree.rules(directory) if tree.directory_searched(directory) else None
                )
            rules = searched[directory]
            if (
                rules is not None
                and not rules.ignored(path[1:], is_dir=False)
                and keep(path[top:].lstrip("/"))
                and not (excluded and any(paths.is_within(path, e) for e in excluded))
            ):
                kept.append(listed)
        return kept

    # ----- content ---------------------------------------------------------------------------

    async def _grep(
        self,
        request: GrepRequest,
        search: Callable[[ListedFile, bytes], FileHits | None],
        deadline: float,
        sink: Callable[[FileHits], None],
    ) -> bool:
        top = paths.normalize(request.directory)
        try:
            info = await self.backend.astat(top)
        except OSError:
            return True
        if info.is_file:
            listing = Listing([ListedFile(info.path, info.mtime)], complete=True)
        else:
            listing = await self._list(top, request.globs, deadline, ())

        async def one(listed: ListedFile) -> None:
            try:
                data = await self.backend.aread_bytes(listed.path)
            except OSError:
                return  # gone since it was listed: go on without it
            hits = search(listed, data)
            if hits is not None:
                sink(hits)

        try:
            await _before(deadline, _gather_limited(one, listing.files))
        except TimeoutError:
            return False
        return listing.complete


@dataclass
class _Tree:
    """The objects below `top`, and the ignore rules in force in each directory."""

    top: str
    files: list[ListedFile] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    _rules: dict[str, IgnoreRules] = field(default_factory=dict)
    _searched: dict[str, bool] = field(default_factory=dict)

    def rules(self, directory: str) -> IgnoreRules:
        """The rules in force for the entries of `directory` (at or below `top`)."""
        found = self._rules.get(directory)
        if found is not None:
            return found
        if directory == self.top:
            rules = self._with_files(self._above(), directory)
        else:
            rules = self._with_files(self.rules(paths.parent(directory)), directory)
        self._rules[directory] = rules
        return rules

    def directory_searched(self, directory: str) -> bool:
        """Whether the engine's walk would enter `directory` (at or below `top`)."""
        found = self._searched.get(directory)
        if found is not None:
            return found
        if directory == self.top:
            searched = True
        else:
            parent = paths.parent(directory)
            searched = (
                self.directory_searched(parent)
                and directory.rsplit("/", 1)[1] not in VCS_DIRECTORIES
                and not self.rules(parent).ignored(directory.lstrip("/"), is_dir=True)
            )
        self._searched[directory] = searched
        return searched

    def _above(self) -> IgnoreRules:
        """The rules from the exclude file and the ignore files above `top`."""
        rules = IgnoreRules()
        exclude = self.texts.get(EXCLUDE_FILE)
        if exclude:
            rules = rules.extended("exclude", "", exclude)
        parts = [part for part in self.top.split("/") if part]
        for depth in range(len(parts)):
            rules = self._with_files(rules, "/" + "/".join(parts[:depth]))
        return rules

    def _with_files(self, rules: IgnoreRules, directory: str) -> IgnoreRules:
        base = directory.lstrip("/")
        for name in reversed(IGNORE_FILES):
            text = self.texts.get(paths.join(directory, name))
            if text:
                rules = rules.extended(name, base, text)
        return rules


def _in_vcs(path: str) -> bool:
    return any(part in VCS_DIRECTORIES for part in path.split("/")[:-1])


async def _gather_limited(
    work: Callable[[Any], Coroutine[Any, Any, T]], items: list[Any]
) -> list[T]:
    """`work(item)` for every item, at most `CONCURRENCY` at once; results in order."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def limited(item: Any) -> T:
        async with limit:
            return await work(item)

    return list(await asyncio.gather(*(limited(item) for item in items)))


async def _before(deadline: float, awaitable: Coroutine[Any, Any, T] | Any) -> T:
    """`awaitable`, or TimeoutError once `deadline` (monotonic) passes."""
    result: T = await asyncio.wait_for(awaitable, max(0.0, deadline - time.monotonic()))
    return result


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to the end on a private event loop (off any running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(make()))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="objectstore-search")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


__all__ = ["CONCURRENCY", "ObjectStoreSearch"]
