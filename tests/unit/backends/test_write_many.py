"""Batch writes: one round of syncs per batch on local disk, the default loop elsewhere."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.local import atomic_writes
from langchain_fstools.backends.protocol import ABSENT, Backend, FileInfo, Write
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.errors import PartialWrite, VersionConflict
from langchain_fstools.history.recording import RecordingBackend
from langchain_fstools.patch import apply_patch
from tests.unit.patch.failing import FailingWrites


class Syncs:
    """Records what `LocalBackend` fsyncs: file descriptors and directories."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files = 0
        self.directories: list[str] = []
        real_file, real_directory = atomic_writes._fsync_descriptor, disk_operations.fsync_directory

        def file(descriptor: int) -> None:
            self.files += 1
            real_file(descriptor)

        def directory(descriptor: int) -> None:  # held open: /proc names it
            self.directories.append(str(Path(f"/proc/self/fd/{descriptor}").readlink()))
            real_directory(descriptor)

        monkeypatch.setattr(atomic_writes, "_fsync_descriptor", file)
        monkeypatch.setattr(disk_operations, "fsync_directory", directory)


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def test_a_batch_fsyncs_every_file_and_each_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = Syncs(monkeypatch)
    backend = LocalBackend(tmp_path)
    writes = [Write(f"/{d}/{n}.txt", f"{d}{n}".encode()) for d in ("a", "b") for n in range(3)]
    infos = backend.write_many(writes)
    assert [i.path for i in infos] == [w.path for w in writes]
    assert (tmp_path / "b" / "2.txt").read_text() == "b2"
    assert [i.version for i in infos] == [backend.stat(w.path).version for w in writes]
    assert syncs.files == 6
    # the new folders' own entries are in the root, where their files were staged
    assert sorted(Path(d).name for d in syncs.directories) == sorted(["a", "b", tmp_path.name])


def test_rename_only_durability_never_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = Syncs(monkeypatch)
    backend = LocalBackend(tmp_path, durability="rename")
    backend.write_many([Write("/a.txt", b"a"), Write("/b.txt", b"b")])
    backend.write_bytes("/c.txt", b"c")
    backend.move("/c.txt", "/d/c.txt")
    assert (tmp_path / "d" / "c.txt").read_bytes() == b"c"
    assert (syncs.files, syncs.directories) == (0, [])
    assert not temps(tmp_path)


def test_unknown_durability_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="durability"):
        LocalBackend(tmp_path, durability="never")  # type: ignore[arg-type]


def test_every_version_is_checked_before_anything_is_renamed(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    a = backend.write_bytes("/a.txt", b"a")
    b = backend.write_bytes("/b.txt", b"b")
    (tmp_path / "b.txt").write_text("changed elsewhere")
    with pytest.raises(VersionConflict):
        backend.write_many(
            [Write("/a.txt", b"A", a.version), Write("/b.txt", b"B", b.version)],
        )
    assert (tmp_path / "a.txt").read_text() == "a"
    assert (tmp_path / "b.txt").read_text() == "changed elsewhere"
    assert not temps(tmp_path)
    with pytest.raises(VersionConflict):
        backend.write_many([Write("/new.txt", b"n", ABSENT), Write("/a.txt", b"A", ABSENT)])
    assert not (tmp_path / "new.txt").exists()


def test_a_failed_rename_names_the_files_already_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = LocalBackend(tmp_path)
    real_replace = os.replace
    renames: list[str] = []

    def replace(source: str, target: str, **at: Any) -> None:
        renames.append(target)
        if len(renames) == 2:
            raise PermissionError(13, "Permission denied", target)
        real_replace(source, target, **at)

    monkeypatch.setattr(atomic_writes.os, "replace", replace)
    with pytest.raises(PartialWrite) as caught:
        backend.write_many([Write(f"/{n}.txt", b"x") for n in range(3)])
    assert caught.value.written == ("/0.txt",)
    assert isinstance(caught.value.cause, PermissionError)
    assert caught.value.cause.filename == "/1.txt"  # the virtual path, never the host's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt"]  # no temporary left


def _descriptors_in(folder: Path) -> list[str]:
    """What the process's open descriptors on `folder` and files in it point to.

    Only the test's own: counting every descriptor of the process would also count what
    other tests' threads open or close meanwhile.
    """
    targets = []
    for descriptor in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed since the listing
            target = str(descriptor.readlink())
            if target == str(folder) or target.startswith(f"{folder}/"):
                targets.append(target)
    return sorted(targets)


def _settled_descriptors_in(folder: Path, expected: list[str]) -> list[str]:
    """`_descriptors_in(folder)` once it is `expected`, or after 5 s."""
    for _ in range(500):
        if _descriptors_in(folder) == expected:
            break
        time.sleep(0.01)
    return _descriptors_in(folder)


def test_a_large_batch_holds_a_bounded_number_of_replaced_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = LocalBackend(tmp_path, durability="rename")
    count = 2 * atomic_writes._OPEN_TEMPS + 10
    backend.write_many([Write(f"/{n}.txt", b"old") for n in range(count)])
    released: list[int] = []
    real_close_all = atomic_writes._close_all

    def close_all(descriptors: tuple[int, ...]) -> None:
        released.append(len(descriptors))
        real_close_all(descriptors)

    monkeypatch.setattr(atomic_writes, "_close_all", close_all)
    backend.write_many([Write(f"/{n}.txt", b"new") for n in range(count)])
    for _ in range(500):
        if sum(released) == count:
            break
        time.sleep(0.01)
    assert sum(released) == count  # every replaced file was held, then released
    assert max(released) <= atomic_writes._OPEN_TEMPS  # in bounded handfuls, not all at once
    assert (tmp_path / f"{count - 1}.txt").read_bytes() == b"new"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("fail_at", [None, 3])
def test_replaced_files_are_released_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int | None
) -> None:
    backend = LocalBackend(tmp_path, durability="rename")
    backend.write_many([Write(f"/{n}.txt", b"old" * 1000) for n in range(5)])
    real_replace, renames = os.replace, []

    def replace(source: str, target: str, **at: Any) -> None:
        renames.append(target)
        if len(renames) == fail_at:
            raise PermissionError(13, "Permission denied", target)
        real_replace(source, target, **at)

    monkeypatch.setattr(atomic_writes.os, "replace", replace)
    baseline = _descriptors_in(tmp_path)
    if fail_at is None:
        backend.write_many([Write(f"/{n}.txt", b"new") for n in range(5)])
    else:
        with pytest.raises(PartialWrite):
            backend.write_many([Write(f"/{n}.txt", b"new") for n in range(5)])
    written = 5 if fail_at is None else fail_at - 1
    assert [(tmp_path / f"{n}.txt").read_bytes() for n in range(5)] == [b"new"] * written + [
        b"old" * 1000
    ] * (5 - written)
    assert _settled_descriptors_in(tmp_path, baseline) == baseline  # every held file was closed


def test_write_bytes_raises_the_plain_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(directory: int) -> None:
        raise OSError(5, "Input/output error", str(directory))

    monkeypatch.setattr(disk_operations, "fsync_directory", failing)
    with pytest.raises(OSError, match="Input/output error") as caught:
        LocalBackend(tmp_path).write_bytes("/a.txt", b"a")
    assert caught.value.filename == "/a.txt"


def test_the_default_loop_reports_a_partial_batch(tmp_path: Path) -> None:
    backend = FailingWrites(LocalBackend(tmp_path), fail_on=3)
    with pytest.raises(PartialWrite) as caught:
        backend.write_many([Write(f"/{n}.txt", b"x") for n in range(4)])
    assert caught.value.written == ("/0.txt", "/1.txt")
    first_fails = FailingWrites(LocalBackend(tmp_path), fail_on=1)
    with pytest.raises(PermissionError):
        asyncio.run(first_fails.awrite_many([Write("/9.txt", b"x")]))


def test_async_batches_on_every_backend_kind(tmp_path: Path) -> None:
    composite = CompositeBackend(LocalBackend(tmp_path), {"/mem/": StateBackend()})
    bound = composite.bind(type("Runtime", (), {"state": {"files": {}}})())
    infos = asyncio.run(bound.awrite_many([Write("/x/a.txt", b"a"), Write("/mem/b.txt", b"b")]))
    assert [i.path for i in infos] == ["/x/a.txt", "/mem/b.txt"]
    assert (tmp_path / "x" / "a.txt").read_bytes() == b"a"
    assert set(bound.state_update()["files"]) == {"/mem/b.txt"}  # no folder record
    with pytest.raises(IsADirectoryError):
        bound.write_many([Write("/x/c.txt", b"c"), Write("/mem", b"m")])
    assert not (tmp_path / "x" / "c.txt").exists()


class Batches(Backend):
    """Counts `write_many` calls of the local backend it wraps."""

    def __init__(self, inner: LocalBackend) -> None:
        self.inner = inner
        self.batches: list[list[str]] = []

    def stat(self, path: str) -> FileInfo:
        return self.inner.stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        return self.inner.read_bytes(path, start, size)

    def write_bytes(self, path: str, data: bytes, *, expected_version: str | None = None) -> Any:
        return self.inner.write_bytes(path, data, expected_version=expected_version)

    def write_many(self, writes: Any, deletions: Any = ()) -> list[FileInfo]:
        self.batches.append([w.path for w in writes] + [f"-{d.path}" for d in deletions])
        return self.inner.write_many(writes, deletions)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def mkdir(self, path: str) -> None:
        self.inner.mkdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir(path)


def test_a_patch_is_one_batch_of_its_writes_and_deletions(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(f"{name}\n")
    backend = Batches(LocalBackend(tmp_path))
    apply_patch(
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: n/new.txt\n+new\n"
        "*** Delete File: b.txt\n*** Update File: c.txt\n-c\n+C\n*** End Patch\n",
        backend,
    )
    assert backend.batches == [["/a.txt", "/n/new.txt", "/c.txt", "-/b.txt"]]
    assert (tmp_path / "n" / "new.txt").read_text() == "new\n"
    assert not (tmp_path / "b.txt").exists()


def test_a_patch_whose_batch_fails_midway_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(4):
        (tmp_path / f"{n}.txt").write_text(f"{n}\n")
    real_replace = os.replace
    renames: list[str] = []

    def replace(source: str, target: str, **at: Any) -> None:
        renames.append(target)
        if len(renames) == 3:
            raise PermissionError(13, "Permission denied", target)
        real_replace(source, target, **at)

    monkeypatch.setattr(atomic_writes.os, "replace", replace)
    hunks = "".join(f"*** Update File: {n}.txt\n-{n}\n+changed\n" for n in range(4))
    with pytest.raises(PermissionError):
        apply_patch(
            f"*** Begin Patch\n{hunks}*** Add File: new/x.txt\n+x\n*** End Patch\n",
            LocalBackend(tmp_path),
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}.txt" for n in range(4)]
    assert [(tmp_path / f"{n}.txt").read_text() for n in range(4)] == [f"{n}\n" for n in range(4)]


def test_views_check_and_record_every_write_of_a_batch(tmp_path: Path) -> None:
    class ReadOnlyB:
        def visible(self, path: str) -> bool:
            return True

        def readable(self, path: str) -> bool:
            return True

        def writable(self, path: str) -> bool:
            return path != "/b.txt"

    guarded = GuardedBackend(LocalBackend(tmp_path), lambda _runtime: ReadOnlyB())
    with pytest.raises(PermissionError):
        guarded.write_many([Write("/a.txt", b"a"), Write("/b.txt", b"b")])
    assert not (tmp_path / "a.txt").exists()
    (tmp_path / "a.txt").write_text("old")
    recording = RecordingBackend(LocalBackend(tmp_path)).bind(
        type("Runtime", (), {"tool_call_id": "call-1", "state": {}})()
    )
    assert isinstance(recording, RecordingBackend)
    asyncio.run(recording.awrite_many([Write("a.txt", b"new"), Write("/c.txt", b"c")]))
    assert [(r["path"], r["existed"], r["before"]) for r in recording.records] == [
        ("/a.txt", True, "old"),
        ("/c.txt", False, ""),
    ]
    assert recording.records[0]["after"] == LocalBackend(tmp_path).stat("/a.txt").version


def test_the_io_threads_are_started_once_and_a_forked_child_starts_its_own(
    tmp_path: Path,
) -> None:
    backend = LocalBackend(tmp_path)
    backend.write_many([Write("/a.txt", b"a"), Write("/b.txt", b"b")])
    pool = atomic_writes._io_threads(os.getpid())
    backend.write_many([Write("/c.txt", b"c"), Write("/d.txt", b"d")])
    assert atomic_writes._io_threads(os.getpid()) is pool
    child = os.fork()
    if child == 0:  # the parent's pool threads do not exist here: a reuse would hang
        try:
            backend.write_many([Write("/e.txt", b"e"), Write("/f.txt", b"f")])
        finally:
            os._exit(0 if (tmp_path / "f.txt").read_bytes() == b"f" else 1)
    for _ in range(500):
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(child, 9)
        os.waitpid(child, 0)
        pytest.fail("the forked child's batch write hung")
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_write_reports_the_version_of_the_file_it_made_not_of_one_renamed_over_it_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's rename once the folder lock is free must not lend its version to ours.

    An edit that trusted the reported version for the content it wrote (a known text)
    would otherwise overwrite the other writer's change: a lost update.
    """
    backend = LocalBackend(tmp_path)  # durable: the fsyncs run after the lock is released
    target = tmp_path / "f.txt"
    target.write_text("old\n")
    syncing = atomic_writes._sync_all  # the step between the lock and the return

    def another_writer_first(*args: Any, **kwargs: Any) -> None:
        if target.read_text() == "ours\n":
            (tmp_path / "theirs.tmp").write_text("theirs, longer\n")
            (tmp_path / "theirs.tmp").replace(target)
        syncing(*args, **kwargs)

    monkeypatch.setattr(atomic_writes, "_sync_all", another_writer_first)

    (written,) = backend.write_many([Write("/f.txt", b"ours\n", expected_version=None)])

    assert target.read_text() == "theirs, longer\n"
    assert written.size == len(b"ours\n")
    assert written.version != backend.stat("/f.txt").version


def test_a_batch_found_stale_under_its_locks_leaves_no_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b.txt").write_text("b")
    backend = LocalBackend(tmp_path)
    version = backend.stat("/b.txt").version
    real_locked = atomic_writes.directories_locked

    @contextlib.contextmanager
    def another_writer_first(*args: Any) -> Any:
        (tmp_path / "b.txt").write_text("theirs")  # between the staging and the locks
        with real_locked(*args):
            yield

    monkeypatch.setattr(atomic_writes, "directories_locked", another_writer_first)
    writes = [Write("/fresh/deep/a.txt", b"a"), Write("/b.txt", b"ours", version)]
    with pytest.raises(VersionConflict):
        backend.write_many(writes)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"]
    assert (tmp_path / "b.txt").read_text() == "theirs"


def test_folders_are_given_their_modes_after_their_files_deepest_first(tmp_path: Path) -> None:
    """A commit's folder closed to its owner (`chmod 500`) still gets the files below it."""
    changes_root = tmp_path / "upper-set"
    (changes_root / "upper" / "ro" / "in").mkdir(parents=True)
    (changes_root / "upper" / "ro" / "in" / "f.txt").write_text("f")
    root = tmp_path / "ws"
    root.mkdir()
    modes: list[tuple[str, int]] = []
    real_chmod = os.chmod

    def chmod(path: Any, mode: int, **kwargs: Any) -> None:
        modes.append((str(path), mode))
        real_chmod(path, mode, **kwargs)

    changes = ChangeSet(
        (
            Change("/ro", ChangeKind.ADDED, "directory", 0o500),
            Change("/ro/in", ChangeKind.ADDED, "directory", 0o500),
            Change("/ro/in/f.txt", ChangeKind.ADDED, "file", 0o644),
        ),
        str(changes_root),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "chmod", chmod)
        LocalBackend(root).commit(changes)

    assert modes == [("in", 0o500), ("ro", 0o500)]
    assert (root / "ro" / "in" / "f.txt").read_text() == "f"
    assert (root / "ro").stat().st_mode & 0o777 == 0o500
    for folder in (root / "ro" / "in", root / "ro"):
        folder.chmod(0o700)
