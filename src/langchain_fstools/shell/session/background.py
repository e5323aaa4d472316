"""Background processes of a sandbox session: output kept as it comes, input, an end.

A `Background` is one command that runs on in its session (`shell.session.session`) after the
call that started it returned: `execute(command, background=True)`, or a command that
ran past its `yield_after`. A thread of its own reads its output into a window
(`OutputBuffer`: the head and tail of what came since the last `read`, the middle
counted as skipped), so a chatty server never grows memory past that bound. `write`
feeds its standard input (a pipe, or a pseudo-terminal when asked), `kill` ends it and
everything it started. A process that nobody reads or writes for `idle_limit` seconds
is ended, and says so; so is one whose copy-on-write view takes more disk than
`Limits.changed_bytes` (`ended_by` "limit", `limit` names it). One that ended by itself at
another limit (memory, processes, CPU time, file size) is named by `limit` as a command's
end is (`shell.sandbox.limits.limit_hit`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import selectors
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from langchain_fstools.shell.sandbox.limits import CHANGED_EVERY
from langchain_fstools.shell.session.output import STDERR_MARK, OutputBuffer

if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Mapping

    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.core.results import ExecutionResult, LimitHit
    from langchain_fstools.shell.sandbox.limits import ChangedBytes

IDLE_LIMIT: Final = 1800.0
"""Seconds a background process may go unread and unwritten before it is ended."""

_READ_SIZE: Final = 64 * 1024
_TICK: Final = 1.0
_ERRORS_KEPT: Final = 4096
"""Bytes of its standard error a process keeps, to name the limit it hit (`Background.limit`)."""
"""Seconds between the reader's checks of the idle limit."""


@dataclass(frozen=True)
class ProcessOutput:
    """What `Background.read` returns.

    Attributes:
        text: The output since the last read (head and tail when it was long).
        skipped: Bytes of it left out in the middle.
        running: Whether the process still runs.
        exit_code: Its exit status once it ended (None while it runs or when killed).
        ended_by: Why it ended when this package ended it ("kill", "idle", "session"),
            else None.
    """

    text: str
    skipped: int
    running: bool
    exit_code: int | None
    ended_by: str | None


class Background:
    """One background process: its output window, its input, its end.

    Args:
        ident: The process id the model names it by (`p1`, `p2`, ...).
        command: The command line, as given.
        fds: Its output descriptors (stdout and stderr, or one pseudo-terminal).
        stdin: The descriptor writing its input, or None.
        ended: Set once the process has ended (its keeper reported).
        status: Returns its exit status once ended.
        stop: Ends it and everything it started.
        output_limit: Bytes of output kept per window.
        buffer: The output read so far (a command moved to the background keeps its own).
        idle_limit: Seconds without a read or write before it is ended.
        over: The check of its view's disk use, if it has a view and the limit is set.
        judge: Names the sandbox limit it hit, from its exit status and what it said on
            its standard error (the last `_ERRORS_KEPT` bytes), once it ended by itself.
        release: Called once it ended and its output was read to the end: frees what
            the session held for it.
    """

    def __init__(
        self,
        ident: str,
        command: str,
        *,
        fds: list[int],
        stdin: int | None,
        ended: threading.Event,
        status: Callable[[], int | None],
        stop: Callable[[], None],
        output_limit: int,
        buffer: OutputBuffer | None = None,
        idle_limit: float = IDLE_LIMIT,
        over: ChangedBytes | None = None,
        judge: Callable[[int | None, str], LimitHit | None] | None = None,
        release: Callable[[], None] = lambda: None,
    ) -> None:
        """Start reading its output."""
        self.ident = ident
        self.command = command
        self.started = time.time()
        self.view: object | None = None
        """What the backend keeps of the process's copy-on-write view, or None."""
        self._fds = fds
        self._stdin = stdin
        self._ended = ended
        self._status = status
        self._stop = stop
        self._limit = output_limit
        self._buffer = buffer if buffer is not None else OutputBuffer(output_limit)
        self._lock = threading.Lock()
        self._idle_limit = idle_limit
        self._over = over
        self._judge = judge
        self._errors = b""
        self._release = release
        self._end_checked = False
        self._active = time.monotonic()
        self._ended_by: str | None = None
        self._finished_at: float | None = None
        self._watch: _LineWatch | None = None
        self._reader = threading.Thread(target=self._read_all, name=f"fstools-{ident}", daemon=True)
        self._reader.start()

    @property
    def running(self) -> bool:
        """Whether the process still runs."""
        return not self._ended.is_set()

    @property
    def exit_code(self) -> int | None:
        """Its exit status once ended by itself (None while running or when killed)."""
        return None if self.running or self._ended_by is not None else self._status()

    @property
    def runtime(self) -> float:
        """Seconds it ran (so far)."""
        end = self._finished_at if self._finished_at is not None else time.time()
        return end - self.started

    @property
    def ended_by(self) -> str | None:
        """Why this package ended it ("kill", "idle", "session", "limit"), else None."""
        return self._ended_by

    @property
    def limit(self) -> LimitHit | None:
        """The sandbox limit it went past, else None.

        Ended at it (`ended_by` "limit"), or found past it once it had ended (what it
        wrote since the last check counts too).
        """
        if self._over is not None:
            if not self.running and not self._end_checked:
                self._over(now=True)
                self._end_checked = True
            if self._over.hit is not None:
                return self._over.hit
        if self._judge is None or self.running or self._ended_by is not None:
            return None
        return self._judge(self._status(), self._errors.decode("utf-8", "replace"))

    def read(self) -> ProcessOutput:
        """The output since the last read; the window starts again empty."""
        with self._lock:
            window, self._buffer = self._buffer, OutputBuffer(self._limit)
            self._active = time.monotonic()
        if not self.running:
            self._reader.join(_TICK)
        return ProcessOutput(
            window.text(), window.dropped_bytes, self.running, self.exit_code, self._ended_by
        )

    def _window_kept_elsewhere(self, window: Mapping[str, Any]) -> ProcessOutput:
        """`read`'s answer from a window a supervisor kept on another machine (emptied there).

        `window` is `backends.host_supervisor`'s read reply: its head and tail as
        `(stream, base64)` pairs and the bytes dropped between them.
        """
        buffer = OutputBuffer(self._limit)
        for stream, data in window.get("head", []):
            buffer.add(base64.b64decode(data), stderr=stream == "err")
        buffer.skip(int(window.get("dropped", 0)))
        for stream, data in window.get("tail", []):
            buffer.add(base64.b64decode(data), stderr=stream == "err")
        return ProcessOutput(
            buffer.text(), buffer.dropped_bytes, self.running, self.exit_code, self.ended_by
        )

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for it to end; whether it has."""
        return self._ended.wait(seconds)

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float) -> bool:
        """Whether a line of its output matches `pattern` within `timeout` seconds.

        Lines of both streams count (unmarked), those already in the unread window too,
        and a last line not yet ended. False once its output ended with no such line.
        """
        with self._lock:
            kept = self._buffer.text()
            lines = [line.removeprefix(STDERR_MARK.decode()) for line in kept.split("\n")]
            if any(pattern.search(line) for line in lines):
                return True
            if not self._reader.is_alive():
                return False
            watch = self._watch = _LineWatch(pattern, lines[-1].encode())
        try:
            return watch.found.wait(timeout) and watch.matched
        finally:
            with self._lock:
                self._watch = None

    def write(self, data: bytes) -> None:
        """Write `data` to its standard input.

        Raises:
            BrokenPipeError: the process ended or closed its input.
        """
        if self._stdin is None or not self.running:
            raise BrokenPipeError(0, "the process has ended")
        self._active = time.monotonic()
        view = memoryview(data)
        while view:
            written = os.write(self._stdin, view)
            view = view[written:]

    def kill(self, reason: str = "kill", *, wait: bool = True) -> None:
        """End it and everything it started; with `wait`, wait (briefly) until it has."""
        if self.running:
            self._ended_by = reason
            self._stop()
            if wait:
                self._ended.wait(5.0)
        if wait:
            self._reader.join(5.0)

    def _add(self, data: bytes, *, stderr: bool) -> None:
        """Keep a chunk of output, and show it to a waiter for a line (b"": the end)."""
        with self._lock:
            self._buffer.add(data, stderr=stderr)
            if stderr:
                self._errors = (self._errors + data)[-_ERRORS_KEPT:]
            if self._watch is not None:
                self._watch.add(data, stderr=stderr)

    def _read_all(self) -> None:
        """Read every output descriptor until each reaches its end; enforce the idle limit."""
        with selectors.DefaultSelector() as selector:
            for index, fd in enumerate(self._fds):
                selector.register(fd, selectors.EVENT_READ, index == 1)
            tick = _TICK if self._over is None else CHANGED_EVERY
            while selector.get_map():
                for key, _ in selector.select(tick):
                    try:
                        data = os.read(key.fd, _READ_SIZE)
                    except OSError:  # a pseudo-terminal whose other end closed: EIO
                        data = b""
                    if not data:
                        selector.unregister(key.fd)
                        continue
                    self._add(data, stderr=bool(key.data))
                if not self.running:
                    continue
                if time.monotonic() - self._active > self._idle_limit:
                    self._ended_by = "idle"
                    self._stop()
                elif self._over is not None and self._over():
                    self._ended_by = "limit"
                    self._stop()
        self._add(b"", stderr=False)  # no more output: a waiter for a line stops
        self._ended.wait()
        self._finished_at = time.time()
        for fd in [*self._fds, *([self._stdin] if self._stdin is not None else [])]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._release()


class _LineWatch:
    """Output lines as they come, per stream, until one matches `pattern` (`found`)."""

    def __init__(self, pattern: re.Pattern[str], partial: bytes) -> None:
        self.pattern = pattern
        self.found = threading.Event()
        self.matched = False
        self._pending = {False: partial, True: b""}

    def add(self, data: bytes, *, stderr: bool) -> None:
        if not data:  # the end of all output
            self.found.set()
            return
        *lines, self._pending[stderr] = (self._pending[stderr] + data).split(b"\n")
        for line in [*lines, self._pending[stderr]]:
            if self.pattern.search(line.decode("utf-8", "replace").rstrip("\r")):
                self.matched = True
                self.found.set()
                return


class Processes(Protocol):
    """A backend's background processes of the current sandbox session (`Backend.processes`)."""

    def run(
        self, command: str, *, timeout: float, output_limit: int, yield_after: float
    ) -> ExecutionResult:
        """Run `command` to its end, or move it to the background past `yield_after`."""

    def start(self, command: str, *, output_limit: int, terminal: bool = False) -> Background:
        """Start `command` in the background."""

    def all(self) -> list[Background]:
        """Every background process of the session."""

    def get(self, ident: str) -> Background:
        """The process `ident` (`InvalidArgument` if the session has none such)."""

    def review(self, background: Background) -> ChangeSet | None:
        """What it changed since its last review, uncommitted (None without a view)."""

    def accepts(self, port: int) -> bool:
        """Whether `port` accepts connections on the session's loopback now."""

    def reviewed(self, background: Background) -> None:
        """The last review's set was committed or dropped."""


__all__ = ["IDLE_LIMIT", "Background", "ProcessOutput", "Processes"]
