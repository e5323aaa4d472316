"""LocalBackend: confinement to its root, atomic writes, special files, versions."""

from __future__ import annotations

import asyncio
import copy
import errno
import os
import pickle
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.errors import InvalidPath, OutsideRoot, SpecialFile, VersionConflict
from langchain_fstools.search.contract import GrepRequest

SECRET = b"secret\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The workspace root; beside it, `outside/` holds a secret and `inside.txt` sits in root."""
    workspace, outside = tmp_path / "root", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (workspace / "inside.txt").write_bytes(b"inside\n")
    return workspace


@pytest.fixture
def backend(root: Path) -> LocalBackend:
    return LocalBackend(root, use_ripgrep=False)


def outside_of(root: Path) -> Path:
    return root.parent / "outside"


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every path below `directory` with its content (None for directories and links)."""
    return {
        str(p.relative_to(directory)): None if p.is_symlink() or p.is_dir() else p.read_bytes()
        for p in sorted(directory.rglob("*"))
    }


def within(seconds: float, action: Callable[[], object]) -> BaseException | None:
    """Run `action` in a thread; fail (not hang) if it has not finished in `seconds`."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 - the error is the result
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"the call blocked for more than {seconds}s"
    return outcome[0]


def assert_no_host_path(error: BaseException, tmp_path: Path) -> None:
    assert str(tmp_path) not in str(error)
    assert str(tmp_path) not in repr(error.args)
    assert str(tmp_path) not in str(getattr(error, "filename", ""))


# ----- escapes: every route out of the root is refused ---------------------------------------

Setup = Callable[[Path, Path], str]


def plain(path: str) -> Setup:
    return lambda root, outside: path


def link(name: str, target: str | Path, path: str) -> Setup:
    def setup(root: Path, outside: Path) -> str:
        where = root / name
        where.parent.mkdir(parents=True, exist_ok=True)
        where.symlink_to(str(target).replace("{outside}", str(outside)))
        return path

    return setup


def grandparent_link(root: Path, outside: Path) -> str:
    (outside / "deep").mkdir()
    (outside / "deep" / "f.txt").write_bytes(SECRET)
    (root / "a").mkdir()
    (root / "a" / "up").symlink_to(outside)
    return "/a/up/deep/f.txt"


def chain_file(root: Path, outside: Path) -> str:
    (root / "hop2").symlink_to(outside / "secret.txt")
    (root / "hop1").symlink_to(root / "hop2")
    return "/hop1"


def chain_dir(root: Path, outside: Path) -> str:
    (root / "d2").symlink_to(outside)
    (root / "d1").symlink_to("d2")
    return "/d1/secret.txt"


def link_to_root_parent(root: Path, outside: Path) -> str:
    (root / "parent").symlink_to(root.parent)
    return "/parent/outside/secret.txt"


ESCAPES: dict[str, Setup] = {
    "dotdot": plain("../x"),
    "dotdot-from-absolute": plain("/../../etc/passwd"),
    "dotdot-after-a-dir": plain("a/../../x"),
    "dot-then-dotdot": plain("/./../x"),
    "dotdot-from-deep": plain("/a/b/../../../outside/secret.txt"),
    "many-dotdots": plain("/" + "../" * 40 + "etc/passwd"),
    "symlinked-file-to-etc": link("hostname", "/etc/hostname", "/hostname"),
    "symlinked-dir-then-file": link("out", "{outside}", "/out/secret.txt"),
    "symlinked-parent-of-a-parent": grandparent_link,
    "relative-symlink": link("rel", "../outside/secret.txt", "/rel"),
    "dangling-symlink-out": link("dangling", "{outside}/not-yet.txt", "/dangling"),
    "dangling-dir-symlink-out": link("newdir", "{outside}/newdir", "/newdir/f.txt"),
    "symlink-chain-in-in-out": chain_file,
    "symlinked-dir-chain-in-in-out": chain_dir,
    "symlink-to-root-parent": link_to_root_parent,
    "symlink-to-filesystem-root": link("slash", "/", "/slash/etc/passwd"),
    "symlink-to-device": link("null", "/dev/null", "/null"),
    "home": plain("~/.bashrc"),
    "home-of-user": plain("~root"),
    "bare-tilde": plain("~"),
    "nul-in-the-middle": plain("/inside.txt\x00/../../x"),
    "nul-at-the-end": plain("/inside.txt\x00"),
    "unc-slashes": plain("//host/share/x"),
    "unc-backslashes": plain("\\\\host\\share"),
    "backslash-dotdot": plain("..\\x"),
    "drive-letter": plain("C:\\Windows"),
    "drive-letter-slash": plain("C:/Windows/win.ini"),
    "overlong-component": plain("/" + "n" * 300),
    "overlong-path": plain("/" + "/".join(["d" * 99] * 50)),
}

OPERATIONS: dict[str, Callable[[LocalBackend, str], object]] = {
    "read": lambda b, p: b.read_bytes(p),
    "write": lambda b, p: b.write_bytes(p, b"pwned"),
    "list": lambda b, p: b.list_dir(p),
    "stat": lambda b, p: b.stat(p),
    "host_path": lambda b, p: b.host_path(p),
}


def test_at_least_22_escape_routes_are_covered() -> None:
    assert len(ESCAPES) >= 22


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
@pytest.mark.parametrize("setup", ESCAPES.values(), ids=ESCAPES.keys())
def test_escape_is_refused_without_naming_the_host(
    root: Path,
    backend: LocalBackend,
    setup: Setup,
    operation: Callable[[LocalBackend, str], object],
) -> None:
    outside = outside_of(root)
    path = setup(root, outside)
    before = snapshot(outside)
    with pytest.raises((OutsideRoot, InvalidPath)) as caught:
        operation(backend, path)
    assert_no_host_path(caught.value, root.parent)
    assert snapshot(outside) == before
    assert (outside / "secret.txt").read_bytes() == SECRET
    assert not (outside / "not-yet.txt").exists()
    assert not (outside / "newdir").exists()


@pytest.mark.parametrize(
    "setup",
    [ESCAPES["dangling-symlink-out"], ESCAPES["dangling-dir-symlink-out"]],
    ids=["file", "directory"],
)
def test_dangling_link_out_creates_nothing_outside(
    root: Path, backend: LocalBackend, setup: Setup
) -> None:
    path = setup(root, outside_of(root))
    for action in (
        lambda: backend.write_bytes(path, b"pwned"),
        lambda: backend.mkdir(path),
        lambda: backend.mkdir(path + "/sub"),
        lambda: backend.move("/inside.txt", path + "/moved"),
    ):
        with pytest.raises(OutsideRoot):
            action()
    assert sorted(p.name for p in outside_of(root).iterdir()) == ["secret.txt"]
    assert (root / "inside.txt").read_bytes() == b"inside\n"


async def test_escape_is_refused_on_the_async_path(root: Path, backend: LocalBackend) -> None:
    path = ESCAPES["symlinked-dir-then-file"](root, outside_of(root))
    for action in (
        lambda: backend.aread_bytes(path),
        lambda: backend.awrite_bytes(path, b"pwned"),
        lambda: backend.astat(path),
        lambda: backend.alist_dir("/out"),
    ):
        with pytest.raises(OutsideRoot) as caught:
            await action()
        assert_no_host_path(caught.value, root.parent)
    assert (outside_of(root) / "secret.txt").read_bytes() == SECRET


# ----- odd but legal spellings: they name files inside the root ------------------------------

INSIDE: dict[str, Callable[[Path], str]] = {
    "percent-encoded-dotdot-slash": lambda root: "%2e%2e%2fx",
    "percent-encoded-slashes": lambda root: "..%2f..%2fx",
    "percent-dot": lambda root: ".%2e/x",
    "one-dot-leaders": lambda root: "\u2024\u2024/x",
    "division-slash": lambda root: "..\u2215x",
    "three-dots": lambda root: "...",
    "four-dots": lambda root: "....//x",
    "root-name-uppercased": lambda root: "/" + str(root).upper().lstrip("/") + "/x",
    "host-absolute-path": lambda root: str(root.parent / "outside"),
    "host-path-of-the-root": lambda root: str(root) + "/x",
}


@pytest.mark.parametrize("spelling", INSIDE.values(), ids=INSIDE.keys())
def test_odd_spelling_stays_inside_the_root(
    root: Path, backend: LocalBackend, spelling: Callable[[Path], str]
) -> None:
    outside = outside_of(root)
    before = snapshot(outside)
    path = spelling(root)
    info = backend.write_bytes(path, b"data")
    landed = root / info.path.lstrip("/")
    assert landed.resolve().is_relative_to(root)
    assert landed.read_bytes() == b"data"
    assert backend.read_bytes(path) == b"data"
    parent = info.path.rsplit("/", 1)[0] or "/"
    assert info.name in [entry.name for entry in backend.list_dir(parent)]
    written = [p for p in root.parent.rglob("*") if p.is_file() and p.read_bytes() == b"data"]
    assert written == [landed]
    assert snapshot(outside) == before


def test_host_path_of_a_secret_is_just_a_missing_virtual_file(
    root: Path, backend: LocalBackend
) -> None:
    host_secret = str(outside_of(root) / "secret.txt")
    with pytest.raises(FileNotFoundError) as caught:
        backend.read_bytes(host_secret)
    assert caught.value.filename == host_secret  # the virtual path the model gave
    assert caught.value.errno == errno.ENOENT
    assert backend.exists(host_secret) is False


def test_host_path_is_confined(root: Path, backend: LocalBackend) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to("real")
    assert backend.host_path("/") == root
    assert backend.host_path("/alias/new.txt") == root / "real" / "new.txt"


# ----- symlinks that stay inside are followed ---------------------------------------------------


def test_inside_symlinks_are_followed_for_read_and_write(root: Path, backend: LocalBackend) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_bytes(b"v1")
    (root / "alias").symlink_to(root / "real")
    (root / "f-link").symlink_to("real/f.txt")
    (root / "f-chain").symlink_to("f-link")
    assert backend.read_bytes("/alias/f.txt") == b"v1"
    assert backend.read_bytes("/f-chain") == b"v1"
    assert backend.stat("/f-link").kind is EntryKind.FILE
    assert backend.stat("/alias").kind is EntryKind.DIRECTORY

    info = backend.write_bytes("/f-link", b"v2")
    assert (root / "f-link").is_symlink()
    assert (root / "real" / "f.txt").read_bytes() == b"v2"
    assert info == backend.stat("/f-link")
    backend.write_bytes("/alias/new.txt", b"new")
    assert (root / "real" / "new.txt").read_bytes() == b"new"
    assert (root / "alias").is_symlink()


def test_write_through_a_dangling_inside_link_creates_its_target(
    root: Path, backend: LocalBackend
) -> None:
    (root / "later").symlink_to("sub/target.txt")
    backend.write_bytes("/later", b"made")
    assert (root / "later").is_symlink()
    assert (root / "sub" / "target.txt").read_bytes() == b"made"


def test_listing_shows_links_as_their_targets_and_escapes_as_special(
    root: Path, backend: LocalBackend
) -> None:
    (root / "dir").mkdir()
    (root / "to-dir").symlink_to("dir")
    (root / "to-file").symlink_to("inside.txt")
    (root / "to-outside").symlink_to(outside_of(root) / "secret.txt")
    (root / "dangling").symlink_to("nowhere")
    (root / "loop").symlink_to("loop")
    listed = {entry.name: (entry.kind, entry.link, entry.size) for entry in backend.list_dir("/")}
    assert listed == {
        "dangling": (EntryKind.SPECIAL, True, 0),
        "dir": (EntryKind.DIRECTORY, False, 0),
        "inside.txt": (EntryKind.FILE, False, 7),
        "loop": (EntryKind.SPECIAL, True, 0),
        "to-dir": (EntryKind.DIRECTORY, True, 0),
        "to-file": (EntryKind.FILE, True, 7),
        "to-outside": (EntryKind.SPECIAL, True, 0),
    }


def test_moving_onto_an_escaping_link_replaces_the_link_itself(
    root: Path, backend: LocalBackend
) -> None:
    (root / "dangling").symlink_to(outside_of(root) / "not-yet.txt")
    backend.move("/inside.txt", "/dangling")
    assert not (root / "dangling").is_symlink()
    assert (root / "dangling").read_bytes() == b"inside\n"
    assert sorted(p.name for p in outside_of(root).iterdir()) == ["secret.txt"]


def test_deleting_an_escaping_link_removes_only_the_link(root: Path, backend: LocalBackend) -> None:
    (root / "out").symlink_to(outside_of(root))
    backend.delete("/out")
    assert not (root / "out").is_symlink()
    assert (outside_of(root) / "secret.txt").read_bytes() == SECRET


# ----- atomic writes ----------------------------------------------------------------------------

PAYLOAD = 200 * 1024 * 1024
WRITER = textwrap.dedent(
    """
    import sys
    from langchain_fstools.backends.local.backend import LocalBackend
    LocalBackend(sys.argv[1], use_ripgrep=False).write_bytes("/big.bin", b"N" * int(sys.argv[2]))
    """
)


def _temp_files(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def _writing(directory: Path) -> bool:
    """Whether a temp file with some content is there (it may vanish while we look)."""
    for entry in os.scandir(directory):
        if entry.name.endswith(TEMP_SUFFIX):
            try:
                if entry.stat().st_size > 0:
                    return True
            except FileNotFoundError:
                continue
    return False


def test_writer_killed_mid_write_leaves_the_old_content(tmp_path: Path) -> None:
    old = b"O" * (1024 * 1024)
    (tmp_path / "big.bin").write_bytes(old)
    caught_mid_write = False
    for _attempt in range(10):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(PAYLOAD)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if _writing(tmp_path):
                child.send_signal(signal.SIGKILL)
                break
            time.sleep(0.0005)
        child.wait()
        content = (tmp_path / "big.bin").read_bytes()
        assert content == old or content == b"N" * PAYLOAD, "a mix or a truncation"
        # A temp file still on disk proves the kill came before the rename. It is left
        # behind by SIGKILL, and listings show it as it is.
        if _temp_files(tmp_path):
            caught_mid_write = True
            assert content == old
            break
    assert caught_mid_write, "never caught the writer mid-write"
    listed = {e.name: e for e in LocalBackend(tmp_path, use_ripgrep=False).list_dir("/")}
    assert (listed["big.bin"].kind, listed["big.bin"].size) == (EntryKind.FILE, len(old))


def test_failed_write_removes_its_temp_file_and_names_no_host_path(
    root: Path, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_fsync(descriptor: int) -> None:
        raise OSError(errno.EIO, "I/O error", str(root / "inside.txt"))

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error") as caught:
        backend.write_bytes("/inside.txt", b"new")
    monkeypatch.undo()
    assert (type(caught.value), caught.value.errno, caught.value.filename) == (
        OSError,
        errno.EIO,
        "/inside.txt",
    )
    assert_no_host_path(caught.value, root.parent)
    assert (root / "inside.txt").read_bytes() == b"inside\n"
    assert _temp_files(root) == []


def test_permission_bits_are_kept_across_a_write(root: Path, backend: LocalBackend) -> None:
    for mode in (0o640, 0o755, 0o600):
        (root / "inside.txt").chmod(mode)
        backend.write_bytes("/inside.txt", b"x")
        assert stat.S_IMODE((root / "inside.txt").stat().st_mode) == mode


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_new_file_gets_the_umask_default(
    root: Path, backend: LocalBackend, umask: int, mode: int
) -> None:
    previous = os.umask(umask)
    try:
        backend.write_bytes("/new/file.txt", b"x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((root / "new" / "file.txt").stat().st_mode) == mode


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_owner_is_kept_across_a_write(root: Path, backend: LocalBackend) -> None:
    os.chown(root / "inside.txt", 1234, 2345)
    backend.write_bytes("/inside.txt", b"x")
    result = (root / "inside.txt").stat()
    assert (result.st_uid, result.st_gid) == (1234, 2345)


# ----- devices, FIFOs and sockets are never opened -----------------------------------------------


def test_fifo_is_refused_without_blocking(root: Path, backend: LocalBackend) -> None:
    os.mkfifo(root / "pipe")
    assert within(5, lambda: backend.read_bytes("/pipe")) == SpecialFile("/pipe", "FIFO")
    assert within(5, lambda: backend.read_bytes("/pipe", 0, 10)) == SpecialFile("/pipe", "FIFO")
    assert within(5, lambda: backend.write_bytes("/pipe", b"x")) == SpecialFile("/pipe", "FIFO")
    assert backend.stat("/pipe").kind is EntryKind.SPECIAL
    assert {e.name: e.kind for e in backend.list_dir("/")}["pipe"] is EntryKind.SPECIAL
    assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode)


def test_file_swapped_for_a_fifo_before_the_open_is_refused(
    root: Path, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def swapping_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        resolving = flags & getattr(os, "O_PATH", 0)  # the resolution, before the open
        if str(path).endswith("inside.txt") and not resolving:
            target = root / "inside.txt"  # the open itself names it relative to its directory
            target.unlink()
            os.mkfifo(target)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    error = within(5, lambda: backend.read_bytes("/inside.txt"))
    monkeypatch.undo()
    assert error == SpecialFile("/inside.txt", "FIFO")


def test_file_swapped_for_a_link_before_the_open_is_not_followed(
    root: Path, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def swapping_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        resolving = flags & getattr(os, "O_PATH", 0)  # the resolution, before the open
        if str(path).endswith("inside.txt") and not resolving:
            target = root / "inside.txt"  # the open itself names it relative to its directory
            target.unlink()
            target.symlink_to(outside_of(root) / "secret.txt")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", swapping_open)
    with pytest.raises(OSError) as caught:
        backend.read_bytes("/inside.txt")
    monkeypatch.undo()
    assert (caught.value.errno, caught.value.filename) == (errno.ELOOP, "/inside.txt")
    assert_no_host_path(caught.value, root.parent)


def test_socket_is_refused(
    root: Path, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)  # a relative name keeps the socket path short
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        assert within(5, lambda: backend.read_bytes("/sock")) == SpecialFile("/sock", "socket")
        assert backend.stat("/sock").kind is EntryKind.SPECIAL


def test_link_to_a_host_device_is_outside_the_root(root: Path, backend: LocalBackend) -> None:
    (root / "zero").symlink_to("/dev/zero")
    assert within(5, lambda: backend.read_bytes("/zero")) == OutsideRoot("/zero")
    assert {e.name: e.kind for e in backend.list_dir("/")}["zero"] is EntryKind.SPECIAL


def test_device_inside_the_root_is_refused_without_blocking(
    root: Path, backend: LocalBackend
) -> None:
    try:
        os.mknod(root / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    expected = SpecialFile("/zero", "character device")
    assert within(5, lambda: backend.read_bytes("/zero")) == expected
    assert within(5, lambda: backend.read_bytes("/zero", 0, 1 << 30)) == expected
    assert backend.stat("/zero").kind is EntryKind.SPECIAL


# ----- versions ------------------------------------------------------------------------------------


def test_version_changes_on_every_write_and_is_stable_otherwise(
    root: Path, backend: LocalBackend
) -> None:
    first = backend.write_bytes("/v.txt", b"same")
    backend.read_bytes("/v.txt")
    backend.list_dir("/")
    backend.write_bytes("/other.txt", b"neighbour")
    assert backend.stat("/v.txt").version == first.version
    second = backend.write_bytes("/v.txt", b"same")
    assert second.version != first.version
    assert backend.stat("/v.txt").version == second.version


def test_quick_same_size_writes_never_share_a_version(backend: LocalBackend) -> None:
    versions = [backend.write_bytes("/v.txt", b"%03d" % n).version for n in range(100)]
    assert len(set(versions)) == len(versions)


def test_version_conflict_leaves_the_file_untouched(root: Path, backend: LocalBackend) -> None:
    mine = backend.write_bytes("/c.txt", b"mine")
    (root / "c.txt").write_bytes(b"them")  # changed in place behind the backend's back
    current = backend.stat("/c.txt").version
    with pytest.raises(VersionConflict) as caught:
        backend.write_bytes("/c.txt", b"new", expected_version=mine.version)
    assert caught.value == VersionConflict("/c.txt", mine.version, current)
    assert (root / "c.txt").read_bytes() == b"them"
    assert _temp_files(root) == []
    updated = backend.write_bytes("/c.txt", b"new", expected_version=current)
    assert (root / "c.txt").read_bytes() == b"new"
    assert updated.version != current


def test_absent_means_the_file_must_not_exist(root: Path, backend: LocalBackend) -> None:
    existing = backend.stat("/inside.txt")
    with pytest.raises(VersionConflict) as caught:
        backend.write_bytes("/inside.txt", b"new", expected_version=ABSENT)
    assert caught.value == VersionConflict("/inside.txt", ABSENT, existing.version)
    assert (root / "inside.txt").read_bytes() == b"inside\n"
    created = backend.write_bytes("/fresh.txt", b"1", expected_version=ABSENT)
    assert created == backend.stat("/fresh.txt")
    with pytest.raises(VersionConflict) as missing:
        backend.write_bytes("/gone.txt", b"1", expected_version=created.version)
    assert missing.value == VersionConflict("/gone.txt", created.version, None)
    assert not (root / "gone.txt").exists()
    assert _temp_files(root) == []


# ----- reads, listings, deletes, moves, walks ---------------------------------------------------


def test_range_reads_return_only_what_is_asked(root: Path, backend: LocalBackend) -> None:
    (root / "r.bin").write_bytes(b"0123456789")
    assert backend.read_bytes("/r.bin") == b"0123456789"
    assert backend.read_bytes("/r.bin", 2, 3) == b"234"
    assert backend.read_bytes("/r.bin", 7) == b"789"
    assert backend.read_bytes("/r.bin", 8, 10) == b"89"
    assert backend.read_bytes("/r.bin", 0, 0) == b""
    assert backend.read_bytes("/r.bin", 50, 5) == b""
    assert backend.read_bytes("/r.bin", 3, 1 << 62) == b"3456789"  # no huge allocation


@pytest.mark.parametrize(("start", "size"), [(-1, None), (0, -1)])
def test_negative_range_is_einval(backend: LocalBackend, start: int, size: int | None) -> None:
    with pytest.raises(OSError) as caught:
        backend.read_bytes("/inside.txt", start, size)
    assert (type(caught.value), caught.value.errno, caught.value.filename) == (
        OSError,
        errno.EINVAL,
        "/inside.txt",
    )


def test_empty_file(backend: LocalBackend) -> None:
    info = backend.write_bytes("/empty", b"")
    assert (info.kind, info.size) == (EntryKind.FILE, 0)
    assert backend.read_bytes("/empty") == b""
    assert backend.read_bytes("/empty", 0, 10) == b""


def test_reading_a_directory_is_an_is_a_directory_error(root: Path, backend: LocalBackend) -> None:
    (root / "d").mkdir()
    for path in ("/d", "/"):
        with pytest.raises(IsADirectoryError) as caught:
            backend.read_bytes(path)
        assert (caught.value.errno, caught.value.filename) == (errno.EISDIR, path)
    with pytest.raises(IsADirectoryError):
        backend.write_bytes("/d", b"x")


def test_listing_a_file_is_a_not_a_directory_error(backend: LocalBackend) -> None:
    with pytest.raises(NotADirectoryError) as caught:
        backend.list_dir("/inside.txt")
    assert (caught.value.errno, caught.value.filename) == (errno.ENOTDIR, "/inside.txt")


def test_list_dir_is_sorted_by_name(root: Path, backend: LocalBackend) -> None:
    for name in ("b", "B", "a", "_", ".h", "é"):
        (root / "l").mkdir(exist_ok=True)
        (root / "l" / name).write_bytes(b"")
    assert [e.name for e in backend.list_dir("/l")] == [".h", "B", "_", "a", "b", "é"]


def test_delete_refuses_non_empty_directories_and_the_root(
    root: Path, backend: LocalBackend
) -> None:
    backend.write_bytes("/full/f", b"keep")
    with pytest.raises(OSError) as caught:
        backend.delete("/full")
    assert (caught.value.errno, caught.value.filename) == (errno.ENOTEMPTY, "/full")
    assert_no_host_path(caught.value, root.parent)
    assert (root / "full" / "f").read_bytes() == b"keep"
    with pytest.raises(InvalidPath):
        backend.delete("/")
    backend.delete("/full/f")
    backend.delete("/full")
    assert not (root / "full").exists()


def test_move_across_directories_creates_parents(root: Path, backend: LocalBackend) -> None:
    written = backend.write_bytes("/src/a.txt", b"moved")
    info = backend.move("/src/a.txt", "/x/y/z/b.txt")
    assert (info.path, info.kind, info.size) == ("/x/y/z/b.txt", EntryKind.FILE, 5)
    assert info.version == written.version  # a rename keeps the content, and the token
    assert (root / "x" / "y" / "z" / "b.txt").read_bytes() == b"moved"
    assert not (root / "src" / "a.txt").exists()


def test_move_renames_directory_trees_like_posix(root: Path, backend: LocalBackend) -> None:
    backend.write_bytes("/t/sub/f.txt", b"f")
    backend.move("/t", "/renamed/t")
    assert backend.read_bytes("/renamed/t/sub/f.txt") == b"f"
    with pytest.raises(OSError) as into_itself:
        backend.move("/renamed", "/renamed/t/deeper/x")
    assert (into_itself.value.errno, into_itself.value.filename) == (
        errno.EINVAL,
        "/renamed/t/deeper/x",
    )
    assert not (root / "renamed" / "t" / "deeper").exists()


def test_walk_is_depth_first_sorted_and_skips_symlinked_directories(
    root: Path, backend: LocalBackend
) -> None:
    for path in ("/w/b.txt", "/w/a/2.txt", "/w/a/1.txt", "/w/c/d/e.txt"):
        backend.write_bytes(path, b"x")
    (root / "w" / "loop").symlink_to(root)
    (root / "w" / "out").symlink_to(outside_of(root))
    walked = [(e.path, e.kind, e.link) for e in backend.walk("/w")]
    assert walked == [
        ("/w/a", EntryKind.DIRECTORY, False),
        ("/w/a/1.txt", EntryKind.FILE, False),
        ("/w/a/2.txt", EntryKind.FILE, False),
        ("/w/b.txt", EntryKind.FILE, False),
        ("/w/c", EntryKind.DIRECTORY, False),
        ("/w/c/d", EntryKind.DIRECTORY, False),
        ("/w/c/d/e.txt", EntryKind.FILE, False),
        ("/w/loop", EntryKind.DIRECTORY, True),
        ("/w/out", EntryKind.SPECIAL, True),
    ]
    (root / "w" / "loop").unlink()  # the default walk would enter it (forever)
    assert list(backend.walk("/")) == list(Backend.walk(backend, "/"))


def test_permission_denied_names_the_virtual_path(
    root: Path, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's EACCES (simulated: root reads files whatever their mode, and CI runs as
    root) reaches the caller with the virtual path and no host path."""
    real_open = os.open

    def denying(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsdecode(path).endswith("inside.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying)
    with pytest.raises(PermissionError) as caught:
        backend.read_bytes("/inside.txt")
    assert (caught.value.errno, caught.value.filename) == (errno.EACCES, "/inside.txt")
    assert_no_host_path(caught.value, root.parent)


def test_missing_file_error_names_the_virtual_path(root: Path, backend: LocalBackend) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        backend.read_bytes("/missing/file.txt")
    assert (caught.value.errno, caught.value.filename) == (errno.ENOENT, "/missing/file.txt")
    assert_no_host_path(caught.value, root.parent)


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing directory") as caught:
        LocalBackend(tmp_path / "missing")
    assert f"{str(tmp_path / 'missing')!r}" in str(caught.value)
    assert "does not exist: create it first" in str(caught.value)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        LocalBackend(tmp_path / "file")


# ----- async twins ---------------------------------------------------------------------------------


async def test_async_twins_give_the_same_results(root: Path, backend: LocalBackend) -> None:
    written = await backend.awrite_bytes("/a/b.txt", b"hello")
    stat = await asyncio.to_thread(backend.stat, "/a/b.txt")  # sync twins block: off the loop
    assert written == stat
    assert await backend.astat("/a/b.txt") == stat
    assert await backend.aread_bytes("/a/b.txt") == await asyncio.to_thread(
        backend.read_bytes, "/a/b.txt"
    )
    assert await backend.aread_bytes("/a/b.txt", 1, 3) == b"ell"
    with pytest.raises(VersionConflict):
        await backend.awrite_bytes("/a/b.txt", b"x", expected_version=ABSENT)
    updated = await backend.awrite_bytes("/a/b.txt", b"bye", expected_version=written.version)
    assert (root / "a" / "b.txt").read_bytes() == b"bye"
    assert await backend.astat("/a/b.txt") == updated


def _pickled(backend: LocalBackend) -> LocalBackend:
    copied: LocalBackend = pickle.loads(pickle.dumps(backend))  # noqa: S301 - our own bytes
    return copied


@pytest.mark.parametrize("copy_of", [copy.copy, copy.deepcopy, _pickled])
def test_a_copied_backend_opens_its_own_root(tmp_path: Path, copy_of: Any) -> None:
    backend = LocalBackend(tmp_path)
    backend.write_bytes("/a.txt", b"a")
    copied = copy_of(backend)
    copied.write_bytes("/b.txt", b"b")
    assert (copied.read_bytes("/a.txt"), backend.read_bytes("/b.txt")) == (b"a", b"b")


@pytest.mark.parametrize("copy_of", [copy.copy, copy.deepcopy, _pickled])
def test_a_backend_copied_after_a_search_searches_with_its_own_ripgrep(
    tmp_path: Path, copy_of: Any
) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    backend = LocalBackend(tmp_path)
    search = backend.native_search()
    if search is None:
        pytest.skip("needs rg")
    found: list[str] = []
    search.grep(GrepRequest("needle", "/"), deadline=time.monotonic() + 30, sink=print)
    copied = copy_of(backend).native_search()
    copied.grep(GrepRequest("needle", "/"), deadline=time.monotonic() + 30, sink=found.append)
    assert [hits.path for hits in found] == ["/a.txt"]
