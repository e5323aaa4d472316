"""Fixtures: a harness per backend, and a `run` that calls tools sync or async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.unit.tools.harness import BACKENDS, Harness

Run = Callable[..., ToolMessage]


@pytest.fixture(params=BACKENDS)
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    return Harness(request.param, tmp_path)


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest, h: Harness) -> Run:
    def call(name: str, **args: Any) -> ToolMessage:
        if request.param == "sync":
            return h.call(name, **args)
        return asyncio.run(h.acall(name, **args))

    return call
