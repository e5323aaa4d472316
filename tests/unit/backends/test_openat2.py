"""`openat2` opens a link-free directory path beneath a descriptor, and nothing else."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_fstools.backends.openat2 import _syscall, open_directory_beneath

pytestmark = pytest.mark.skipif(_syscall() is None, reason="needs openat2 (Linux 5.6+)")


@pytest.fixture
def root(tmp_path: Path) -> Iterator[int]:
    (tmp_path / "root" / "a" / "b").mkdir(parents=True)
    (tmp_path / "root" / "file").write_text("x")
    (tmp_path / "root" / "inner").symlink_to("a")  # a link inside, to inside
    (tmp_path / "root" / "out").symlink_to(tmp_path)  # a link to the outside
    descriptor = os.open(tmp_path / "root", os.O_PATH | os.O_DIRECTORY)
    yield descriptor
    os.close(descriptor)


def test_a_link_free_directory_path_is_opened(root: int) -> None:
    opened = open_directory_beneath(root, "a/b")
    assert opened is not None
    try:
        assert str(Path(f"/proc/self/fd/{opened}").readlink()).endswith("/root/a/b")
    finally:
        os.close(opened)


@pytest.mark.parametrize(
    "path", ["inner/b", "inner", "out", "out/root", "../root/a", "missing/x", "file"]
)
def test_links_escapes_missing_parts_and_files_are_left_to_the_walk(root: int, path: str) -> None:
    assert open_directory_beneath(root, path) is None
