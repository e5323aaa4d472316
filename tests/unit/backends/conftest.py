"""Fixtures shared by the backends' unit tests."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def host_copies_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host copies of command change sets a test leaves undiscarded land in its folder.

    `SandboxBackend.execute_changes` copies a set's new files to a host folder that
    `ChangeSet.discard` removes; a test that only reads the set leaves it in `tmp_path`.
    """
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
