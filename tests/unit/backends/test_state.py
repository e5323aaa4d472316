"""StateBackend: the files channel, its reducer, the bound view, and a real graph."""

from __future__ import annotations

import asyncio
import copy
import errno
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo
from langchain_fstools.backends.state import (
    FileRecord,
    FilesState,
    StateBackend,
    file_bytes,
    file_record,
    merge_files,
    record_bytes,
)
from langchain_fstools.core import calls
from langchain_fstools.errors import FsToolsError, InvalidStateRecord, NotInGraph, VersionConflict


def record(text: str) -> FileRecord:
    return file_record(text.encode(), modified_at=1.0)


def bind(files: dict[str, FileRecord] | None = None) -> Backend:
    return StateBackend().bind(SimpleNamespace(state={"files": files or {}}))


# ----- the reducer ------------------------------------------------------------------------


def test_reducer_merges_replaces_and_deletes() -> None:
    a, b, c = record("a"), record("b"), record("c")
    assert merge_files({"/x": a}, [{"/y": b}, {"/x": None}]) == {"/y": b}
    assert merge_files({"/x": a}, [{"/x": b}, {"/x": c}]) == {"/x": c}
    assert merge_files(None, [{"/x": a}]) == {"/x": a}
    assert merge_files({"/x": a}, []) == {"/x": a}
    assert merge_files({}, [{"/missing": None}]) == {}
    assert merge_files({"/x": a}, [{"/x": None}, {"/x": b}]) == {"/x": b}


def test_reducer_is_batching_invariant_and_never_mutates() -> None:
    rng = random.Random(20240607)  # noqa: S311 - reproducible test data
    names = [f"/d/f{i}" for i in range(8)]
    for _ in range(300):
        base = {p: record(p) for p in rng.sample(names, rng.randint(0, len(names)))}
        updates: list[dict[str, FileRecord | None]] = [
            {
                rng.choice(names): rng.choice([None, record(str(rng.random()))])
                for _ in range(rng.randint(0, 4))
            }
            for _ in range(rng.randint(0, 8))
        ]
        frozen_base, frozen_updates = copy.deepcopy(base), copy.deepcopy(updates)

        whole = merge_files(base, updates)
        cuts = sorted(rng.sample(range(len(updates) + 1), rng.randint(0, len(updates) + 1)))
        folded: dict[str, FileRecord] = base
        for start, end in zip([0, *cuts], [*cuts, len(updates)], strict=True):
            folded = merge_files(folded, updates[start:end])

        assert folded == whole
        assert whole == merge_files(merge_files(base, updates[:1]), updates[1:])
        assert base == frozen_base
        assert updates == frozen_updates
        assert whole is not base


def test_files_state_declares_a_delta_channel() -> None:
    class State(FilesState):
        step: int

    builder = StateGraph(State)
    builder.add_node("noop", lambda _state: {})
    builder.add_edge(START, "noop")
    graph = builder.compile()
    channel = graph.channels["files"]
    assert isinstance(channel, DeltaChannel)
    assert channel.reducer is merge_files
    assert channel.snapshot_frequency == 50


# ----- records ------------------------------------------------------------------------------


def test_records_hold_text_as_utf8_and_other_bytes_as_base64() -> None:
    text = file_record("héllo\n".encode())
    assert (text["encoding"], text["content"], text["size"]) == ("utf-8", "héllo\n", 7)
    binary = file_record(b"\xff\x00\xfe")
    assert binary["encoding"] == "base64"
    assert record_bytes(binary) == b"\xff\x00\xfe"
    assert file_record(b"\xed\xa0\x80")["encoding"] == "base64"  # a surrogate: not UTF-8


def test_version_is_kind_plus_content_hash() -> None:
    one, same, other = file_record(b"1"), file_record(b"1"), file_record(b"2")
    assert one["version"] == same["version"] != other["version"]
    assert one["version"].startswith("file:")
    view = bind()
    view.mkdir("/dir")
    assert view.stat("/dir").version.startswith("directory:")
    assert view.stat("/").version == view.stat("/dir").version


# ----- unbound ------------------------------------------------------------------------------


UNBOUND_CALLS: list[Callable[[Backend], object]] = [
    lambda b: b.stat("/a"),
    lambda b: b.read_bytes("/a"),
    lambda b: b.write_bytes("/a", b"x"),
    lambda b: b.delete("/a"),
    lambda b: b.mkdir("/a"),
    lambda b: b.list_dir("/"),
    lambda b: b.exists("/a"),
    lambda b: b.move("/a", "/b"),
    lambda b: list(b.walk("/")),
    lambda b: asyncio.run(b.aread_bytes("/a")),
    lambda b: asyncio.run(b.awrite_bytes("/a", b"x")),
]


@pytest.mark.parametrize("call", UNBOUND_CALLS)
def test_unbound_backend_raises_not_in_graph(call: Callable[[Backend], object]) -> None:
    with pytest.raises(NotInGraph) as caught:
        call(StateBackend())
    assert caught.value.backend == "state"
    assert "inside a graph" in caught.value.missing
    assert "'files' channel" in caught.value.missing


@pytest.mark.parametrize(
    "runtime",
    [None, SimpleNamespace(state=None), SimpleNamespace(state=["files"]), object()],
    ids=["none", "state-none", "state-not-a-mapping", "no-state"],
)
def test_binding_without_graph_state_raises_not_in_graph(runtime: object) -> None:
    with pytest.raises(NotInGraph, match="inside a graph"):
        StateBackend().bind(runtime)


def test_unbound_state_update_is_empty() -> None:
    assert StateBackend().state_update() == {}


def test_state_without_files_channel_is_refused_naming_the_fix() -> None:
    with pytest.raises(NotInGraph) as raised:
        StateBackend().bind(SimpleNamespace(state={"messages": []}))
    assert "no 'files' channel" in raised.value.missing
    assert "FilesystemState" in raised.value.missing
    assert StateBackend().bind(SimpleNamespace(state={"files": None})).list_dir("/") == []


@pytest.mark.parametrize("runtime", [None, SimpleNamespace(state={"messages": []})])
def test_optional_state_backend_is_an_empty_directory_that_refuses_writes(runtime: Any) -> None:
    view = StateBackend(optional=True).bind(runtime)
    assert view.list_dir("/") == []
    assert not view.exists("/a.txt")
    with pytest.raises(NotInGraph):
        view.write_bytes("/a.txt", b"x")
    with pytest.raises(NotInGraph):
        view.mkdir("/d")
    assert view.state_update() == {}


# ----- the view: overlay and state_update -----------------------------------------------------


def test_view_sees_its_own_writes_and_reports_only_changes() -> None:
    base = {"/old.txt": record("old"), "/keep.txt": record("keep")}
    frozen = copy.deepcopy(base)
    view = bind(base)
    assert view.state_update() == {}

    view.write_bytes("/new.txt", b"new")
    view.delete("/old.txt")
    assert view.read_bytes("/new.txt") == b"new"
    assert view.read_bytes("/keep.txt") == b"keep"
    assert not view.exists("/old.txt")
    assert [e.name for e in view.list_dir("/")] == ["keep.txt", "new.txt"]

    update = view.state_update()
    assert set(update) == {"files"}
    assert update["files"]["/old.txt"] is None
    assert update["files"]["/new.txt"]["content"] == "new"
    assert set(update["files"]) == {"/old.txt", "/new.txt"}
    assert base == frozen, "the state the view was bound to must not change"
    assert merge_files(base, [update["files"]]).keys() == {"/keep.txt", "/new.txt"}


def test_reads_listings_and_no_ops_change_nothing() -> None:
    view = bind({"/d/f.txt": record("f"), "/d": file_record(b"") | {"kind": "directory"}})
    view.read_bytes("/d/f.txt")
    view.stat("/d")
    view.list_dir("/")
    list(view.walk())
    view.mkdir("/d")
    view.mkdir("/")
    view.move("/d/f.txt", "/d/f.txt")
    assert view.state_update() == {}


def test_a_file_created_and_deleted_in_one_call_leaves_no_trace() -> None:
    view = bind({"/d/keep": record("k")})
    view.write_bytes("/d/tmp", b"t")
    view.delete("/d/tmp")
    files = view.state_update()["files"]
    assert list(files) == ["/d"], "only the implicit parent, now a directory record"
    assert files["/d"]["kind"] == "directory"
    fresh = bind()
    fresh.write_bytes("/tmp", b"t")
    fresh.delete("/tmp")
    assert fresh.state_update() == {}


def test_writes_add_no_records_for_their_parent_directories() -> None:
    view = bind({"/src/app.py": record("x = 1\n")})
    info = view.write_bytes("/a/b/c.txt", b"deep")
    view.write_bytes("/src/app.py", b"x = 2\n")
    assert (info.path, info.kind, info.size) == ("/a/b/c.txt", EntryKind.FILE, 4)
    files = view.state_update()["files"]
    assert sorted(files) == ["/a/b/c.txt", "/src/app.py"]
    assert [(e.name, e.kind) for e in view.list_dir("/a")] == [("b", EntryKind.DIRECTORY)]
    assert view.stat("/a/b").kind is EntryKind.DIRECTORY


def test_a_move_keeps_the_source_folder_and_adds_no_target_folder_records() -> None:
    view = bind({"/old/only.txt": record("x")})
    view.move("/old/only.txt", "/new/deep/only.txt")
    files = view.state_update()["files"]
    assert files["/old"]["kind"] == "directory"  # emptied, but stays as after rename(2)
    assert "/new" not in files
    assert "/new/deep" not in files
    assert view.list_dir("/new") == [view.stat("/new/deep")]


def test_later_calls_see_the_merged_update() -> None:
    first = bind()
    first.write_bytes("/x/y.bin", b"\x00\xff")
    first.mkdir("/empty")
    state = merge_files({}, [first.state_update()["files"]])
    second = bind(state)
    assert second.read_bytes("/x/y.bin") == b"\x00\xff"
    assert second.stat("/x/y.bin").version == first.stat("/x/y.bin").version
    assert second.list_dir("/empty") == []
    assert [e.name for e in second.list_dir("/")] == ["empty", "x"]


def test_compare_and_swap() -> None:
    view = bind({"/v.txt": record("1")})
    seeded = view.stat("/v.txt").version
    assert seeded == record("1")["version"]
    updated = view.write_bytes("/v.txt", b"2", expected_version=seeded)
    with pytest.raises(VersionConflict) as stale:
        view.write_bytes("/v.txt", b"3", expected_version=seeded)
    assert stale.value == VersionConflict("/v.txt", seeded, updated.version)
    with pytest.raises(VersionConflict) as exists:
        view.write_bytes("/v.txt", b"3", expected_version=ABSENT)
    assert exists.value.actual == updated.version
    with pytest.raises(VersionConflict) as missing:
        view.write_bytes("/none.txt", b"3", expected_version=seeded)
    assert missing.value.actual is None
    view.write_bytes("/none.txt", b"new", expected_version=ABSENT)
    assert view.read_bytes("/v.txt") == b"2"
    assert view.read_bytes("/none.txt") == b"new"


def test_range_reads() -> None:
    view = bind({"/r.bin": file_record(b"0123456789")})
    assert view.read_bytes("/r.bin", 2, 3) == b"234"
    assert view.read_bytes("/r.bin", 8, 10) == b"89"
    assert view.read_bytes("/r.bin", 20, 5) == b""
    assert view.read_bytes("/r.bin", 4) == b"456789"
    assert view.read_bytes("/r.bin", 0, 0) == b""


def test_implicit_directories_behave_like_real_ones() -> None:
    view = bind({"/a/b/c.txt": record("c")})  # no directory records at all
    assert view.stat("/a").kind is EntryKind.DIRECTORY
    assert [e.path for e in view.walk()] == ["/a", "/a/b", "/a/b/c.txt"]
    with pytest.raises(OSError, match="not empty") as full:
        view.delete("/a/b")
    assert (full.value.errno, full.value.filename) == (errno.ENOTEMPTY, "/a/b")
    view.delete("/a/b/c.txt")
    assert view.list_dir("/a/b") == [], "deleting the last file keeps its directory"
    files = view.state_update()["files"]
    assert files["/a/b/c.txt"] is None
    assert files["/a/b"]["kind"] == "directory"
    view.delete("/a/b")
    assert [e.path for e in view.walk()] == ["/a"]


def test_one_directory_answers_see_this_calls_writes_and_deletes() -> None:
    """The sorted base paths answer one-directory questions together with the overlay."""
    base = {f"/seed/{n:02}.txt": record("s") for n in range(30)}
    base |= {"/d/old.txt": record("o"), "/d/gone.txt": record("g"), "/d-x/z.txt": record("z")}
    view = bind(base)
    view.delete("/d/gone.txt")
    view.write_bytes("/d/new.txt", b"n")
    view.write_bytes("/e/f/g.txt", b"g")  # /e and /e/f exist through the path alone
    assert view.exists("/e/f")
    assert not view.exists("/d/gone.txt")
    assert not view.exists("/d/old.txt/x")
    assert [e.name for e in view.list_dir("/d")] == ["new.txt", "old.txt"]
    view.delete("/d/new.txt")
    view.delete("/d/old.txt")
    assert view.list_dir("/d") == []
    view.delete("/d")  # empty now: only /d-x/z.txt shares its prefix, not its directory
    assert not view.exists("/d")
    assert view.exists("/d-x")


def test_moving_a_directory_moves_its_tree_and_keeps_versions() -> None:
    view = bind({"/src/a.txt": record("a"), "/src/deep/b.bin": file_record(b"\xff")})
    before = view.stat("/src/deep/b.bin").version
    view.mkdir("/src/empty")
    info = view.move("/src", "/dst/moved")
    assert (info.path, info.kind) == ("/dst/moved", EntryKind.DIRECTORY)
    assert [e.path for e in view.walk()] == [
        "/dst",
        "/dst/moved",
        "/dst/moved/a.txt",
        "/dst/moved/deep",
        "/dst/moved/deep/b.bin",
        "/dst/moved/empty",
    ]
    assert view.stat("/dst/moved/deep/b.bin").version == before
    assert view.read_bytes("/dst/moved/deep/b.bin") == b"\xff"
    state = merge_files(
        {"/src/a.txt": record("a"), "/src/deep/b.bin": file_record(b"\xff")},
        [view.state_update()["files"]],
    )
    assert not any(p.startswith("/src") for p in state)


def test_hand_written_records_without_size_or_version() -> None:
    hand: Any = {"content": "hi", "encoding": "utf-8", "kind": "file", "modified_at": 3.0}
    view = bind({"/hand.txt": hand})
    info = view.stat("/hand.txt")
    assert (info.size, info.mtime, info.version) == (2, 3.0, file_record(b"hi")["version"])
    assert view.read_bytes("/hand.txt") == b"hi"


def test_async_twins_run_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_threads(*_args: object, **_kwargs: object) -> None:
        msg = "the state view must not use threads"
        raise AssertionError(msg)

    monkeypatch.setattr(asyncio, "to_thread", no_threads)
    view = bind()

    async def script() -> list[Any]:
        await view.awrite_bytes("/a/f.txt", b"abc")
        await view.amkdir("/b")
        moved = await view.amove("/a/f.txt", "/b/g.txt")
        out = [
            moved.path,
            await view.aread_bytes("/b/g.txt", 1, 1),
            (await view.astat("/b")).kind,
            [e.name for e in await view.alist_dir("/")],
            await view.aexists("/a/f.txt"),
        ]
        await view.adelete("/b/g.txt")
        return out

    assert asyncio.run(script()) == ["/b/g.txt", b"b", EntryKind.DIRECTORY, ["a", "b"], False]
    assert not view.exists("/b/g.txt")


# ----- the same answers as a POSIX disk, call for call ------------------------------------


SETUP: list[tuple[str, bytes | None]] = [
    ("/a/f.txt", b"x"),
    ("/a/sub/g.txt", b"yy"),
    ("/e", None),
    ("/n/h", b"z"),
    ("/file", b"1"),
]

CASES: dict[str, Callable[[Backend], object]] = {
    "move-root": lambda b: b.move("/", "/x"),
    "move-into-itself": lambda b: b.move("/a", "/a/sub/z"),
    "move-onto-an-ancestor": lambda b: b.move("/a/sub", "/a"),
    "move-file-onto-dir": lambda b: b.move("/a/f.txt", "/e"),
    "move-dir-onto-file": lambda b: b.move("/a", "/file"),
    "move-dir-onto-non-empty-dir": lambda b: b.move("/a", "/n"),
    "move-dir-onto-empty-dir": lambda b: b.move("/a", "/e"),
    "move-file-under-file": lambda b: b.move("/a/f.txt", "/file/x"),
    "move-from-under-file": lambda b: b.move("/file/x", "/q"),
    "move-missing": lambda b: b.move("/nope", "/q"),
    "move-file-onto-itself": lambda b: b.move("/file", "/file"),
    "move-dir-onto-itself": lambda b: b.move("/a", "/a"),
    "move-file-to-root": lambda b: b.move("/file", "/"),
    "move-file-replacing-file": lambda b: b.move("/a/sub/g.txt", "/a/f.txt"),
    "move-file-creating-parents": lambda b: b.move("/a/f.txt", "/new/deep/f.txt"),
    "move-dir": lambda b: b.move("/a/sub", "/moved"),
    "read-negative-start": lambda b: b.read_bytes("/file", -1),
    "read-negative-size": lambda b: b.read_bytes("/file", 0, -1),
    "read-root": lambda b: b.read_bytes("/"),
    "read-dir": lambda b: b.read_bytes("/a"),
    "read-under-file": lambda b: b.read_bytes("/file/x"),
    "read-missing": lambda b: b.read_bytes("/a/nope"),
    "mkdir-under-file": lambda b: b.mkdir("/file/x/y"),
    "mkdir-over-file": lambda b: b.mkdir("/file"),
    "mkdir-existing": lambda b: b.mkdir("/a"),
    "mkdir-root": lambda b: b.mkdir("/"),
    "mkdir-deep": lambda b: b.mkdir("/m/x/y"),
    "write-under-file": lambda b: b.write_bytes("/file/x/y", b""),
    "write-onto-dir": lambda b: b.write_bytes("/a", b""),
    "write-onto-root": lambda b: b.write_bytes("/", b""),
    "write-absent-onto-dir": lambda b: b.write_bytes("/e", b"", expected_version=ABSENT),
    "write-absent-onto-file": lambda b: b.write_bytes("/file", b"2", expected_version=ABSENT),
    "write-in-empty-dir": lambda b: b.write_bytes("/e/new", b"new"),
    "delete-non-empty-dir": lambda b: b.delete("/a"),
    "delete-empty-dir": lambda b: b.delete("/e"),
    "delete-file": lambda b: b.delete("/n/h"),
    "delete-under-file": lambda b: b.delete("/file/x"),
    "delete-missing": lambda b: b.delete("/nope"),
    "delete-root": lambda b: b.delete("/"),
    "list-file": lambda b: b.list_dir("/file"),
    "list-under-file": lambda b: b.list_dir("/file/x"),
    "list-missing": lambda b: b.list_dir("/nope"),
    "list-root": lambda b: b.list_dir("/"),
    "stat-under-file": lambda b: b.stat("/file/x"),
    "stat-dir": lambda b: b.stat("/a/sub"),
    "stat-root": lambda b: b.stat("/"),
    "exists-under-file": lambda b: b.exists("/file/x"),
    "exists-dir": lambda b: b.exists("/a/sub"),
    "exists-missing": lambda b: b.exists("/a/nope"),
}


def _outcome(call: Callable[[], object]) -> object:
    try:
        result = call()
    except OSError as error:
        return (type(error).__name__, error.errno, error.filename)
    except FsToolsError as error:
        return type(error).__name__
    if isinstance(result, FileInfo):
        return (result.path, result.kind, result.size)
    if isinstance(result, list):
        return [(e.path, e.kind, e.size) for e in result]
    return result


def _tree(backend: Backend) -> list[tuple[str, EntryKind, bytes | None]]:
    return [
        (e.path, e.kind, backend.read_bytes(e.path) if e.is_file else None) for e in backend.walk()
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_same_outcome_as_local_disk(case: str, tmp_path: Path) -> None:
    local = LocalBackend(tmp_path)
    state = bind()
    for backend in (local, state):
        for path, data in SETUP:
            if data is None:
                backend.mkdir(path)
            else:
                backend.write_bytes(path, data)
    expected = _outcome(lambda: CASES[case](local))
    assert _outcome(lambda: CASES[case](state)) == expected
    assert _tree(state) == _tree(local)


# ----- a real graph with a checkpointer ------------------------------------------------------


PAYLOAD = 200 * 1024
WRITES = 10


class _DeltaGraph(FilesState):
    op: str
    path: str
    seed: int


def _replace(current: dict[str, FileRecord] | None, update: dict[str, Any]) -> dict[str, Any]:
    return merge_files(current, [update])


class _PlainGraph(TypedDict):
    files: NotRequired[Annotated[dict[str, FileRecord], _replace]]
    op: str
    path: str
    seed: int


def _payload(seed: int) -> bytes:
    return bytes([65 + seed % 26]) * (PAYLOAD - 1) + b"\n"


def _files_node(state: dict[str, Any]) -> dict[str, Any]:
    view = StateBackend().bind(SimpleNamespace(state=state))
    if state["op"] == "write":
        calls.run(calls.write_bytes(state["path"], _payload(state["seed"])), view)
    elif state["op"] == "delete":
        calls.run(calls.delete(state["path"]), view)
    return view.state_update()


def _graph(schema: type[Any]) -> tuple[Any, InMemorySaver]:
    builder = StateGraph(schema)
    builder.add_node("files", _files_node)
    builder.add_edge(START, "files")
    builder.add_edge("files", END)
    saver = InMemorySaver()
    return builder.compile(checkpointer=saver), saver


def _stored_bytes(saver: InMemorySaver) -> int:
    """Bytes the saver holds: every serialized checkpoint, write and blob."""

    def size(value: object) -> int:
        if isinstance(value, bytes | str):
            return len(value)
        if isinstance(value, dict):
            return sum(size(k) + size(v) for k, v in value.items())
        if isinstance(value, tuple | list):
            return sum(size(v) for v in value)
        return 0

    return size(saver.storage) + size(saver.writes) + size(saver.blobs)


def _write_ten(schema: type[Any], target: Callable[[int], str]) -> tuple[Any, InMemorySaver]:
    graph, saver = _graph(schema)
    config = {"configurable": {"thread_id": "t"}}
    for seed in range(WRITES):
        graph.invoke({"op": "write", "path": target(seed), "seed": seed}, config)
    return graph, saver


@pytest.mark.parametrize(
    ("layout", "target"),
    [("distinct", lambda seed: f"/out/f{seed}.txt"), ("same", lambda _seed: "/out/same.txt")],
)
def test_files_live_in_checkpoints_and_stay_small(
    layout: str, target: Callable[[int], str]
) -> None:
    graph, saver = _write_ten(_DeltaGraph, target)
    _, plain_saver = _write_ten(_PlainGraph, target)
    config = {"configurable": {"thread_id": "t"}}

    files = graph.get_state(config).values["files"]
    expected = {target(seed): _payload(seed) for seed in range(WRITES)}
    assert {p: record_bytes(r) for p, r in files.items()} == expected  # no folder records

    delta_bytes, plain_bytes = _stored_bytes(saver), _stored_bytes(plain_saver)
    message = (
        f"{layout} files, {WRITES} writes of {PAYLOAD:,} B: DeltaChannel checkpoints "
        f"{delta_bytes:,} B vs plain dict reducer {plain_bytes:,} B"
    )
    assert delta_bytes < 6 * 1024 * 1024, message
    assert delta_bytes < 1.5 * WRITES * PAYLOAD, message
    if layout == "distinct":
        assert plain_bytes > 3 * delta_bytes, message

    graph.invoke({"op": "delete", "path": target(WRITES - 1), "seed": 0}, config)
    after = graph.get_state(config).values["files"]
    assert target(WRITES - 1) not in after
    assert after["/out"]["kind"] == "directory"
    if layout == "distinct":
        assert {p for p in after if p.startswith("/out/")} == {
            target(seed) for seed in range(WRITES - 1)
        }

    graph.invoke({"op": "write", "path": "/later.txt", "seed": 1}, config)
    history = list(graph.get_state_history(config))
    assert len(history) > 3 * WRITES
    final = graph.get_state(config).values["files"]
    assert record_bytes(final["/later.txt"]) == _payload(1)
    assert target(WRITES - 1) not in final


def test_a_fresh_graph_on_the_same_saver_rebuilds_the_files() -> None:
    graph, saver = _write_ten(_DeltaGraph, lambda seed: f"/f{seed}")
    builder = StateGraph(_DeltaGraph)
    builder.add_node("files", _files_node)
    builder.add_edge(START, "files")
    again = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    assert again.get_state(config).values["files"] == graph.get_state(config).values["files"]
    assert len(again.get_state(config).values["files"]) == WRITES


def test_long_threads_cross_snapshots_and_replay_exactly() -> None:
    """Past `snapshot_frequency` updates the saver stores a snapshot; replay stays exact."""

    def node(state: dict[str, Any]) -> dict[str, Any]:
        view = StateBackend().bind(SimpleNamespace(state=state))
        if state["op"] == "write":
            view.write_bytes(state["path"], str(state["seed"]).encode())
        elif view.exists(state["path"]):
            view.delete(state["path"])
        return view.state_update()

    builder = StateGraph(_DeltaGraph)
    builder.add_node("files", node)
    builder.add_edge(START, "files")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "long"}}
    rng = random.Random(5)  # noqa: S311 - reproducible test data
    model: dict[str, bytes] = {}
    for seed in range(130):
        path = f"/d{rng.randint(0, 2)}/f{rng.randint(0, 5)}"
        op = rng.choice(["write", "write", "delete"])
        graph.invoke({"op": op, "path": path, "seed": seed}, config)
        if op == "write":
            model[path] = str(seed).encode()
        else:
            model.pop(path, None)
        if seed % 43 == 0 or seed > 125:
            files = graph.get_state(config).values["files"]
            assert {p: record_bytes(r) for p, r in files.items() if r["kind"] == "file"} == model
    snapshots = [v for k, v in saver.blobs.items() if k[2] == "files" and v[0] != "empty"]
    assert snapshots, "more than 50 updates must have written a snapshot"


# ----- seeding and malformed records -------------------------------------------------


def test_seed_builds_file_records_from_text_and_bytes() -> None:
    seeded = StateBackend.seed({"/notes.md": "text", "/logo.png": b"\x89PNG\x00"}, modified_at=5.0)
    view = bind(seeded)
    assert view.read_bytes("/notes.md") == b"text"
    assert view.read_bytes("/logo.png") == b"\x89PNG\x00"
    assert seeded["/logo.png"]["encoding"] == "base64"
    assert view.stat("/notes.md").mtime == 5.0


def test_seed_refuses_content_that_is_not_text_or_bytes() -> None:
    with pytest.raises(TypeError, match="text or bytes for '/n'"):
        StateBackend.seed({"/n": 3})  # type: ignore[dict-item]


def test_reducer_turns_plain_text_and_bytes_into_records() -> None:
    merged = merge_files({}, [{"/a.md": "hello", "/b.bin": b"\xff\x00"}])
    view = bind(merged)
    assert view.read_bytes("/a.md") == b"hello"
    assert view.read_bytes("/b.bin") == b"\xff\x00"
    assert merged == merge_files({}, [{"/a.md": "hello", "/b.bin": b"\xff\x00"}])  # deterministic


def test_deepagents_style_records_are_read_as_files() -> None:
    lines = {"content": ["l1", "l2"], "created_at": "2024-01-01T00:00:00+00:00"}
    text = {"content": "x\n", "encoding": "utf-8", "modified_at": "2024-01-02T00:00:00+00:00"}
    merged = merge_files({}, [{"/lines.md": lines, "/text.md": text}])  # type: ignore[list-item]
    view = bind(merged)
    assert view.read_bytes("/lines.md") == b"l1\nl2"
    assert view.read_bytes("/text.md") == b"x\n"
    assert view.stat("/text.md").mtime == 1704153600.0
    assert [e.name for e in view.list_dir("/")] == ["lines.md", "text.md"]


@pytest.mark.parametrize(
    ("value", "found"),
    [(3, "a value of type int"), ({"text": "x"}, "a record without text 'content'")],
)
def test_a_malformed_record_is_refused_naming_the_state(value: Any, found: str) -> None:
    with pytest.raises(InvalidStateRecord) as raised:
        merge_files({}, [{"/n": value}])
    assert raised.value == InvalidStateRecord("/n", found)
    assert "'files' channel" in str(raised.value)
    assert "StateBackend.seed" in str(raised.value)
    view = bind({"/n": value, "/ok.md": record("fine\n")})  # in the state another way
    assert view.read_bytes("/ok.md") == b"fine\n"  # checked when used, not all at bind
    for use in (lambda: view.read_bytes("/n"), lambda: view.list_dir("/")):
        with pytest.raises(InvalidStateRecord):
            use()


def test_file_bytes_decodes_binary_records_and_refuses_directory_records() -> None:
    binary = b"\x00\xff\x10PNG"
    view = bind()
    view.write_bytes("/img.bin", binary)
    view.mkdir("/empty")
    files = merge_files({}, [view.state_update()["files"]])
    assert files["/img.bin"]["encoding"] == "base64"
    assert file_bytes(files, "/img.bin") == binary
    with pytest.raises(IsADirectoryError):
        file_bytes(files, "/empty")
    with pytest.raises(FileNotFoundError):
        file_bytes(None, "/img.bin")
