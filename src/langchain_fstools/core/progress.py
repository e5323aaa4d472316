"""Progress of a running tool call, reported to whoever listens.

A tool call that can take a while (a command, a search) reports what it has so far:
output lines as they arrive, counts of what a search found. The tool layer listens for
the duration of one call (`listening`), handing each report to the graph run's stream
writer, so `stream_mode="custom"` yields it; with nobody listening, `report` does
nothing and `listening_now()` lets a caller skip the work of preparing a report.

The listener lives in a context variable, so it follows the call into worker threads
(`asyncio.to_thread` copies the context) and onto the SSH backend's private loop
(`run_coroutine_threadsafe` runs in a copy of the caller's context).
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

_listener: ContextVar[Callable[[dict[str, Any]], None] | None] = ContextVar(
    "langchain_fstools_progress", default=None
)


@contextlib.contextmanager
def listening(listener: Callable[[dict[str, Any]], None] | None) -> Iterator[None]:
    """Hand every report made in this context to `listener` (None: nobody listens)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def listening_now() -> bool:
    """Whether a report made here would reach a listener."""
    return _listener.get() is not None


def report(event: dict[str, Any]) -> None:
    """Hand `event` to the listener of this context, if any."""
    listener = _listener.get()
    if listener is not None:
        listener(event)


__all__ = ["listening", "listening_now", "report"]
