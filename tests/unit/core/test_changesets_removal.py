"""A discarded change set's folder: gone from its place at once, removed off the caller's path."""

from __future__ import annotations

import time
from pathlib import Path

from langchain_fstools.core.changesets import ChangeSet, remove_folder_later


def _until_gone(path: Path, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not path.exists()


def _closed_tree(root: Path) -> None:
    """A folder as a command may leave it: content under a folder its owner cannot enter."""
    inner = root / "upper" / "locked" / "inner"
    inner.mkdir(parents=True)
    (inner / "f.txt").write_text("x")
    inner.chmod(0)
    inner.parent.chmod(0)


def test_a_discarded_set_leaves_its_place_at_once_and_is_removed_later(tmp_path: Path) -> None:
    source = tmp_path / "fstools-cow-1"
    _closed_tree(source)

    ChangeSet((), str(source)).discard()

    assert not source.exists()
    assert _until_gone(tmp_path / ".discarded-fstools-cow-1")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_renamed_aside_is_removed_at_once(tmp_path: Path) -> None:
    source = tmp_path / "view"
    (source / "upper").mkdir(parents=True)
    (tmp_path / ".discarded-view" / "in-the-way").mkdir(parents=True)  # rename fails

    remove_folder_later(str(source))

    assert not source.exists()


def test_a_missing_folder_is_no_error(tmp_path: Path) -> None:
    remove_folder_later(str(tmp_path / "never-made"))

    assert list(tmp_path.iterdir()) == []
