"""A server's start as a check sees it: the start's outcome decides, not the check's deadline.

On a loaded machine the loop thread can be held up (a fork, the first request's
serialisation) past a check's deadline, and the start then ends in the very turn the
deadline passes. Played here in that order on the event loop, without a process.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from langchain_fstools.lsp import Diagnostics, ServerSpec
from langchain_fstools.lsp.client import Server
from langchain_fstools.lsp.diagnostics import _Slot

SPEC = ServerSpec((sys.executable, "server.py"), frozenset({".py"}), "python")


async def test_a_start_that_ends_as_the_deadline_passes_gives_the_server(tmp_path: Path) -> None:
    diagnostics = Diagnostics(servers={"ruff": None, "ty": None, "fake": SPEC})
    server = Server(SPEC, sys.executable, str(tmp_path))
    starting: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    slot = _Slot(server=server, starts=1, starting=starting)
    asyncio.get_running_loop().call_soon(starting.set_result, None)  # before the timeout's turn

    found = await diagnostics._started(slot, "fake", deadline=time.monotonic())

    assert found is server
    assert slot.server is server
    assert slot.dead is None


async def test_a_start_that_timed_out_is_said_and_left_out(tmp_path: Path) -> None:
    diagnostics = Diagnostics(servers={"ruff": None, "ty": None, "fake": SPEC}, start_timeout=3)
    server = Server(SPEC, sys.executable, str(tmp_path))
    starting: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    slot = _Slot(server=server, starts=1, starting=starting)
    asyncio.get_running_loop().call_soon(starting.set_exception, TimeoutError())

    found = await diagnostics._started(slot, "fake", deadline=time.monotonic())

    assert found == "Diagnostics unavailable: fake did not start within 3 s."
    assert slot.dead == found
    assert slot.server is None


async def test_a_start_still_going_at_the_deadline_is_not_ready(tmp_path: Path) -> None:
    diagnostics = Diagnostics(servers={"ruff": None, "ty": None, "fake": SPEC})
    server = Server(SPEC, sys.executable, str(tmp_path))
    starting: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    slot = _Slot(server=server, starts=1, starting=starting)

    found = await diagnostics._started(slot, "fake", deadline=time.monotonic())

    assert found == "Diagnostics not ready: fake is still starting."
    assert slot.server is server
    assert slot.dead is None
    assert not starting.cancelled()  # the start goes on after the check
