"""The backend contract as tests: subclass with a `backend` fixture, get the whole suite.

Each case is one small effect (a generator of backend calls, see `core.calls`) that
the `drive` fixture runs twice: through `calls.run` (the sync methods) and through
`calls.arun` (the async twins), so both paths must give the same answers. A backend's
test module holds a `backend` fixture returning a ready-to-use, empty backend plus empty
subclasses of the classes below (or of `BackendConformance`, which gathers them all).

Errors are checked exactly: the exception's type (not a subclass), its `filename` (the
canonical virtual path) and its errno. The cases follow `backends.protocol`'s docstrings;
where the protocol is silent they follow POSIX, as the backends' error vocabulary does.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.protocol import Backend, Deletion, EntryKind, FileInfo, Write
from langchain_fstools.core import calls
from langchain_fstools.core.calls import Effect
from langchain_fstools.errors import OutsideRoot, PartialWrite, VersionConflict

T = TypeVar("T")
Drive = Callable[[Effect[Any]], Any]

NATURAL_ERRNO = {
    FileNotFoundError: errno.ENOENT,
    IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR,
    FileExistsError: errno.EEXIST,
}
"""The errno each built-in `OSError` subclass stands for."""


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest, backend: Backend) -> Drive:
    """Run an effect on the backend, with its sync methods or with its async twins."""

    def run(effect: Effect[T]) -> T:
        if request.param == "sync":
            return calls.run(effect, backend)
        return asyncio.run(calls.arun(effect, backend))

    return run


# ----- effects the cases share ------------------------------------------------------------


def put(path: str, data: bytes = b"x") -> Effect[FileInfo]:
    """Write a file (an unconditional write)."""
    return (yield from calls.write_bytes(path, data))


def failure(effect: Effect[Any]) -> Effect[Exception]:
    """Run `effect` and return the error it raised; fail the test if it raised none."""
    try:
        result = yield from effect
    except Exception as exc:  # noqa: BLE001 - the error is the result
        return exc
    pytest.fail(f"expected an error, got {result!r}")


def os_error(
    effect: Effect[Any], kind: type[OSError], path: str, code: int | None = None
) -> Effect[OSError]:
    """Run `effect`, expecting exactly `kind` for virtual `path` (errno `code`).

    The package's own refinements count as their built-in kind (`NotInMount` is a
    `FileNotFoundError` that names a mount).
    """
    error = yield from failure(effect)
    wanted = (kind, path, code or NATURAL_ERRNO[kind])
    builtin = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    got = (builtin, getattr(error, "filename", None), getattr(error, "errno", None))
    assert got == wanted, f"{got} != {wanted}: {error!r}"
    assert isinstance(error, OSError)
    return error


def names(path: str) -> Effect[list[str]]:
    """The names `list_dir` gives, in its order."""
    return [entry.name for entry in (yield from calls.list_dir(path))]


def walk(backend: Backend, path: str) -> Effect[list[FileInfo]]:
    """`Backend.walk` (which has no async twin), in a worker thread on the async path."""
    return (yield from calls.blocking(lambda: list(backend.walk(path))))


# ----- the cases ----------------------------------------------------------------------------


class StatTests:
    def test_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            written = yield from put("/d/f.txt", b"12345")
            info = yield from calls.stat("/d/f.txt")
            assert (info.path, info.kind, info.size, info.name) == (
                "/d/f.txt",
                EntryKind.FILE,
                5,
                "f.txt",
            )
            assert (info.is_file, info.is_dir, info.link) == (True, False, False)
            assert isinstance(info.mtime, float)
            assert isinstance(info.version, str)
            assert info.version
            assert info == written

        drive(case())

    def test_directory(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/implicit/f.txt")
            yield from calls.mkdir("/made")
            for path in ("/implicit", "/made"):
                info = yield from calls.stat(path)
                assert (info.path, info.kind, info.size) == (path, EntryKind.DIRECTORY, 0)
                assert (info.is_file, info.is_dir, info.name) == (False, True, path[1:])

        drive(case())

    def test_stat_root(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from calls.stat("/")
            assert (info.path, info.kind, info.size, info.name) == (
                "/",
                EntryKind.DIRECTORY,
                0,
                "",
            )

        drive(case())

    def test_missing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from os_error(calls.stat("/nope"), FileNotFoundError, "/nope")
            yield from os_error(calls.stat("/no/such/file"), FileNotFoundError, "/no/such/file")

        drive(case())

    def test_stat_under_a_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/f.txt")
            yield from os_error(calls.stat("/f.txt/x"), NotADirectoryError, "/f.txt/x")

        drive(case())

    def test_size_counts_bytes(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            for path, data in [
                ("/0", b""),
                ("/1", b"a"),
                ("/2", "é".encode()),
                ("/k", b"x" * 1000),
            ]:
                yield from put(path, data)
                assert (yield from calls.stat(path)).size == len(data)
            yield from put("/full/f", b"content")
            assert (yield from calls.stat("/full")).size == 0

        drive(case())

    def test_exists(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/d/e.txt")
            for path in ("/d/e.txt", "/d", "/"):
                assert (yield from calls.exists(path)) is True, path
            for path in ("/none", "/d/none", "/none/deeper"):
                assert (yield from calls.exists(path)) is False, path

        drive(case())

    def test_exists_under_a_file(self, drive: Drive) -> None:
        """The protocol: whether anything exists at `path`; nothing can exist there."""

        def case() -> Effect[None]:
            yield from put("/e.txt")
            assert (yield from calls.exists("/e.txt/x")) is False

        drive(case())


class ReadTests:
    def test_whole_and_ranges(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/r.bin", b"0123456789")
            assert (yield from calls.read_bytes("/r.bin")) == b"0123456789"
            assert (yield from calls.read_bytes("/r.bin", 0, 10)) == b"0123456789"
            assert (yield from calls.read_bytes("/r.bin", 2, 3)) == b"234"
            assert (yield from calls.read_bytes("/r.bin", 4)) == b"456789"
            assert (yield from calls.read_bytes("/r.bin", 0, 0)) == b""

        drive(case())

    def test_past_end(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/r.bin", b"0123456789")
            assert (yield from calls.read_bytes("/r.bin", 8, 10)) == b"89"
            assert (yield from calls.read_bytes("/r.bin", 10, 5)) == b""
            assert (yield from calls.read_bytes("/r.bin", 20, 5)) == b""
            assert (yield from calls.read_bytes("/r.bin", 20)) == b""

        drive(case())

    def test_empty_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from put("/empty", b"")
            assert (info.kind, info.size) == (EntryKind.FILE, 0)
            assert (yield from calls.read_bytes("/empty")) == b""
            assert (yield from calls.read_bytes("/empty", 0, 10)) == b""
            assert (yield from calls.stat("/empty")).size == 0

        drive(case())

    def test_binary_round_trip(self, drive: Drive) -> None:
        data = (
            bytes(range(256))
            + b"\x00\x00 NUL \xff\xfe invalid utf-8 \xc3\x28 \xed\xa0\x80 lone surrogate"
            + b"\r\n\r \xef\xbb\xbf"
        )

        def case() -> Effect[None]:
            yield from put("/b.bin", data)
            assert (yield from calls.read_bytes("/b.bin")) == data
            assert (yield from calls.read_bytes("/b.bin", 250, 12)) == data[250:262]
            assert (yield from calls.stat("/b.bin")).size == len(data)

        drive(case())

    def test_text_kept_byte_for_byte(self, drive: Drive) -> None:
        texts = {
            "/bom.txt": b"\xef\xbb\xbfBOM\r\nCRLF\r\n",
            "/cr.txt": b"old\rmac\r",
            "/b64.txt": b"aGVsbG8=",
            "/utf16.txt": "UTF-16 é".encode("utf-16"),
            "/nul.txt": b"\x00",
        }

        def case() -> Effect[None]:
            for path, data in texts.items():
                yield from put(path, data)
            for path, data in texts.items():
                assert (yield from calls.read_bytes(path)) == data, path

        drive(case())

    def test_read_errors(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/d/f")
            yield from os_error(calls.read_bytes("/d"), IsADirectoryError, "/d")
            yield from os_error(calls.read_bytes("/"), IsADirectoryError, "/")
            yield from os_error(calls.read_bytes("/d/none"), FileNotFoundError, "/d/none")
            yield from os_error(calls.read_bytes("/none/f"), FileNotFoundError, "/none/f")

        drive(case())


class CheckedReadTests:
    def test_reads_as_read_bytes_at_the_current_version(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            version = (yield from put("/c.txt", b"0123456789")).version
            for start, size in [(0, None), (2, 3), (8, 10), (10, 5), (20, None), (0, 0)]:
                expected = yield from calls.read_bytes("/c.txt", start, size)
                got = yield from calls.read_checked("/c.txt", start, size, expected_version=version)
                assert got == expected, (start, size)

        drive(case())

    def test_refuses_another_version(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            old = (yield from put("/c.txt", b"old text")).version
            new = (yield from put("/c.txt", b"new text")).version  # same size
            for start, size in [(0, None), (4, 4), (100, 1), (0, 0)]:
                error = yield from failure(
                    calls.read_checked("/c.txt", start, size, expected_version=old)
                )
                assert isinstance(error, VersionConflict), (start, size, error)
                assert (error.path, error.expected, error.actual) == ("/c.txt", old, new)

        drive(case())

    def test_errors_as_read_bytes(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            version = (yield from put("/d/f")).version
            yield from calls.delete("/d/f")
            gone = calls.read_checked("/d/f", 0, 10, expected_version=version)
            yield from os_error(gone, FileNotFoundError, "/d/f")
            yield from put("/d/g")
            folder = calls.read_checked("/d", 0, 10, expected_version=version)
            yield from os_error(folder, IsADirectoryError, "/d")

        drive(case())


class WriteTests:
    def test_creates_parents(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from calls.write_bytes("/a/b/c.txt", b"deep")
            assert (info.path, info.kind, info.size) == ("/a/b/c.txt", EntryKind.FILE, 4)
            for directory in ("/a", "/a/b"):
                assert (yield from calls.stat(directory)).kind is EntryKind.DIRECTORY
            assert "a" in (yield from names("/"))
            assert (yield from names("/a")) == ["b"]
            assert (yield from names("/a/b")) == ["c.txt"]
            assert (yield from calls.read_bytes("/a/b/c.txt")) == b"deep"

        drive(case())

    def test_returns_metadata_after_write(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from calls.write_bytes("/w.txt", b"abc")
            assert info == (yield from calls.stat("/w.txt"))

        drive(case())

    def test_onto_a_directory(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/dir/f.txt")
            yield from os_error(calls.write_bytes("/dir", b"x"), IsADirectoryError, "/dir")
            yield from os_error(calls.write_bytes("/", b"x"), IsADirectoryError, "/")
            assert (yield from calls.stat("/dir")).kind is EntryKind.DIRECTORY
            assert (yield from names("/dir")) == ["f.txt"]

        drive(case())

    def test_write_under_a_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/dir/f.txt", b"kept")
            yield from os_error(
                calls.write_bytes("/dir/f.txt/g", b"x"), NotADirectoryError, "/dir/f.txt/g"
            )
            yield from os_error(
                calls.write_bytes("/dir/f.txt/g/h", b"x"), NotADirectoryError, "/dir/f.txt/g/h"
            )
            assert (yield from calls.read_bytes("/dir/f.txt")) == b"kept"
            assert (yield from calls.stat("/dir/f.txt")).kind is EntryKind.FILE

        drive(case())

    def test_replaces_content(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/r/w.txt", b"long old content")
            info = yield from put("/r/w.txt", b"new")
            assert info.size == 3
            assert (yield from calls.read_bytes("/r/w.txt")) == b"new"
            yield from put("/r/w.txt", b"longer than before")
            assert (yield from calls.read_bytes("/r/w.txt")) == b"longer than before"
            yield from put("/r/w.txt", b"")
            assert (yield from calls.read_bytes("/r/w.txt")) == b""
            assert (yield from names("/r")) == ["w.txt"]

        drive(case())

    def test_write_many(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            old = yield from put("/m/old.txt", b"old")
            infos = yield from calls.write_many(
                [
                    Write("/m/old.txt", b"replaced", old.version),
                    Write("/m/n/new.txt", b"new", ABSENT),
                    Write("/m/free.txt", b"free"),
                ]
            )
            assert [i.path for i in infos] == ["/m/old.txt", "/m/n/new.txt", "/m/free.txt"]
            for info in infos:
                assert info == (yield from calls.stat(info.path))
            assert (yield from calls.read_bytes("/m/old.txt")) == b"replaced"
            assert (yield from calls.read_bytes("/m/n/new.txt")) == b"new"
            error = yield from failure(
                calls.write_many([Write("/m/x.txt", b"x"), Write("/m/free.txt", b"y", ABSENT)])
            )
            assert isinstance(error, PartialWrite | VersionConflict)
            if isinstance(error, PartialWrite):  # a backend that writes one by one
                assert error.written == ("/m/x.txt",)
                assert isinstance(error.cause, VersionConflict)
            else:  # a backend that checks every version first writes nothing
                assert not (yield from calls.exists("/m/x.txt"))
            assert (yield from calls.read_bytes("/m/free.txt")) == b"free"

        drive(case())

    def test_write_many_with_deletions(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            old = yield from put("/d/old.txt", b"old")
            yield from put("/d/any.txt", b"any")
            kept = yield from put("/d/kept.txt", b"kept")
            infos = yield from calls.write_many(
                [Write("/d/new/moved.txt", b"old", ABSENT)],
                [Deletion("/d/old.txt", old.version), Deletion("/d/any.txt")],
            )
            assert [i.path for i in infos] == ["/d/new/moved.txt"]
            assert (yield from names("/d")) == ["kept.txt", "new"]
            error = yield from failure(
                calls.write_many([Write("/d/y.txt", b"y")], [Deletion("/d/kept.txt", old.version)])
            )
            assert isinstance(error, PartialWrite | VersionConflict)
            if isinstance(error, PartialWrite):  # a backend that writes one by one
                assert error.written == ("/d/y.txt",)
                assert isinstance(error.cause, VersionConflict)
            else:  # a backend that checks every version first changes nothing
                assert not (yield from calls.exists("/d/y.txt"))
            assert (yield from calls.stat("/d/kept.txt")).version == kept.version

        drive(case())


class VersionTests:
    def test_changes_on_write(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            first = yield from put("/v.txt", b"one")
            assert (yield from calls.stat("/v.txt")).version == first.version
            second = yield from put("/v.txt", b"two")  # same size
            assert second.version != first.version
            assert (yield from calls.stat("/v.txt")).version == second.version

        drive(case())

    def test_stays_on_no_op(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            version = (yield from put("/d/v.txt", b"same")).version
            yield from calls.stat("/d/v.txt")
            yield from calls.read_bytes("/d/v.txt")
            yield from calls.read_bytes("/d/v.txt", 1, 2)
            yield from calls.exists("/d/v.txt")
            yield from calls.list_dir("/d")
            yield from calls.mkdir("/d")
            yield from put("/d/sibling.txt", b"other")
            yield from failure(calls.write_bytes("/d/v.txt", b"no", expected_version=ABSENT))
            assert (yield from calls.stat("/d/v.txt")).version == version
            listed = yield from calls.list_dir("/d")
            assert [entry.version for entry in listed if entry.name == "v.txt"] == [version]

        drive(case())

    def test_never_reused_for_other_content(self, drive: Drive) -> None:
        """Equal tokens mean unchanged content, so a token never comes back after a change."""

        def case() -> Effect[None]:
            versions = set()
            for n in range(20):
                info = yield from put("/v.txt", b"%02d" % n)
                assert info.version not in versions, n
                versions.add(info.version)

        drive(case())

    def test_expected_version_match(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from put("/v.txt", b"1")
            updated = yield from calls.write_bytes("/v.txt", b"2", expected_version=info.version)
            assert updated.version != info.version
            assert updated == (yield from calls.stat("/v.txt"))
            assert (yield from calls.read_bytes("/v.txt")) == b"2"

        drive(case())

    def test_expected_version_mismatch(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            stale = yield from put("/v.txt", b"1")
            current = yield from put("/v.txt", b"2")
            error = yield from failure(
                calls.write_bytes("/v.txt", b"3", expected_version=stale.version)
            )
            assert error == VersionConflict("/v.txt", stale.version, current.version)
            assert (yield from calls.read_bytes("/v.txt")) == b"2"
            assert (yield from calls.stat("/v.txt")).version == current.version

        drive(case())

    def test_absent_on_missing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from calls.write_bytes("/new/n.txt", b"1", expected_version=ABSENT)
            assert (info.path, info.size) == ("/new/n.txt", 1)
            assert (yield from calls.read_bytes("/new/n.txt")) == b"1"

        drive(case())

    def test_absent_on_existing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from put("/n.txt", b"1")
            error = yield from failure(calls.write_bytes("/n.txt", b"2", expected_version=ABSENT))
            assert error == VersionConflict("/n.txt", ABSENT, info.version)
            assert (yield from calls.read_bytes("/n.txt")) == b"1"
            assert (yield from calls.stat("/n.txt")).version == info.version

        drive(case())

    def test_version_of_a_deleted_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from put("/gone.txt", b"1")
            yield from calls.delete("/gone.txt")
            error = yield from failure(
                calls.write_bytes("/gone.txt", b"2", expected_version=info.version)
            )
            assert error == VersionConflict("/gone.txt", info.version, None)
            assert (yield from calls.exists("/gone.txt")) is False

        drive(case())


class DirectoryTests:
    def test_mkdir_nested(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/x/y/z")
            for path in ("/x", "/x/y", "/x/y/z"):
                info = yield from calls.stat(path)
                assert (info.path, info.kind, info.size) == (path, EntryKind.DIRECTORY, 0)
            assert (yield from names("/x")) == ["y"]
            assert (yield from names("/x/y")) == ["z"]
            assert (yield from calls.list_dir("/x/y/z")) == []

        drive(case())

    def test_mkdir_existing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/top/x/y")
            yield from calls.mkdir("/top/x/y")
            yield from put("/top/implicit/f.txt", b"kept")
            yield from calls.mkdir("/top/implicit")
            yield from calls.mkdir("/top")
            yield from calls.mkdir("/")
            assert (yield from names("/top")) == ["implicit", "x"]
            assert (yield from names("/top/x")) == ["y"]
            assert (yield from names("/top/implicit")) == ["f.txt"]
            assert (yield from calls.read_bytes("/top/implicit/f.txt")) == b"kept"

        drive(case())

    def test_mkdir_over_a_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/f", b"kept")
            yield from os_error(calls.mkdir("/f"), FileExistsError, "/f")
            assert (yield from calls.read_bytes("/f")) == b"kept"

        drive(case())

    def test_mkdir_under_a_file(self, drive: Drive) -> None:
        """The protocol: FileExistsError when `path` *or a parent* is a file."""

        def case() -> Effect[None]:
            yield from put("/f", b"kept")
            yield from os_error(calls.mkdir("/f/sub"), FileExistsError, "/f/sub")
            assert (yield from calls.read_bytes("/f")) == b"kept"

        drive(case())


class ListTests:
    NAMES = ("B", "a", "é", "_x", ".hidden", "Z", "z", "a b", "10.txt", "9.txt")

    def test_sorted_by_name(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            for name in self.NAMES:
                yield from put("/l/" + name)
            yield from calls.mkdir("/l/sub")
            yield from put("/l/Sub2/inner")
            assert (yield from names("/l")) == [
                ".hidden",
                "10.txt",
                "9.txt",
                "B",
                "Sub2",
                "Z",
                "_x",
                "a",
                "a b",
                "sub",
                "z",
                "é",
            ]

        drive(case())

    def test_kinds_and_canonical_paths(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/l/f.txt", b"12345")
            yield from calls.mkdir("/l/made")
            yield from put("/l/implicit/inner")
            entries = yield from calls.list_dir("/l")
            assert [(e.path, e.kind, e.size) for e in entries] == [
                ("/l/f.txt", EntryKind.FILE, 5),
                ("/l/implicit", EntryKind.DIRECTORY, 0),
                ("/l/made", EntryKind.DIRECTORY, 0),
            ]
            for entry in entries:
                assert entry == (yield from calls.stat(entry.path))
            assert (yield from calls.list_dir("l//./")) == entries

        drive(case())

    def test_list_root(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            before = yield from calls.list_dir("/")  # empty, but for a composite's mounts
            yield from put("/top.txt")
            yield from put("/dir/inner.txt")
            entries = yield from calls.list_dir("/")
            assert [(e.path, e.kind) for e in entries if e not in before] == [
                ("/dir", EntryKind.DIRECTORY),
                ("/top.txt", EntryKind.FILE),
            ]
            assert [e.name for e in entries] == sorted(e.name for e in entries)

        drive(case())

    def test_empty_directory(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/e/empty")
            yield from put("/e/f")
            entries = yield from calls.list_dir("/e")
            assert [(e.path, e.kind) for e in entries] == [
                ("/e/empty", EntryKind.DIRECTORY),
                ("/e/f", EntryKind.FILE),
            ]
            assert (yield from calls.list_dir("/e/empty")) == []
            yield from calls.delete("/e/f")
            assert (yield from names("/e")) == ["empty"]

        drive(case())

    def test_list_errors(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/file")
            yield from os_error(calls.list_dir("/none"), FileNotFoundError, "/none")
            yield from os_error(calls.list_dir("/file"), NotADirectoryError, "/file")
            yield from os_error(calls.list_dir("/file/x"), NotADirectoryError, "/file/x")

        drive(case())


class PageTests:
    """`list_page`: pages of `list_dir` that chain through `after` to the whole listing."""

    def test_pages_chain_to_the_whole_listing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            for name in (*ListTests.NAMES, "q.txt", "q-1", "q0"):
                yield from put("/p/" + name)
            yield from calls.mkdir("/p/sub")
            for inner in ("q/x", "q/y/z", "Sub2/inner"):  # `q` sorts before `q.txt` ...
                yield from put("/p/" + inner)  # ... but its keys after it in an object store
            whole = yield from calls.list_dir("/p")
            assert len(whole) == 16
            for limit in (1, 2, 3, 5, 15, 16, 17):
                assert (yield from pages("/p", limit)) == whole, limit
            assert (yield from calls.list_page("/p", after="b", limit=99)) == [
                entry for entry in whole if entry.name > "b"
            ]
            assert (yield from calls.list_page("/p", after="q", limit=2)) == whole[10:12]
            assert (yield from calls.list_page("/p", after="é", limit=3)) == []

        drive(case())

    def test_an_empty_directory_has_empty_pages(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/e")
            assert (yield from calls.list_page("/e", after=None, limit=1)) == []
            assert (yield from calls.list_page("/e", after="m", limit=1)) == []

        drive(case())

    def test_page_errors(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/file")
            for after in (None, "a"):
                page = calls.list_page("/none", after=after, limit=5)
                yield from os_error(page, FileNotFoundError, "/none")
                page = calls.list_page("/file", after=after, limit=5)
                yield from os_error(page, NotADirectoryError, "/file")
            error = yield from failure(calls.list_page("/", after=None, limit=0))
            assert isinstance(error, ValueError)

        drive(case())


def pages(path: str, limit: int) -> Effect[list[FileInfo]]:
    """Every entry of `path`, listed `limit` at a time through `list_page`."""
    listed: list[FileInfo] = []
    after = None
    while True:
        page = yield from calls.list_page(path, after=after, limit=limit)
        assert len(page) <= limit
        listed += page
        if len(page) < limit:
            return listed
        after = page[-1].name


class WalkTests:
    def test_depth_first_sorted(self, backend: Backend, drive: Drive) -> None:
        def case() -> Effect[None]:
            for path in ("/w/b.txt", "/w/a/2.txt", "/w/a/1.txt", "/w/c/d/e.txt", "/w/B.txt"):
                yield from put(path)
            yield from calls.mkdir("/w/empty")
            walked = yield from walk(backend, "/w")
            assert [(e.path, e.kind) for e in walked] == [
                ("/w/B.txt", EntryKind.FILE),
                ("/w/a", EntryKind.DIRECTORY),
                ("/w/a/1.txt", EntryKind.FILE),
                ("/w/a/2.txt", EntryKind.FILE),
                ("/w/b.txt", EntryKind.FILE),
                ("/w/c", EntryKind.DIRECTORY),
                ("/w/c/d", EntryKind.DIRECTORY),
                ("/w/c/d/e.txt", EntryKind.FILE),
                ("/w/empty", EntryKind.DIRECTORY),
            ]

        drive(case())

    def test_contents(self, backend: Backend, drive: Drive) -> None:
        def case() -> Effect[None]:
            before = yield from walk(backend, "/")  # empty, but for a composite's mounts
            yield from put("/top.txt", b"1")
            yield from put("/w/x/y.bin", b"\x00\xff")
            yield from calls.mkdir("/w/x/empty")
            walked = [e for e in (yield from walk(backend, "/")) if e not in before]
            assert [e.path for e in walked] == [
                "/top.txt",
                "/w",
                "/w/x",
                "/w/x/empty",
                "/w/x/y.bin",
            ]
            for entry in walked:
                assert entry == (yield from calls.stat(entry.path))
            assert (yield from walk(backend, "w//./")) == walked[2:]
            assert (yield from walk(backend, "/w/x")) == walked[3:]

        drive(case())

    def test_walk_errors(self, backend: Backend, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/file")
            yield from os_error(walk(backend, "/none"), FileNotFoundError, "/none")
            yield from os_error(walk(backend, "/file"), NotADirectoryError, "/file")

        drive(case())


class MoveDeleteTests:
    def test_delete_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/del/f")
            yield from put("/del/g")
            yield from calls.delete("/del/f")
            assert (yield from calls.exists("/del/f")) is False
            yield from os_error(calls.stat("/del/f"), FileNotFoundError, "/del/f")
            assert (yield from names("/del")) == ["g"]
            yield from calls.delete("/del/g")
            assert (yield from calls.list_dir("/del")) == []

        drive(case())

    def test_delete_empty_directory(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/del/empty")
            yield from calls.delete("/del/empty")
            assert (yield from calls.exists("/del/empty")) is False
            assert (yield from calls.list_dir("/del")) == []
            yield from calls.delete("/del")
            assert (yield from calls.exists("/del")) is False
            assert "del" not in (yield from names("/"))

        drive(case())

    def test_delete_non_empty_directory(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/full/f", b"keep")
            yield from os_error(calls.delete("/full"), OSError, "/full", errno.ENOTEMPTY)
            assert (yield from calls.read_bytes("/full/f")) == b"keep"
            assert (yield from names("/full")) == ["f"]

        drive(case())

    def test_delete_missing(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from os_error(calls.delete("/none"), FileNotFoundError, "/none")
            yield from os_error(calls.delete("/none/f"), FileNotFoundError, "/none/f")

        drive(case())

    def test_move_to_new_nested_path(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/m/src.txt", b"moved")
            info = yield from calls.move("/m/src.txt", "/m/new/deep/dst.txt")
            assert (info.path, info.kind, info.size) == ("/m/new/deep/dst.txt", EntryKind.FILE, 5)
            assert info == (yield from calls.stat("/m/new/deep/dst.txt"))
            assert (yield from calls.read_bytes("/m/new/deep/dst.txt")) == b"moved"
            assert (yield from calls.exists("/m/src.txt")) is False
            assert (yield from names("/m")) == ["new"]
            assert (yield from calls.stat("/m/new/deep")).kind is EntryKind.DIRECTORY

        drive(case())

    def test_move_replaces_destination(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/m/src.txt", b"moved")
            yield from put("/m/dst.txt", b"to be replaced")
            info = yield from calls.move("/m/src.txt", "/m/dst.txt")
            assert (info.path, info.size) == ("/m/dst.txt", 5)
            assert (yield from calls.read_bytes("/m/dst.txt")) == b"moved"
            assert (yield from names("/m")) == ["dst.txt"]

        drive(case())

    def test_move_missing_source(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from calls.mkdir("/m")
            yield from os_error(calls.move("/m/none", "/m/x"), FileNotFoundError, "/m/none")
            assert (yield from calls.list_dir("/m")) == []

        drive(case())


class PathTests:
    def test_non_ascii_and_spaces(self, backend: Backend, drive: Drive) -> None:
        directory, name = "/dir with space", "naïve 日本 ☃ .txt"
        path = f"{directory}/{name}"

        def case() -> Effect[None]:
            info = yield from put(path, "ünïcödé".encode())
            assert (info.path, info.name) == (path, name)
            assert (yield from calls.read_bytes(path)) == "ünïcödé".encode()
            assert (yield from calls.stat(path)).path == path
            assert [e.path for e in (yield from calls.list_dir(directory))] == [path]
            assert [e.path for e in (yield from walk(backend, directory))] == [path]
            moved = yield from calls.move(path, f"{directory}/ñ ü.txt")
            assert moved.path == "/dir with space/ñ ü.txt"
            yield from calls.delete("/dir with space/ñ ü.txt")
            assert (yield from calls.list_dir(directory)) == []

        drive(case())

    def test_spellings_address_one_file(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            info = yield from put("a//b/./c.txt", b"same")
            assert info.path == "/a/b/c.txt"
            assert (yield from calls.read_bytes("/a/b/c.txt")) == b"same"
            for spelling in ("a/b/c.txt", "/a/./b//c.txt", "a/x/../b/c.txt", "/a/b/c.txt/."):
                assert (yield from calls.stat(spelling)).path == "/a/b/c.txt", spelling
                assert (yield from calls.read_bytes(spelling)) == b"same", spelling
            assert (yield from calls.stat("a//b/")).path == "/a/b"
            assert [e.path for e in (yield from calls.list_dir("a/b/"))] == ["/a/b/c.txt"]
            assert (yield from calls.exists("a//b")) is True
            yield from put("a/b/c.txt", b"rewritten")
            assert (yield from calls.read_bytes("/a/b/c.txt")) == b"rewritten"
            moved = yield from calls.move("a/b//c.txt", "a/./d.txt")
            assert moved.path == "/a/d.txt"
            yield from calls.delete("/a/../a/d.txt")
            assert (yield from names("/a")) == ["b"]

        drive(case())

    def test_errors_carry_the_canonical_path(self, drive: Drive) -> None:
        def case() -> Effect[None]:
            yield from put("/a/f.txt")
            yield from os_error(calls.stat("nope//x/./y"), FileNotFoundError, "/nope/x/y")
            yield from os_error(calls.read_bytes("a/./"), IsADirectoryError, "/a")
            yield from os_error(calls.list_dir("a//f.txt/"), NotADirectoryError, "/a/f.txt")
            yield from os_error(calls.delete("a/../none"), FileNotFoundError, "/none")

        drive(case())

    def test_dotdot_above_root(self, drive: Drive) -> None:
        effects: list[tuple[str, Callable[[str], Effect[Any]]]] = [
            ("stat", calls.stat),
            ("exists", calls.exists),
            ("read_bytes", calls.read_bytes),
            ("write_bytes", lambda path: calls.write_bytes(path, b"x")),
            ("mkdir", calls.mkdir),
            ("list_dir", calls.list_dir),
            ("delete", calls.delete),
            ("move from", lambda path: calls.move(path, "/inside")),
        ]

        def case() -> Effect[None]:
            yield from put("/a/f.txt")
            for spelling in ("/../x", "../x", "a/../../x", "/a/../.."):
                for method, effect in effects:
                    error = yield from failure(effect(spelling))
                    assert error == OutsideRoot(spelling), (method, spelling, error)
            error = yield from failure(calls.move("/a/f.txt", "/../x"))
            assert error == OutsideRoot("/../x")
            assert (yield from names("/a")) == ["f.txt"]
            assert not set((yield from names("/"))) & {"x", "inside"}

        drive(case())


class BackendConformance(
    StatTests,
    ReadTests,
    CheckedReadTests,
    WriteTests,
    VersionTests,
    DirectoryTests,
    ListTests,
    PageTests,
    WalkTests,
    MoveDeleteTests,
    PathTests,
):
    """Everything a backend must do; subclass and provide a `backend` fixture."""
