"""Branches kept on this machine while an interrupt stops their `task` call."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from langchain_fstools.middleware import suspended_branches
from langchain_fstools.middleware.suspended_branches import (
    discard,
    resume,
    suspend,
    suspended_key,
)

SNAPSHOT = {
    "max_files": 3,
    "max_bytes": 99,
    "touched": {"/a": [b"\x00\xff", "file", "v", 1.5, "", None]},
}


@pytest.fixture(autouse=True)
def _private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))


def test_a_branch_is_taken_back_by_the_call_it_was_kept_for_until_discarded() -> None:
    key = suspended_key("thread", "tools:1", "call")
    assert key != suspended_key("thread", "tools:2", "call")
    suspend(key, SNAPSHOT)
    assert resume(suspended_key("other", "tools:1", "call")) is None
    assert resume(key) == SNAPSHOT
    assert resume(key) == SNAPSHOT  # a worker killed after taking it takes it again
    discard(key)
    assert resume(key) is None
    discard(key)  # nothing kept: fine


def test_a_branch_kept_too_long_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    suspend("k", SNAPSHOT)
    later = time.time() + suspended_branches.SUSPENDED_SECONDS + 5
    monkeypatch.setattr(time, "time", lambda: later)
    assert resume("k") is None


def test_a_folder_others_could_use_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / f"fstools-suspended-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with pytest.raises(PermissionError, match="private folder"):
        suspend("k", SNAPSHOT)
    folder.rmdir()
    folder.symlink_to(tmp_path)  # planted by someone else: a link, not a folder
    with pytest.raises((PermissionError, FileExistsError)):
        suspend("k", SNAPSHOT)
