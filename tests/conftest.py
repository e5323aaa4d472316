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

import contextlib
import inspect
import os
import signal
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


@pytest.fixture(autouse=True)
def _resident_helpers_ended(request: pytest.FixtureRequest) -> Iterator[None]:
    """End the resident helpers a test's sandbox double started in its temporary folder.

    `SandboxBackend` over `ShellSandbox` runs its helper on this machine, and the first
    call starts a resident server there (`backends.sandbox.resident`) that would wait for
    requests for ten minutes after the test: it is ended by the pid file it keeps.
    """
    yield
    folder = getattr(request.node, "funcargs", {}).get("tmp_path")
    if not isinstance(folder, Path):
        return
    for depth in ("", "*/", "*/*/"):
        for pid_file in _globbed(folder, f"{depth}run-*/pid"):
            end_resident_helper(pid_file)


@pytest.fixture(autouse=True, scope="session")
def _resident_helpers_of_the_session_ended(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """End those of shared temporary folders (`tmp_path_factory`) once the session ends."""
    yield
    for pid_file in _globbed(tmp_path_factory.getbasetemp(), "**/run-*/pid"):
        end_resident_helper(pid_file)


def _globbed(folder: Path, pattern: str) -> list[Path]:
    """`folder.glob(pattern)`, asked again when a folder went away meanwhile.

    A discarded change set's copy is removed on a background thread, maybe while the
    glob lists it.
    """
    for _ in range(5):
        try:
            return list(folder.glob(pattern))
        except FileNotFoundError:
            continue
    return list(folder.glob(pattern))


def end_resident_helper(pid_file: Path) -> None:
    """SIGKILL the resident helper whose pid file this is, if it is still that process."""
    try:
        pid = int(pid_file.read_text())
        named = Path(f"/proc/{pid}/stat").read_text().split()[1].startswith("(fstools-")
    except (OSError, ValueError, IndexError):
        return
    if named:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
