"""What the syntax check adds to edit_file on a 2,000-line file: "report" vs "off".

    python bench/syntax_check.py [--edits 150] [--cold 9] [--lines 2000]

For each language (Python, TypeScript) a deterministic, code-like file of `--lines`
lines is written to a temporary `LocalBackend` workspace, read once, then edited
`--edits` times, each edit changing one line somewhere in the file (a literal, so the
code stays valid). Two toolkits work on two copies of the file, one with
`syntax_check="report"` and one with `"off"`, and their edits alternate, so machine
load affects both alike. Each `edit_file` call is timed around `tool.invoke`.

Reported per language: the median edit time in each mode, the median of the paired
differences (edit n with the check minus edit n without: what the check adds; pairing
cancels most of the noise of the disk's fsync), and PASS/FAIL against the 5 ms target. The first edit of a file is shown
apart ("first edit"): the check keeps the parse tree of each text it checks and parses
the next version incrementally from it; `read_file` parses a file it reads in the
background, during the model's turn (`MODEL_TURN` here), so the first change reparses
incrementally too. The first-edit figure is the median over `--cold` fresh toolkits,
each reading the file and then editing it; both figures must meet the target.

A benchmark, not a test: it exits non-zero only when an edit fails or the check
reports an error in the (valid) edited code.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.formats import syntax
from langchain_fstools.tools import writing

TARGET_MS = 5.0
MODEL_TURN = 0.2
"""Seconds between the read and the first edit: a model turn, which takes longer."""
SEED = 18
CHECK_MS: list[float] = []
"""Time spent in the check itself, per edit with the check on."""


def timed_syntax_report(*args: Any, **kwargs: Any) -> Any:
    """`writing.syntax_report`, timed into `CHECK_MS`."""
    start = time.perf_counter()
    try:
        return REAL_SYNTAX_REPORT(*args, **kwargs)
    finally:
        if args[0].context.settings.syntax_check != "off":
            CHECK_MS.append((time.perf_counter() - start) * 1000)


REAL_SYNTAX_REPORT = writing.syntax_report


def python_file(lines: int) -> str:
    """Functions and classes of a plausible module, about 40 characters a line."""
    rng = random.Random(SEED)  # noqa: S311 - reproducible data, not secrets
    out = ['"""A generated module."""', "", "import os", "from typing import Any", ""]
    n = 0
    while len(out) < lines - 12:
        n += 1
        name = rng.choice(["load", "parse", "build", "merge", "render", "fetch"]) + f"_{n}"
        out += [
            "",
            f"def {name}(items: list[Any], limit: int = {rng.randint(1, 99)}) -> dict[str, Any]:",
            f'    """Return the first {n} items, keyed by name."""',
            "    result: dict[str, Any] = {}",
            "    for index, item in enumerate(items):",
            "        if index >= limit:",
            "            break",
            f'        result[f"item_{{index}}"] = item * {rng.randint(2, 9)}  # scaled',
            f"    value = {rng.randint(100, 999)}",
            '    return {"value": value, **result}',
        ]
    out += ["", "", "class Config:", '    """Settings."""', "", "    value = 1", ""]
    out += ["    def path(self) -> str:", "        return os.getcwd()"] * ((lines - len(out)) // 2)
    return "\n".join((out + [""] * lines)[:lines]) + "\n"


def typescript_file(lines: int) -> str:
    """Functions and interfaces of a plausible module, about 40 characters a line."""
    rng = random.Random(SEED)  # noqa: S311 - reproducible data, not secrets
    out = ["// A generated module.", "import { readFile } from 'fs';", ""]
    n = 0
    block = 11
    while len(out) + block <= lines:
        n += 1
        out += [
            f"interface Item{n} {{ name: string; size: number }}",
            "",
            f"export function load{n}(items: Item{n}[], limit = {rng.randint(1, 99)}): number {{",
            "  let total = 0;",
            "  for (const item of items.slice(0, limit)) {",
            f"    total += item.size * {rng.randint(2, 9)}; // scaled",
            "  }",
            f"  const value = {rng.randint(100, 999)};",
            "  return total + value;",
            "}",
            "",
        ]
    out += [f"// padding {k}" for k in range(lines - len(out))]
    return "\n".join((out + [""] * lines)[:lines]) + "\n"


def edit_sites(text: str, marker: str, count: int) -> list[tuple[str, str]]:
    """`count` edits (old line, new line), each changing the number on a `marker` line."""
    lines = sorted({line for line in text.splitlines() if marker in line and text.count(line) == 1})
    rng = random.Random(SEED)  # noqa: S311 - reproducible data, not secrets
    chosen = rng.sample(lines, min(count, len(lines)))
    return [(line, line.replace(marker, marker + "-", 1)) for line in chosen]


class Editor:
    """One toolkit over its own workspace copy of the file."""

    def __init__(self, root: Path, path: str, text: str, mode: str) -> None:
        (root / path.lstrip("/")).write_text(text)
        tools = {t.name: t for t in FileToolkit(LocalBackend(root), syntax_check=mode).get_tools()}
        self.edit_tool = tools["edit_file"]
        self.path = path
        self.calls = 0
        message = self.invoke(tools["read_file"], {"file_path": path})
        assert message.status == "success", message.content

    def invoke(self, tool: Any, args: dict[str, Any]) -> Any:
        self.calls += 1
        call = {"type": "tool_call", "name": tool.name, "id": f"c{self.calls}", "args": args}
        return tool.invoke(call)

    def edit(self, old: str, new: str) -> float:
        args = {"file_path": self.path, "old_string": old, "new_string": new}
        start = time.perf_counter()
        message = self.invoke(self.edit_tool, args)
        elapsed = (time.perf_counter() - start) * 1000
        if message.status != "success" or "syntax_errors" in message.artifact:
            sys.exit(f"edit failed or reported errors: {message.content}")
        return elapsed


def measure(name: str, path: str, text: str, *, marker: str, edits: int, cold: int) -> bool:
    language = syntax.language_for(path)
    assert language is not None
    assert not syntax.introduced_errors(None, text, language), f"the {name} file is not valid"
    sites = edit_sites(text, marker, edits + cold)
    warm_sites, cold_sites = sites[:edits], sites[edits:]
    timings: dict[str, list[float]] = {"report": [], "off": []}
    firsts: dict[str, list[float]] = {"report": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        editors = {}
        for mode in timings:
            (Path(tmp) / mode).mkdir()
            editors[mode] = Editor(Path(tmp) / mode, path, text, mode)
        CHECK_MS.clear()
        for n, (old, new) in enumerate(warm_sites):
            for mode in ("report", "off") if n % 2 else ("off", "report"):
                timings[mode].append(editors[mode].edit(old, new))
        check = statistics.median(CHECK_MS)
        for n, (old, new) in enumerate(cold_sites):
            for mode in ("report", "off") if n % 2 else ("off", "report"):
                root = Path(tmp) / f"cold-{mode}-{n}"
                root.mkdir()
                editor = Editor(root, path, text, mode)  # reads the file, as edits require
                time.sleep(MODEL_TURN)  # the model's turn between the read and the edit
                firsts[mode].append(editor.edit(old, new))
    report = statistics.median(timings["report"])
    off = statistics.median(timings["off"])
    added = statistics.median(a - b for a, b in zip(timings["report"], timings["off"], strict=True))
    first_added = statistics.median(
        a - b for a, b in zip(firsts["report"], firsts["off"], strict=True)
    )
    passed = added <= TARGET_MS and first_added <= TARGET_MS
    verdict = "PASS" if passed else "FAIL"
    size = len(text.encode())
    print(
        f"{name:<11} {text.count(chr(10)):>5} lines {size / 1024:>5.1f} KiB   "
        f"off {off:6.2f} ms   report {report:6.2f} ms   added {added:5.2f} ms "
        f"(check itself {check:4.2f} ms)   "
        f"first edit added {first_added:5.2f} ms   {verdict} (target {TARGET_MS:g} ms)"
    )
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=150, help="edits per mode (default 150)")
    parser.add_argument("--cold", type=int, default=9, help="first edits per mode (default 9)")
    parser.add_argument("--lines", type=int, default=2000, help="file length (default 2000)")
    args = parser.parse_args()
    if not syntax.available():
        sys.exit("install the syntax extra: pip install 'langchain-fstools[syntax]'")
    writing.syntax_report = timed_syntax_report
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"edit_file, median of {args.edits} edits per mode (first edits: {args.cold});"
        f" load average {load} on {os.cpu_count()} cores"
    )
    results = [
        measure(name, path, make(args.lines), marker="value = ", edits=args.edits, cold=args.cold)
        for name, path, make in (
            ("Python", "/module.py", python_file),
            ("TypeScript", "/module.ts", typescript_file),
        )
    ]
    print("PASS" if all(results) else "FAIL", "- the check adds at most 5 ms to a typical edit")


if __name__ == "__main__":
    main()
