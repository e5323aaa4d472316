"""Root-only paths kept current: each folder listed again only once it changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from langchain_fstools.shell.sandbox import root_only
from langchain_fstools.shell.sandbox.root_only import RootOnly


def _tree(root: Path) -> None:
    (root / "open" / "deep").mkdir(parents=True)
    (root / "closed").mkdir(mode=0o700)
    (root / "open" / "readable.txt").write_text("x")
    (root / "open" / "deep" / "key").write_text("x")
    (root / "open" / "deep" / "key").chmod(0o600)


def test_what_only_its_owner_may_read_is_found_and_not_entered(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "closed").chmod(0o700)

    found = RootOnly((str(tmp_path),)).paths()

    assert sorted(found) == [str(tmp_path / "closed"), str(tmp_path / "open" / "deep" / "key")]


def test_a_file_made_root_only_by_chmod_alone_is_found_at_the_next_call(tmp_path: Path) -> None:
    """inotify tells a mode change, which moves no folder's time."""
    _tree(tmp_path)
    scan = RootOnly((str(tmp_path),))
    assert str(tmp_path / "open" / "readable.txt") not in scan.paths()

    (tmp_path / "open" / "readable.txt").chmod(0o600)

    assert str(tmp_path / "open" / "readable.txt") in scan.paths()


def test_an_unchanged_folder_is_not_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    scan = RootOnly((str(tmp_path),))
    first = scan.paths()
    listed: list[str] = []
    scandir = os.scandir

    def recording(path: str) -> object:
        listed.append(path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    (tmp_path / "open" / "deep" / "new").write_text("x")
    (tmp_path / "open" / "deep" / "new").chmod(0o600)

    assert sorted(scan.paths()) == sorted([*first, str(tmp_path / "open" / "deep" / "new")])
    assert listed == [str(tmp_path / "open" / "deep")]


def test_without_inotify_a_folder_whose_time_moved_is_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(root_only, "_inotify_init", lambda: -1)
    _tree(tmp_path)
    deep = tmp_path / "open" / "deep"
    for folder in (tmp_path, tmp_path / "open", deep):
        os.utime(folder, (1_000_000_000, 1_000_000_000))  # long ago: its listing is trusted
    scan = RootOnly((str(tmp_path),))
    assert str(deep / "new") not in scan.paths()

    (deep / "new").write_text("x")
    (deep / "new").chmod(0o600)

    assert str(deep / "new") in scan.paths()


def test_when_nothing_changed_no_folder_is_looked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    scan = RootOnly((str(tmp_path),))
    scan.paths()  # lists and watches every folder
    first = scan.paths()
    looked: list[str] = []
    lstat = os.lstat

    def recording(path: str) -> os.stat_result:
        looked.append(path)
        return lstat(path)

    monkeypatch.setattr(os, "lstat", recording)

    assert scan.paths() == first
    assert looked == []
    (tmp_path / "open" / "late").write_text("x")
    (tmp_path / "open" / "late").chmod(0o600)
    assert str(tmp_path / "open" / "late") in scan.paths()
