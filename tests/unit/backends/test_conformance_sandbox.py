"""The backend contract in a sandbox: `SandboxBackend` over a provider running `sh -c` here.

Twice: over a provider with `execute` only, and over one that also keeps streams open, so
that the helper's commands go through a relay (`backends.sandbox.relay`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.sandbox import SandboxBackend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401
from tests.unit.backends.sandbox_double import ShellSandbox, StreamingShellSandbox


@pytest.fixture
def backend(tmp_path: Path) -> Backend:
    (tmp_path / "workspace").mkdir()
    return SandboxBackend(
        ShellSandbox(), str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )


class TestSandboxConformance(BackendConformance):
    pass


class TestRelayedSandboxConformance(BackendConformance):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> Iterator[Backend]:
        (tmp_path / "workspace").mkdir()
        sandbox = StreamingShellSandbox()
        backend = SandboxBackend(
            sandbox, str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
        )
        yield backend
        backend.close()
        assert sandbox.calls["open_stream"] >= 1  # the relay served
        sandbox.close()
