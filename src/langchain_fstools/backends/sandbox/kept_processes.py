"""`SandboxBackend`'s background processes: kept in the sandbox, asked through the helper.

`SandboxBackend.processes()` gives this table. Each action is one helper operation
(one `execute`; `backends.sandbox.process_helper` is the sandbox's side): the first
start forks a keeper in the sandbox that runs the SSH backend's supervisor
(`backends.host_supervisor`), so a process gets what it gets on SSH: a process group
of its own, started in the workspace with the shell, its output kept in the sandbox as
the head and tail of what came since the last read (`output_limit` bytes, the middle
counted), ended when nobody read or wrote it for `IDLE_LIMIT` seconds. `kill` ends its
group; `SandboxBackend.close` ends every process; a sandbox that is gone takes them
with it, and asking about one then is `StoreUnavailable`, one sentence for the model.

The keeper numbers the processes (`p1`, `p2`, ...) and answers `list` for every worker,
so a process started by one worker of a thread is read, fed and killed by another
attached to the same sandbox.

What differs from local disk: a background process runs in place, as on SSH, not on a
copy-on-write view (a deepagents sandbox offers none), so what it changes is not
reviewed (`review` has nothing to return) and `contained` is False: the tools ask
before starting one (or writing to it) in `default` mode, as for a command on SSH. A
recorded foreground command that runs while a background process writes takes those
writes as its own (it puts the workspace back as it found it). `ready` may wait for a
port (probed in the sandbox), not for a line of output (its window lives there).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Final

from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.errors import InvalidArgument, StoreUnavailable
from langchain_fstools.shell.session.background import IDLE_LIMIT, Background, ProcessOutput
from langchain_fstools.shell.session.session import MAX_PROCESSES

if TYPE_CHECKING:
    import re

    from langchain_fstools.backends.sandbox.transport import Transport
    from langchain_fstools.core.changesets import ChangeSet

NO_READY: Final = (
    "ready= waits for a port here, not a line of output; give a port, or start it without"
    " and read its output with the process tool"
)

_ASK_GRACE: Final = 30
"""Seconds a helper run that waits for a process may take beyond the wait."""


class SandboxProcess(Background):
    """A background process in the sandbox: its window, input and end live there.

    Args:
        ident: The process id the model names it by.
        command: The command line, as given.
        started: When it started (seconds since the epoch, the sandbox's clock).
        transport: The backend's way to its helper.
        output_limit: Bytes of output kept per window (in the sandbox).
    """

    def __init__(
        self,
        ident: str,
        command: str,
        *,
        started: float,
        transport: Transport,
        output_limit: int,
    ) -> None:
        """Follow the process the keeper started as `ident`."""
        self._transport = transport
        self._code: int | None = None
        super().__init__(
            ident,
            command,
            fds=[],
            stdin=None,
            ended=threading.Event(),
            status=lambda: self._code,
            stop=self._stop_remote,
            output_limit=output_limit,
        )
        self.started = started

    def read(self) -> ProcessOutput:
        """The output since the last read, from the sandbox's window (emptied)."""
        reply = self._ask("process_read", self.ident)
        return self._window_kept_elsewhere(reply)

    def write(self, data: bytes) -> None:
        """Write `data` to its standard input in the sandbox.

        Raises:
            BrokenPipeError: the process ended.
        """
        if not self.running:
            raise BrokenPipeError(0, "the process has ended")
        try:
            self._ask("process_write", self.ident, data=data)
        except InvalidArgument:
            raise BrokenPipeError(0, "the process has ended") from None

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` (in the sandbox) for it to end; whether it has."""
        if self.running:
            timeout = math.ceil(seconds) + _ASK_GRACE
            self._ask("process_wait", self.ident, seconds, timeout=timeout)
        return not self.running

    def kill(self, reason: str = "kill", *, wait: bool = True) -> None:
        """End it and everything it started; with `wait`, wait (briefly) until it has."""
        if not self.running:
            return
        self._ended_by = reason
        self._stop()
        if wait:
            self.wait(5.0)

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float) -> bool:
        """Refused: its output window lives in the sandbox (`InvalidArgument`)."""
        del pattern, timeout
        raise InvalidArgument("ready", NO_READY)

    def update(self, standing: dict[str, Any]) -> None:
        """Take the standing the keeper reported: it ended, or it runs."""
        if standing.get("running", True) or not self.running:
            return
        ended_by = standing.get("ended_by")
        if ended_by is not None and self._ended_by is None:
            self._ended_by = ended_by
        self._code = standing.get("status")
        self._finished_at = time.time()
        self._ended.set()

    def _stop_remote(self) -> None:
        self._ask("process_kill", self.ident)

    def _ask(self, op: str, *args: Any, data: bytes = b"", timeout: int | None = None) -> Any:
        reply, _ = self._transport.run(self._transport.call(op, *args, data=data, timeout=timeout))
        self.update(reply)
        return reply


class SandboxProcesses:
    """The background processes of one sandbox (see the module).

    Args:
        transport: The backend's way to its helper.
        idle_limit: Seconds a process may go unread and unwritten before it is ended.
            Default: `IDLE_LIMIT`.
    """

    contained = False
    """What a process changes lasts at once, unreviewed (see the module)."""

    def __init__(self, transport: Transport, *, idle_limit: float = IDLE_LIMIT) -> None:
        """Bind the sandbox; nothing runs there before the first start."""
        self._transport = transport
        self._idle_limit = idle_limit
        self._known: dict[str, SandboxProcess] = {}
        self._lock = threading.Lock()
        self.started_any = False
        """Whether this table started a process (so closing has something to end)."""

    def run(
        self, command: str, *, timeout: float, output_limit: int, yield_after: float
    ) -> ExecutionResult:
        """Run `command` in the sandbox, moved to the background past `yield_after`."""
        del timeout  # `yield_after` is below it
        process = self.start(command, output_limit=output_limit)
        ended = process.wait(yield_after)
        output = process.read()
        if not ended:
            return ExecutionResult(
                output.text, None, dropped_bytes=output.skipped, process_id=process.ident
            )
        with self._lock:
            self._known.pop(process.ident, None)
        self._transport.run(self._transport.call("process_forget", process.ident))
        return ExecutionResult(output.text, output.exit_code, dropped_bytes=output.skipped)

    def start(self, command: str, *, output_limit: int, terminal: bool = False) -> Background:
        """Start `command` in the background in the sandbox's workspace.

        Raises:
            ProcessLimit: `MAX_PROCESSES` run there already.
        """
        request = {
            "command": command,
            "limit": output_limit,
            "terminal": terminal,
            "most": MAX_PROCESSES,
            "idle": self._idle_limit,
        }
        reply, _ = self._transport.run(self._transport.call("process_start", request))
        self.started_any = True
        return self._adopted(reply)

    def all(self) -> list[Background]:
        """Every background process of the sandbox, in the order they started."""
        reply, _ = self._transport.run(self._transport.call("process_list"))
        return [self._adopted(row) for row in reply["processes"]]

    def get(self, ident: str) -> Background:
        """The process `ident` (asked of the sandbox when this table has not seen it).

        Raises:
            InvalidArgument: the sandbox has no such process.
        """
        with self._lock:
            found = self._known.get(ident.strip())
        if found is not None:
            return found
        processes = self.all()
        for process in processes:
            if process.ident == ident.strip():
                return process
        known = ", ".join(process.ident for process in processes)
        raise InvalidArgument(
            "process_id",
            f"{ident!r} is not a process of this sandbox (known: {known or 'none'})",
        )

    def review(self, background: Background) -> ChangeSet | None:
        """Nothing: a background process writes in place (see the module)."""
        del background
        return None

    def reviewed(self, background: Background) -> None:
        """Nothing to do (see `review`)."""
        del background

    def accepts(self, port: int) -> bool:
        """Whether `port` accepts connections on the sandbox's loopback now."""
        found, _ = self._transport.run(self._transport.call("process_accepts", port))
        return bool(found)

    def close(self) -> None:
        """End every process in the sandbox (and its keeper).

        A sandbox that is gone took its processes with it: nothing to end there.
        """
        if self.started_any:
            with contextlib.suppress(StoreUnavailable):
                self._transport.run(self._transport.call("process_close"))
        self._ended_all()

    async def aclose(self) -> None:
        """Async `close`."""
        if self.started_any:
            with contextlib.suppress(StoreUnavailable):
                await self._transport.arun(self._transport.call("process_close"))
        self._ended_all()

    def _ended_all(self) -> None:
        with self._lock:
            for process in self._known.values():
                process.update({"running": False, "status": None, "ended_by": "session"})
            self.started_any = False

    def _adopted(self, row: dict[str, Any]) -> SandboxProcess:
        """The table's object for the keeper's row (made once), its standing updated."""
        ident = str(row["proc"])
        with self._lock:
            process = self._known.get(ident)
            if process is None:
                process = SandboxProcess(
                    ident,
                    str(row["command"]),
                    started=float(row["started"]),
                    transport=self._transport,
                    output_limit=int(row["limit"]),
                )
                self._known[ident] = process
        process.update(row)
        return process


__all__ = ["NO_READY", "SandboxProcess", "SandboxProcesses"]
