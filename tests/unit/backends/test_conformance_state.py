"""The backend contract in graph state: a view bound to a stand-in runtime.

A bound view keeps its own writes for the rest of its life, so each test gets its own.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import StateBackend
from tests.unit.backends.conformance import (  # noqa: F401 - `drive` is a fixture
    DirectoryTests,
    ListTests,
    MoveDeleteTests,
    PageTests,
    PathTests,
    ReadTests,
    StatTests,
    VersionTests,
    WalkTests,
    WriteTests,
    drive,
)


@pytest.fixture
def backend() -> Backend:
    return StateBackend().bind(SimpleNamespace(state={"files": {}}))


class TestStateStat(StatTests):
    pass


class TestStateRead(ReadTests):
    pass


class TestStateWrite(WriteTests):
    pass


class TestStateVersion(VersionTests):
    pass


class TestStateDirectory(DirectoryTests):
    pass


class TestStateList(ListTests):
    pass


class TestStatePage(PageTests):
    pass


class TestStateWalk(WalkTests):
    pass


class TestStateMoveDelete(MoveDeleteTests):
    pass


class TestStatePath(PathTests):
    pass
