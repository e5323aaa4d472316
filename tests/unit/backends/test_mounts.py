"""Mounts see paths relative to their mount (deepagents' convention), answer in workspace
paths, and keep whole paths where backends share a namespace or `reroot=False` says so."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langgraph.store.memory import InMemoryStore
from obstore.store import MemoryStore

from langchain_fstools import (
    CompositeBackend,
    FileToolkit,
    LocalBackend,
    ObjectStoreBackend,
    StateBackend,
    StoreBackend,
)
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.core.results import Write
from langchain_fstools.errors import NotInMount, OutsideRoot, PartialWrite, VersionConflict


def bound(composite: CompositeBackend, files: dict[str, Any] | None = None) -> Backend:
    return composite.bind(SimpleNamespace(state={"files": files or {}}, store=None))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "todo.txt").write_text("buy milk\n")
    (repo / "src" / "app.py").write_text("print('milk')\n")
    return repo


@pytest.fixture
def workspace(root: Path) -> Backend:
    store = StoreBackend(InMemoryStore(), namespace=("default",))
    return bound(CompositeBackend(store, {"/workspace/": LocalBackend(root)}))


def tools(backend: Backend) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in FileToolkit(backend).get_tools()}


def test_a_local_mount_maps_its_directory_onto_its_root(workspace: Backend, root: Path) -> None:
    assert workspace.read_bytes("/workspace/todo.txt") == b"buy milk\n"
    assert workspace.stat("/workspace/todo.txt").path == "/workspace/todo.txt"
    assert [e.path for e in workspace.list_dir("/workspace")] == [
        "/workspace/src",
        "/workspace/todo.txt",
    ]
    assert [e.path for e in workspace.walk("/workspace")] == [
        "/workspace/src",
        "/workspace/src/app.py",
        "/workspace/todo.txt",
    ]
    assert workspace.write_bytes("/workspace/new.txt", b"n").path == "/workspace/new.txt"
    assert (root / "new.txt").read_bytes() == b"n"
    assert workspace.move("/workspace/new.txt", "/workspace/src/moved.txt").path == (
        "/workspace/src/moved.txt"
    )
    assert (root / "src" / "moved.txt").read_bytes() == b"n"
    batch = workspace.write_many([Write("/workspace/a.txt", b"a"), Write("/workspace/b.txt", b"b")])
    assert [info.path for info in batch] == ["/workspace/a.txt", "/workspace/b.txt"]
    assert (root / "a.txt").read_bytes() == b"a"
    assert workspace.resolve("/workspace/src/../todo.txt") == "/workspace/todo.txt"
    assert not (root / "workspace").exists()


def test_async_calls_map_paths_as_the_sync_ones_do(workspace: Backend, root: Path) -> None:
    async def calls() -> list[Any]:
        info = await workspace.awrite_bytes("/workspace/x.txt", b"x")
        page = await workspace.alist_page("/workspace", after="src", limit=5)
        many = await workspace.awrite_many([Write("/workspace/y.txt", b"y")])
        resolved = await workspace.aresolve("/workspace/x.txt")
        data = await workspace.aread_bytes("/workspace/todo.txt")
        return [info.path, [e.path for e in page], many[0].path, resolved, data]

    assert asyncio.run(calls()) == [
        "/workspace/x.txt",
        ["/workspace/todo.txt", "/workspace/x.txt"],
        "/workspace/y.txt",
        "/workspace/x.txt",
        b"buy milk\n",
    ]
    assert (root / "y.txt").read_bytes() == b"y"


def test_errors_name_workspace_paths(workspace: Backend, root: Path) -> None:
    version = workspace.stat("/workspace/todo.txt").version
    (root / "todo.txt").write_text("changed\n")
    with pytest.raises(VersionConflict) as conflict:
        workspace.write_bytes("/workspace/todo.txt", b"x", expected_version=version)
    assert conflict.value.path == "/workspace/todo.txt"
    (root / "out").symlink_to(root.parent)
    with pytest.raises(OutsideRoot) as outside:
        workspace.read_bytes("/workspace/out/x")
    assert outside.value.path == "/workspace/out/x"
    with pytest.raises(IsADirectoryError) as directory:
        workspace.write_many([Write("/workspace/ok.txt", b"1"), Write("/workspace/src", b"")])
    assert directory.value.filename == "/workspace/src"


def test_a_partial_batch_names_workspace_paths() -> None:
    store = StoreBackend(InMemoryStore())
    backend = bound(CompositeBackend(StateBackend(), {"/mem/": store}))
    with pytest.raises(PartialWrite) as partial:
        backend.write_many([Write("/mem/ok.md", b"1"), Write("/mem/x.md", b"2", "v0")])
    assert partial.value.written == ("/mem/ok.md",)
    assert isinstance(partial.value.cause, VersionConflict)
    assert partial.value.cause.path == "/mem/x.md"


def test_a_missing_path_below_a_mount_names_the_backend_looked_in(workspace: Backend) -> None:
    with pytest.raises(NotInMount) as missing:
        workspace.read_bytes("/workspace/nope.txt")
    assert missing.value.filename == "/workspace/nope.txt"
    assert missing.value.looked_in == "the local backend mounted at /workspace/"
    with pytest.raises(FileNotFoundError) as outside_mounts:
        workspace.read_bytes("/nope.txt")
    assert not isinstance(outside_mounts.value, NotInMount)
    read, ls = tools(workspace)["read_file"], tools(workspace)["ls"]
    assert read.invoke({"file_path": "/workspace/nope.txt"}) == (
        "Error: /workspace/nope.txt does not exist in the local backend mounted at"
        " /workspace/. Check the path with ls or glob."
    )
    assert ls.invoke({"path": "/workspace/gone"}) == (
        "Error: /workspace/gone does not exist in the local backend mounted at"
        " /workspace/. Check the path with ls or glob."
    )


def test_tools_show_the_full_virtual_path(workspace: Backend, root: Path) -> None:
    found = tools(workspace)
    assert found["read_file"].invoke({"file_path": "/workspace/todo.txt"}) == "1\tbuy milk"
    assert found["ls"].invoke({"path": "/workspace"}) == "/workspace/\nsrc/\ntodo.txt"
    assert set(found["glob"].invoke({"pattern": "**/*.txt"}).splitlines()) == {
        "/workspace/todo.txt"
    }
    grep = found["grep"].invoke({"pattern": "milk", "output_mode": "content"})
    assert set(grep.splitlines()) == {
        "/workspace/todo.txt:1:buy milk",
        "/workspace/src/app.py:1:print('milk')",
    }
    edit = found["edit_file"]
    assert "Edited" in edit.invoke(
        {"file_path": "/workspace/todo.txt", "old_string": "milk", "new_string": "tea"}
    )
    assert (root / "todo.txt").read_text() == "buy tea\n"


def test_an_object_store_mount_searches_natively_in_workspace_paths() -> None:
    objects = ObjectStoreBackend(MemoryStore())
    backend = bound(CompositeBackend(StateBackend(), {"/data/": objects}))
    backend.write_bytes("/data/notes/a.md", b"needle\n")
    assert objects.bind(None).read_bytes("/notes/a.md") == b"needle\n"
    parts = backend.search_parts("/")
    assert [(p.directory, p.native is not None) for p in parts] == [("/", False), ("/data", True)]
    listing = parts[1].native.list_files("/data", globs=(), deadline=float("inf"))  # type: ignore[union-attr]
    assert [f.path for f in listing.files] == ["/data/notes/a.md"]
    found = tools(backend)
    assert found["grep"].invoke({"pattern": "needle"}).splitlines()[1:] == ["/data/notes/a.md"]
    assert found["glob"].invoke({"pattern": "**/*.md", "path": "/data"}) == "/data/notes/a.md"


def test_state_mounts_keep_whole_paths_by_default() -> None:
    composite = CompositeBackend(StateBackend(), {"/scratch/": StateBackend()})
    files: dict[str, Any] = {}
    backend = bound(composite, files)
    backend.write_bytes("/scratch/a.txt", b"a")
    backend.write_bytes("/a.txt", b"top")
    assert set(backend.state_update()["files"]) == {"/scratch/a.txt", "/a.txt"}
    assert backend.read_bytes("/scratch/a.txt") == b"a"


def test_reroot_false_keeps_whole_paths_per_mount_or_for_all() -> None:
    store = InMemoryStore()
    old = StoreBackend(store, namespace=("old",))
    new = StoreBackend(store, namespace=("new",))
    routes = {"/memories/": old, "/notes/": new}
    per_mount = bound(CompositeBackend(StateBackend(), routes, reroot={"/memories/": False}))
    per_mount.write_bytes("/memories/a.md", b"kept whole")
    per_mount.write_bytes("/notes/b.md", b"re-rooted")
    assert old.read_bytes("/memories/a.md") == b"kept whole"
    assert new.read_bytes("/b.md") == b"re-rooted"
    everywhere = bound(CompositeBackend(StateBackend(), routes, reroot=False))
    assert everywhere.read_bytes("/memories/a.md") == b"kept whole"
    assert not everywhere.exists("/notes/b.md")
    forced = bound(CompositeBackend(StateBackend(), {"/s/": StateBackend()}, reroot=True))
    forced.write_bytes("/s/x.txt", b"x")
    assert set(forced.state_update()["files"]) == {"/x.txt"}


def test_reroot_for_no_mount_is_refused(root: Path) -> None:
    with pytest.raises(ValueError, match=r"reroot names /work/, which is not a mount"):
        CompositeBackend(
            StateBackend(), {"/workspace/": LocalBackend(root)}, reroot={"/work": False}
        )


def test_re_rooted_mounts_on_one_storage_are_refused(root: Path) -> None:
    store = InMemoryStore()
    shared = {"/a/": StoreBackend(store), "/b/": StoreBackend(store)}  # one namespace
    with pytest.raises(ValueError, match=r"the mount /b/ would keep its files where the mount /a/"):
        CompositeBackend(StateBackend(), shared)
    with pytest.raises(ValueError, match="where the default backend keeps them"):
        CompositeBackend(StoreBackend(store), {"/a/": StoreBackend(store)})
    with pytest.raises(ValueError, match="where the default backend keeps them"):
        CompositeBackend(LocalBackend(root), {"/mirror/": LocalBackend(root)})
    objects = MemoryStore()
    with pytest.raises(ValueError, match="the mount /y/"):
        CompositeBackend(
            StateBackend(),
            {
                "/x/": ObjectStoreBackend(objects, prefix="p"),
                "/y/": ObjectStoreBackend(objects, prefix="p"),
            },
        )
    # whole paths keep them apart; so do namespaces and prefixes of their own
    CompositeBackend(StateBackend(), shared, reroot={"/b/": False})
    CompositeBackend(
        StateBackend(),
        {
            "/a/": StoreBackend(store, namespace=("a",)),
            "/b/": StoreBackend(store, namespace=("b",)),
        },
    )
    CompositeBackend(
        StateBackend(),
        {
            "/x/": ObjectStoreBackend(objects, prefix="x"),
            "/y/": ObjectStoreBackend(objects, prefix="y"),
        },
    )


# ----- release 0.1's whole paths: the release that warns -----------------------------------

OLD_LAYOUT = r"holds /memories/ under its whole path, as release 0.1 stored a mount's files"


def old_layout_store() -> StoreBackend:
    """A store as release 0.1 filled it through a mount at /memories/ (whole-path keys)."""
    store = StoreBackend(InMemoryStore(), namespace=("memories",))
    store.write_bytes("/memories/a.md", b"as 0.1 stored it")
    return store


def misses_quietly(backend: Backend, path: str) -> None:
    """`path` is missing, and saying so warns of nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotInMount):
            backend.read_bytes(path)


def test_a_default_mount_over_release_0_1_files_warns_once_at_its_first_miss() -> None:
    backend = bound(CompositeBackend(StateBackend(), {"/memories/": old_layout_store()}))
    with pytest.warns(FutureWarning, match=OLD_LAYOUT) as warned, pytest.raises(NotInMount):
        backend.read_bytes("/memories/a.md")
    (warning,) = warned
    assert str(warning.message) == (
        "the store backend mounted at /memories/ holds /memories/ under its whole path, as"
        " release 0.1 stored a mount's files; mounts now see paths relative to them"
        " (/memories/a.md is /a.md to the backend), so those files are out of sight. Pass"
        " reroot={'/memories/': False} to CompositeBackend to read them where they are, or"
        " move them (docs/backends.md, 'Moving from whole paths') and pass"
        " reroot={'/memories/': True}, which also ends this check"
    )
    misses_quietly(backend, "/memories/a.md")  # once per mount


def test_the_warning_s_spelling_reads_the_old_files_and_warns_no_more() -> None:
    store = old_layout_store()
    kept = bound(
        CompositeBackend(StateBackend(), {"/memories/": store}, reroot={"/memories/": False})
    )
    assert kept.read_bytes("/memories/a.md") == b"as 0.1 stored it"
    misses_quietly(kept, "/memories/b.md")
    chosen = bound(CompositeBackend(StateBackend(), {"/memories/": store}, reroot=True))
    misses_quietly(chosen, "/memories/a.md")  # re-rooting chosen: nothing to warn of


def test_a_new_mount_misses_without_a_warning(workspace: Backend) -> None:
    misses_quietly(workspace, "/workspace/nope.txt")


def test_runs_that_bind_one_composite_share_its_check() -> None:
    composite = CompositeBackend(StateBackend(), {"/memories/": old_layout_store()})
    with pytest.warns(FutureWarning, match=OLD_LAYOUT), pytest.raises(NotInMount):
        bound(composite).read_bytes("/memories/a.md")
    misses_quietly(bound(composite), "/memories/a.md")


def test_an_async_read_checked_warns_as_the_sync_calls_do() -> None:
    objects = ObjectStoreBackend(MemoryStore(), prefix="agents")
    objects.write_bytes("/memories/a.md", b"as 0.1 stored it")
    backend = bound(CompositeBackend(StateBackend(), {"/memories/": objects}))
    with pytest.warns(FutureWarning, match=OLD_LAYOUT), pytest.raises(NotInMount):
        asyncio.run(backend.aread_checked("/memories/a.md", expected_version="v1"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotInMount):
            asyncio.run(backend.aread_checked("/memories/a.md", expected_version="v1"))


def test_a_check_that_fails_leaves_the_miss_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(_: StoreBackend, path: str) -> bool:
        raise ConnectionError(path)

    monkeypatch.setattr(StoreBackend, "exists", unreachable)  # the bound copy's too
    backend = bound(CompositeBackend(StateBackend(), {"/memories/": old_layout_store()}))
    misses_quietly(backend, "/memories/a.md")
    monkeypatch.undo()  # answered at the next miss, since this one had no answer
    with pytest.warns(FutureWarning, match=OLD_LAYOUT), pytest.raises(NotInMount):
        backend.read_bytes("/memories/a.md")


def test_nested_store_namespaces_are_refused() -> None:
    store = InMemoryStore()
    nested = {
        "/fs/": StoreBackend(store, namespace=("fs",)),
        "/memories/": StoreBackend(store, namespace=("fs", "memories")),
    }
    with pytest.raises(ValueError, match=r"the mount /memories/ would keep its files where the"):
        CompositeBackend(StateBackend(), nested)
    with pytest.raises(ValueError, match="where the default backend keeps them"):
        CompositeBackend(
            StoreBackend(store, namespace=("fs",)),
            {"/m/": StoreBackend(store, namespace=("fs", "memories"))},
        )
    # siblings, and one namespace only starting like another's label, stay apart
    CompositeBackend(
        StateBackend(),
        {
            "/a/": StoreBackend(store, namespace=("fs", "a")),
            "/b/": StoreBackend(store, namespace=("fs", "ab")),
        },
    )


def test_namespace_functions_giving_one_namespace_are_refused_when_bound() -> None:
    store = InMemoryStore()
    composite = CompositeBackend(
        StateBackend(),
        {
            "/a/": StoreBackend(store, namespace=lambda rt: ("fs", rt.context["user"])),
            "/b/": StoreBackend(store, namespace=lambda rt: ("fs", rt.context["user"])),
        },
    )
    runtime = SimpleNamespace(context={"user": "ann"}, store=store, state={"files": {}})
    with pytest.raises(ValueError, match=r"the mount /b/ would keep its files where the mount /a/"):
        composite.bind(runtime)


def test_namespace_functions_giving_nested_namespaces_are_refused_when_bound() -> None:
    store = InMemoryStore()
    composite = CompositeBackend(
        StoreBackend(store, namespace=lambda rt: ("fs",)),
        {"/m/": StoreBackend(store, namespace=lambda rt: ("fs", "memories"))},
    )
    with pytest.raises(ValueError, match="where the default backend keeps them"):
        composite.bind(SimpleNamespace(context={}, store=store, state={}))
