"""What one command costs in a warm sandbox session, against bash alone and deepagents.

    python bench/session_latency.py [--repeat 30] [--settle 0.01]

Four rows, timed interleaved in one run (medians of `--repeat` calls each), each call
after `--settle` seconds idle, so what a row leaves running (a session forks its next
command's process once a command ended) lands on no other row's time:

- `bash -c true` started with `subprocess.run` (the floor);
- deepagents' `LocalShellBackend.execute("true")` (no sandbox);
- `LocalBackend(execute=True).execute("true")`: the default sandbox (bubblewrap,
  copy-on-write view and empty change set, limits), in a warm session;
- the same with `sandbox=None` (the session supervisor without a sandbox).

Target (issue 37): the default sandbox at most 4 ms over `bash -c true`. A benchmark,
not a test: it checks only that each command succeeded.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend

if TYPE_CHECKING:
    from collections.abc import Callable


def _bash() -> None:
    subprocess.run(["/bin/bash", "-c", "true"], check=True)


def _ours(backend: LocalBackend) -> Callable[[], None]:
    def run() -> None:
        result = backend.execute("true", timeout=30, output_limit=1000)
        assert result.exit_code == 0, result.output

    return run


def _deepagents() -> Callable[[], None] | None:
    try:
        from deepagents.backends import LocalShellBackend
    except ImportError:
        return None
    backend = LocalShellBackend(root_dir=tempfile.mkdtemp(), virtual_mode=True)

    def run() -> None:
        backend.execute("true")

    return run


def main() -> None:
    """Print the four medians side by side, and the default sandbox's margin over bash."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--settle", type=float, default=0.01)
    arguments = parser.parse_args()
    repeat, settle = arguments.repeat, arguments.settle
    sandboxed = LocalBackend(tempfile.mkdtemp(), execute=True)
    unconfined = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=None)
    rows: dict[str, Callable[[], None]] = {
        "bash -c true": _bash,
        "ours, default sandbox": _ours(sandboxed),
        "ours, sandbox=None": _ours(unconfined),
    }
    peer = _deepagents()
    if peer is not None:
        rows["deepagents LocalShellBackend"] = peer
    for run in rows.values():  # warm: the sessions start, the sandbox is probed
        run()
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeat):
        for name, run in rows.items():
            time.sleep(settle)
            started = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(found) * 1000 for name, found in samples.items()}
    for name, value in medians.items():
        print(f"{name:32} {value:7.2f} ms")
    margin = medians["ours, default sandbox"] - medians["bash -c true"]
    verdict = "PASS" if margin <= 4 else "MISS"
    print(f"default sandbox over bash: +{margin:.2f} ms (target: at most +4 ms) {verdict}")
    sandboxed.close()
    unconfined.close()


if __name__ == "__main__":
    main()
