"""grep -l on a 2,000-file repository: our `grep` tool (ripgrep confined) vs raw `rg -l`.

    python bench/grep_confined.py [--files 2000] [--rounds 41] [--data-dir bench/.data]

Host-side ripgrep runs confined (`search.spawner`: Landlock reads beneath the root, a
memory limit), started by a small spawner process instead of by this one. This times,
alternating call by call (median of `--rounds`), on a repository of `--files` small
files (`bench/search.py`'s small repository; the pattern is in 111 of them):

- raw `rg -l` with the options ours passes, started from this process;
- our `grep` tool (files_with_matches) on `LocalBackend`, as the agent calls it;
- the same tool with ripgrep started unconfined (`subprocess.Popen`, the old path).

Both the ratio of medians and the median of each round's ratio (paired) are printed.

Target (issue 35): our grep -l within 1.2x raw rg (paired). A benchmark, not a test: it asserts
only that every row found the same files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).parent))

from search import alternating_walls, rg, small_repository

from langchain_fstools import FileToolkit, LocalBackend

if TYPE_CHECKING:
    from collections.abc import Callable

TARGET = 1.2
"""Our grep -l at most this many times raw rg -l."""

PATTERN = "value = 7"
"""Found in 111 of the 2,000 files (those numbered 7, 70-79, 700-799, 1700-1799)."""


def paired(
    actions: dict[str, Callable[[], Any]], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds per call of each action, and the median of each round's ratio to
    the first action (steadier under a changing load), called in turn `rounds` times."""
    walls = alternating_walls(actions, rounds)
    first = walls[next(iter(actions))]
    medians = {name: statistics.median(measured) for name, measured in walls.items()}
    ratios = {
        name: statistics.median(a / b for a, b in zip(measured, first, strict=True))
        for name, measured in walls.items()
    }
    return medians, ratios


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / ".data")
    options = parser.parse_args()
    tree = small_repository(options.data_dir, options.files)
    unconfined = LocalBackend(tree)
    search = unconfined.native_search()
    assert search is not None, "rg is not installed"
    object.__setattr__(search, "start", None)  # the old path: Popen from this process
    tools = {
        name: FileToolkit(backend, tools=["grep"]).get_tools()[0]
        for name, backend in (("confined", LocalBackend(tree)), ("unconfined", unconfined))
    }
    query = {"pattern": PATTERN, "head_limit": 0}
    expected = {"/" + p for p in rg(tree, "-l", "-F", "-e", PATTERN).split()}
    for name, tool in tools.items():
        found = set(str(tool.invoke(query)).split("\n")[1:])
        assert found == expected, f"{name} grep found other files than rg"
    walls, ratios = paired(
        {
            "rg": lambda: rg(tree, "-l", "-F", "-e", PATTERN),
            "confined": lambda: tools["confined"].invoke(query),
            "unconfined": lambda: tools["unconfined"].invoke(query),
        },
        options.rounds,
    )
    ratio = ratios["confined"]
    print(f"{options.files:,} files, median of {options.rounds} alternating rounds")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| search | wall ms | vs raw rg -l | paired |")
    print("|---|---:|---:|---:|")
    for name, label in (
        ("rg", "raw `rg -l`"),
        ("confined", "ours grep -l (rg confined)"),
        ("unconfined", "ours grep -l (rg unconfined, Popen)"),
    ):
        versus = walls[name] / walls["rg"]
        print(f"| {label} | {walls[name] * 1000:.2f} | {versus:.2f}x | {ratios[name]:.2f}x |")
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"\n- {verdict}: grep -l confined {ratio:.2f}x raw rg -l (<= {TARGET}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
