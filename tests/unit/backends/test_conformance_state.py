"""The backend contract in graph state (a view bound to a runtime)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from langchain_fstools import StateBackend
from langchain_fstools.backends.protocol import Backend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401


@pytest.fixture
def backend() -> Backend:
    return StateBackend().bind(SimpleNamespace(state={"files": {}}))


class TestStateBackend(BackendConformance):
    pass
