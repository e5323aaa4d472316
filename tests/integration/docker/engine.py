"""This checkout's Docker Engine and sandbox image, as scripts/docker-engine makes them.

`start_engine` runs the script, which starts the engine if it is not running and builds
the image if it is missing (both kept for the next run, in `.cache/docker/`), then reads
the engine's address from `.cache/docker/host`. It raises when the engine cannot be
started: CI must run the Docker tests, so they fail rather than skip.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import docker

from langchain_fstools.sandboxes.docker import DockerSandbox
from langchain_fstools.shell.sandbox.limits import Limits, MiB

ROOT = Path(__file__).resolve().parents[3]
"""The checkout, whose scripts/docker-engine starts the engine and whose .cache keeps it."""

IMAGE = os.environ.get("FSTOOLS_SANDBOX_IMAGE", "fstools-sandbox:latest")
"""The image scripts/docker-engine builds (Debian bookworm minbase, python3, ripgrep), under
the name docs/remote-sandboxes.md builds it with a registry."""

TEST_LIMITS = Limits(memory=512 * MiB, processes=256)
"""Small enough for two cores shared by several test runs, large enough for python3."""


@dataclass
class DockerEngine:
    """The engine the tests use: its address, the sandbox image, and a client."""

    host: str
    image: str
    client: docker.DockerClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = docker.DockerClient(base_url=self.host)

    def sandbox(self, **settings: object) -> DockerSandbox:
        """A new sandbox on this engine (`DockerSandbox.create` with these settings)."""
        settings = {"image": self.image, "limits": TEST_LIMITS, **settings}
        return DockerSandbox.create(client=self.client, **settings)  # type: ignore[arg-type]


@functools.cache
def start_engine() -> DockerEngine:
    """The engine, started (and the image built) if need be; RuntimeError if it cannot be."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "docker-engine")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "FSTOOLS_SANDBOX_IMAGE": IMAGE},
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/docker-engine failed:\n{done.stdout}\n{done.stderr}")
    return DockerEngine((ROOT / ".cache" / "docker" / "host").read_text().strip(), IMAGE)
