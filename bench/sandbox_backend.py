"""Files in a Docker sandbox: our tools on `SandboxBackend` vs deepagents' `BaseSandbox`.

    python bench/sandbox_backend.py [--repeat 15] [--no-sympy]

Starts this checkout's Docker Engine (scripts/docker-engine, as the Docker tests do),
makes one `DockerSandbox`, writes a 300-line Python file in its `/workspace`, and times
the median of `--repeat` rounds (interleaved: each round runs every call in turn) of:

- the floor: one `execute("true")`, the provider's round trip;
- `read_file` of 100 lines and `edit_file` of one line (after a read), through
  `FileToolkit(SandboxBackend(sandbox))` two ways: "ours", where the helper's commands go
  through a relay kept open on `DockerSandbox.open_stream` (`backends.sandbox.relay`:
  no `docker exec` per call), and "ours, execute only", the same sandbox offered without
  streams (as a provider that has none): one `execute` of our helper each;
- the same on deepagents' own `BaseSandbox` methods of the same `DockerSandbox`
  (`read(path, offset=0, limit=100)`, `edit(path, old, new)`);
- on sympy's source (sympy 1.14.0's wheel, fetched once with `pip download` into
  `.cache/bench/`, its 1,500 files put in `/workspace/sympy`): our `grep` (matching
  lines) and `glob` tools against deepagents' `grep` and `glob`, on a pattern of a few
  hundred matches and on every test module.

Targets (issue 53): read and edit at most 1.5x the floor; read, edit, grep and glob
faster than deepagents'; printed as ratios with PASS/FAIL, for each of our two ways. A benchmark, not a test: it
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


class ExecuteOnly:
    """The same sandbox as a provider without streams offers it: no `open_stream`, so
    every operation of ours is one `execute` (the resident helper's client)."""

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox

    def __getattr__(self, name: str) -> Any:
        if name == "open_stream":
            raise AttributeError(name)
        return getattr(self._sandbox, name)


def put_sympy(sandbox: Any) -> None:
    """sympy's source in the sandbox's `/workspace/sympy`."""
    files = sympy_files()
    for start in range(0, len(files), 200):
        batch = [(f"/workspace/{name}", data) for name, data in files[start : start + 200]]
        assert not [r.error for r in sandbox.upload_files(batch) if r.error]


def our_file_calls(
    tools: dict[str, Any], path: str, *, sympy: bool
) -> dict[str, Callable[[], object]]:
    """Our read_file, edit_file (and grep and glob on sympy) through `tools`, on `path`."""
    read, edit, grep, glob = (tools[name] for name in ("read_file", "edit_file", "grep", "glob"))
    read.invoke({"file_path": path, "limit": 100})  # the helper is in place
    flips = {"edit": 0, "read": 0}

    def our_read() -> None:
        # another window each time, so the "file unchanged" stub never answers
        offset = 1 + (flips["read"] % 2)
        read.invoke({"file_path": path, "offset": offset, "limit": 100})
        flips["read"] += 1

    def our_edit() -> None:
        n = flips["edit"]
        flips["edit"] += 1
        old, new = ("_7 = 7 ", "_7 = 70 ") if n % 2 == 0 else ("_7 = 70 ", "_7 = 7 ")
        text = str(edit.invoke({"file_path": path, "old_string": old, "new_string": new}))
        assert "Error" not in text, text

    def our_grep() -> None:
        found = grep.invoke(
            {"pattern": "def _eval_is_real", "path": "/sympy", "output_mode": "content"}
        )
        assert "_eval_is_real" in str(found), found

    def our_glob() -> None:
        assert "test_" in str(glob.invoke({"pattern": "**/test_*.py", "path": "/sympy"}))

    calls = {"read_file 100 lines": our_read, "edit_file one line": our_edit}
    if sympy:
        calls |= {"grep sympy": our_grep, "glob sympy": our_glob}
    return calls


def their_calls(sandbox: Any, path: str, *, sympy: bool) -> dict[str, Callable[[], object]]:
    """deepagents' `BaseSandbox` methods of the same sandbox, on `path` (and sympy)."""
    sandbox.read(path, offset=0, limit=100)
    flips = {"edit": 0}

    def their_edit() -> None:
        n = flips["edit"]
        flips["edit"] += 1
        old, new = ("_7 = 7 ", "_7 = 70 ") if n % 2 == 0 else ("_7 = 70 ", "_7 = 7 ")
        result = sandbox.edit(path, old, new)
        assert result.error is None, result.error

    def their_grep() -> None:
        found = sandbox.grep("def _eval_is_real", path="/workspace/sympy")
        assert found.matches, found

    def their_glob() -> None:
        assert sandbox.glob("**/test_*.py", path="/workspace/sympy").matches

    calls: dict[str, Callable[[], object]] = {
        "read 100 lines": lambda: sandbox.read(path, offset=0, limit=100),
        "edit one line": their_edit,
    }
    if sympy:
        calls |= {"grep sympy": their_grep, "glob sympy": their_glob}
    return calls


OURS = ("ours", "ours, execute only")
"""Our two ways: through a relay (the sandbox offers streams), and one `execute` each."""


def report(median: dict[str, float]) -> None:
    """Each call's median against the floor, then ours against deepagents' and the targets."""
    floor = median["floor: execute('true')"]
    print(f"{'call':40} {'median ms':>10} {'x floor':>8}")
    for name, value in median.items():
        print(f"{name:40} {value * 1000:10.1f} {value / floor:8.2f}")
    for way in OURS:
        for what in ("read", "edit", "grep", "glob"):
            ours = next((v for k, v in median.items() if k.startswith(f"{way}: {what}")), None)
            theirs = next(
                (v for k, v in median.items() if k.startswith(f"deepagents: {what}")), None
            )
            if ours is None or theirs is None:
                continue
            peer_ok = "PASS" if ours < theirs else "FAIL"
            line = f"{way}, {what}: ours/deepagents {ours / theirs:.2f} (target < 1: {peer_ok})"
            if what in {"read", "edit"}:
                floor_ok = "PASS" if ours / floor <= FLOOR_TARGET else "FAIL"
                line += f", ours/floor {ours / floor:.2f} (target <= {FLOOR_TARGET}: {floor_ok})"
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-sympy", action="store_true", help="skip grep and glob")
    options = parser.parse_args()
    sympy = not options.no_sympy
    source = "".join(f"value_{n} = {n}  # line {n}\n" for n in range(LINES)).encode()
    with start_engine().sandbox() as sandbox:
        if sympy:
            put_sympy(sandbox)
        calls: dict[str, Callable[[], object]] = {
            "floor: execute('true')": lambda: sandbox.execute("true")
        }
        for way, provider in zip(OURS, (sandbox, ExecuteOnly(sandbox)), strict=True):
            backend = SandboxBackend(provider, "/workspace")
            path = f"/{way.replace(', ', '_').replace(' ', '_')}.py"
            backend.write_bytes(path, source)
            tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
            ours = our_file_calls(tools, path, sympy=sympy)
            calls |= {f"{way}: {name}": call for name, call in ours.items()}
        sandbox.upload_files([("/workspace/theirs.py", source)])
        theirs = their_calls(sandbox, "/workspace/theirs.py", sympy=sympy)
        calls |= {f"deepagents: {name}": call for name, call in theirs.items()}
        for call in calls.values():
            call()  # warm: the first walk, the page cache
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(options.repeat):
            for name, call in calls.items():
                times[name].append(timed(call))
        median = {name: statistics.median(values) for name, values in times.items()}
    report(median)


if __name__ == "__main__":
    sys.exit(main())
