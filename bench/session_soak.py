"""A long session stays flat: 500 commands and 8 background processes, no growth.

    python bench/session_soak.py [--commands 500] [--cycle 50]

One sandbox session (the default sandbox) runs `--commands` commands, each writing a
file that is committed; every `--cycle` commands its 8 background processes (the most a
session runs) are killed and 8 new ones started, each printing a line every 0.1 s. The
agent's open descriptors, threads, resident memory and the processes below it are read
after a warm-up (the first cycle) and at the end. A benchmark, not a test: it prints the
growth and `FLAT` or `GROWS` (descriptors, threads and processes must not grow;
memory by at most 8 MiB, Python's allocator keeps what it once used).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools import LocalBackend
from langchain_fstools.shell.session.session import MAX_PROCESSES

if TYPE_CHECKING:
    from langchain_fstools.shell.session.background import Background

_SPEAKER = "while :; do echo tick; sleep 0.1; done"
_MEMORY_SLACK = 8 << 20


def _measure() -> dict[str, int]:
    """Descriptors, threads, resident bytes and descendant processes of this process.

    Read once what the last command and cycle set going has settled (the supervisor
    forks its next spare process after a command, the killed keepers are reaped).
    """
    time.sleep(1)
    status = Path("/proc/self/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in status)
    return {
        "descriptors": len(list(Path("/proc/self/fd").iterdir())),
        "threads": int(fields["Threads"]),
        "resident": int(fields["VmRSS"].split()[0]) * 1024,
        "processes": len(_descendants(os.getpid())),
    }


def _descendants(root: int) -> list[int]:
    """The processes below `root` (but `sleep`s, which the background loops start)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name, _, rest = (entry / "stat").read_text().partition(" (")[2].rpartition(")")
                parent = int(rest.split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if name == "sleep":  # the background processes' own, coming and going
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def _cycle(backend: LocalBackend, running: list[Background]) -> list[Background]:
    """Kill the background processes, start as many new ones as a session may run."""
    processes = backend.processes()
    assert processes is not None
    for background in running:
        background.kill()
    return [processes.start(_SPEAKER, output_limit=4096) for _ in range(MAX_PROCESSES)]


def main() -> None:
    """Run the soak and print what grew."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=500)
    parser.add_argument("--cycle", type=int, default=50)
    arguments = parser.parse_args()
    workspace = tempfile.mkdtemp()
    backend = LocalBackend(workspace, execute=True)
    running: list[Background] = []
    before: dict[str, int] = {}
    started = time.perf_counter()
    try:
        for index in range(arguments.commands):
            if index % arguments.cycle == 0:
                running = _cycle(backend, running)
            if index == arguments.cycle:  # warmed up: the session, its threads and caches
                before = _measure()
            result = backend.execute(
                f"echo {index} > file{index % 20}.txt; ls | wc -l", timeout=60, output_limit=4096
            )
            assert result.exit_code == 0, result.output
            for background in running:
                background.read()
        assert Path(
            workspace, f"file{(arguments.commands - 1) % 20}.txt"
        ).read_text().strip() == str(arguments.commands - 1)
        running = _cycle(backend, running)
        after = _measure()
    finally:
        backend.close()
    seconds = time.perf_counter() - started
    print(
        f"{arguments.commands} commands, {MAX_PROCESSES} background processes cycled every"
        f" {arguments.cycle}: {seconds:.1f} s (load {os.getloadavg()[0]:.1f})"
    )
    for name, value in after.items():
        print(
            f"{name:12} after warm-up {before[name]:>11,}  at the end {value:>11,}"
            f"  growth {value - before[name]:+,}"
        )
    flat = all(after[name] <= before[name] for name in ("descriptors", "threads", "processes"))
    flat = flat and after["resident"] - before["resident"] <= _MEMORY_SLACK
    print("FLAT" if flat else "GROWS")


if __name__ == "__main__":
    main()
