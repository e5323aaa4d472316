"""Fixtures: a harness per backend, and a `run` that calls tools sync or async.

Tool behaviour runs on two backends, each with one driver: local disk (ripgrep) sync and
graph state async. That every backend and both drivers give the same answers is proven
once, by the backend conformance suite (`tests/unit/backends/conformance.py`) and the
call-for-call agreement of every backend and driver (`test_conformance.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.unit.tools.harness import Harness

Run = Callable[..., ToolMessage]

DRIVER = {"local": "sync", "state": "async"}
"""The backends tool behaviour runs on, and the driver each is called with."""


@pytest.fixture(params=list(DRIVER))
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    return Harness(request.param, tmp_path)


@pytest.fixture
def run(h: Harness) -> Run:
    def call(name: str, **args: Any) -> ToolMessage:
        if DRIVER[h.kind] == "sync":
            return h.call(name, **args)
        return asyncio.run(h.acall(name, **args))

    return call
