"""What recording a command as a change set costs in a Docker sandbox, against one `docker exec`.

    python bench/sandbox_commands.py [--repeat 21] [--files 0,1000]

`SandboxBackend(DockerSandbox).execute("true")` (the helper keeps the workspace's
baseline, runs the command, scans and diffs, restores; an empty set is not committed)
timed side by side with the round trip's floor: one `docker exec` of `true` through the
Docker SDK (`exec_create` + `exec_start`), `DockerSandbox.execute("true")` (the provider's own
run, with its group-killing wrapper), and one file operation of the sandbox helper
(`SandboxBackend.stat("/")`, through its relay: no `docker exec`), so the last column
is what recording costs beyond one helper run (the command's own `execute`, which is
the provider's, included). Medians of `--repeat` interleaved
runs, for a workspace of each `--files` count (small files in 10 folders); target: at most
2x the `docker exec` floor. Starts this checkout's Docker Engine and image
(scripts/docker-engine, as the Docker tests do). A benchmark, not a test: it checks only
that every run exited 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' engine helper

from tests.integration.docker.engine import start_engine

from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.core.results import Write
from langchain_fstools.sandboxes.docker import DockerSandbox

if TYPE_CHECKING:
    import docker


def timed(function: object) -> float:
    started = time.perf_counter()
    function()  # type: ignore[operator]
    return time.perf_counter() - started


def docker_exec(client: docker.DockerClient, container_id: str) -> None:
    exec_id = client.api.exec_create(container_id, ["true"])["Id"]
    client.api.exec_start(exec_id)
    assert client.api.exec_inspect(exec_id)["ExitCode"] == 0


def measure(client: docker.DockerClient, image: str, files: int, repeat: int) -> dict[str, float]:
    with DockerSandbox.create(image=image, client=client) as sandbox:
        backend = SandboxBackend(sandbox)
        writes = [Write(f"/d{n % 10}/f{n}.txt", b"x" * 200) for n in range(files)]
        for start in range(0, len(writes), 500):
            backend.write_many(writes[start : start + 500])

        def ours() -> None:
            assert backend.execute("true", timeout=30, output_limit=10_000).exit_code == 0

        def provider() -> None:
            assert sandbox.execute("true").exit_code == 0

        def floor() -> None:
            docker_exec(client, sandbox.id)

        def helper_run() -> None:
            backend.stat("/")

        runs = {
            "docker exec": floor,
            "DockerSandbox.execute": provider,
            "one helper run": helper_run,
            "ours, recorded": ours,
        }
        for run in runs.values():  # warm: the helper sent, the baseline taken
            run()
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(repeat):
            for name, run in runs.items():
                samples[name].append(timed(run))
        return {name: statistics.median(found) * 1000 for name, found in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--files", default="0,1000")
    args = parser.parse_args()
    engine = start_engine()
    print(
        "| files | docker exec true | DockerSandbox.execute | one helper run (stat) |"
        " ours, recorded | ours / docker exec | ours - helper run |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for count in (int(n) for n in args.files.split(",")):
        found = measure(engine.client, engine.image, count, args.repeat)
        floor, ours, run = found["docker exec"], found["ours, recorded"], found["one helper run"]
        print(
            f"| {count:,} | {floor:.1f} ms | {found['DockerSandbox.execute']:.1f} ms"
            f" | {run:.1f} ms | {ours:.1f} ms | {ours / floor:.2f}x | {ours - run:.1f} ms |"
        )


if __name__ == "__main__":
    main()
