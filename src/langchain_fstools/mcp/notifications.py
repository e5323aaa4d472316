"""The tools' progress reports as MCP `notifications/progress`, for one call.

A tool reports progress through `core.progress` (a command's output lines, a search's
counts, how far a long read got). When the client's request carries a progress token,
`Progress` hands the tool a writer for those reports and sends each as a notification
with a message. Reports may come from worker threads (and the SSH backend's loop), so
the writer only queues them on the server's loop; one task sends them, merging the
reports that arrived while the previous notification was being sent, so a chatty
command cannot flood the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import TYPE_CHECKING, Any, Final, Self

import anyio

from langchain_fstools.core.wording import plural

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from langchain_fstools.mcp.sdk import ToolRequest

MESSAGE_CHARS: Final = 2_000
"""Most characters of command output one notification carries (its latest ones)."""


class Progress:
    """Forwards one tool call's progress reports to the client (an async context).

    Args:
        request: The call; without a progress token nothing is sent and `writer` is None.
    """

    def __init__(self, request: ToolRequest) -> None:
        """Prepare; the forwarding task starts on entering the context."""
        self._request = request
        self._sent = 0
        self._group: TaskGroup | None = None
        self._send: MemoryObjectSendStream[dict[str, Any]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.writer: Callable[[dict[str, Any]], None] | None = None
        """What the tool hands each report to; None when the client asked for none."""

    async def __aenter__(self) -> Self:
        """Start forwarding, when the client gave a progress token."""
        if self._request.progress_token is None:
            return self
        self._loop = asyncio.get_running_loop()
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self._send = send
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._forward, receive)
        self.writer = self._write
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Send what is still queued, then stop."""
        if self._group is None or self._send is None:
            return
        await asyncio.sleep(0)  # reports queued from other threads land first
        self._send.close()
        await self._group.__aexit__(exc_type, exc, traceback)

    def _write(self, event: dict[str, Any]) -> None:
        if self._loop is not None and self._send is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
                self._loop.call_soon_threadsafe(self._queue, event)

    def _queue(self, event: dict[str, Any]) -> None:
        if self._send is not None:
            with contextlib.suppress(anyio.ClosedResourceError):
                self._send.send_nowait(event)

    async def _forward(self, receive: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
        async with receive:
            async for first in receive:
                events = [first]
                with contextlib.suppress(anyio.WouldBlock):
                    while True:
                        events.append(receive.receive_nowait())
                self._sent += 1
                with contextlib.suppress(Exception):  # a gone client must not fail the call
                    await self._request.progress(self._sent, describe(events))


def describe(events: list[dict[str, Any]]) -> str:
    """One progress message for reports that arrived together (the latest counts win).

    Command output is joined (its last `MESSAGE_CHARS` characters); a search's
    counts and a read's position are given in words.
    """
    output = "".join(str(e["output"]) for e in events if "output" in e)
    if output:
        return output[-MESSAGE_CHARS:]
    last = events[-1]
    if "lines" in last:
        return f"{plural(int(last['lines']), 'line')} scanned"
    if "matches" in last:
        files, matches = int(last.get("files", 0)), int(last["matches"])
        return f"{plural(matches, 'matching line')} in {plural(files, 'file')} so far"
    if "files" in last:
        return f"{plural(int(last['files']), 'file')} found"
    return ", ".join(f"{key}: {value}" for key, value in last.items())


__all__ = ["MESSAGE_CHARS", "Progress", "describe"]
