"""ObjectStoreBackend's own facts: construction, keys under the prefix, marker objects,
stores without conditional writes, the search's deadline (the contract is in conformance)."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import obstore
import pytest
from obstore.store import LocalStore, MemoryStore, S3Store

from langchain_fstools import FileToolkit, ObjectStoreBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.objectstore import MARKER, requests
from langchain_fstools.backends.objectstore.backend import READ_AHEAD
from langchain_fstools.errors import ExecutionUnsupported, InvalidPath, VersionConflict


def keys(store: MemoryStore) -> list[str]:
    return sorted(meta["path"] for meta in obstore.list(store).collect())


def test_files_are_objects_under_the_prefix_and_empty_directories_keep_a_marker() -> None:
    store = MemoryStore()
    backend = ObjectStoreBackend(store, prefix="/agents/user-1/")
    backend.write_bytes("/src/app.py", b"print(1)\n")
    backend.mkdir("/empty")
    assert keys(store) == [
        "agents/user-1/" + MARKER,  # the root's: the first write's proof of conditional writes
        "agents/user-1/empty/" + MARKER,
        "agents/user-1/src/app.py",
    ]
    assert [e.name for e in backend.list_dir("/")] == ["empty", "src"]
    assert backend.list_dir("/empty") == []
    backend.delete("/src/app.py")  # the directory stays, as on disk
    assert keys(store) == [
        "agents/user-1/" + MARKER,
        "agents/user-1/empty/" + MARKER,
        "agents/user-1/src/" + MARKER,
    ]
    assert backend.list_dir("/src") == []


@pytest.mark.parametrize("spelling", [f"/{MARKER}", f"/d/{MARKER}", f"/d/{MARKER}/x", f"{MARKER}"])
def test_the_marker_name_is_reserved(spelling: str) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    backend.mkdir("/d")
    with pytest.raises(InvalidPath):
        backend.write_bytes(spelling, b"x")
    with pytest.raises(InvalidPath):
        backend.read_bytes(spelling)
    tools = {t.name: t for t in FileToolkit(backend).get_tools()}
    assert tools["glob"].invoke({"pattern": "**"}).startswith("No files found")


@pytest.mark.parametrize("prefix", ["a/../b", "a//b", "./a", "..", f"x/{MARKER}"])
def test_a_prefix_with_empty_dot_or_reserved_levels_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        ObjectStoreBackend(MemoryStore(), prefix=prefix)


def test_options_go_with_a_url_only_and_a_bad_url_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="options apply to a store URL only"):
        ObjectStoreBackend(MemoryStore(), region="eu-west-1")
    with pytest.raises(ValueError, match="obstore cannot open"):
        ObjectStoreBackend("nosuchscheme://bucket")
    assert ObjectStoreBackend("memory:///").conditional_writes == "full"


def test_stores_with_conditional_writes_are_silent_and_others_say_so(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ObjectStoreBackend(MemoryStore()).conditional_writes == "full"
        assert ObjectStoreBackend(S3Store("b", region="eu-west-1")).conditional_writes == "full"
    s3 = S3Store("b", region="eu-west-1", conditional_put="disabled")
    with pytest.warns(UserWarning, match="cannot check conditional updates or creates"):
        disabled = ObjectStoreBackend(s3)
    assert disabled.conditional_writes == "none"
    with pytest.warns(UserWarning, match="cannot check conditional updates: "):
        local = ObjectStoreBackend(LocalStore(tmp_path))
    assert local.conditional_writes == "create-only"


def test_without_conditional_updates_a_stale_write_is_still_refused(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="HEAD before each write"):
        backend = ObjectStoreBackend(LocalStore(tmp_path))
    first = backend.write_bytes("/f.txt", b"one", expected_version=ABSENT)
    current = backend.write_bytes("/f.txt", b"two", expected_version=first.version)
    with pytest.raises(VersionConflict) as caught:
        backend.write_bytes("/f.txt", b"three", expected_version=first.version)
    assert caught.value == VersionConflict("/f.txt", first.version, current.version)
    with pytest.raises(VersionConflict):
        backend.write_bytes("/f.txt", b"four", expected_version=ABSENT)
    assert backend.read_bytes("/f.txt") == b"two"


def test_execute_is_unsupported() -> None:
    backend = ObjectStoreBackend(MemoryStore())
    assert backend.supports_execute is False
    with pytest.raises(ExecutionUnsupported):
        backend.execute("ls", timeout=1, output_limit=100)


def test_a_search_past_its_deadline_says_it_is_partial() -> None:
    backend = ObjectStoreBackend(MemoryStore())
    backend.write_bytes("/a.py", b"needle\n")
    search = backend.native_search()
    listing = search.list_files("/", globs=(), deadline=time.monotonic() - 1)
    assert listing.complete is False
    whole = search.list_files("/", globs=(("*.py",),), deadline=time.monotonic() + 30)
    assert (whole.complete, [f.path for f in whole.files]) == (True, ["/a.py"])


def test_a_call_reading_an_object_front_to_back_fetches_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    data = bytes(range(256)) * (3 * READ_AHEAD // 256 + 1000)
    obstore.put(store, "big.bin", data)
    ranges: list[tuple[int, int | None]] = []
    perform = requests._call

    def recorded(store: MemoryStore, request: requests.Request) -> object:
        if isinstance(request, requests.Get):
            ranges.append((request.start, request.end))
        return perform(store, request)

    monkeypatch.setattr(requests, "_call", recorded)
    call = ObjectStoreBackend(store).bind(None)
    chunk = 256 * 1024
    read = b"".join(call.read_bytes("/big.bin", at, chunk) for at in range(0, len(data), chunk))
    assert read == data
    assert ranges[0] == (0, chunk)  # a first read is not a scan yet
    assert all(end == start + READ_AHEAD for start, end in ranges[1:])
    assert len(ranges) == 1 + -(-(len(data) - chunk) // READ_AHEAD)
    call.write_bytes("/big.bin", b"new")  # a write in the same call drops the block
    assert call.read_bytes("/big.bin", 0, 3) == b"new"
    ranges.clear()
    assert ObjectStoreBackend(store).read_bytes("/big.bin", 0, 2) == b"ne"  # unbound: no buffer
    assert ranges == [(0, 2)]


def test_a_call_reads_a_small_file_it_stated_without_another_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    obstore.put(store, "small.py", b"print('hi')\n")
    obstore.put(store, "empty.txt", b"")
    sent: list[str] = []
    perform = requests._call

    def recorded(store: MemoryStore, request: requests.Request) -> object:
        sent.append(type(request).__name__)
        return perform(store, request)

    monkeypatch.setattr(requests, "_call", recorded)
    call = ObjectStoreBackend(store).bind(None)
    assert call.stat("/small.py").size == 12
    assert call.read_bytes("/small.py", 0, 8192) == b"print('hi')\n"
    assert call.read_bytes("/small.py") == b"print('hi')\n"
    assert sent == ["Peek"]
    assert call.stat("/empty.txt").size == 0  # no range of an empty object: a HEAD
    assert call.read_bytes("/empty.txt") == b""
    assert sent == ["Peek", "Peek", "Head", "Get"]
