"""The backend contract on object storage: obstore's memory store, under a key prefix,
bound as the tools bind it (with a read-ahead buffer)."""

from __future__ import annotations

import pytest
from obstore.store import MemoryStore

from langchain_fstools import ObjectStoreBackend
from langchain_fstools.backends.protocol import Backend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401


@pytest.fixture
def backend() -> Backend:
    return ObjectStoreBackend(MemoryStore(), prefix="workspaces/user-1").bind(None)


class TestObjectStoreBackend(BackendConformance):
    pass
