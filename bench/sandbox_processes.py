"""What a background process's actions cost in a Docker sandbox, against one `docker exec`.

    python bench/sandbox_processes.py [--repeat 21]

`SandboxBackend(DockerSandbox).processes()`: each action is one run of the sandbox
helper, which asks the process keeper in the container over its socket. Timed side by
side with the round trip's floor (one `docker exec` of `true` through the Docker SDK)
and one helper run that asks nothing of the keeper (`SandboxBackend.stat("/")`): `read`
(the output window of a process printing 20 lines a second), `list`, and `start` then
`kill` (three runs: start, kill, and the wait for its end). The first start, which
forks the keeper, is reported once. Medians of `--repeat` interleaved runs. Needs the
engine and image of scripts/docker-engine (run it first). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import docker

from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.sandboxes.docker import DockerSandbox

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "fstools-sandbox:latest"


def timed(function: object) -> float:
    started = time.perf_counter()
    function()  # type: ignore[operator]
    return time.perf_counter() - started


def measure(client: docker.DockerClient, repeat: int) -> dict[str, float]:
    with DockerSandbox.create(image=IMAGE, client=client) as sandbox:
        backend = SandboxBackend(sandbox)
        backend.stat("/")  # the helper sent
        table = backend.processes()
        assert table is not None
        first = timed(
            lambda: table.start("while :; do echo tick; sleep 0.05; done", output_limit=10_000)
        )
        ticking = table.get("p1")

        def floor() -> None:
            exec_id = client.api.exec_create(sandbox.id, ["true"])["Id"]
            client.api.exec_start(exec_id)

        runs = {
            "docker exec": floor,
            "one helper run": lambda: backend.stat("/"),
            "read": ticking.read,
            "list": table.all,
            "start + kill": lambda: table.start("sleep 60", output_limit=1000).kill(),
        }
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(repeat):
            for name, run in runs.items():
                samples[name].append(timed(run))
        backend.close()
        found = {name: statistics.median(values) * 1000 for name, values in samples.items()}
        return {**found, "first start": first * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    client = docker.DockerClient(base_url=(ROOT / ".cache" / "docker" / "host").read_text().strip())
    found = measure(client, args.repeat)
    floor = found["docker exec"]
    print("| action | median | / docker exec |")
    print("|---|---:|---:|")
    for name, value in found.items():
        print(f"| {name} | {value:.1f} ms | {value / floor:.2f}x |")


if __name__ == "__main__":
    main()
