"""What running commands on a copy-on-write view costs, against writing the workspace in place.

    python bench/command_changes.py [--repeat 21] [--files 10000] [--megabytes 100]

Three rows, each timed side by side in one run (medians, interleaved):

- `execute("true")`: `LocalBackend(execute=True)` (copy-on-write, the default) against
  `Sandbox(workspace="direct")`; target: at most 3 ms more.
- a command that changes one file: the same two ways; target: review and commit at
  most 5 ms more.
- a command that creates `--files` files (`--megabytes` in all, an `npm install`-sized
  tree) by copying them from a folder outside the workspace: the change set's review
  and commit (`execute_changes` is timed apart from `commit`) against `cp -a` of the
  same tree followed by `sync` on the same disk (our writes are durable by default);
  target: at most 1.5x. The resident memory the commit added is printed too.

A benchmark, not a test: it checks only that the trees committed are complete.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.sandbox import Sandbox


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def side_by_side(repeat: int, command: str) -> tuple[float, float]:
    """Median ms of `command` on a copy-on-write view and in place (interleaved)."""
    viewed = LocalBackend(tempfile.mkdtemp(), execute=True)
    direct = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=Sandbox(workspace="direct"))
    for backend in (viewed, direct):  # the one-time sandbox probe
        backend.execute("true", timeout=30, output_limit=1000)
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        for backend, samples in ((viewed, ours), (direct, theirs)):
            started = time.perf_counter()
            result = backend.execute(command, timeout=30, output_limit=1000)
            samples.append(time.perf_counter() - started)
            assert result.exit_code == 0, result.output
    return median_ms(ours), median_ms(theirs)


def source_tree(files: int, megabytes: int) -> Path:
    """A tree of `files` files, `megabytes` in all, 100 files a folder, outside `/tmp`.

    Made in `/var/tmp`, which commands see (their `/tmp` is private).
    """
    source = Path(tempfile.mkdtemp(dir="/var/tmp")) / "tree"
    size = megabytes * 1024 * 1024 // files
    block = os.urandom(size)
    for index in range(files):
        folder = source / f"pkg{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.js").write_bytes(block[index % 64 :] + block[: index % 64])
    return source


def big_tree(files: int, megabytes: int) -> None:
    source = source_tree(files, megabytes)
    floor_target = Path(tempfile.mkdtemp(dir=Path.cwd())) / "tree"
    started = time.perf_counter()
    subprocess.run(["cp", "-a", str(source), str(floor_target)], check=True)
    os.sync()
    floor = time.perf_counter() - started

    backend = LocalBackend(tempfile.mkdtemp(dir=Path.cwd()), execute=True)
    started = time.perf_counter()
    result = backend.execute_changes(f"cp -a {source} tree", timeout=600, output_limit=1000)
    ran = time.perf_counter() - started
    assert result.changes is not None, result.output
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    backend.commit(result.changes)
    committed = time.perf_counter() - started
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    result.changes.discard()
    made = sum(1 for path in Path(backend.host_path("/tree")).rglob("*") if path.is_file())
    assert made == files, made
    ratio = committed / floor
    print(f"\n{files:,} files, {megabytes} MB, copied in by a command")
    print(f"  the command on its view (cp -a into the upper layer, then the scan): {ran:8.2f} s")
    print(
        f"  review and commit:                                                 {committed:8.2f} s"
    )
    print(f"  floor: cp -a of the tree, then sync:                               {floor:8.2f} s")
    verdict = "PASS" if ratio <= 1.5 else "FAIL"
    print(f"  commit / floor: {ratio:.2f}x  {verdict} (target at most 1.5x)")
    print(f"  peak resident memory grew by {grown / 1024:.1f} MB during the commit")
    shutil.rmtree(source.parent)
    shutil.rmtree(floor_target.parent)
    shutil.rmtree(backend.host_path("/"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--megabytes", type=int, default=100)
    options = parser.parse_args()
    rows = [("execute('true')", "true", 3.0), ("one file changed", "echo x >> f.txt", 5.0)]
    for name, command, target in rows:
        ours, theirs = side_by_side(options.repeat, command)
        verdict = "PASS" if ours - theirs <= target else "FAIL"
        print(
            f"{name:18} copy-on-write {ours:7.2f} ms  direct {theirs:7.2f} ms"
            f"  +{ours - theirs:.2f} ms  {verdict} (target at most +{target:g} ms)"
        )
    big_tree(options.files, options.megabytes)


if __name__ == "__main__":
    main()
