"""The backend contract in a sandbox: `SandboxBackend` over a provider running `sh -c` here."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.sandbox import SandboxBackend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401
from tests.unit.backends.sandbox_double import ShellSandbox


@pytest.fixture
def backend(tmp_path: Path) -> Backend:
    (tmp_path / "workspace").mkdir()
    return SandboxBackend(
        ShellSandbox(), str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )


class TestSandboxConformance(BackendConformance):
    pass
