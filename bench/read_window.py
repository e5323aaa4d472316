"""Read 100 lines near the end of a large text file: ours vs deepagents vs `sed -n`.

    python bench/read_window.py [--size-mb 1024] [--data-dir bench/.data] [--repeat 3]
                                [--profile]

The test file is generated once (deterministic, code-like lines of varied length,
about 60 bytes on average) and reused while it has the recorded size; a sidecar JSON
holds its line count. The window is the 100 lines starting 200 lines before the end.

Every measurement runs in a fresh interpreter, so peak memory is attributable: the child
imports what it needs, records its own `ru_maxrss` as the baseline right before the
read, reads, and reports wall time and peak RSS growth as one JSON line. sed is timed
around `subprocess.run` in a child, and its absolute peak RSS comes from
`RUSAGE_CHILDREN`. The page cache is warmed once (`cat file > /dev/null`) for everyone.
Each measurement is repeated (default 3 times) and the median is reported.

For ours, one child times the first read (cold line index), then the same call again
and a window 50 lines earlier: the last two are the "repeated window read" figures, both
real reads through the cached line index (a toolkit outside a graph sees no
conversation, so it never answers with the unchanged-range stub).

Targets (issue): our peak memory stays under 64 MB above baseline whatever the file
size; a repeated window read of the unchanged file takes under 20 ms; the first read is
within 2x of sed. This is a benchmark, not a test: timings are reported, never asserted.
The exit status is 1 only when a read returns the wrong lines (or ours fails).
`--profile` also prints a cProfile of our first read.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

WINDOW = 100
"""Lines per window."""
FROM_END = 200
"""The window starts this many lines before the end of the file."""
EARLIER = 50
"""The second window of ours starts this many lines before the first."""
FILE_NAME = "big.txt"
GENERATOR_VERSION = 3
"""Bump when the generated content changes, so stale files are regenerated."""
SEED = 20240611
POOL_SIZE = 8192
BLOCK_LINES = 16_384
MIB = 1024 * 1024
ROW = re.compile(r"^(\d+)\t(.*)$")

Window = list[str]
Result = dict[str, Any]

# --------------------------------------------------------------------------- data

# fmt: off
_NAMES = (
    "value", "index", "result", "items", "config", "path", "data", "node", "tree", "buffer",
    "count", "offset", "limit", "request", "response", "session", "user_id", "payload",
    "handler", "context", "token", "cache", "parent", "children", "options", "record", "window",
    "chunk", "header", "encoding", "position", "rows",
)
_FUNCS = (
    "get", "load", "parse", "build", "render", "update", "resolve", "fetch", "compute",
    "validate", "normalize", "flush", "encode", "decode", "split", "merge", "apply", "collect",
)
_TYPES = (
    "str", "int", "bytes", "list[str]", "dict[str, Any]", "Path", "Node | None", "bool",
)
_CLASSES = (
    "Reader", "Window", "Session", "Handler", "Config", "Record", "TreeNode", "Cache",
)
_MODULES = (
    "core", "utils", "backends", "formats", "tools", "models", "io", "parser",
)
_WORDS = (
    "the", "a", "of", "to", "when", "this", "is", "not", "we", "if", "read", "line", "file",
    "window", "cache", "index", "returns", "value", "must", "be", "kept", "for", "each", "new",
    "old", "first", "last", "next",
)
# fmt: on


def _code_line(rng: random.Random) -> str:  # noqa: C901, PLR0911, PLR0912 - a branch per kind
    """One line of plausible Python source."""
    indent = " " * 4 * rng.choices((0, 1, 2, 3, 4), weights=(8, 30, 32, 20, 10))[0]
    a, b, c = rng.sample(_NAMES, 3)
    f, t = rng.choice(_FUNCS), rng.choice(_TYPES)
    kind = rng.choices(
        (
            "blank",
            "comment",
            "def",
            "assign",
            "if",
            "return",
            "log",
            "for",
            "dict",
            "class",
            "import",
            "call",
            "raise",
            "doc",
        ),
        weights=(9, 8, 6, 20, 10, 7, 6, 6, 4, 1, 2, 8, 3, 3),
    )[0]
    words = " ".join(rng.choices(_WORDS, k=rng.randint(4, 15)))
    if kind == "blank":
        return ""
    if kind == "comment":
        return f"{indent}# {words}"
    if kind == "def":
        return f"{indent}def {f}_{a}(self, {b}: {t}, {c}: int = {rng.randint(0, 99)}) -> {t}:"
    if kind == "assign":
        extra = f", {rng.choice(_NAMES)}={rng.choice(_NAMES)}" * rng.randint(0, 2)
        return (
            f"{indent}{a} = self.{f}_{b}({c}, {rng.choice(_NAMES)}={rng.randint(0, 4096)}{extra})"
        )
    if kind == "if":
        return f"{indent}if {a} is not None and len({b}) > {rng.randint(0, 512)}:"
    if kind == "return":
        return f"{indent}return {a}"
    if kind == "log":
        return f'{indent}logger.debug("{words}: %s", {a})'
    if kind == "for":
        return f"{indent}for {a} in self.{b}.{f}_all({c}):"
    if kind == "dict":
        pairs = ", ".join(
            f'"{rng.choice(_NAMES)}": {rng.randint(0, 10**6)}' for _ in range(rng.randint(3, 9))
        )
        return f"{indent}{a} = {{{pairs}}}"
    if kind == "class":
        return f"class {rng.choice(_CLASSES)}{rng.randint(0, 99)}({rng.choice(_CLASSES)}):"
    if kind == "call":
        return f"{indent}{a}.{f}_{b}({c}, key={rng.choice(_NAMES)!r}, default=None, strict=True)"
    if kind == "raise":
        return f'{indent}raise ValueError(f"{words}: {{{a}!r}}")'
    if kind == "import":
        return f"from pkg.{rng.choice(_MODULES)} import {rng.choice(_CLASSES)}, {f}_{a}"
    return f'{indent}"""{words.capitalize()}."""'


def generate(file: Path, size_mb: int) -> int:
    """Write the test file (about `size_mb` MiB) unless it exists; return its line count.

    The sidecar JSON (`big.json`) records the generator version, size and line count; the
    file is reused only when all match. A partly written file is never reused: data goes
    to a temporary name and is renamed into place before the sidecar is written.
    """
    sidecar = file.with_suffix(".json")
    if file.exists() and sidecar.exists():
        meta = json.loads(sidecar.read_text())
        if (
            meta.get("generator") == GENERATOR_VERSION
            and meta.get("size_mb") == size_mb
            and meta.get("bytes") == file.stat().st_size
        ):
            return int(meta["lines"])
    print(f"generating {size_mb} MiB test file {file} ...", flush=True)
    rng = random.Random(SEED)  # noqa: S311 - reproducible test data, not security
    pool = [_code_line(rng) + "\n" for _ in range(POOL_SIZE)]
    target, written, lines = size_mb * MIB, 0, 0
    partial = file.with_name(file.name + ".partial")
    with partial.open("wb") as out:
        while written < target:
            block = rng.choices(pool, k=BLOCK_LINES)
            data = "".join(block).encode("ascii")
            if written + len(data) > target:  # end on the line that reaches the target
                keep, size = 0, 0
                while written + size < target:
                    size += len(block[keep])
                    keep += 1
                data = data[:size]
                block = block[:keep]
            out.write(data)
            written += len(data)
            lines += len(block)
    partial.replace(file)
    sidecar.write_text(
        json.dumps(
            {"generator": GENERATOR_VERSION, "size_mb": size_mb, "bytes": written, "lines": lines}
        )
    )
    print(f"  {written:,} bytes, {lines:,} lines, {written / lines:.1f} bytes/line", flush=True)
    return lines


def reference_window(file: Path, total: int, first: int, count: int) -> Window:
    """Lines `first`..`first + count - 1`, taken from the file's tail in plain Python."""
    wanted = total - first + 2  # lines from `first` to the end, plus one partial line
    size = file.stat().st_size
    with file.open("rb") as handle:
        tail_bytes = min(size, 64 * 1024)
        while True:
            handle.seek(size - tail_bytes)
            tail = handle.read().split(b"\n")
            if tail[-1] == b"":
                tail.pop()
            if len(tail) >= wanted or tail_bytes == size:
                break
            tail_bytes = min(size, tail_bytes * 4)
    start = len(tail) - (total - first + 1)
    return [line.decode() for line in tail[start : start + count]]


# --------------------------------------------------------------------------- children


def peak_kib() -> int:
    """This process's peak resident set size so far (KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def numbered_rows(text: str, first: int) -> Window:
    """The text of the numbered rows in `text`, checking they are numbered from `first`."""
    lines: Window = []
    for row in text.split("\n"):
        match = ROW.match(row)
        if match is None:
            break
        if int(match.group(1)) != first + len(lines):
            raise ValueError(f"row numbered {match.group(1)}, expected {first + len(lines)}")
        lines.append(match.group(2))
    return lines


def child_sed(file: Path, first: int) -> Result:
    last = first + WINDOW - 1
    command = ["sed", "-n", f"{first},{last}p;{last}q", str(file)]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, check=True).stdout
    wall = time.perf_counter() - start
    # On Linux a child's ru_maxrss starts at its parent's RSS at (v)fork time, so
    # RUSAGE_CHILDREN reports at least this interpreter's own peak, not sed's.
    children_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result: Result = {
        "wall": wall,
        "peak_mb": children_peak / 1024,
        "peak_source": "RUSAGE_CHILDREN (upper bound: includes the spawning interpreter)",
        "children_peak_mb": children_peak / 1024,
        "spawner_peak_mb": peak_kib() / 1024,
        "lines": out.decode().split("\n")[:-1],
    }
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():  # an untimed second run: sed's own peak, via a tiny parent
        timed = subprocess.run(
            [str(gnu_time), "-f", "%M", *command], capture_output=True, text=True, check=False
        )
        tail = timed.stderr.strip().splitlines()[-1:] or [""]
        if timed.returncode == 0 and tail[0].isdigit():
            result["peak_mb"] = int(tail[0]) / 1024
            result["peak_source"] = "GNU time %M"
    return result


def child_ours(file: Path, first: int) -> Result:
    from langchain_fstools import FileToolkit, LocalBackend

    tool = next(
        t for t in FileToolkit(LocalBackend(file.parent)).get_tools() if t.name == "read_file"
    )
    args = {"file_path": f"/{file.name}", "offset": first, "limit": WINDOW}
    baseline = peak_kib()
    start = time.perf_counter()
    text = str(tool.invoke(args))
    wall = time.perf_counter() - start
    first_peak = peak_kib()

    start = time.perf_counter()
    stub = str(tool.invoke(args))
    stub_wall = time.perf_counter() - start
    stub_peak = peak_kib()

    other_args = {**args, "offset": first - EARLIER}
    start = time.perf_counter()
    other = str(tool.invoke(other_args))
    other_wall = time.perf_counter() - start
    other_peak = peak_kib()
    return {
        "wall": wall,
        "peak_mb": (first_peak - baseline) / 1024,
        "baseline_mb": baseline / 1024,
        "lines": numbered_rows(text, first),
        "stub_wall": stub_wall,
        "stub_peak_mb": (stub_peak - baseline) / 1024,
        "again_lines": numbered_rows(stub, first),
        "other_wall": other_wall,
        "other_peak_mb": (other_peak - baseline) / 1024,
        "other_lines": numbered_rows(other, first - EARLIER),
    }


def child_deepagents(file: Path, first: int) -> Result:
    from deepagents.backends.filesystem import FilesystemBackend

    backend = FilesystemBackend(root_dir=file.parent, virtual_mode=True)
    baseline = peak_kib()
    start = time.perf_counter()
    try:
        # deepagents' offset is 0-based: line `first` is at offset `first - 1`.
        result = backend.read(f"/{file.name}", offset=first - 1, limit=WINDOW)
    except Exception as exc:  # noqa: BLE001 - a peer's failure is a result to report
        error: str | None = f"{type(exc).__name__}: {exc}"
        content = None
    else:
        error = result.error
        content = None if result.file_data is None else result.file_data["content"]
    wall = time.perf_counter() - start
    peak = (peak_kib() - baseline) / 1024
    if error is not None or content is None:
        return {"wall": wall, "peak_mb": peak, "error": error or "no content returned"}
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {"wall": wall, "peak_mb": peak, "lines": lines}


def child_profile(file: Path, first: int) -> Result:
    from langchain_fstools import FileToolkit, LocalBackend

    tool = next(
        t for t in FileToolkit(LocalBackend(file.parent)).get_tools() if t.name == "read_file"
    )
    args = {"file_path": f"/{file.name}", "offset": first, "limit": WINDOW}
    profiler = cProfile.Profile()
    profiler.enable()
    tool.invoke(args)
    profiler.disable()
    report = io.StringIO()
    stats = pstats.Stats(profiler, stream=report)
    stats.sort_stats("tottime").print_stats(12)
    stats.sort_stats("cumulative").print_stats(18)
    return {"profile": report.getvalue()}


CHILDREN: dict[str, Callable[[Path, int], Result]] = {
    "sed": child_sed,
    "ours": child_ours,
    "deepagents": child_deepagents,
    "profile": child_profile,
}


def run_child(mode: str, file: Path, first: int) -> Result:
    """Run one measurement in a fresh interpreter and return its JSON result."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(file), str(first)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        return {"wall": math.nan, "peak_mb": math.nan, "error": f"child failed: {tail}"}
    result: Result = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- report


@dataclass
class Row:
    name: str
    wall: float
    peak_mb: float
    note: str = ""


def median(runs: list[Result], key: str) -> float:
    values = [run[key] for run in runs if key in run and not math.isnan(run[key])]
    return statistics.median(values) if values else math.nan


def ratio_text(ratio: float) -> str:
    """`1.03x`, or `0.0009x` for ratios too small for two decimals."""
    return f"{ratio:,.2f}x" if math.isnan(ratio) or ratio >= 0.1 else f"{ratio:.4f}x"


def check_lines(label: str, got: Window | None, expected: Window, problems: list[str]) -> None:
    if got != expected:
        shown = "missing" if got is None else f"{len(got)} lines, first {got[:1]!r}"
        problems.append(f"{label}: wrong window ({shown}; expected first {expected[:1]!r})")


def main() -> int:  # noqa: C901, PLR0912, PLR0915 - a linear script
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="test file size (MiB)")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / ".data")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement")
    parser.add_argument("--profile", action="store_true", help="cProfile our first read")
    parser.add_argument(
        "--child", nargs=3, metavar=("MODE", "FILE", "FIRST"), help=argparse.SUPPRESS
    )
    options = parser.parse_args()
    if options.child:
        mode, file_name, first_line = options.child
        print(json.dumps(CHILDREN[mode](Path(file_name), int(first_line))))
        return 0

    data_dir: Path = options.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    file = data_dir / FILE_NAME
    total = generate(file, options.size_mb)
    first = total - FROM_END + 1
    expected = reference_window(file, total, first, WINDOW)
    expected_other = reference_window(file, total, first - EARLIER, WINDOW)
    subprocess.run(["cat", str(file)], stdout=subprocess.DEVNULL, check=True)  # warm cache

    modes = ("sed", "ours", "deepagents")
    runs: dict[str, list[Result]] = {mode: [] for mode in modes}
    for _ in range(options.repeat):
        for mode in modes:
            runs[mode].append(run_child(mode, file, first))

    problems: list[str] = []
    for n, run in enumerate(runs["sed"]):
        check_lines(f"sed run {n + 1}", run.get("lines"), expected, problems)
    for n, run in enumerate(runs["ours"]):
        if "error" in run:
            problems.append(f"ours run {n + 1}: {run['error']}")
            continue
        check_lines(f"ours first read, run {n + 1}", run["lines"], expected, problems)
        check_lines(f"ours other window, run {n + 1}", run["other_lines"], expected_other, problems)
        check_lines(f"ours same window again, run {n + 1}", run["again_lines"], expected, problems)
    deep_errors = [str(run["error"]) for run in runs["deepagents"] if "error" in run]
    for n, run in enumerate(runs["deepagents"]):
        if "error" not in run:
            check_lines(f"deepagents run {n + 1}", run["lines"], expected, problems)

    sed, ours, deep = runs["sed"], runs["ours"], runs["deepagents"]
    sed_wall = median(sed, "wall")
    last = first + WINDOW - 1
    rows = [
        Row(
            f"`sed -n '{first},{last}p;{last}q'`",
            sed_wall,
            median(sed, "peak_mb"),
            f"absolute peak of sed ({sed[0].get('peak_source', 'n/a')})",
        ),
        Row("ours: first read", median(ours, "wall"), median(ours, "peak_mb"), "cold line index"),
        Row(
            "ours: same window again",
            median(ours, "stub_wall"),
            median(ours, "stub_peak_mb"),
            "re-read via cached line index",
        ),
        Row(
            f"ours: window {EARLIER} lines earlier",
            median(ours, "other_wall"),
            median(ours, "other_peak_mb"),
            "re-read via cached line index",
        ),
    ]
    if deep_errors:
        note = f"failed {len(deep_errors)}/{len(deep)}: {deep_errors[0][:120]}"
        rows.append(
            Row("deepagents FilesystemBackend", median(deep, "wall"), median(deep, "peak_mb"), note)
        )
    else:
        rows.append(
            Row(
                "deepagents FilesystemBackend",
                median(deep, "wall"),
                median(deep, "peak_mb"),
                "reads the whole file",
            )
        )

    size = file.stat().st_size
    print(
        f"\n{size / MIB:,.0f} MiB, {total:,} lines ({size / total:.1f} bytes/line); window = "
        f"lines {first:,}-{first + WINDOW - 1:,}; median of {options.repeat} runs; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n"
    )
    print("| read | wall ms | peak RSS above baseline MB | wall / sed | note |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row.name} | {row.wall * 1000:,.1f} | {row.peak_mb:,.1f} | "
            f"{ratio_text(row.wall / sed_wall)} | {row.note} |"
        )
    print()
    ours_peak = max(median(ours, key) for key in ("peak_mb", "stub_peak_mb", "other_peak_mb"))
    stub_ms, other_ms = median(ours, "stub_wall") * 1000, median(ours, "other_wall") * 1000
    ratio = median(ours, "wall") / sed_wall
    checks = [
        (f"peak memory {ours_peak:.1f} MB above baseline (target < 64 MB)", ours_peak < 64),
        (
            (
                f"repeated window read: same window {stub_ms:.1f} ms, "
                f"other window {other_ms:.1f} ms (target < 20 ms)"
            ),
            max(stub_ms, other_ms) < 20,
        ),
        (f"first read {ratio:.2f}x sed (target <= 2x)", ratio <= 2),
    ]
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")

    if options.profile:
        print("\ncProfile of our first read (fresh process, cold line index):\n")
        print(run_child("profile", file, first).get("profile", "profile failed"))

    if problems:
        print("\nCORRECTNESS FAILURES:")
        for problem in problems:
            print(f"- {problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
