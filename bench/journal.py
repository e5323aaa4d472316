"""What the commit journal costs: two source trees timed side by side, interleaved.

    python bench/journal.py --before /path/to/old/src [--repeat 5] [--files 10000]

Each sample runs in a fresh process (`--one`), alternating the `--before` tree and this
checkout's `src` (the order flips every round, so load changes hit both alike):

- `apply_patch`: one hunk in each of 100 files of 200 lines, through the tool on a
  durable `LocalBackend` (the 100-file patch of bench/patch.py);
- `commit`: a change set of `--files` new files (10 KiB each, 100 per folder) committed
  by `LocalBackend.commit`, its new contents waiting in the temporary folder as a
  command's do (moved in where the disk is the same; the command itself is not run).

Prints each side's median and the ratio after/before (target: at most 1.1x), and the
load average before and after, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one_patch() -> float:
    sys.path.insert(0, str(HERE))
    from patch import build_patch, many_files, tool_call, write_workspace

    from langchain_fstools import FileToolkit, LocalBackend

    files, edits = many_files()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        root = Path(tmp)
        write_workspace(root, files)
        tools = {t.name: t for t in FileToolkit(LocalBackend(root), diagnostics=False).get_tools()}
        patch = build_patch(files, edits)
        started = time.perf_counter()
        tool_call(tools["apply_patch"], {"patch": patch})
        return time.perf_counter() - started


def one_commit(files: int) -> float:
    from langchain_fstools import LocalBackend
    from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet

    block = os.urandom(10 * 1024)
    with (
        tempfile.TemporaryDirectory(dir=Path.cwd()) as workspace,
        tempfile.TemporaryDirectory() as source,
    ):
        changes = []
        for folder in range(files // 100):
            changes.append(Change(f"/tree/p{folder}", ChangeKind.ADDED, "directory", 0o755))
            upper = Path(source, "upper", "tree", f"p{folder}")
            upper.mkdir(parents=True)
            for index in range(100):
                (upper / f"f{index}.js").write_bytes(block)
                path = f"/tree/p{folder}/f{index}.js"
                changes.append(Change(path, ChangeKind.ADDED, "file", 0o644, len(block)))
        changes.insert(0, Change("/tree", ChangeKind.ADDED, "directory", 0o755))
        os.sync()
        backend = LocalBackend(workspace)
        started = time.perf_counter()
        backend.commit(ChangeSet(tuple(changes), source))
        elapsed = time.perf_counter() - started
        assert sum(1 for _ in Path(workspace, "tree").rglob("*.js")) == files
        return elapsed


def sample(source: Path, what: str, files: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, __file__, "--one", what, "--files", str(files)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--one", choices=["patch", "commit"])
    options = parser.parse_args()
    if options.one is not None:
        seconds = one_patch() if options.one == "patch" else one_commit(options.files)
        print(seconds)
        return
    after = HERE.parent / "src"
    print(f"load average before: {os.getloadavg()}")
    for what in ("patch", "commit"):
        times: dict[str, list[float]] = {"before": [], "after": []}
        for run in range(options.repeat):
            sides = [("before", options.before), ("after", after)]
            for name, source in sides if run % 2 == 0 else sides[::-1]:
                times[name].append(sample(source, what, options.files))
        old, new = (statistics.median(times[name]) * 1000 for name in ("before", "after"))
        ratio = new / old
        verdict = "PASS" if ratio <= 1.1 else "FAIL"
        label = "apply_patch, 100 files" if what == "patch" else f"commit, {options.files:,} files"
        print(
            f"{label:24} before {old:9.1f} ms  after {new:9.1f} ms  {ratio:.2f}x  {verdict}"
            f" (target at most 1.1x; samples {[round(t * 1000) for t in times['after']]}"
            f" vs {[round(t * 1000) for t in times['before']]})"
        )
    print(f"load average after: {os.getloadavg()}")
    shutil.rmtree(HERE / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    main()
