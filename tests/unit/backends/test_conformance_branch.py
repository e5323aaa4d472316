"""The backend contract in a branch: a branch of an empty base behaves as any backend.

The writes of every case stay in the branch, so this checks the branch's own view
(errors, versions, listings); reading through to the base is `test_branch.py`'s.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from langchain_fstools.backends.branch import BranchBackend
from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from tests.unit.backends.conformance import (  # noqa: F401 - `drive` is a fixture
    BackendConformance,
    drive,
)


@pytest.fixture(params=["state", "local"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "local":
        return BranchBackend(LocalBackend(tmp_path))
    return BranchBackend(StateBackend().bind(SimpleNamespace(state={"files": {}})))


class TestBranch(BackendConformance):
    pass
