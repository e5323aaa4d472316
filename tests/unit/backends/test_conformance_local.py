"""The backend contract on local disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.protocol import Backend
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
def backend(tmp_path: Path) -> Backend:
    return LocalBackend(tmp_path)


class TestLocalStat(StatTests):
    pass


class TestLocalRead(ReadTests):
    pass


class TestLocalWrite(WriteTests):
    pass


class TestLocalVersion(VersionTests):
    pass


class TestLocalDirectory(DirectoryTests):
    pass


class TestLocalList(ListTests):
    pass


class TestLocalPage(PageTests):
    pass


class TestLocalWalk(WalkTests):
    pass


class TestLocalMoveDelete(MoveDeleteTests):
    pass


class TestLocalPath(PathTests):
    pass
