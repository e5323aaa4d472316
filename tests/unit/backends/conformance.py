"""The backend contract as tests: subclass with a `backend` fixture, get the whole suite.

Every case is an effect (a generator of backend calls), run through both `calls.run`
(sync methods) and `calls.arun` (async twins), so both paths answer the same.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from langchain_fstools.backends import ABSENT, calls
from langchain_fstools.backends.calls import Effect
from langchain_fstools.backends.protocol import Backend, EntryKind
from langchain_fstools.errors import OutsideRoot, VersionConflict

T = TypeVar("T")
Drive = Callable[[Effect[Any]], Any]


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest, backend: Backend) -> Drive:
    def run(effect: Effect[T]) -> T:
        if request.param == "sync":
            return calls.run(effect, backend)
        return asyncio.run(calls.arun(effect, backend))

    return run


def raises(drive: Drive, effect: Effect[Any], kind: type[BaseException]) -> BaseException:
    with pytest.raises(kind) as caught:
        drive(effect)
    return caught.value


def put(path: str, data: bytes = b"x") -> Effect[None]:
    yield from calls.write_bytes(path, data)


class StatTests:
    def test_file_directory_root(self, drive: Drive) -> None:
        drive(put("/d/f.txt", b"12345"))
        f = drive(calls.stat("/d/f.txt"))
        assert (f.path, f.kind, f.size, f.name) == ("/d/f.txt", EntryKind.FILE, 5, "f.txt")
        assert drive(calls.stat("/d")).kind is EntryKind.DIRECTORY
        assert drive(calls.stat("/")).kind is EntryKind.DIRECTORY

    def test_missing(self, drive: Drive) -> None:
        error = raises(drive, calls.stat("/nope"), FileNotFoundError)
        assert error.filename == "/nope"
        assert error.errno == errno.ENOENT

    def test_under_a_file(self, drive: Drive) -> None:
        drive(put("/f.txt"))
        assert raises(drive, calls.stat("/f.txt/x"), NotADirectoryError).filename == "/f.txt/x"

    def test_exists(self, drive: Drive) -> None:
        drive(put("/e.txt"))
        assert drive(calls.exists("/e.txt")) is True
        assert drive(calls.exists("/none")) is False


class ReadTests:
    def test_whole_and_ranges(self, drive: Drive) -> None:
        drive(put("/r.bin", b"0123456789"))
        assert drive(calls.read_bytes("/r.bin")) == b"0123456789"
        assert drive(calls.read_bytes("/r.bin", 2, 3)) == b"234"
        assert drive(calls.read_bytes("/r.bin", 8, 10)) == b"89"
        assert drive(calls.read_bytes("/r.bin", 20, 5)) == b""
        assert drive(calls.read_bytes("/r.bin", 4)) == b"456789"

    def test_empty_file(self, drive: Drive) -> None:
        drive(put("/empty", b""))
        assert drive(calls.read_bytes("/empty")) == b""
        assert drive(calls.stat("/empty")).size == 0

    def test_binary_round_trip(self, drive: Drive) -> None:
        data = bytes(range(256)) + b"\x00\xff\xfe invalid utf-8 \xc3\x28"
        drive(put("/b.bin", data))
        assert drive(calls.read_bytes("/b.bin")) == data

    def test_errors(self, drive: Drive) -> None:
        drive(put("/d/f"))
        assert raises(drive, calls.read_bytes("/d"), IsADirectoryError).filename == "/d"
        assert raises(drive, calls.read_bytes("/d/none"), FileNotFoundError).filename == "/d/none"


class WriteTests:
    def test_creates_parents(self, drive: Drive) -> None:
        info = drive(calls.write_bytes("/a/b/c.txt", b"deep"))
        assert (info.path, info.size) == ("/a/b/c.txt", 4)
        assert drive(calls.stat("/a/b")).kind is EntryKind.DIRECTORY

    def test_onto_directory_and_under_file(self, drive: Drive) -> None:
        drive(put("/dir/f.txt"))
        assert raises(drive, calls.write_bytes("/dir", b"x"), IsADirectoryError).filename == "/dir"
        error = raises(drive, calls.write_bytes("/dir/f.txt/g", b"x"), NotADirectoryError)
        assert error.filename == "/dir/f.txt/g"

    def test_replaces_content(self, drive: Drive) -> None:
        drive(put("/w.txt", b"long old content"))
        drive(put("/w.txt", b"new"))
        assert drive(calls.read_bytes("/w.txt")) == b"new"


class VersionTests:
    def test_changes_on_write_stable_otherwise(self, drive: Drive) -> None:
        first = drive(calls.write_bytes("/v.txt", b"1"))
        assert drive(calls.stat("/v.txt")).version == first.version
        second = drive(calls.write_bytes("/v.txt", b"2"))
        assert second.version != first.version

    def test_expected_version(self, drive: Drive) -> None:
        info = drive(calls.write_bytes("/v.txt", b"1"))
        updated = drive(calls.write_bytes("/v.txt", b"2", expected_version=info.version))
        error = raises(
            drive, calls.write_bytes("/v.txt", b"3", expected_version=info.version), VersionConflict
        )
        assert error == VersionConflict("/v.txt", info.version, updated.version)
        assert drive(calls.read_bytes("/v.txt")) == b"2"

    def test_absent(self, drive: Drive) -> None:
        drive(calls.write_bytes("/n.txt", b"1", expected_version=ABSENT))
        error = raises(
            drive, calls.write_bytes("/n.txt", b"2", expected_version=ABSENT), VersionConflict
        )
        assert isinstance(error, VersionConflict)
        assert error.path == "/n.txt"
        assert drive(calls.read_bytes("/n.txt")) == b"1"


class DirectoryTests:
    def test_mkdir(self, drive: Drive) -> None:
        drive(calls.mkdir("/x/y/z"))
        drive(calls.mkdir("/x/y/z"))
        assert drive(calls.list_dir("/x/y/z")) == []
        assert [e.name for e in drive(calls.list_dir("/x"))] == ["y"]

    def test_mkdir_over_file(self, drive: Drive) -> None:
        drive(put("/f"))
        assert raises(drive, calls.mkdir("/f"), FileExistsError).filename == "/f"


class ListTests:
    def test_sorted_by_name_with_kinds(self, drive: Drive) -> None:
        for name in ["B", "a", "é", "_x", ".hidden", "sub/inner"]:
            drive(put("/l/" + name))
        entries = drive(calls.list_dir("/l"))
        assert [e.name for e in entries] == [".hidden", "B", "_x", "a", "sub", "é"]
        assert entries[0].path == "/l/.hidden"
        assert {e.name: e.kind for e in entries}["sub"] is EntryKind.DIRECTORY

    def test_errors(self, drive: Drive) -> None:
        drive(put("/file"))
        assert raises(drive, calls.list_dir("/none"), FileNotFoundError).filename == "/none"
        assert raises(drive, calls.list_dir("/file"), NotADirectoryError).filename == "/file"


class WalkTests:
    def test_depth_first_sorted(self, backend: Backend) -> None:
        for path in ["/w/b.txt", "/w/a/2.txt", "/w/a/1.txt", "/w/c/d/e.txt"]:
            calls.run(put(path), backend)
        walked = [entry.path for entry in backend.walk("/w")]
        assert walked == [
            "/w/a",
            "/w/a/1.txt",
            "/w/a/2.txt",
            "/w/b.txt",
            "/w/c",
            "/w/c/d",
            "/w/c/d/e.txt",
        ]


class MoveDeleteTests:
    def test_delete_file_and_empty_dir(self, drive: Drive) -> None:
        drive(put("/del/f"))
        drive(calls.delete("/del/f"))
        assert drive(calls.exists("/del/f")) is False
        assert drive(calls.list_dir("/del")) == []
        drive(calls.delete("/del"))
        assert drive(calls.exists("/del")) is False

    def test_delete_non_empty_dir_and_missing(self, drive: Drive) -> None:
        drive(put("/full/f", b"keep"))
        error = raises(drive, calls.delete("/full"), OSError)
        assert (error.errno, error.filename) == (errno.ENOTEMPTY, "/full")
        assert drive(calls.read_bytes("/full/f")) == b"keep"
        assert raises(drive, calls.delete("/none"), FileNotFoundError).filename == "/none"

    def test_move(self, drive: Drive) -> None:
        drive(put("/m/src.txt", b"moved"))
        drive(put("/m/dst.txt", b"replaced"))
        info = drive(calls.move("/m/src.txt", "/m/new/deep/dst.txt"))
        assert info.path == "/m/new/deep/dst.txt"
        drive(calls.move("/m/new/deep/dst.txt", "/m/dst.txt"))
        assert drive(calls.read_bytes("/m/dst.txt")) == b"moved"
        assert drive(calls.exists("/m/src.txt")) is False
        assert raises(drive, calls.move("/m/none", "/m/x"), FileNotFoundError).filename == "/m/none"


class PathTests:
    def test_spellings_address_one_file(self, drive: Drive) -> None:
        drive(put("a//b/./c.txt", b"same"))
        assert drive(calls.read_bytes("/a/b/c.txt")) == b"same"
        assert drive(calls.stat("a/b/../b/c.txt")).path == "/a/b/c.txt"

    def test_unicode_and_spaces(self, drive: Drive) -> None:
        drive(put("/dir with space/naïve 日本.txt", b"u"))
        assert [e.name for e in drive(calls.list_dir("/dir with space"))] == ["naïve 日本.txt"]

    def test_dotdot_above_root(self, drive: Drive) -> None:
        assert raises(drive, calls.stat("/../x"), OutsideRoot) == OutsideRoot("/../x")


class BackendConformance(
    StatTests,
    ReadTests,
    WriteTests,
    VersionTests,
    DirectoryTests,
    ListTests,
    WalkTests,
    MoveDeleteTests,
    PathTests,
):
    """Everything a backend must do; subclass and provide a `backend` fixture."""
