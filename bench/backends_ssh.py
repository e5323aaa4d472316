"""Search over SSH: grep and glob with the server's rg, its Python, SFTP, and local rg.

    python bench/backends_ssh.py [--files 3000] [--repeat 3]

Starts a throwaway sshd on 127.0.0.1 (the integration tests' helper), generates a tree
of small code-like files with nested .gitignore files, and times, in one process, the
median of `--repeat` runs of our `grep` (files_with_matches and content) and `glob`
tools (interleaved: each round runs every call on every backend in turn) on:

- `LocalBackend` (local ripgrep), the reference;
- `SSHBackend` with the server's `rg` (the ripgrep wheel's binary);
- `SSHBackend(use_ripgrep=False)`: a server without rg: the pure-Python engine sent to
  the server's `python3`, walking its disk (`backends/ssh/search.py`);
- `SSHBackend(use_ripgrep=False, use_python=False)`: a server with neither: the engine
  walking the tree over SFTP.

Loopback has almost no latency, so the SSH figures are the protocol's own overhead; a
real network adds round trips (few for rg and the server's Python, several per file for
the SFTP engine). Target (issue 19): `grep -l` through the server's Python takes at most
2x the server's rg, printed as PASS/FAIL. A benchmark, not a test: it asserts only that
every engine gave the same answer.
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
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' sshd helper

from tests.integration.ssh.sshd import Sshd

from langchain_fstools import FileToolkit, LocalBackend, SSHBackend
from langchain_fstools.search.ripgrep import find_ripgrep

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend

HOST_PYTHON_TARGET = 2.0
"""`grep -l` through the server's Python: at most this many times the server's rg."""

WORDS = ["def", "class", "return", "self", "value", "index", "result", "items", "data"]
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("grep -l", "grep", {"pattern": "needle_token"}),
    ("grep content", "grep", {"pattern": "needle_token", "output_mode": "content"}),
    ("glob **/*.py", "glob", {"pattern": "**/*.py"}),
]


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)  # noqa: S311 - reproducible data
    directories = [root]
    for n in range(max(files // 25, 1)):
        directory = rng.choice(directories) / f"pkg{n}"
        directory.mkdir()
        directories.append(directory)
        if n % 10 == 0:
            (directory / ".gitignore").write_text("*.log\nbuild/\n")
    for n in range(files):
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(40)]
        if n % 50 == 0:
            lines[rng.randrange(40)] += " needle_token"
        suffix = rng.choice([".py", ".py", ".txt", ".log"])
        path = rng.choice(directories) / f"m{n}{suffix}"
        path.write_text("\n".join(lines) + "\n")
        # Distinct whole seconds: SFTP's mtime precision, so newest-first orders agree.
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))


def timed(backends: dict[str, Backend], repeat: int) -> dict[str, tuple[list[float], list[str]]]:
    """Median time and answer of each call on each backend, the backends interleaved.

    Each round runs every call once on every backend in turn, so a load spike on the
    machine touches all of them alike.
    """
    tools = {
        name: {t.name: t for t in FileToolkit(backend, glob_limit=100_000).get_tools()}
        for name, backend in backends.items()
    }
    runs: dict[str, list[list[float]]] = {name: [[] for _ in CALLS] for name in backends}
    answers: dict[str, list[str]] = {name: [""] * len(CALLS) for name in backends}
    for _ in range(repeat):
        for index, (_, tool, args) in enumerate(CALLS):
            for name in backends:
                started = time.perf_counter()
                answers[name][index] = str(tools[name][tool].invoke(args))
                runs[name][index].append(time.perf_counter() - started)
    return {
        name: ([statistics.median(times) for times in runs[name]], answers[name])
        for name in backends
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "tree"
        root.mkdir()
        make_tree(root, options.files)
        server = Sshd(Path(temp) / "sshd")
        server.start()
        try:
            settings: dict[str, Any] = {
                "port": server.port,
                "username": server.username,
                "client_keys": [server.client_key],
                "use_agent": False,
                "known_hosts": server.known_hosts,
                "rg_path": find_ripgrep() or "rg",
            }
            host = str(root)
            remote = SSHBackend("127.0.0.1", root_dir=host, **settings)
            python = SSHBackend("127.0.0.1", root_dir=host, use_ripgrep=False, **settings)
            walking = SSHBackend(
                "127.0.0.1", root_dir=host, use_ripgrep=False, use_python=False, **settings
            )
            for backend in (remote, python, walking):  # connect and probe outside the timings
                backend.native_search()
            assert python.native_search() is not None, "the server's python3 did not start"
            rows = timed(
                {
                    "local rg": LocalBackend(root),
                    "ssh + remote rg": remote,
                    "ssh + remote python": python,
                    "ssh, SFTP engine": walking,
                },
                options.repeat,
            )
            for backend in (remote, python, walking):
                backend.close()
        finally:
            server.cleanup()
    reference_times, reference_answers = rows["local rg"]
    print(f"{options.files} files, median of {options.repeat} runs (seconds, ratio to local rg)")
    print(f"{'':20}" + "".join(f"{label:>22}" for label, _, _ in CALLS))
    for name, (times, answers) in rows.items():
        assert answers == reference_answers, f"{name} answered differently"
        cells = "".join(
            f"{t:>13.3f} ({t / ref:>5.1f}x)" for t, ref in zip(times, reference_times, strict=True)
        )
        print(f"{name:20}{cells}")
    ratio = rows["ssh + remote python"][0][0] / rows["ssh + remote rg"][0][0]
    verdict = "PASS" if ratio <= HOST_PYTHON_TARGET else "FAIL"
    print(
        f"{verdict}: grep -l through the server's python is {ratio:.2f}x the server's rg"
        f" (target: at most {HOST_PYTHON_TARGET:g}x)"
    )


if __name__ == "__main__":
    main()
