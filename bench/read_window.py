"""Read 100 lines near the end of a large text file: ours vs deepagents vs `sed -n`.

    python bench/read_window.py [--size-mb 1024] [--data-dir bench/.data] [--repeat 3]

Each measurement runs in a fresh process, so peak memory (ru_maxrss) above that
process's own baseline is attributable to the read. The page cache is warmed once for
everyone. Reported: median wall time and peak RSS growth, and ratios to sed.

Targets (issue 2): our peak memory stays under 64 MB above baseline whatever the file
size; a repeated window read of the unchanged file takes under 20 ms; the first read is
within 2x of sed. This is a benchmark, not a test: it asserts correctness only.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WINDOW = 100
WORDS = [
    "def",
    "class",
    "return",
    "self",
    "value",
    "index",
    "result",
    "items",
    "config",
    "path",
    "data",
    "node",
    "tree",
]


def generate(path: Path, size_mb: int) -> int:
    """Write a deterministic code-like text file of about `size_mb` MiB; return its lines."""
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        saved = json.loads(meta.read_text())
        if saved["size_mb"] == size_mb:
            return int(saved["lines"])
    rng = random.Random(42)  # noqa: S311 - reproducible data
    target = size_mb * 1024 * 1024
    lines = 0
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            block = []
            for _ in range(10_000):
                lines += 1
                indent = " " * (4 * rng.randint(0, 3))
                words = " ".join(rng.choices(WORDS, k=rng.randint(2, 12)))
                block.append(f"{indent}{words} = {lines}  # line {lines}\n")
            chunk = "".join(block)
            out.write(chunk)
            written += len(chunk)
    meta.write_text(json.dumps({"size_mb": size_mb, "lines": lines}))
    return lines


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(mode: str, file: Path, first: int) -> dict[str, Any]:
    """Runs inside a fresh interpreter: one kind of read, timed and measured."""
    if mode == "sed":
        start = time.perf_counter()
        out = subprocess.run(
            ["sed", "-n", f"{first},{first + WINDOW - 1}p;{first + WINDOW}q", str(file)],
            capture_output=True,
            check=True,
        ).stdout.decode()
        wall = time.perf_counter() - start
        sed_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return {"wall": wall, "peak_mb": sed_peak / 1024, "first_line": out.split("\n", 1)[0]}
    if mode == "deepagents":
        from deepagents.backends.filesystem import FilesystemBackend

        backend = FilesystemBackend(root_dir=str(file.parent), virtual_mode=True)
        baseline = peak_kib()
        start = time.perf_counter()
        result = backend.read(f"/{file.name}", offset=first - 1, limit=WINDOW)
        wall = time.perf_counter() - start
        if result.error or result.file_data is None:
            return {"wall": wall, "peak_mb": (peak_kib() - baseline) / 1024, "error": result.error}
        text = str(result.file_data["content"])
        return {
            "wall": wall,
            "peak_mb": (peak_kib() - baseline) / 1024,
            "first_line": text.split("\n", 1)[0],
        }
    from langchain_fstools import FileToolkit, LocalBackend

    (read,) = FileToolkit(LocalBackend(file.parent), tools=["read_file"]).get_tools()
    args = {"file_path": f"/{file.name}", "offset": first, "limit": WINDOW}
    baseline = peak_kib()
    start = time.perf_counter()
    text = read.invoke(args)
    wall = time.perf_counter() - start
    peak = (peak_kib() - baseline) / 1024
    stub_start = time.perf_counter()
    stub = read.invoke(args)
    stub_wall = time.perf_counter() - stub_start
    other_start = time.perf_counter()
    other = read.invoke({**args, "offset": first - 50})
    other_wall = time.perf_counter() - other_start
    return {
        "wall": wall,
        "peak_mb": peak,
        "first_line": text.split("\n", 1)[0].split("→", 1)[1],
        "stub_wall": stub_wall,
        "stub_ok": stub.startswith("File unchanged"),
        "other_wall": other_wall,
        "other_first": other.split("\n", 1)[0].split("→", 1)[1],
        "peak_after_all_mb": (peak_kib() - baseline) / 1024,
    }


def measure(mode: str, file: Path, first: int, repeat: int) -> list[dict[str, Any]]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, str(file), str(first)],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            runs.append({"wall": float("nan"), "peak_mb": float("nan"), "error": out.stderr[-300:]})
        else:
            runs.append(json.loads(out.stdout))
    return runs


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / ".data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "FILE", "FIRST"))
    options = parser.parse_args()
    if options.child:
        mode, file, first = options.child
        print(json.dumps(child(mode, Path(file), int(first))))
        return 0

    options.data_dir.mkdir(parents=True, exist_ok=True)
    file = options.data_dir / "big.txt"
    print(f"generating {options.size_mb} MiB test file ...", flush=True)
    total = generate(file, options.size_mb)
    first = total - 200
    subprocess.run(["cat", str(file)], stdout=subprocess.DEVNULL, check=True)

    sed = measure("sed", file, first, options.repeat)
    ours = measure("ours", file, first, options.repeat)
    deep = measure("deepagents", file, first, options.repeat)

    expected = sed[0]["first_line"]
    assert expected.endswith(f"# line {first}"), expected
    for run in ours:
        assert run["first_line"] == expected, run
        assert run["stub_ok"], run
        assert run["other_first"].endswith(f"# line {first - 50}"), run
    sed_wall = median(sed, "wall")
    rows = [
        ("sed -n", sed_wall, median(sed, "peak_mb"), "absolute peak of sed"),
        ("ours: first read", median(ours, "wall"), median(ours, "peak_mb"), ""),
        (
            "ours: same window again",
            median(ours, "stub_wall"),
            median(ours, "peak_after_all_mb"),
            "unchanged stub",
        ),
        (
            "ours: window 50 lines earlier",
            median(ours, "other_wall"),
            median(ours, "peak_after_all_mb"),
            "line index reused",
        ),
    ]
    deep_errors = [run.get("error") for run in deep if run.get("error")]
    if deep_errors:
        rows.append(
            (
                "deepagents FilesystemBackend",
                float("nan"),
                float("nan"),
                f"failed: {deep_errors[0]!s:.80}",
            )
        )
    else:
        assert deep[0]["first_line"] == expected, deep[0]
        rows.append(
            ("deepagents FilesystemBackend", median(deep, "wall"), median(deep, "peak_mb"), "")
        )

    print(
        f"\n{file.stat().st_size / 2**20:,.0f} MiB, {total:,} lines; window = lines {first}-{first + WINDOW - 1}; median of {options.repeat}\n"
    )
    print("| read | wall ms | peak RSS above baseline MB | wall / sed | note |")
    print("|---|---:|---:|---:|---|")
    for name, wall, peak, note in rows:
        print(f"| {name} | {wall * 1000:,.1f} | {peak:,.1f} | {wall / sed_wall:,.2f}x | {note} |")
    print()
    ours_first, ours_peak = median(ours, "wall"), median(ours, "peak_after_all_mb")
    repeat_worst = max(median(ours, "stub_wall"), median(ours, "other_wall"))
    checks = [
        (f"peak memory {ours_peak:.1f} MB above baseline < 64 MB", ours_peak < 64),
        (f"repeated window read {repeat_worst * 1000:.1f} ms < 20 ms", repeat_worst < 0.020),
        (f"first read {ours_first / sed_wall:.2f}x sed <= 2x", ours_first <= 2 * sed_wall),
    ]
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
