"""The backend contract on a LangGraph store (InMemoryStore), bound as the tools bind it."""

from __future__ import annotations

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools import StoreBackend
from langchain_fstools.backends.protocol import Backend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401


@pytest.fixture
def backend() -> Backend:
    return StoreBackend(InMemoryStore(), namespace=("fs", "user-1")).bind(None)


class TestStoreBackend(BackendConformance):
    pass
