"""The Docker Engine of the Docker tests (tests/integration/docker/engine.py), and fresh
sandboxes on it. When the engine cannot be started, every test that needs it fails: CI
must run them, so they are never skipped."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.integration.docker.engine import DockerEngine, start_engine

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.sandboxes.docker import DockerSandbox


@pytest.fixture(scope="session")
def docker_engine() -> DockerEngine:
    """This checkout's Docker Engine, started (and the image built) if need be."""
    try:
        return start_engine()
    except RuntimeError as error:
        pytest.fail(str(error))


@pytest.fixture
def docker_sandbox(docker_engine: DockerEngine) -> Iterator[DockerSandbox]:
    """A new sandbox with an empty /workspace, its container removed after the test."""
    with docker_engine.sandbox() as sandbox:
        yield sandbox
