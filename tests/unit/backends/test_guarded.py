"""GuardedBackend and RecordingBackend over local disk and a state view, sync and async."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.backends.view import BackendView
from langchain_fstools.core import calls
from langchain_fstools.errors import StaleApproval
from langchain_fstools.history.changes import HISTORY_KEY
from langchain_fstools.history.recording import RecordingBackend
from langchain_fstools.permissions.gate import CallGuard
from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.search import engine

FILES = {"/a.txt": b"a\n", "/Secret/k.txt": b"k\n", "/.env": b"TOKEN=1\n"}


class Runtime:
    def __init__(self, state: dict[str, Any] | None = None, tool_call_id: str = "c1") -> None:
        self.state = state or {}
        self.tool_call_id = tool_call_id
        self.config: dict[str, Any] = {}


def storage(kind: str, tmp_path: Path) -> tuple[Backend, Runtime]:
    if kind == "local":
        for path, data in FILES.items():
            (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path.lstrip("/")).write_bytes(data)
        return LocalBackend(tmp_path), Runtime()
    view = StateBackend().bind(Runtime({"files": {}}))
    for path, data in FILES.items():
        view.write_bytes(path, data)
    return StateBackend(), Runtime({"files": view.state_update()["files"]})


POLICY = Policy([Permission(operations=["read", "write"], paths=["/secret"], action="deny")])


def guarded(kind: str, tmp_path: Path, approved: frozenset[str] = frozenset()) -> Backend:
    inner, runtime = storage(kind, tmp_path)
    return GuardedBackend(inner, lambda _rt: CallGuard(POLICY, approved)).bind(runtime)


@pytest.fixture(params=["local", "state"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_denied_paths_are_invisible(kind: str, tmp_path: Path) -> None:
    backend = guarded(kind, tmp_path)
    assert [e.path for e in backend.list_dir("/")] == ["/.env", "/a.txt"]
    assert [e.path for e in backend.walk("/")] == ["/.env", "/a.txt"]
    assert not backend.exists("/secret/k.txt")
    assert not asyncio.run(backend.aexists("/SECRET/k.txt"))
    for call in (
        lambda: backend.stat("/x/../Secret/k.txt"),
        lambda: backend.read_bytes("/Secret/k.txt"),
        lambda: backend.list_dir("/Secret"),
        lambda: asyncio.run(backend.astat("/Secret")),
    ):
        with pytest.raises(PermissionError) as raised:
            call()
        assert raised.value.filename.lower().startswith("/secret")


def test_listings_and_searches_leave_denied_paths_out(kind: str, tmp_path: Path) -> None:
    backend = guarded(kind, tmp_path)
    found: list[str] = []
    for part in backend.search_parts("/"):
        if part.native is not None:
            listing = part.native.list_files("/", globs=(), deadline=time.monotonic() + 30)
        else:
            listing = calls.run(
                engine.list_files("/", globs=(), deadline=time.monotonic() + 30), backend
            )
        found += [f.path for f in listing.files]
    assert sorted(found) == ["/.env", "/a.txt"]


def test_protected_contents_need_an_approval(kind: str, tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        guarded(kind, tmp_path).read_bytes("/.env")
    assert guarded(kind, tmp_path, frozenset({"/.env"})).read_bytes("/.env") == b"TOKEN=1\n"


def test_a_checked_read_is_guarded_as_a_read(kind: str, tmp_path: Path) -> None:
    """`read_checked` (a re-read without a stat) passes the same gate as `read_bytes`."""
    closed = guarded(kind, tmp_path)
    for path in ("/.env", "/Secret/k.txt", "/x/../SECRET/k.txt"):
        with pytest.raises(PermissionError):
            closed.read_checked(path, expected_version="any")
        with pytest.raises(PermissionError):
            asyncio.run(closed.aread_checked(path, expected_version="any"))
    open_backend = guarded(kind, tmp_path, frozenset({"/.env"}))
    version = open_backend.stat("/.env").version
    assert open_backend.read_checked("/.env", 0, 5, expected_version=version) == b"TOKEN"
    again = asyncio.run(open_backend.aread_checked("/.env", expected_version=version))
    assert again == b"TOKEN=1\n"


def test_a_checked_read_of_another_version_than_the_approved_one_is_stale(
    kind: str, tmp_path: Path
) -> None:
    inner, runtime = storage(kind, tmp_path)
    version = inner.bind(runtime).stat("/a.txt").version
    approved = {"/a.txt": ("an-older-version", None)}
    backend = GuardedBackend(
        inner, lambda _rt: CallGuard(POLICY, frozenset({"/a.txt"}), approved)
    ).bind(runtime)
    with pytest.raises(StaleApproval):
        backend.read_checked("/a.txt", expected_version=version)
    pinned = {"/a.txt": (version, None)}
    backend = GuardedBackend(
        inner, lambda _rt: CallGuard(POLICY, frozenset({"/a.txt"}), pinned)
    ).bind(runtime)
    assert backend.read_checked("/a.txt", expected_version=version) == b"a\n"


def test_writes_need_an_allow_or_an_approval(kind: str, tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        guarded(kind, tmp_path).write_bytes("/b.txt", b"b")
    with pytest.raises(PermissionError):
        asyncio.run(guarded(kind, tmp_path).amove("/a.txt", "/b.txt"))
    approved = guarded(kind, tmp_path, frozenset({"/b.txt"}))
    assert approved.write_bytes("/b.txt", b"b").size == 1
    denied_even_approved = guarded(kind, tmp_path, frozenset({"/Secret/k.txt"}))
    with pytest.raises(PermissionError):
        denied_even_approved.write_bytes("/Secret/k.txt", b"x")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_recording_captures_before_and_after(kind: str, mode: str, tmp_path: Path) -> None:
    inner, runtime = storage(kind, tmp_path)
    backend = RecordingBackend(inner).bind(runtime)

    async def changes() -> None:
        await backend.awrite_bytes("/a.txt", b"A\n")
        await backend.awrite_bytes("/new.txt", b"n\n")
        await backend.amove("/new.txt", "/moved.txt")
        await backend.adelete("/.env")

    if mode == "async":
        asyncio.run(changes())
    else:
        backend.write_bytes("/a.txt", b"A\n")
        backend.write_bytes("/new.txt", b"n\n")
        backend.move("/new.txt", "/moved.txt")
        backend.delete("/.env")
    records = backend.state_update()[HISTORY_KEY]["add"]
    summary = [(r["id"], r["path"], r["existed"], r["before"], r["after"] is None) for r in records]
    assert summary == [
        ("c1:0", "/a.txt", True, "a\n", False),
        ("c1:1", "/new.txt", False, "", False),
        ("c1:2", "/new.txt", True, "n\n", True),
        ("c1:3", "/moved.txt", False, "", False),
        ("c1:4", "/.env", True, "TOKEN=1\n", True),
    ]


def test_large_files_are_recorded_without_content(kind: str, tmp_path: Path) -> None:
    inner, runtime = storage(kind, tmp_path)
    backend = RecordingBackend(inner, max_record_bytes=2).bind(runtime)
    backend.write_bytes("/.env", b"x")
    (record,) = backend.state_update()[HISTORY_KEY]["add"]
    assert (record["existed"], record["kept"], record["before"]) == (True, False, "")


def test_no_tool_call_means_no_recording(tmp_path: Path) -> None:
    inner, _ = storage("local", tmp_path)
    backend = RecordingBackend(inner).bind(None)
    backend.write_bytes("/a.txt", b"z")
    assert HISTORY_KEY not in backend.state_update()


def test_a_view_forwards_every_backend_method() -> None:
    """`BackendView` overrides each public method of the contract.

    So `write_many`, once missed, cannot be again; `bind` is each concrete view's own.
    """
    contract = {
        name
        for name, member in vars(Backend).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }
    assert {"write_many", "awrite_many", "read_bytes", "aexecute"} <= contract
    assert {"list_page", "alist_page"} <= contract
    assert sorted(contract - set(vars(BackendView)) - {"bind"}) == []
    for view in (GuardedBackend, RecordingBackend):
        assert "bind" in vars(view), view
