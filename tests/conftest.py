"""Shared test configuration. Unit tests run with sockets disabled (see pyproject).

Every async test runs under blockbuster configured as `langgraph dev` configures it
(`langgraph_api`'s `_enable_blockbuster`: everything blockbuster detects except `os.stat`,
`os.listdir`, `os.remove`, `os.path.*`, buffered file reads and writes and lock waits). A
blocking call it detects (`os.access` from `shutil.which`, a directory scan, `time.sleep`,
a blocking pipe read, a socket, ...) made on the event loop's thread with this package on
the call stack fails the test with `BlockingError`, as it would fail a run under
`langgraph dev`. Blocking work belongs in a thread (`Backend.run_blocking`,
`asyncio.to_thread`) or in the sync path.

The suite keeps to the repository, the temporary folder and the venvs: caches and
configuration it would make in the home folder (the MCP listing cache and read-handle
key, npm installs of the Node.js clients and npm's own cache) go under `.cache/` of the
checkout (ignored by git), for the tests and every process they start (`SUITE_ENV`).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from blockbuster import BlockBuster

from langchain_fstools.lsp.servers import DIAGNOSTICS_ENV

if TYPE_CHECKING:
    from collections.abc import Iterator

CACHE = Path(__file__).resolve().parents[1] / ".cache"
"""The checkout's folder for what the suite caches or configures (ignored by git)."""

SUITE_ENV = {
    "XDG_CACHE_HOME": str(CACHE / "xdg-cache"),
    "XDG_CONFIG_HOME": str(CACHE / "xdg-config"),
    "npm_config_cache": str(CACHE / "npm"),
}
"""Where the programs the suite runs look for their cache and configuration folders."""


def pytest_configure(config: pytest.Config) -> None:
    """Point the home folder's caches and configuration at `CACHE`, for every process.

    Language servers are off by default in the suite (`LANGCHAIN_FSTOOLS_DIAGNOSTICS`,
    unless the run sets it): a test of diagnostics gives its toolkit servers itself, so
    the other tests start no ruff or ty server at each edit of a `.py` file.
    """
    del config
    os.environ.update(SUITE_ENV)
    os.environ.setdefault(DIAGNOSTICS_ENV, "off")


# conformance.py is a library of test classes, not a test module: rewrite its asserts
# so failures show the values compared.
pytest.register_assert_rewrite("tests.unit.backends.conformance")


@pytest.fixture(autouse=True)
def _no_blocking_on_the_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run each async test under blockbuster, scanning this package's frames."""
    if not inspect.iscoroutinefunction(request.function):
        yield
        return
    detector = langgraph_dev_blockbuster()
    detector.activate()
    try:
        yield
    finally:
        detector.deactivate()


LANGGRAPH_DEV_ALLOWS = (
    "os.stat",
    "os.listdir",
    "os.remove",
    "io.BufferedReader.read",
    "io.BufferedWriter.write",
    "io.TextIOWrapper.read",
    "io.TextIOWrapper.write",
    "threading.Lock.acquire",
)
"""What `langgraph dev` lets block (besides every `os.path.*` function)."""


def langgraph_dev_blockbuster() -> BlockBuster:
    """A blockbuster that refuses what `langgraph dev` refuses, scanning this package."""
    detector = BlockBuster(scanned_modules=["langchain_fstools"])
    for name in list(detector.functions):
        if name in LANGGRAPH_DEV_ALLOWS or name.startswith("os.path."):
            detector.functions.pop(name)
    return detector
