"""The backend contract on local disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends.protocol import Backend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401


@pytest.fixture
def backend(tmp_path: Path) -> Backend:
    return LocalBackend(tmp_path)


class TestLocalBackend(BackendConformance):
    pass
