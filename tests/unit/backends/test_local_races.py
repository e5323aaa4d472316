"""A folder swapped for a symlink to the outside, at any moment, never lets a file tool out.

While a swapper exchanges `/sub` with a symlink to a host folder (`renameat2` with
`RENAME_EXCHANGE`, which any process allowed to write in the workspace can do; from a
thread of the test, and from a command run by `execute` in and out of the sandbox),
hundreds of parallel `write_file`, `edit_file`, `apply_patch` and `read_file` calls run
under `/sub`. Not one byte may be written or read outside the root: every call is
either done inside the root or fails.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from tests.unit.tools.harness import Harness

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from langchain_core.messages import ToolMessage

ROUNDS = 60
"""Rounds of calls; each round makes five tool calls (300 in all), four threads at once."""

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_LIBC = ctypes.CDLL(None, use_errno=True)

SWAPPER = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
deadline = time.monotonic() + {seconds}
swaps = 0
while time.monotonic() < deadline and not os.path.getsize("stop"):
    if libc.renameat2(-100, b"sub", -100, b"decoy", 2) == 0:
        swaps += 1
        if swaps == 1:
            open("swapping", "w").close()
print("swaps", swaps)
"""
"""The swapper as a command: exchanges `sub` and `decoy` until `stop` is written (made empty
before it starts: a copy-on-write view may keep a file made after it out of sight, but shows
what is written in a file it has not changed); makes `swapping` once it swapped."""


def stop_file(arena: Path) -> Path:
    """The swapper's stop file in `arena`, made empty: write to it to stop the swapper."""
    stop = arena / "stop"
    stop.write_bytes(b"")
    return stop


def exchange(first: Path, second: Path) -> None:
    """Swap two directory entries atomically (`renameat2` with `RENAME_EXCHANGE`)."""
    if _LIBC.renameat2(_AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE):
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: file bytes, link targets, directories."""
    tree: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            tree[key] = f"link:{path.readlink()}"
        elif path.is_dir():
            tree[key] = "dir"
        else:
            tree[key] = path.read_bytes()
    return tree


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Path]:
    """`root/sub` (the real folder) and `root/decoy`, a symlink to `outside/sub`.

    Both folders hold the same file names; the outside ones say OUTSIDE, so a read
    that leaked shows it and an edit that leaked finds its text there too.
    """
    root, outside = tmp_path / "root", tmp_path / "outside" / "sub"
    (root / "sub").mkdir(parents=True)
    outside.mkdir(parents=True)
    for name in [f"e{n}.txt" for n in range(ROUNDS)] + [f"p{n}.txt" for n in range(ROUNDS)]:
        (root / "sub" / name).write_text("alpha\nbeta\ngamma\n")
        (outside / name).write_text("alpha\nbeta\ngamma\nOUTSIDE\n")
    (root / "sub" / "r.txt").write_text("inside\n" * 50)
    (outside / "r.txt").write_text("OUTSIDE\n" * 50)
    (root / "decoy").symlink_to(outside)
    yield root
    restore(root)


def restore(root: Path) -> None:
    """Put the real folder back at `sub` once the swapping is over."""
    if (root / "sub").is_symlink():
        exchange(root / "sub", root / "decoy")


Round = list[tuple[str, "ToolMessage"]]


def race(harness_path: Path, swapping: Callable[[], None]) -> list[Round]:
    """Run ROUNDS rounds of raced calls while `swapping` runs; each round's calls."""
    harnesses = threading.local()

    def harness() -> Harness:
        if not hasattr(harnesses, "one"):
            harnesses.one = Harness("local-python", harness_path)
        return harnesses.one

    def one_round(n: int) -> Round:
        tools = harness()
        patch = (
            f"*** Begin Patch\n*** Update File: sub/p{n}.txt\n alpha\n-beta\n+BETA{n}\n"
            f"*** Add File: sub/a{n}.txt\n+added {n}\n*** End Patch\n"
        )
        return [
            ("write", tools.call("write_file", file_path=f"/sub/w{n}.txt", content=f"w{n}\n")),
            ("read", tools.call("read_file", file_path="/sub/r.txt")),
            ("read", tools.call("read_file", file_path=f"/sub/e{n}.txt")),
            (
                "edit",
                tools.call(
                    "edit_file", file_path=f"/sub/e{n}.txt", old_string="beta", new_string=f"E{n}"
                ),
            ),
            ("read", tools.call("read_file", file_path=f"/sub/p{n}.txt")),
            ("patch", tools.call("apply_patch", patch=patch)),
        ]

    done = threading.Event()
    swapper = threading.Thread(target=lambda: swapping_until(done, swapping))
    swapper.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(one_round, range(ROUNDS)))
    finally:
        done.set()
        swapper.join()


def swapping_until(done: threading.Event, swapping: Callable[[], None]) -> None:
    while not done.is_set():
        swapping()


def check(root: Path, rounds: list[Round]) -> None:
    """Every call done inside the root or failed; nothing read from outside; both happened."""
    restore(root)
    sub = root / "sub"
    for n, calls in enumerate(rounds):
        for kind, message in calls:
            text = str(message.content)
            assert "OUTSIDE" not in text, (kind, text)
            assert str(root.parent) not in text  # no host path in any answer
            if message.status == "error":
                continue
            if kind == "write":
                assert (sub / f"w{n}.txt").read_text() == f"w{n}\n"
            elif kind == "edit":
                assert (sub / f"e{n}.txt").read_text() == f"alpha\nE{n}\ngamma\n"
            elif kind == "patch":
                assert (sub / f"p{n}.txt").read_text() == f"alpha\nBETA{n}\ngamma\n"
                assert (sub / f"a{n}.txt").read_text() == f"added {n}\n"
        write = calls[0][1]
        if write.status == "error":
            assert not (sub / f"w{n}.txt").exists()
    statuses = {message.status for calls in rounds for _, message in calls}
    assert statuses == {"success", "error"}  # raced: some calls got in, some were refused


def assert_untouched(outside: Path, before: dict[str, bytes | str]) -> None:
    assert snapshot(outside).keys() == before.keys()  # not a file (or a temporary) created
    assert snapshot(outside) == before  # not a byte written, not a file (or temp) created


def test_a_thread_swapping_the_folder_never_lets_a_call_out(arena: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    before = snapshot(outside)
    swaps = [0]

    def swap() -> None:
        exchange(arena / "sub", arena / "decoy")
        swaps[0] += 1

    rounds = race(tmp_path, swap)
    assert_untouched(outside, before)
    check(arena, rounds)
    assert swaps[0] > 100  # the folder really was swapped throughout


_BWRAP = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")


@pytest.mark.parametrize(
    "sandbox",
    [None, pytest.param(Sandbox(method="bwrap", workspace="direct"), marks=_BWRAP)],
    ids=["unconfined", "bwrap-direct"],
)
def test_a_command_swapping_the_folder_never_lets_a_call_out(
    arena: Path, tmp_path: Path, sandbox: Any
) -> None:
    """The swapper is the agent's own `execute`, run beside the file tools, in place."""
    outside = tmp_path / "outside"
    before = snapshot(outside)
    rounds, output = race_a_command(arena, tmp_path, sandbox)
    assert_untouched(outside, before)
    check(arena, rounds)
    swaps = int(output.split()[-1])
    assert swaps > 100, output


@_BWRAP
def test_a_command_on_a_copy_on_write_view_cannot_swap_the_workspace(
    arena: Path, tmp_path: Path
) -> None:
    """By default a command's renames land in its own view: every file tool call goes through."""
    outside = tmp_path / "outside"
    before = snapshot(outside)
    rounds, _ = race_a_command(arena, tmp_path, Sandbox(method="bwrap"))
    assert_untouched(outside, before)
    assert {message.status for calls in rounds for _, message in calls} == {"success"}


def race_a_command(arena: Path, tmp_path: Path, sandbox: Sandbox | None) -> tuple[list[Round], str]:
    """The file tools' race while the swapper runs as a command; its output."""
    backend = LocalBackend(arena, execute=True, sandbox=sandbox)
    stop = stop_file(arena)
    result: list[str] = []
    command = threading.Thread(
        target=lambda: result.append(
            backend.execute(
                f"python3 -c '{SWAPPER.format(seconds=60)}'",
                timeout=90,
                output_limit=1000,
            ).output
        )
    )
    command.start()
    if sandbox is None or sandbox.workspace == "direct":  # its `swapping` lands in the arena
        deadline = time.monotonic() + 60  # a loaded machine starts the sandbox late
        while not (arena / "swapping").exists() and command.is_alive():
            assert time.monotonic() < deadline, "the swapper did not start within 60 s"
            time.sleep(0.05)
    else:
        time.sleep(0.5)  # on its own view: the interpreter starts swapping there
    try:
        rounds = race(tmp_path, lambda: time.sleep(0.05))
    finally:
        stop.write_bytes(b"stop")
        command.join()
    return rounds, result[0]
