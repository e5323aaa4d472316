"""StoreBackend beyond the contract: binding, namespaces, layout costs, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.store.base import Op, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_fstools import StoreBackend
from langchain_fstools.backends.store import ENTRIES
from langchain_fstools.errors import NotInGraph, StoreUnavailable
from langchain_fstools.tools.render import render_error


class CountingStore(InMemoryStore):
    """Counts the items every search returns, and the batches."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.searched_items = 0

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches += 1
        results = super().batch(ops)
        for op, result in zip(ops, results, strict=True):
            if isinstance(op, SearchOp):
                self.searched_items += len(result or [])
        return results


class BrokenStore(InMemoryStore):
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        raise ConnectionError("db at 10.0.0.1:5432 went away")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        raise ConnectionError("db at 10.0.0.1:5432 went away")


def test_store_and_namespace_come_from_the_runtime() -> None:
    store = InMemoryStore()
    backend = StoreBackend(namespace=lambda rt: ("fs", rt.context.user))
    alice = backend.bind(SimpleNamespace(store=store, context=SimpleNamespace(user="alice")))
    bob = backend.bind(SimpleNamespace(store=store, context=SimpleNamespace(user="bob")))
    alice.write_bytes("/n.txt", b"alice's")
    assert alice.read_bytes("/n.txt") == b"alice's"
    assert not bob.exists("/n.txt")
    assert store.get(("fs", "alice", ENTRIES), "n.txt") is not None


def test_without_a_store_or_a_runtime_it_says_what_is_missing() -> None:
    with pytest.raises(NotInGraph, match="needs a LangGraph store"):
        StoreBackend().bind(None)
    with pytest.raises(NotInGraph, match="namespace"):
        StoreBackend(InMemoryStore(), namespace=lambda rt: ("fs", rt.context.user)).bind(None)
    unbound = StoreBackend(InMemoryStore(), namespace=lambda rt: ("fs",))
    with pytest.raises(NotInGraph, match="inside a graph"):
        unbound.stat("/")


@pytest.mark.parametrize("namespace", [(), ("a.b",), ("",), ("langgraph", "x"), "fs"])
def test_invalid_namespace_refused_up_front(namespace: Any) -> None:
    with pytest.raises(ValueError, match="namespace"):
        StoreBackend(InMemoryStore(), namespace=namespace)


def test_dots_and_percents_in_names() -> None:
    backend = StoreBackend(InMemoryStore(), namespace=("fs",))
    for path in ("/.git/HEAD", "/v1.2/%2E/a.b", "/%entries/x", "/50%/.hidden"):
        backend.write_bytes(path, path.encode())
    assert [e.path for e in backend.walk("/")] == [
        "/%entries",
        "/%entries/x",
        "/.git",
        "/.git/HEAD",
        "/50%",
        "/50%/.hidden",
        "/v1.2",
        "/v1.2/%2E",
        "/v1.2/%2E/a.b",
    ]
    assert backend.read_bytes("/v1.2/%2E/a.b") == b"/v1.2/%2E/a.b"


def test_listing_reads_one_directory_not_the_namespace() -> None:
    store = CountingStore()
    backend = StoreBackend(store, namespace=("fs",))
    for n in range(300):
        backend.write_bytes(f"/big/{n % 10}/f{n}.txt", b"x")
    backend.write_bytes("/small/a.txt", b"a")
    store.searched_items = store.batches = 0
    assert [e.name for e in backend.list_dir("/small")] == ["a.txt"]
    assert store.searched_items == 1
    assert store.batches == 2  # the directory's marker, then its entries


def test_a_search_reads_its_subtree_once_then_forgets_it_on_write() -> None:
    store = CountingStore()
    backend = StoreBackend(store, namespace=("fs",)).bind(None)
    for n in range(20):
        backend.write_bytes(f"/src/d{n % 4}/f{n}.py", b"x")
    backend.write_bytes("/other/o.py", b"x")
    backend.search_parts("/src")
    store.batches = 0
    walked = [e.path for e in backend.walk("/src")]
    listed = []
    for directory in ["/src", *[f"/src/d{n}" for n in range(4)]]:
        listed += [e.path for e in backend.list_dir(directory)]
    assert sorted(listed) == sorted(walked)
    batches_for_walk = 2  # walk: the marker, then the subtree
    assert store.batches == batches_for_walk + 2  # list_dir: the marker, then the subtree
    backend.write_bytes("/src/d0/new.py", b"y")
    assert "/src/d0/new.py" in [e.path for e in backend.list_dir("/src/d0")]


def test_store_failures_are_one_clear_error_without_details() -> None:
    backend = StoreBackend(BrokenStore(), namespace=("fs",))
    with pytest.raises(StoreUnavailable) as caught:
        backend.read_bytes("/a.txt")
    assert caught.value == StoreUnavailable("ConnectionError")
    with pytest.raises(StoreUnavailable):
        asyncio.run(backend.aread_bytes("/a.txt"))
    message = render_error(caught.value, tool="read_file")
    assert message == (
        "Error: the file store failed (ConnectionError)."
        " Try the call again; if it keeps failing, tell the user."
    )
    assert "10.0.0.1" not in message


class LosingStore(InMemoryStore):
    """Once armed (`lost = False`), applies the next batch that writes `key` (unless not
    `applies`) and loses its reply: a connection error."""

    def __init__(self, key: str, *, applies: bool = True) -> None:
        super().__init__()
        self.key, self.applies, self.lost = key, applies, True

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        writes = any(getattr(op, "key", None) == self.key and hasattr(op, "value") for op in ops)
        if writes and not self.lost:
            self.lost = True
            if self.applies:
                super().batch(ops)
            raise ConnectionError("server closed the connection unexpectedly")
        return super().batch(ops)


@pytest.mark.parametrize("applies", [True, False], ids=["stored", "not-stored"])
def test_a_write_whose_reply_was_lost_is_read_back(applies: bool) -> None:
    store = LosingStore("a.txt", applies=applies)
    backend = StoreBackend(store, namespace=("fs",))
    backend.write_bytes("/a.txt", b"old")
    store.lost = False
    if applies:  # found done: the write's own result, not a failure
        info = backend.write_bytes("/a.txt", b"new")
        assert info.version == backend.stat("/a.txt").version
        assert backend.read_bytes("/a.txt") == b"new"
    else:
        with pytest.raises(StoreUnavailable):
            backend.write_bytes("/a.txt", b"new")
        assert backend.read_bytes("/a.txt") == b"old"


def test_a_deletion_whose_reply_was_lost_is_found_done() -> None:
    store = LosingStore("a.txt")
    backend = StoreBackend(store, namespace=("fs",))
    backend.write_bytes("/a.txt", b"old")
    store.lost = False
    backend.delete("/a.txt")
    assert not backend.exists("/a.txt")
