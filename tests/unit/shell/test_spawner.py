"""The confined spawner: programs it starts read only beneath their root, within a memory limit."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.errors import SearchFailed
from langchain_fstools.search.contract import GrepRequest
from langchain_fstools.search.ripgrep import RipgrepSearch, find_ripgrep
from langchain_fstools.search.spawner import Spawner, available
from langchain_fstools.shell.sandbox.confine import landlock_abi

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.search.spawner import SpawnedProcess

pytestmark = pytest.mark.skipif(
    not available() or find_ripgrep() is None, reason="needs Linux pidfds and rg"
)
_LANDLOCK = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")
RG = find_ripgrep() or "rg"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[int]:
    """`tmp_path/root` holding `a.txt`, beside `tmp_path/secret.txt`; its open descriptor."""
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    descriptor = os.open(tmp_path / "root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    yield descriptor
    os.close(descriptor)


@pytest.fixture
def spawner(root: int) -> Iterator[Spawner]:
    """A spawner of rg confined to `root`, without a memory limit."""
    spawner = Spawner(lambda: root, RG, None)
    yield spawner
    spawner.close()


def finish(process: SpawnedProcess) -> tuple[bytes, bytes, int]:
    assert process.stdout is not None
    assert process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return out, err, process.wait()


def test_a_program_runs_in_its_folder_and_reports_its_exit_code(
    root: int, spawner: Spawner
) -> None:
    assert finish(spawner.spawn([RG, "--no-config", "-l", "inside"], cwd=root)) == (
        b"a.txt\n",
        b"",
        0,
    )
    assert finish(spawner.spawn([RG, "--no-config", "nothing"], cwd=root))[2] == 1


def test_a_program_reads_its_standard_input_pipe(root: int, spawner: Spawner) -> None:
    process = spawner.spawn([RG, "--no-config", "-l", "--file=-"], cwd=root, stdin=True)
    assert process.stdin is not None
    process.stdin.write(b"inside\n")
    process.stdin.close()
    assert finish(process)[0] == b"a.txt\n"


@_LANDLOCK
def test_nothing_outside_the_root_is_read_or_run(
    root: int, spawner: Spawner, tmp_path: Path
) -> None:
    finish(spawner.spawn([RG, "-l", "x"], cwd=root))
    assert spawner.confined
    out, err, code = finish(spawner.spawn([RG, "outside", str(tmp_path)], cwd=root))
    assert (out, code) == (b"", 2)
    assert b"Permission denied" in err
    with pytest.raises(PermissionError):  # it may run rg only
        finish(spawner.spawn(["/bin/sh", "-c", "cat ../secret.txt"], cwd=root))


def test_a_killed_program_reports_the_signal(root: int, spawner: Spawner) -> None:
    process = spawner.spawn([RG, "--no-config", "--file=-", "."], cwd=root, stdin=True)
    assert process.poll() is None  # waits for its patterns on standard input
    process.kill()
    assert finish(process)[2] == -signal.SIGKILL
    assert process.stdin is not None
    process.stdin.close()


def test_a_program_over_its_memory_limit_fails_saying_so(root: int, tmp_path: Path) -> None:
    (tmp_path / "root" / "line.txt").write_bytes(b"x" * (48 << 20) + b"\n")
    spawner = Spawner(lambda: root, RG, 32 << 20)
    try:
        _, err, code = finish(spawner.spawn([RG, "--no-config", "-c", "y"], cwd=root))
        assert b"memory allocation of" in err
        assert code == -signal.SIGABRT
    finally:
        spawner.close()


def test_the_spawner_restarts_when_it_died(root: int, spawner: Spawner) -> None:
    finish(spawner.spawn([RG, "--no-config", "-l", "inside"], cwd=root))
    spawner._channel[2].kill()  # type: ignore[index]
    spawner._channel[2].wait()  # type: ignore[index]
    assert finish(spawner.spawn([RG, "--no-config", "-l", "inside"], cwd=root))[0] == b"a.txt\n"


@_LANDLOCK
def test_a_search_whose_program_cannot_start_fails_saying_why(
    root: int, spawner: Spawner, tmp_path: Path
) -> None:
    """The spawner answers a start failure after the request: the search still names it."""

    def start(command: list[str], cwd: Path, stdin: bool) -> SpawnedProcess:
        return spawner.spawn(["/bin/sh", *command[1:]], cwd=root, stdin=stdin)

    search = RipgrepSearch(RG, lambda _virtual: tmp_path / "root", start=start)
    with pytest.raises(SearchFailed) as failed:
        search.grep(GrepRequest("inside", "/"), deadline=time.monotonic() + 10, sink=print)
    assert failed.value.reason == "ripgrep could not start: Permission denied"
