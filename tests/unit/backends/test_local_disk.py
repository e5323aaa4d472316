"""LocalBackend on a real disk: atomic writes, permission bits, special files, versions."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.errors import SpecialFile, VersionConflict

WRITER = textwrap.dedent(
    """
    import sys
    from langchain_fstools import LocalBackend
    LocalBackend(sys.argv[1]).write_bytes("/big.bin", b"N" * (400 * 1024 * 1024))
    """
)


def test_write_killed_midway_leaves_old_content(tmp_path: Path) -> None:
    old = b"O" * (1024 * 1024)
    (tmp_path / "big.bin").write_bytes(old)
    killed_mid_write = False
    for _attempt in range(5):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            temps = [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]
            if temps and temps[0].stat().st_size > 0:
                child.send_signal(signal.SIGKILL)
                killed_mid_write = True
                break
            time.sleep(0.001)
        child.wait()
        if killed_mid_write:
            break
    assert killed_mid_write, "never caught the writer mid-write"
    content = (tmp_path / "big.bin").read_bytes()
    assert content in (old, b"N" * (400 * 1024 * 1024))
    assert content == old  # killed before the rename: the old file is intact
    listed = [entry.name for entry in LocalBackend(tmp_path).list_dir("/")]
    assert "big.bin" in listed


def test_permission_bits_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("echo 1\n")
    target.chmod(0o750)
    LocalBackend(tmp_path).write_bytes("/script.sh", b"echo 2\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert target.read_text() == "echo 2\n"


def test_new_file_gets_umask_default(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        LocalBackend(tmp_path).write_bytes("/new.txt", b"x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


def _within(seconds: float, action: object) -> BaseException | None:
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            action()  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, "the call blocked"
    return outcome[0]


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    backend = LocalBackend(tmp_path)
    error = _within(5, lambda: backend.read_bytes("/pipe"))
    assert error == SpecialFile("/pipe", "FIFO")
    assert backend.stat("/pipe").kind.value == "special"
    assert isinstance(_within(5, lambda: backend.write_bytes("/pipe", b"x")), SpecialFile)


def test_device_inside_root_refused(tmp_path: Path) -> None:
    try:
        os.mknod(tmp_path / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    error = _within(5, lambda: LocalBackend(tmp_path).read_bytes("/zero"))
    assert error == SpecialFile("/zero", "character device")


def test_versions_change_on_write_only(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    first = backend.write_bytes("/v.txt", b"1")
    assert backend.stat("/v.txt").version == first.version
    second = backend.write_bytes("/v.txt", b"1")
    assert second.version != first.version


def test_conditional_write_conflicts_leave_file_untouched(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    info = backend.write_bytes("/c.txt", b"mine")
    (tmp_path / "c.txt").write_bytes(b"theirs")
    with pytest.raises(VersionConflict):
        backend.write_bytes("/c.txt", b"new", expected_version=info.version)
    assert (tmp_path / "c.txt").read_bytes() == b"theirs"
    with pytest.raises(VersionConflict):
        backend.write_bytes("/c.txt", b"new", expected_version=ABSENT)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def test_walk_does_not_enter_symlinked_directories(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path)
    walked = [entry.path for entry in LocalBackend(tmp_path).walk()]
    assert walked == ["/d", "/d/f.txt", "/loop"]


async def test_async_twins_match(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    written = await backend.awrite_bytes("/a/b.txt", b"hello")
    assert await backend.astat("/a/b.txt") == written
    assert await backend.aread_bytes("/a/b.txt", 1, 3) == b"ell"
    assert [e.name for e in await backend.alist_dir("/a")] == ["b.txt"]
