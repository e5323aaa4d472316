"""The backend contract through CompositeBackend: local disk with a state mount, the
other way round, a store default with nested mounts (the suite's `/m/...` cases land
in the `/m/` mount; `/mnt/...` holds mounts nested two deep), an object store mounted
re-rooted, and mounts that keep whole paths (`reroot=False`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from langgraph.store.memory import InMemoryStore
from obstore.store import MemoryStore

from langchain_fstools import (
    CompositeBackend,
    LocalBackend,
    ObjectStoreBackend,
    StateBackend,
    StoreBackend,
)
from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo
from langchain_fstools.core import calls
from tests.unit.backends import conformance
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401

RUNTIME = SimpleNamespace(state={"files": {}}, store=None)


@pytest.fixture(
    params=[
        "local-with-state-mount",
        "state-with-local-mount",
        "store-nested",
        "state-with-objectstore-mount",
        "whole-paths",
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    local, state = LocalBackend(tmp_path), StateBackend()
    if request.param == "state-with-objectstore-mount":
        composite = CompositeBackend(state, {"/m/": ObjectStoreBackend(MemoryStore())})
    elif request.param == "whole-paths":
        store = StoreBackend(InMemoryStore(), namespace=("whole",))
        composite = CompositeBackend(local, {"/m/": store, "/mnt/s/": state}, reroot=False)
    elif request.param == "store-nested":
        store = InMemoryStore()
        composite = CompositeBackend(
            StoreBackend(store, namespace=("default",)),
            {
                "/m/": local,
                "/mnt/store/": StoreBackend(store, namespace=("mounted",)),
                "/mnt/store/state/": state,
            },
        )
    else:
        default, mounted = (local, state) if request.param.startswith("local") else (state, local)
        composite = CompositeBackend(default, {"/m/": mounted})
    return composite.bind(RUNTIME)


class TestCompositeBackend(BackendConformance):
    pass


def test_root_is_not_a_mount(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="below '/'"):
        CompositeBackend(LocalBackend(tmp_path), {"/": StateBackend()})


@pytest.fixture
def nested(tmp_path: Path) -> CompositeBackend:
    store = InMemoryStore()
    composite = CompositeBackend(
        LocalBackend(tmp_path),
        {
            "/memories/": StoreBackend(store, namespace=("shared",)),
            "/memories/user/": StoreBackend(store, namespace=("user",)),
            "/a/b/c/": StateBackend(),
        },
    ).bind(RUNTIME)
    assert isinstance(composite, CompositeBackend)
    return composite


def test_longest_prefix_wins(nested: CompositeBackend) -> None:
    nested.write_bytes("/memories/team.md", b"team")
    nested.write_bytes("/memories/user/me.md", b"me")
    shared, user = nested.routes["/memories"], nested.routes["/memories/user"]
    assert shared.read_bytes("/memories/team.md") == b"team"
    assert user.read_bytes("/memories/user/me.md") == b"me"
    assert not shared.exists("/memories/user/me.md")
    assert nested.read_bytes("/memories/user/me.md") == b"me"


def test_parents_of_mounts_are_listed(nested: CompositeBackend, tmp_path: Path) -> None:
    (tmp_path / "top.txt").write_text("x")
    assert [e.path for e in nested.list_dir("/")] == ["/a", "/memories", "/top.txt"]
    assert [e.path for e in nested.list_dir("/a")] == ["/a/b"]
    assert [e.path for e in nested.list_dir("/a/b")] == ["/a/b/c"]
    assert nested.list_dir("/a/b/c") == []
    assert [e.path for e in nested.list_dir("/memories")] == ["/memories/user"]
    for directory in ("/a", "/a/b", "/a/b/c", "/memories", "/memories/user"):
        assert nested.stat(directory).kind is EntryKind.DIRECTORY
    with pytest.raises(IsADirectoryError):
        nested.write_bytes("/a/b", b"would hide a mount")


def test_search_parts_cover_each_mount_once(nested: CompositeBackend) -> None:
    nested.write_bytes("/memories/team.md", b"team")
    nested.write_bytes("/memories/user/me.md", b"me")
    nested.write_bytes("/a/b/c/deep.md", b"deep")
    parts = {p.directory: p.excluded for p in nested.search_parts("/")}
    assert parts == {
        "/": ("/a/b/c", "/memories", "/memories/user"),
        "/memories": ("/memories/user",),
        "/memories/user": (),
        "/a/b/c": (),
    }
    assert {p.directory for p in nested.search_parts("/memories")} == {
        "/memories",
        "/memories/user",
    }


def test_pages_hold_the_mount_directories_in_name_order(nested: CompositeBackend) -> None:
    for name in ("0.txt", "b.txt", "memories.md", "n.txt", "z.txt"):
        nested.write_bytes(f"/{name}", b"x")
    whole = nested.list_dir("/")
    assert [e.name for e in whole] == [
        "0.txt",
        "a",
        "b.txt",
        "memories",
        "memories.md",
        "n.txt",
        "z.txt",
    ]
    for limit in (1, 2, 3, 7):
        assert pages(nested, "/", limit) == whole, limit
    assert [e.name for e in nested.list_page("/", after="a", limit=2)] == ["b.txt", "memories"]
    assert [e.name for e in nested.list_page("/", after="memories", limit=1)] == ["memories.md"]
    assert asyncio.run(nested.alist_page("/", after="0.txt", limit=1)) == [whole[1]]


def test_a_hidden_empty_mount_keeps_pages_full(tmp_path: Path) -> None:
    local = LocalBackend(tmp_path)
    for name in ("a.txt", "b.txt", "c.txt"):
        local.write_bytes(f"/{name}", b"x")
    local.mkdir("/b")  # shadowed by the mount, which hides while empty
    composite = CompositeBackend(local, {"/b/": StateBackend()}, hidden_while_empty=["/b/"])
    bound = composite.bind(SimpleNamespace(state={"files": {}}, store=None))
    assert [e.name for e in bound.list_page("/", limit=2)] == ["a.txt", "b.txt"]
    assert pages(bound, "/", 2) == bound.list_dir("/")
    assert [e.name for e in bound.list_dir("/")] == ["a.txt", "b.txt", "c.txt"]


def pages(backend: Backend, path: str, limit: int) -> list[FileInfo]:
    return calls.run(conformance.pages(path, limit), backend)
