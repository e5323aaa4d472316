"""The Docker Engine and sandbox image of the Docker tests, and fresh sandboxes on them.

`docker_engine` runs scripts/docker-engine, which starts this checkout's engine if it is
not running and builds the sandbox image if it is missing (both kept for the next run),
then reads the engine's address from `.cache/docker/host`. When the engine cannot be
started, every test that needs it fails: CI must run them, so they are never skipped.
`docker_sandbox` is a new container with an empty `/workspace` for each test.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import docker
import pytest

from langchain_fstools.sandboxes.docker import DockerSandbox
from langchain_fstools.shell.sandbox.limits import Limits, MiB

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]
"""The checkout, whose scripts/docker-engine starts the engine and whose .cache keeps it."""

IMAGE = os.environ.get("FSTOOLS_SANDBOX_IMAGE", "fstools-sandbox:test")
"""The image scripts/docker-engine builds (Debian bookworm minbase, python3, ripgrep)."""

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
        settings.setdefault("limits", TEST_LIMITS)
        return DockerSandbox.create(image=self.image, client=self.client, **settings)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    """This checkout's Docker Engine, started (and the image built) if need be."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "docker-engine")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "FSTOOLS_SANDBOX_IMAGE": IMAGE},
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/docker-engine failed:\n{done.stdout}\n{done.stderr}")
    engine = DockerEngine((ROOT / ".cache" / "docker" / "host").read_text().strip(), IMAGE)
    yield engine
    engine.client.close()


@pytest.fixture
def docker_sandbox(docker_engine: DockerEngine) -> Iterator[DockerSandbox]:
    """A new sandbox with an empty /workspace, its container removed after the test."""
    with docker_engine.sandbox() as sandbox:
        yield sandbox
