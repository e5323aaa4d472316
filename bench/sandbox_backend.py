"""Files in a Docker sandbox: our tools on `SandboxBackend` vs deepagents' `BaseSandbox`.

    python bench/sandbox_backend.py [--repeat 15] [--no-sympy]

Starts this checkout's Docker Engine (scripts/docker-engine, as the Docker tests do),
makes one `DockerSandbox`, writes a 300-line Python file in its `/workspace`, and times
the median of `--repeat` rounds (interleaved: each round runs every call in turn) of:

- the floor: one `execute("true")`, the provider's round trip;
- `read_file` of 100 lines and `edit_file` of one line (after a read), through
  `FileToolkit(SandboxBackend(sandbox))`: one `execute` of our helper each;
- the same on deepagents' own `BaseSandbox` methods of the same `DockerSandbox`
  (`read(path, offset=0, limit=100)`, `edit(path, old, new)`);
- on sympy's source (sympy 1.14.0's wheel, fetched once with `pip download` into
  `.cache/bench/`, its 1,500 files put in `/workspace/sympy`): our `grep` (matching
  lines) and `glob` tools against deepagents' `grep` and `glob`, on a pattern of a few
  hundred matches and on every test module.

Targets (issue 53): read and edit at most 1.5x the floor; read, edit, grep and glob
faster than deepagents'; printed as ratios with PASS/FAIL. A benchmark, not a test: it
asserts only that both edits landed and that both sides found something.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' engine helper

from tests.integration.docker.engine import start_engine

from langchain_fstools import FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend

if TYPE_CHECKING:
    from collections.abc import Callable

FLOOR_TARGET = 1.5
"""Our read_file and edit_file: at most this many times one `execute("true")`."""

LINES = 300

SYMPY = "sympy==1.14.0"
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "bench"


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def sympy_files() -> list[tuple[str, bytes]]:
    """sympy's package files from its wheel (downloaded once), as `(path in sympy/, bytes)`."""
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = sorted(CACHE.glob("sympy-1.14.0-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", SYMPY, "--no-deps", "-d", str(CACHE)],
            check=True,
        )
        wheels = sorted(CACHE.glob("sympy-1.14.0-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        return [
            (name, wheel.read(name))
            for name in wheel.namelist()
            if name.startswith("sympy/") and not name.endswith("/")
        ]


def sympy_calls(sandbox: Any, tools: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """Our grep and glob tools and deepagents' on sympy's source, put in the sandbox."""
    files = sympy_files()
    for start in range(0, len(files), 200):
        batch = [(f"/workspace/{name}", data) for name, data in files[start : start + 200]]
        assert not [r.error for r in sandbox.upload_files(batch) if r.error]
    grep, glob = tools["grep"], tools["glob"]

    def our_grep() -> None:
        found = grep.invoke(
            {"pattern": "def _eval_is_real", "path": "/sympy", "output_mode": "content"}
        )
        assert "_eval_is_real" in str(found), found

    def their_grep() -> None:
        found = sandbox.grep("def _eval_is_real", path="/workspace/sympy")
        assert found.matches, found

    def our_glob() -> None:
        assert "test_" in str(glob.invoke({"pattern": "**/test_*.py", "path": "/sympy"}))

    def their_glob() -> None:
        assert sandbox.glob("**/test_*.py", path="/workspace/sympy").matches

    calls: dict[str, Callable[[], object]] = {
        "ours: grep sympy": our_grep,
        "deepagents: grep sympy": their_grep,
        "ours: glob sympy": our_glob,
        "deepagents: glob sympy": their_glob,
    }
    for call in calls.values():
        call()  # warm: the first walk, the page cache
    return calls


def report(median: dict[str, float]) -> None:
    """Each call's median against the floor, then ours against deepagents' and the targets."""
    floor = median["floor: execute('true')"]
    print(f"{'call':32} {'median ms':>10} {'x floor':>8}")
    for name, value in median.items():
        print(f"{name:32} {value * 1000:10.1f} {value / floor:8.2f}")
    for what in ("read", "edit", "grep", "glob"):
        ours = next((v for k, v in median.items() if k.startswith("ours") and what in k), None)
        theirs = next((v for k, v in median.items() if k.startswith("deep") and what in k), None)
        if ours is None or theirs is None:
            continue
        peer_ok = "PASS" if ours < theirs else "FAIL"
        line = f"{what}: ours/deepagents {ours / theirs:.2f} (target < 1: {peer_ok})"
        if what in {"read", "edit"}:
            floor_ok = "PASS" if ours / floor <= FLOOR_TARGET else "FAIL"
            line += f", ours/floor {ours / floor:.2f} (target <= {FLOOR_TARGET}: {floor_ok})"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-sympy", action="store_true", help="skip grep and glob")
    options = parser.parse_args()
    with start_engine().sandbox() as sandbox:
        backend = SandboxBackend(sandbox, "/workspace")
        source = "".join(f"value_{n} = {n}  # line {n}\n" for n in range(LINES))
        backend.write_bytes("/ours.py", source.encode())
        backend.write_bytes("/theirs.py", source.encode())
        tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
        read = tools["read_file"]
        edit = tools["edit_file"]
        read.invoke({"file_path": "/ours.py", "limit": 100})  # the helper is in place
        sandbox.read("/workspace/theirs.py", offset=0, limit=100)
        flips = {"ours": 0, "theirs": 0, "read": 0}

        def our_edit() -> None:
            n = flips["ours"]
            flips["ours"] += 1
            old, new = ("_7 = 7 ", "_7 = 70 ") if n % 2 == 0 else ("_7 = 70 ", "_7 = 7 ")
            text = str(edit.invoke({"file_path": "/ours.py", "old_string": old, "new_string": new}))
            assert "Error" not in text, text

        def their_edit() -> None:
            n = flips["theirs"]
            flips["theirs"] += 1
            old, new = ("_7 = 7 ", "_7 = 70 ") if n % 2 == 0 else ("_7 = 70 ", "_7 = 7 ")
            result = sandbox.edit("/workspace/theirs.py", old, new)
            assert result.error is None, result.error

        def our_read() -> None:
            # another window each time, so the "file unchanged" stub never answers
            offset = 1 + (flips["read"] % 2)
            read.invoke({"file_path": "/ours.py", "offset": offset, "limit": 100})
            flips["read"] += 1

        calls: dict[str, Callable[[], object]] = {
            "floor: execute('true')": lambda: sandbox.execute("true"),
            "ours: read_file 100 lines": our_read,
            "deepagents: read 100 lines": lambda: sandbox.read(
                "/workspace/theirs.py", offset=0, limit=100
            ),
            "ours: edit_file one line": our_edit,
            "deepagents: edit one line": their_edit,
        }
        if not options.no_sympy:
            calls |= sympy_calls(sandbox, tools)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(options.repeat):
            for name, call in calls.items():
                times[name].append(timed(call))
        median = {name: statistics.median(values) for name, values in times.items()}
    report(median)


if __name__ == "__main__":
    sys.exit(main())
