"""What language-server diagnostics add to edit_file on a 3,000-line Python file.

    python bench/diagnostics.py [--edits 200] [--memory-edits 500] [--lines 3000]

A deterministic, code-like Python file of `--lines` lines is written to two temporary
`LocalBackend` workspaces; one toolkit has `diagnostics=Diagnostics()` (the `lsp`
extra's ruff server and ty server), the other none. Each reads its file, then their
edits alternate (one line changed somewhere, the code stays valid), so machine load
affects both alike; each `edit_file` call is timed around `tool.invoke`.

Reported: the cold start (the first edit with diagnostics, servers starting, minus the
first edit without), the median edit time in each mode once warm and the median of the
paired differences against the 100 ms target, the servers' resident memory (RSS, from
/proc) after the timed edits and after `--memory-edits` more, and its growth.

A benchmark, not a test: it exits non-zero only when an edit fails or reports a
diagnostic in the (valid) edited code.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.lsp import Diagnostics

TARGET_MS = 100.0
COLD_TARGET_S = 1.5
SEED = 51


def python_file(lines: int) -> str:
    """Functions of a plausible module, about 40 characters a line."""
    rng = random.Random(SEED)  # noqa: S311 - reproducible data, not secrets
    out = ['"""A generated module."""', "", "from typing import Any", ""]
    n = 0
    while len(out) < lines - 10:
        n += 1
        out += [
            "",
            f"def fn_{n}(items: list[Any], limit: int = {rng.randint(1, 99)}) -> dict[str, Any]:",
            f'    """Return the first {n} items, keyed by name."""',
            "    result: dict[str, Any] = {}",
            "    for index, item in enumerate(items):",
            "        if index >= limit:",
            "            break",
            f'        result[f"item_{{index}}"] = item * {rng.randint(2, 9)}',
            f"    value = {rng.randint(100, 999)}",
            '    return {"value": value, **result}',
        ]
    return "\n".join(out) + "\n"


def rss_mb(pids: list[int]) -> float:
    """The resident memory of `pids` and their children, in MiB."""
    total = 0
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        status = Path(f"/proc/{pid}/status")
        if not status.exists():
            continue
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if children.exists():
            todo += [int(child) for child in children.read_text().split()]
    return total / 1024


class Side:
    """One toolkit over its own copy of the file."""

    def __init__(self, root: Path, text: str, diagnostics: Diagnostics | None) -> None:
        """Write the file and read it once."""
        (root / "module.py").write_text(text)
        settings: dict[str, Any] = {"diagnostics": diagnostics or False}
        tools = {t.name: t for t in FileToolkit(LocalBackend(root), **settings).get_tools()}
        self.edit, self.text = tools["edit_file"], text
        tools["read_file"].invoke({"file_path": "/module.py", "limit": 100_000})

    def change(self, n: int) -> float:
        """Set `COUNTER` from n to n + 1 (the file's last line); milliseconds taken."""
        old, new = f"COUNTER = {n}", f"COUNTER = {n + 1}"
        start = time.perf_counter()
        result = self.edit.invoke({"file_path": "/module.py", "old_string": old, "new_string": new})
        elapsed = (time.perf_counter() - start) * 1000
        if not str(result).startswith("Edited") or "introduced" in str(result):
            sys.exit(f"edit failed or reported a diagnostic: {result}")
        return elapsed


def main() -> None:
    """Run the comparison and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--memory-edits", type=int, default=500)
    parser.add_argument("--lines", type=int, default=3000)
    args = parser.parse_args()
    text = python_file(args.lines) + "\nCOUNTER = 0\n"
    diagnostics = Diagnostics()
    with tempfile.TemporaryDirectory() as on_dir, tempfile.TemporaryDirectory() as off_dir:
        on = Side(Path(on_dir), text, diagnostics)
        off = Side(Path(off_dir), text, None)
        cold_on = on.change(0)
        cold_off = off.change(0)
        paired = []
        for n in range(1, args.edits + 1):
            with_ms, without_ms = on.change(n), off.change(n)
            paired.append((with_ms, without_ms))
        rss_before = rss_mb(diagnostics.server_pids())
        for n in range(args.edits + 1, args.edits + 1 + args.memory_edits):
            on.change(n)
        rss_after = rss_mb(diagnostics.server_pids())
        diagnostics.close()
    added = statistics.median(w - o for w, o in paired)
    cold = (cold_on - cold_off) / 1000
    names = [name for name, spec in diagnostics.servers.items() if spec.program() is not None]
    print(f"file: {args.lines} lines; servers: {', '.join(names)}")
    print(f"cold start (first edit, servers starting): +{cold:.2f} s", end=" ")
    print("PASS" if cold <= COLD_TARGET_S else "FAIL", f"(target {COLD_TARGET_S} s)")
    print(f"warm edit, diagnostics on:  median {statistics.median(w for w, _ in paired):.1f} ms")
    print(f"warm edit, diagnostics off: median {statistics.median(o for _, o in paired):.1f} ms")
    print(f"added (median of paired differences): {added:.1f} ms", end=" ")
    print("PASS" if added <= TARGET_MS else "FAIL", f"(target {TARGET_MS:g} ms)")
    print(f"servers' RSS: {rss_before:.0f} MiB after {args.edits + 1} edits,", end=" ")
    print(f"{rss_after:.0f} MiB after {args.memory_edits} more ({rss_after - rss_before:+.0f} MiB)")


if __name__ == "__main__":
    main()
