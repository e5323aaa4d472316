"""LocalBackend on a full disk: a batch that cannot be staged changes nothing, and says why.

The workspace is an 8 MiB tmpfs mounted by the test (root only; CI runs as root).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.core.results import Write
from langchain_fstools.errors import DiskFull
from langchain_fstools.tools.render import render_error

if TYPE_CHECKING:
    from collections.abc import Iterator

MIB = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty 8 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")
    }


def test_a_change_set_that_does_not_fit_changes_nothing(small_disk: Path, tmp_path: Path) -> None:
    (small_disk / "old.txt").write_text("old\n")
    before = tree(small_disk)
    backend = LocalBackend(small_disk)
    source = tmp_path / "upper-folder"  # on another disk: the contents are copied in
    names = ["/build/one.bin", "/build/two.bin", "/build/deep/three.bin"]
    for name in names:
        (source / "upper" / name.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (source / "upper" / name.lstrip("/")).write_bytes(b"x" * (3 * MIB))
    changes = ChangeSet(
        (
            Change("/build", ChangeKind.ADDED, "directory", 0o755),
            Change("/build/deep", ChangeKind.ADDED, "directory", 0o755),
            *(Change(n, ChangeKind.ADDED, "file", 0o644, 3 * MIB) for n in names),
            Change("/old.txt", ChangeKind.DELETED, "file", before=backend.stat("/old.txt").version),
        ),
        str(source),
    )

    with pytest.raises(DiskFull) as raised:
        backend.commit(changes)

    assert tree(small_disk) == before  # old.txt kept, no build/, no temporaries
    assert raised.value.needed == 9 * MIB
    assert 7 * MIB < raised.value.free <= 8 * MIB
    message = render_error(raised.value, tool="execute")
    assert message.startswith("Error: the disk is full, so nothing was written:")
    excess = f"{(9 * MIB - raised.value.free) / MIB:.1f} MiB too much"
    assert (
        f"the changes need 9.0 MiB and {raised.value.free / MIB:.1f} MiB is free ({excess})"
        in message
    )


def test_write_many_that_does_not_fit_changes_nothing(small_disk: Path) -> None:
    (small_disk / "a.txt").write_text("a\n")
    before = tree(small_disk)
    writes = [Write("/a.txt", b"A" * (5 * MIB)), Write("/new/b.bin", b"B" * (5 * MIB))]

    with pytest.raises(DiskFull) as raised:
        LocalBackend(small_disk).write_many(writes)

    assert tree(small_disk) == before
    assert not [p for p in small_disk.rglob("*") if p.name.endswith(TEMP_SUFFIX)]
    assert raised.value.needed == 10 * MIB


def test_a_set_that_fits_is_committed_whole(small_disk: Path) -> None:
    writes = [Write(f"/d/{n}.bin", b"x" * MIB) for n in range(3)]
    LocalBackend(small_disk).write_many(writes)
    assert sorted(p.name for p in (small_disk / "d").iterdir()) == ["0.bin", "1.bin", "2.bin"]


def test_a_full_disk_without_a_measurable_excess_still_says_so() -> None:
    message = render_error(DiskFull("/a.txt", 10, 4096), tool="write_file")
    assert message == (
        "Error: the disk is full (no room left for /a.txt), so nothing was written;"
        " free space, then try again."
    )
