"""Branches: what working in a `BranchBackend` costs against working on its base.

    python bench/branches.py [--repeat 5]

All on `LocalBackend` in a temporary directory, through `FileToolkit` as an agent calls
the tools. Four measurements, each against its counterpart measured in the same run
(runs alternate between the two, so load hits both alike; medians of `--repeat`):

- reads: `read_file` of each of 100 files of 200 lines, in a branch that has changed
  another file vs on the base itself, each file on both in turn; and, below the tools,
  `read_bytes` of each file. Medians of single reads. Target (issue 39): at most 1.1x.
- merge: one one-line change in each of 100 files of 200 lines (the workload of
  `bench/patch.py`), made in a branch and committed by `branch.merge()`, vs the same
  changes as one `apply_patch` call on the base (syntax check on, its default, and
  off). Timed: the merge alone against the whole `apply_patch` call. Target: at most
  1.5x. Also a merge whose every file the base changed elsewhere meanwhile (100
  three-way merges), for information.
- branching: `BranchBackend(base)`, and it with a first read against the same read
  on the base, on a base of 10 files vs one of 10,000. Target: the same time (nothing
  is copied).
- grep: `grep` over a 2,000-file base from a branch that changed one file, vs on the
  base (ripgrep), for information: where the branch changed something below the
  searched folder, the search must see the branch too.

A benchmark, not a test: it checks only that each pair of ways made the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.branch import BranchBackend

if TYPE_CHECKING:
    from collections.abc import Callable

FILES = 100
LINES = 200


def python_line(n: int) -> str:
    return f"value_{n} = {n * 7}"


def write_workspace(root: Path, count: int = FILES, lines: int = LINES) -> list[str]:
    """`count` Python files of `lines` lines below `root`; their virtual paths."""
    shutil.rmtree(root, ignore_errors=True)
    paths = []
    text = "\n".join(python_line(n) for n in range(1, lines + 1)) + "\n"
    for k in range(count):
        target = root / "pkg" / f"sub_{k // 100:02d}" / f"mod_{k:05d}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        paths.append("/" + str(target.relative_to(root)))
    return paths


def tool_call(tools: dict[str, Any], name: str, **args: Any) -> str:
    message = tools[name].invoke({"type": "tool_call", "name": name, "id": "1", "args": args})
    if message.status != "success":
        raise RuntimeError(message.content)
    return str(message.content)


def tools_of(backend: Any, **settings: Any) -> dict[str, Any]:
    # commits as the peers make them: no language servers (on by default on local disk)
    toolkit = FileToolkit(backend, **{"diagnostics": False, **settings})
    return {tool.name: tool for tool in toolkit.get_tools()}


def alternate(
    ways: dict[str, Callable[[], float]], repeat: int
) -> dict[str, float]:  # median ms per way
    times: dict[str, list[float]] = {name: [] for name in ways}
    items = list(ways.items())
    for _, way in items:  # warm up: lazy imports, the tokenizer, the disk cache
        way()
    for run in range(repeat):
        for name, way in items if run % 2 == 0 else items[::-1]:
            times[name].append(way())
    return {name: statistics.median(measured) * 1000 for name, measured in times.items()}


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio <= target else "FAIL"


# ----- reads ---------------------------------------------------------------------------


def bench_reads(root: Path, repeat: int) -> None:
    """Each file read on the base and in the branch in turn; medians of single reads.

    Per-read medians, since on a shared machine a sum over many reads is swayed by the
    few that a neighbour's burst or a garbage collection happened to hit.
    """
    paths = write_workspace(root)
    base = LocalBackend(root)
    branch = BranchBackend(base)
    branch.write_bytes("/pkg/elsewhere.py", b"x = 1\n")
    backends = {"on the base": base, "in a branch": branch}
    times: dict[str, list[float]] = {}
    for run in range(repeat + 1):  # the first run warms up: imports, tokenizer, disk cache
        tools = {name: tools_of(backend) for name, backend in backends.items()}
        for index, path in enumerate(paths):
            order = list(backends) if (index + run) % 2 else list(backends)[::-1]
            answers = []
            for name in order:
                start = time.perf_counter()
                answers.append(tool_call(tools[name], "read_file", file_path=path))
                middle = time.perf_counter()
                backends[name].read_bytes(path)
                end = time.perf_counter()
                if run:
                    times.setdefault(f"read_file {name}", []).append(middle - start)
                    times.setdefault(f"read_bytes {name}", []).append(end - middle)
            assert answers[0] == answers[1], "a branch read other content"
    medians = {way: statistics.median(measured) * 1e6 for way, measured in times.items()}
    print(f"\nReads of {FILES} files of {LINES} lines, interleaved, {repeat} rounds\n")
    print("| way | median µs per read |")
    print("|---|---:|")
    for name, median in medians.items():
        print(f"| {name} | {median:,.1f} |")
    print()
    for what in ("read_file", "read_bytes"):
        ratio = medians[f"{what} in a branch"] / medians[f"{what} on the base"]
        print(f"- {verdict(ratio, 1.1)}: {what} in a branch {ratio:.2f}x on the base (target 1.1x)")


# ----- merge ---------------------------------------------------------------------------


def build_patch(paths: list[str]) -> str:
    out = ["*** Begin Patch"]
    for path in paths:
        out += [f"*** Update File: {path}", "@@"]
        out += [" " + python_line(n) for n in range(97, 100)]
        out += ["-" + python_line(100), "+" + python_line(100) + "  # changed"]
        out += [" " + python_line(n) for n in range(101, 104)]
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def changed(data: bytes, n: int) -> bytes:
    line = python_line(n).encode()
    return data.replace(b"\n" + line + b"\n", b"\n" + line + b"  # changed\n", 1)


def bench_merge(root: Path, repeat: int) -> None:
    results: dict[str, dict[str, bytes]] = {}

    def snapshot(name: str) -> None:
        found = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}
        results.setdefault(name, found)

    def by_patch(name: str, **settings: Any) -> Callable[[], float]:
        def way() -> float:
            paths = write_workspace(root)
            tools = tools_of(LocalBackend(root), **settings)
            patch = build_patch(paths)
            start = time.perf_counter()
            tool_call(tools, "apply_patch", patch=patch)
            elapsed = time.perf_counter() - start
            snapshot(name)
            return elapsed

        return way

    def by_merge(name: str, *, base_changed: bool) -> Callable[[], float]:
        def way() -> float:
            paths = write_workspace(root)
            base = LocalBackend(root)
            branch = BranchBackend(base)
            for path in paths:
                branch.write_bytes(path, changed(branch.read_bytes(path), 100))
            if base_changed:
                for path in paths:
                    base.write_bytes(path, changed(base.read_bytes(path), 10))
            start = time.perf_counter()
            result = branch.merge()
            elapsed = time.perf_counter() - start
            assert result.clean, result.conflicts
            assert len(result.merged) == FILES
            snapshot(name)
            return elapsed

        return way

    walls = alternate(
        {
            "apply_patch (1 call, syntax check on)": by_patch("patch"),
            'apply_patch (1 call, syntax_check="off")': by_patch("patch", syntax_check="off"),
            "branch.merge(), base unchanged": by_merge("merge", base_changed=False),
            "branch.merge(), base changed elsewhere": by_merge("merge3", base_changed=True),
        },
        repeat,
    )
    assert results["patch"] == results["merge"], "the merge made other bytes than the patch"
    print(f"\n1 one-line change in each of {FILES} files of {LINES} lines; median of {repeat}\n")
    print("| way | wall ms | / apply_patch |")
    print("|---|---:|---:|")
    reference = next(iter(walls.values()))
    for name, wall in walls.items():
        print(f"| {name} | {wall:,.1f} | {wall / reference:.2f}x |")
    ratio = walls["branch.merge(), base unchanged"] / reference
    print(f"\n- {verdict(ratio, 1.5)}: merge {ratio:.2f}x one apply_patch (target 1.5x)")


# ----- branching -----------------------------------------------------------------------


def bench_branching(root: Path, repeat: int) -> None:
    """`BranchBackend(base)` alone, and with a first read against the same read on the base."""
    sizes = {"10 files": 10, "10,000 files": 10_000}
    bases = {}
    for name, count in sizes.items():
        where = root / str(count)
        first = write_workspace(where, count, 5)[0]
        bases[name] = (LocalBackend(where), first)

    def timed(make: Callable[[], object]) -> Callable[[], float]:
        def way() -> float:
            start = time.perf_counter()
            for _ in range(100):
                make()
            return (time.perf_counter() - start) / 100

        return way

    ways: dict[str, Callable[[], float]] = {}
    for name, (base, first) in bases.items():
        ways[f"{name}: BranchBackend(base)"] = timed(lambda b=base: BranchBackend(b))
        ways[f"{name}: read on the base"] = timed(lambda b=base, p=first: b.read_bytes(p))
        ways[f"{name}: branch + first read"] = timed(
            lambda b=base, p=first: BranchBackend(b).read_bytes(p)
        )
    walls = alternate(ways, repeat)
    print(f"\nBranching; median of {repeat}, 100 each\n")
    print("| base: way | µs |")
    print("|---|---:|")
    for name, wall in walls.items():
        print(f"| {name} | {wall * 1000:,.2f} |")
    small, large = (walls[f"{name}: BranchBackend(base)"] for name in sizes)
    ratio = large / small
    print(f"\n- {verdict(ratio, 1.5)}: branching 10,000 files {ratio:.2f}x 10 files (constant)")
    for name in sizes:
        ratio = walls[f"{name}: branch + first read"] / walls[f"{name}: read on the base"]
        print(f"- {name}: a branch and its first read {ratio:.2f}x the read on the base")


# ----- grep ----------------------------------------------------------------------------


def bench_grep(root: Path, repeat: int) -> None:
    paths = write_workspace(root, 2_000, 50)
    base = LocalBackend(root)
    branch = BranchBackend(base)
    branch.write_bytes(paths[0], changed(base.read_bytes(paths[0]), 10))
    answers: dict[str, str] = {}

    def grep(backend: Any, name: str) -> Callable[[], float]:
        tools = tools_of(backend)

        def way() -> float:
            start = time.perf_counter()
            answer = tool_call(tools, "grep", pattern="# changed", output_mode="count")
            elapsed = time.perf_counter() - start
            answers.setdefault(name, answer)
            return elapsed

        return way

    walls = alternate(
        {"grep on the base": grep(base, "base"), "grep in the branch": grep(branch, "branch")},
        repeat,
    )
    assert paths[0] in answers["branch"], "the branch's change was not found"
    print(f"\ngrep over {len(paths):,} files, the branch changed one; median of {repeat}\n")
    print("| way | wall ms |")
    print("|---|---:|")
    for name, wall in walls.items():
        print(f"| {name} | {wall:,.1f} |")
    ratio = walls["grep in the branch"] / walls["grep on the base"]
    print(f"\n- grep in the branch {ratio:.2f}x on the base (for information)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as tmp:
        bench_reads(Path(tmp) / "reads", repeat)
        bench_merge(Path(tmp) / "merge", repeat)
        bench_branching(Path(tmp) / "branching", repeat)
        bench_grep(Path(tmp) / "grep", repeat)


if __name__ == "__main__":
    main()
