"""The backend contract through CompositeBackend: local disk with a state mount, and the
other way round (the suite's `/m/...` cases land in the mount)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from langchain_fstools import CompositeBackend, LocalBackend, StateBackend
from langchain_fstools.backends.protocol import Backend
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401


@pytest.fixture(params=["local-with-state-mount", "state-with-local-mount"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    local, state = LocalBackend(tmp_path), StateBackend()
    default, mounted = (local, state) if request.param.startswith("local") else (state, local)
    composite = CompositeBackend(default, {"/m/": mounted})
    return composite.bind(SimpleNamespace(state={"files": {}}))


class TestCompositeBackend(BackendConformance):
    pass


def test_mount_must_be_top_level(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="top-level"):
        CompositeBackend(LocalBackend(tmp_path), {"/a/b/": StateBackend()})
    with pytest.raises(ValueError, match="top-level"):
        CompositeBackend(LocalBackend(tmp_path), {"/": StateBackend()})
