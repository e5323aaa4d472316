"""The backend contract in a real Docker container: `SandboxBackend(DockerSandbox)`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration


@pytest.fixture
def backend(docker_sandbox: DockerSandbox) -> Backend:
    return SandboxBackend(docker_sandbox, "/workspace")


class TestDockerSandboxConformance(BackendConformance):
    pass


def test_the_sandbox_searches_with_its_ripgrep(docker_sandbox: DockerSandbox) -> None:
    backend = SandboxBackend(docker_sandbox, "/workspace")
    backend.write_bytes("/.gitignore", b"*.log\n")
    backend.write_bytes("/a.py", b"needle\n")
    backend.write_bytes("/b.log", b"needle\n")
    search = backend.native_search()
    assert backend.searches_with_ripgrep
    listing = search.list_files("/", globs=(), deadline=time.monotonic() + 60)
    assert sorted(f.path for f in listing.files) == ["/.gitignore", "/a.py"]
