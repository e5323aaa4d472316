"""DockerSandbox's round trips against the floor: one `docker exec` of `true`.

    python bench/docker_sandbox.py [--repeat 30]

Starts (or reuses) the checkout's Docker Engine and image with scripts/docker-engine,
makes one sandbox, and times, as the median of `--repeat` calls each: the floor (the
engine API's exec of `true`: create, start with its output, inspect for the exit code,
as docker-py's `exec_run` does), `execute("true")` (the wrapper: its own session, the
token, the bookkeeping file), a one-file upload and download of 1 KiB (tar archives),
and deepagents' `BaseSandbox` read of a 100-line file and edit of one line on it (its
python3 scripts through `execute`). Also the time to create and remove a sandbox.
Printed: milliseconds and the ratio to the floor. A benchmark, not a test: it checks only
that every call succeeded.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import docker

from langchain_fstools.sandboxes.docker import DockerSandbox
from langchain_fstools.shell.sandbox.limits import Limits, MiB

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "fstools-sandbox:latest"
LINES = "".join(
    f"line {n}: some text of an ordinary length for a source file\n" for n in range(100)
)


def _median_ms(call: Callable[[], object], repeat: int) -> float:
    call()  # warm: the first call pays for connections
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    repeat = parser.parse_args().repeat
    subprocess.run(["bash", str(ROOT / "scripts" / "docker-engine")], check=True)
    client = docker.DockerClient(base_url=(ROOT / ".cache/docker/host").read_text().strip())
    limits = Limits(memory=512 * MiB, processes=256)

    def create_and_close() -> None:
        DockerSandbox.create(image=IMAGE, client=client, limits=limits).close()

    with DockerSandbox.create(image=IMAGE, client=client, limits=limits) as sandbox:
        container = client.containers.get(sandbox.id)
        assert sandbox.upload_files([("/workspace/f.txt", LINES.encode())])[0].error is None
        flip = iter(range(10**9))

        def edit() -> None:
            n = next(flip)
            old, new = ("line 50:", "LINE 50:") if n % 2 == 0 else ("LINE 50:", "line 50:")
            assert sandbox.edit("/workspace/f.txt", old, new).error is None

        cases: dict[str, Callable[[], object]] = {
            "floor: exec of true": lambda: container.exec_run(["true"]),
            'execute("true")': lambda: sandbox.execute("true"),
            "upload 1 KiB": lambda: sandbox.upload_files([("/workspace/u.bin", b"x" * 1024)]),
            "download 1 KiB": lambda: sandbox.download_files(["/workspace/u.bin"]),
            "BaseSandbox read 100 lines": lambda: sandbox.read("/workspace/f.txt", limit=100),
            "BaseSandbox edit one line": edit,
        }
        results = {name: _median_ms(call, repeat) for name, call in cases.items()}
    results["create + close"] = _median_ms(create_and_close, max(3, repeat // 5))
    floor = results["floor: exec of true"]
    print(f"{'call':<30}{'ms':>9}{'x floor':>9}")
    for name, ms in results.items():
        print(f"{name:<30}{ms:>9.1f}{ms / floor:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
