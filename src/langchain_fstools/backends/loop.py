"""A private asyncio event loop on its own thread, for backends with an async transport.

A backend built on an async library (asyncssh) writes each operation once, as a
coroutine, and runs it on this loop: sync callers block on `run`, async callers await
`submit` from any other loop. Objects bound to the transport (connections, channels)
live on the private loop only, so neither caller ever touches them directly.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine

T = TypeVar("T")


class LoopThread:
    """An event loop running on a daemon thread, started on first use.

    Args:
        name: The thread's name, for debuggers and thread dumps.
    """

    def __init__(self, name: str) -> None:
        """Prepare the thread; nothing starts until the first coroutine is run."""
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the private loop and block until it finishes.

        Raises:
            RuntimeError: called from the private loop's own thread (it would deadlock).
        """
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("LoopThread.run called from its own loop")
        return asyncio.run_coroutine_threadsafe(coroutine, self._running_loop()).result()

    async def submit(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the private loop; awaiting it does not block the caller's loop.

        Cancelling the awaiting task cancels the coroutine on the private loop.
        """
        future = asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop the loop and join its thread; a later `run` starts a fresh one."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join()
            loop.close()


__all__ = ["LoopThread"]
