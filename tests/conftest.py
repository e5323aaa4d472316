"""Shared test configuration. Unit tests run with sockets disabled (see pyproject).

Every async test runs under blockbuster configured as `langgraph dev` configures it
(`langgraph_api`'s `_enable_blockbuster`: everything blockbuster detects except `os.stat`,
`os.listdir`, `os.remove`, `os.path.*`, buffered file reads and writes and lock waits). A
blocking call it detects (`os.access` from `shutil.which`, a directory scan, `time.sleep`,
a blocking pipe read, a socket, ...) made on the event loop's thread with this package on
the call stack fails the test with `BlockingError`, as it would fail a run under
`langgraph dev`. Blocking work belongs in a thread (`Backend.run_blocking`,
`asyncio.to_thread`) or in the sync path.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest
from blockbuster import BlockBuster

if TYPE_CHECKING:
    from collections.abc import Iterator

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
