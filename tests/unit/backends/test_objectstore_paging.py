"""ObjectStoreBackend's paged listing: correct across chunk and page boundaries in every
listing order, big subdirectories skipped rather than read, and bounded pulls."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import obstore
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from obstore.store import LocalStore, MemoryStore

from langchain_fstools import FileToolkit, ObjectStoreBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.objectstore import MARKER, paging, requests
from langchain_fstools.backends.protocol import Backend, FileInfo
from langchain_fstools.backends.view import BackendView
from tests.unit.backends.guards import HidePrefix
from tests.unit.backends.store_requests import watch_requests

# ----- pulls through the requests layer ---------------------------------------------------


class Pulls:
    """What the listing asked of the store: streams opened, chunks pulled, objects received."""

    def __init__(self) -> None:
        self.scans: list[str | None] = []
        self.chunks = 0
        self.objects = 0

    def record(self, request: requests.Request, result: Any) -> None:
        if isinstance(request, requests.Scan):
            self.scans.append(request.offset)
        elif isinstance(request, requests.Pull) and result is not None:
            self.chunks += 1
            self.objects += len(result)


@pytest.fixture
def pulls(monkeypatch: pytest.MonkeyPatch) -> Pulls:
    """Counts of the listing requests the backend makes (sync and async)."""
    counted = Pulls()
    watch_requests(monkeypatch, counted.record)
    return counted


def fill(store: Any, keys: list[str]) -> None:
    async def put_all() -> None:
        await asyncio.gather(*(obstore.put_async(store, key, b"x") for key in keys))

    asyncio.run(put_all())


def pages(backend: Backend, path: str, limit: int, *, use_async: bool = False) -> list[FileInfo]:
    """Every entry of `path`, `limit` at a time, each `after` the last page's last name."""
    listed: list[FileInfo] = []
    after = None
    while True:
        if use_async:
            page = asyncio.run(backend.alist_page(path, after=after, limit=limit))
        else:
            page = backend.list_page(path, after=after, limit=limit)
        assert len(page) <= limit
        listed += page
        if len(page) < limit:
            return listed
        after = page[-1].name


# ----- correctness, whatever the keys -------------------------------------------------------

LEVEL = st.text(alphabet="ab.-_ /é\U0010ffff", min_size=1, max_size=3).filter(
    lambda level: "/" not in level and level not in {".", "..", MARKER}
)
KEYS = st.lists(st.lists(LEVEL, min_size=1, max_size=3).map("/".join), max_size=40)


def consistent(keys: list[str]) -> list[str]:
    """The keys, less each one that is also a directory of another (disk cannot hold both)."""
    return sorted({k for k in keys if not any(o.startswith(k + "/") for o in keys)})


def expected(keys: list[str]) -> list[tuple[str, bool]]:
    """(name, is a directory) of the entries a directory holding `keys` lists, by name."""
    entries = {(k.split("/", 1)[0], "/" in k) for k in keys}
    return sorted(entries, key=lambda entry: (entry[0], not entry[1]))


@contextlib.contextmanager
def store_listing(order: str, tmp: Path) -> Iterator[ObjectStoreBackend]:
    """A fresh backend whose store lists in `order`, read 3 objects a chunk."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(requests, "PAGE", 3)
        if order == "any":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # LocalStore: conditional updates by HEAD
                backend = ObjectStoreBackend(LocalStore(tmp, mkdir=True))
        else:
            backend = ObjectStoreBackend(MemoryStore())
            backend.listing_order = order  # type: ignore[assignment]
        yield backend


@pytest.mark.parametrize("order", ["seek", "sorted", "any"])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys=KEYS, limit=st.integers(1, 7), use_async=st.booleans())
@example(keys=["a b", "a-", "a.b", "a/x"], limit=1, use_async=False)  # `a` comes last as keys
def test_pages_chain_to_the_sorted_listing_whatever_the_keys(
    order: str, keys: list[str], limit: int, use_async: bool, tmp_path_factory: Any
) -> None:
    keys = consistent(keys)
    with store_listing(order, tmp_path_factory.mktemp("store")) as backend:
        fill(backend.store, [f"dir/{key}" for key in keys])
        backend.mkdir("/dir")
        want = expected(keys)
        whole = backend.list_dir("/dir")
        assert [(e.name, e.is_dir) for e in whole] == want
        assert pages(backend, "/dir", limit, use_async=use_async) == whole
        if whole:
            middle = whole[len(whole) // 2].name
            page = backend.list_page("/dir", after=middle, limit=limit)
            assert page == [e for e in whole if e.name > middle][:limit]


# ----- costs: subtrees skipped, pages bounded ----------------------------------------------------


def big_directory(store: MemoryStore) -> list[str]:
    """`/d`: a few files around a subdirectory of 5,000 objects (and one past its skip)."""
    inside = [f"d/big/o{n:05d}" for n in range(5_000)]
    fill(store, ["d/a.txt", *inside, "d/big/" + paging.LAST + "z", "d/big.txt", "d/c.txt"])
    return ["a.txt", "big", "big.txt", "c.txt"]


def test_a_huge_subdirectory_is_skipped_not_read(pulls: Pulls) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    names = big_directory(backend.store)  # type: ignore[arg-type]
    # `big` sorts before `big.txt`, yet its keys come after `big.txt`'s as keys
    assert [e.name for e in backend.list_dir("/d")] == names
    assert pulls.objects <= 2 * requests.PAGE, "one chunk of the subtree, then past it"
    assert pulls.scans == [None, "d/big/" + paging.LAST]
    pulls.__init__()  # type: ignore[misc]
    page = asyncio.run(backend.alist_page("/d", after="a.txt", limit=2))
    assert [e.name for e in page] == ["big", "big.txt"]
    assert pulls.objects <= 2 * requests.PAGE


def test_without_order_every_key_is_read(pulls: Pulls, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend = ObjectStoreBackend(LocalStore(tmp_path))
    fill(backend.store, [f"d/big/o{n:04d}" for n in range(1_500)] + ["d/a.txt"])
    assert [e.name for e in backend.list_page("/d", limit=1)] == ["a.txt"]
    assert pulls.objects == 1_501
    assert pulls.scans == [None]


def test_a_page_of_a_huge_directory_pulls_one_chunk(pulls: Pulls) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    fill(backend.store, [f"d/f{n:05d}" for n in range(20_000)])
    page = backend.list_page("/d", after="f09999", limit=10)
    assert [e.name for e in page] == [f"f{n:05d}" for n in range(10_000, 10_010)]
    assert pulls.chunks == 1
    assert pulls.scans == ["d/f09999"]


def test_the_marker_is_no_entry_and_keeps_pages_of_an_empty_directory() -> None:
    backend = ObjectStoreBackend(MemoryStore(), prefix="ws")
    backend.mkdir("/e/inner")
    assert backend.list_page("/e", limit=5) == backend.list_dir("/e")
    assert [e.name for e in backend.list_dir("/e")] == ["inner"]
    assert backend.list_page("/e/inner", after="a", limit=5) == []
    backend.write_bytes("/f", b"x")
    with pytest.raises(NotADirectoryError):
        backend.list_page("/f", after="a", limit=5)
    with pytest.raises(FileNotFoundError):
        backend.list_page("/none", after="a", limit=5)


def test_ls_of_a_huge_directory_asks_for_one_page(pulls: Pulls) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    fill(backend.store, [f"d/f{n:05d}" for n in range(5_000)])
    ls = {tool.name: tool for tool in FileToolkit(backend, ls_limit=100).get_tools()}["ls"]
    out = ls.invoke({"path": "/d"})
    assert out.splitlines()[-1] == (
        "(Showing the first 100 entries; there are more."
        " List a subdirectory or use glob to narrow the listing.)"
    )
    assert out.splitlines()[:2] == ["/d/", "f00000"]
    assert pulls.chunks == 1


# ----- wrapping views ----------------------------------------------------------------------


class Counted(BackendView):
    """A view counting the pages asked of the backend it wraps."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.asked: list[tuple[str | None, int]] = []

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        self.asked.append((after, limit))
        return super().list_page(path, after=after, limit=limit)

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        self.asked.append((after, limit))
        return await super().alist_page(path, after=after, limit=limit)


@pytest.mark.parametrize("use_async", [False, True])
def test_the_guarded_view_fills_pages_past_hidden_entries(use_async: bool) -> None:
    inner = ObjectStoreBackend(MemoryStore())
    names = ["a", *(f"h{n:02d}" for n in range(12)), "i", "j", "k"]
    fill(inner.store, [f"d/{name}" for name in names] + ["d/hh/x"])
    counted = Counted(inner)
    guarded = GuardedBackend(counted, lambda _runtime: HidePrefix("h")).bind(None)
    if use_async:
        first = asyncio.run(guarded.alist_page("/d", after=None, limit=3))
    else:
        first = guarded.list_page("/d", limit=3)
    assert [e.name for e in first] == ["a", "i", "j"]
    assert counted.asked == [(None, 3), ("h01", 3), ("h04", 3), ("h07", 3), ("h10", 3), ("i", 3)]
    assert [e.name for e in pages(guarded, "/d", 2, use_async=use_async)] == ["a", "i", "j", "k"]
    assert pages(guarded, "/d", 2) == guarded.list_dir("/d")
