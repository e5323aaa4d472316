"""What the sandbox's resource limits cost per command, against the same sandbox without them.

    python bench/limits.py [--repeat 41]

`execute("true")` on `LocalBackend(execute=True)` with `Sandbox()` (limits on by
default: rlimits in the helper, a cgroup made, joined and removed per command where this
machine can, sized tmpfs mounts) against `Sandbox(limits=None)`, for both methods
(bubblewrap and Landlock alone), interleaved, medians side by side; target: at most
2 ms more. Also the cgroup's own steps (`CgroupSet.create`, `place`, `events`,
`remove`) on a sleeping process, timed apart.

A benchmark, not a test: it checks only that each command succeeded.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.limits import DEFAULT_LIMITS, CgroupSet, cgroup_support
from langchain_fstools.shell.sandbox.sandbox import Sandbox

TARGET_MS = 2.0


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def side_by_side(repeat: int, method: str) -> tuple[float, float]:
    """Median ms of `execute("true")` with the default limits and without (interleaved)."""
    limited = LocalBackend(
        tempfile.mkdtemp(),
        execute=True,
        sandbox=Sandbox(method=method),  # type: ignore[arg-type]
    )
    free = LocalBackend(
        tempfile.mkdtemp(),
        execute=True,
        sandbox=Sandbox(method=method, limits=None),  # type: ignore[arg-type]
    )
    for backend in (limited, free):  # the one-time sandbox probe
        backend.execute("true", timeout=30, output_limit=1000)
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        for backend, samples in ((limited, ours), (free, theirs)):
            started = time.perf_counter()
            result = backend.execute("true", timeout=30, output_limit=1000)
            samples.append(time.perf_counter() - started)
            assert result.exit_code == 0, result.output
    return median_ms(ours), median_ms(theirs)


def cgroup_steps(repeat: int) -> float | None:
    """Median ms of one cgroup's whole life around a running process, or None."""
    if CgroupSet.create(DEFAULT_LIMITS) is None:
        return None
    samples: list[float] = []
    for _ in range(repeat):
        process = subprocess.Popen(["sleep", "30"])
        started = time.perf_counter()
        cgroups = CgroupSet.create(DEFAULT_LIMITS)
        assert cgroups is not None
        cgroups.place(process.pid)
        cgroups.events()
        process.kill()
        process.wait()
        cgroups.remove()
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    repeat = parser.parse_args().repeat
    print(f"cgroups here: {cgroup_support()}; {repeat} interleaved runs each")
    print('| execute("true") | with limits | without | cost | target |')
    print("|---|---:|---:|---:|---|")
    for method in ("bwrap", "landlock"):
        ours, theirs = side_by_side(repeat, method)
        cost = ours - theirs
        verdict = "PASS" if cost <= TARGET_MS else "FAIL"
        print(
            f"| {method} | {ours:.1f} ms | {theirs:.1f} ms | {cost:+.1f} ms |"
            f" {verdict} (≤ {TARGET_MS:g} ms) |"
        )
    steps = cgroup_steps(repeat)
    if steps is not None:
        print(f"cgroup create + place + events + remove (a killed sleep inside): {steps:.2f} ms")


if __name__ == "__main__":
    main()
