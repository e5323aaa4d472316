"""The folder lock of local writes: bounded waits, released by a killed holder, no reader waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.write_locks import directories_locked
from langchain_fstools.errors import WriteLockTimeout

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HOLDER = """
import os, sys, time
from langchain_fstools.backends.write_locks import directories_locked
with directories_locked({os.open(sys.argv[1], os.O_PATH): "/held"}, 5):
    print("held", flush=True)
    time.sleep(60)
"""
"""A writer of this package that takes a folder's lock and keeps it (until killed)."""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock of `tmp_path/root/sub`."""
    folder = tmp_path / "root" / "sub"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("old\n")
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_a_held_lock_fails_the_write_at_its_timeout_and_writes_nothing(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    backend = LocalBackend(tmp_path / "root", lock_timeout=0.3)
    started = time.monotonic()

    with pytest.raises(WriteLockTimeout) as raised:
        backend.write_bytes("/sub/a.txt", b"new\n")

    assert raised.value == WriteLockTimeout("/sub/a.txt", 0.3)
    assert 0.3 <= time.monotonic() - started < 2
    assert [p.name for p in (tmp_path / "root" / "sub").iterdir()] == ["a.txt"]  # no temporary left
    assert (tmp_path / "root" / "sub" / "a.txt").read_text() == "old\n"


def test_a_write_elsewhere_and_a_read_do_not_wait_for_the_lock(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    backend = LocalBackend(tmp_path / "root", lock_timeout=5)
    started = time.monotonic()

    assert backend.read_bytes("/sub/a.txt") == b"old\n"
    backend.write_bytes("/b.txt", b"elsewhere\n")

    assert time.monotonic() - started < 1


def test_a_killed_holder_blocks_no_one(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    backend = LocalBackend(tmp_path / "root", lock_timeout=5)
    version = backend.stat("/sub/a.txt").version

    holder.send_signal(signal.SIGKILL)
    holder.wait()
    backend.write_bytes("/sub/a.txt", b"new\n", expected_version=version)

    assert (tmp_path / "root" / "sub" / "a.txt").read_text() == "new\n"


def test_the_tool_says_what_to_do_when_the_lock_is_held(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    tools = {
        t.name: t
        for t in FileToolkit(LocalBackend(tmp_path / "root", lock_timeout=0.2)).get_tools()
    }

    reply = tools["write_file"].invoke({"file_path": "/sub/new.txt", "content": "x"})

    assert reply == (
        "Error: another writer kept the folder of /sub/new.txt locked for 0.2 s;"
        " nothing was written. Try the call again shortly."
    )
    assert not (tmp_path / "root" / "sub" / "new.txt").exists()


def test_one_folder_named_twice_in_a_batch_is_locked_once(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    first, second = os.open(tmp_path / "d", os.O_PATH), os.open(tmp_path / "d", os.O_PATH)
    try:
        with directories_locked({first: "/d/a", second: "/d/b"}, 0.2):
            pass  # a second flock of the same folder would wait for the first: a timeout
    finally:
        os.close(first)
        os.close(second)


@pytest.mark.parametrize("seconds", [0, -1, float("nan")])
def test_a_lock_timeout_that_is_not_positive_is_refused(tmp_path: Path, seconds: float) -> None:
    with pytest.raises(ValueError, match="lock_timeout must be a positive number"):
        LocalBackend(tmp_path, lock_timeout=seconds)
