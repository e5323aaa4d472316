"""The SSH backend's background processes: a supervisor on the host, one channel per session.

`SSHBackend.processes()` gives the process table of the current session
(`shell.session.session.session_key`). On first use a session opens one exec channel that runs
`backends.host_supervisor` with the host's Python 3 (`python_path`; its source is
sent as `python3 -I -S -c SOURCE`, nothing is installed) and speaks JSON lines with it:
start, write, read, kill, list, and for `ready=` watch (a line of a process's output)
and accepts (a port of the host). The supervisor keeps each process's output window on
the host (the head and tail since the last read, `output_limit` bytes), puts each
process in a process group of its own, ends a process nobody read or wrote for
`IDLE_LIMIT` seconds, and kills every group when the channel ends: on `kill`, when the
backend is closed (`close` ends the sessions and waits for their supervisors), and when
the connection drops or this process exits. A host without Python 3 refuses background
processes with a sentence saying so; foreground commands run as before.

Background processes start in the session's directory with its exported variables
(`backends.ssh.exec`), but record no shell state of their own; a command run with
`yield_after` that ends in time records it as a foreground command does. SSH commands
write straight to the host's disk (no copy-on-write view), so what a background process
changes is not reviewed: `review` has nothing to return.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import asyncssh

from langchain_fstools.backends import host_supervisor
from langchain_fstools.backends.ssh.exec import _Commands
from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.errors import InvalidArgument, ProcessLimit, SSHConnectionFailed
from langchain_fstools.shell.session.background import IDLE_LIMIT, Background, ProcessOutput
from langchain_fstools.shell.session.session import MAX_PROCESSES, START_TIMEOUT
from langchain_fstools.shell.session.shell_state import remembering

if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Coroutine

    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.shell.session.shell_state import ShellState

_END_WAIT: Final = 5.0
"""Seconds a closing session waits for its supervisor to kill its processes and exit."""


@functools.cache
def _source() -> str:
    """The supervisor's source, as sent to the host."""
    return Path(host_supervisor.__file__).read_text(encoding="utf-8")


class RemoteProcess(Background):
    """A background process on the SSH host: its window, input and end live there.

    Args:
        ident: The process id the model names it by.
        command: The command line, as given.
        channel: The session's supervisor.
        call: Runs a coroutine on the backend's loop and waits for it.
        output_limit: Bytes of output kept per window (on the host).
        before: The shell state it started from.
    """

    def __init__(
        self,
        ident: str,
        command: str,
        *,
        channel: _Channel,
        call: Callable[[Coroutine[Any, Any, dict[str, Any]]], dict[str, Any]],
        output_limit: int,
        before: ShellState,
    ) -> None:
        """Follow the process the supervisor started as `ident`."""
        self.channel = channel
        """The supervisor that started it."""
        self._call = call
        self._code: int | None = None
        self.before = before
        self.record = b""
        """The shell state it recorded, once ended (a `yield_after` command's)."""
        self._watches = 0
        self._line_wait: _LineWait | None = None
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

    def read(self) -> ProcessOutput:
        """The output since the last read, from the host's window (emptied)."""
        try:
            reply = self._call(self.channel.request("read", proc=self.ident))
        except SSHConnectionFailed:
            if self.running:
                raise
            reply = {}
        return self._window_kept_elsewhere(reply)

    def write(self, data: bytes) -> None:
        """Write `data` to its standard input on the host.

        Raises:
            BrokenPipeError: the process ended.
        """
        if not self.running:
            raise BrokenPipeError(0, "the process has ended")
        encoded = base64.b64encode(data).decode("ascii")
        reply = self._call(self.channel.request("write", proc=self.ident, data=encoded))
        if "error" in reply:
            raise BrokenPipeError(0, "the process has ended")

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float) -> bool:
        """Whether a line of its output matches `pattern` within `timeout` seconds.

        The supervisor searches the unread window on the host (both streams, a last
        line not yet ended too), then the output as it comes, and tells the first match
        or the end of the output. False once its output ended with no such line.

        Raises:
            InvalidArgument: the host's Python cannot compile `pattern`.
        """
        self._watches += 1
        wait = self._line_wait = _LineWait(self._watches)
        if not self.running:
            wait.tell(matched=False)
        reply = self._call(
            self.channel.request(
                "watch", proc=self.ident, pattern=pattern.pattern, watch=wait.ident
            )
        )
        if "error" in reply:
            raise InvalidArgument("ready", f"{pattern.pattern!r} is {reply['error']}")
        if reply.get("matched") or reply.get("ended"):
            return bool(reply.get("matched"))
        if wait.told.wait(timeout):
            return wait.matched
        with contextlib.suppress(SSHConnectionFailed):
            self._call(self.channel.request("unwatch", proc=self.ident))
        return False

    def saw_line(self, watch: object, *, matched: bool) -> None:
        """The supervisor told watch `watch`'s outcome (a later watch ignores it)."""
        wait = self._line_wait
        if wait is not None and wait.ident == watch:
            wait.tell(matched=matched)

    def finish(self, status: int | None, ended_by: str | None, record: bytes = b"") -> None:
        """It ended (the supervisor said so, or its session ended)."""
        if ended_by is not None and self._ended_by is None:
            self._ended_by = ended_by
        self._code, self.record = status, record
        self._finished_at = time.time()
        self._ended.set()
        if self._line_wait is not None and ended_by == "session":  # no supervisor to tell it
            self._line_wait.tell(matched=False)

    def _stop_remote(self) -> None:
        with contextlib.suppress(SSHConnectionFailed):
            self._call(self.channel.request("kill", proc=self.ident))


@dataclass
class _LineWait:
    """A wait for the supervisor's answer to watch `ident`."""

    ident: int
    told: threading.Event = field(default_factory=threading.Event)
    matched: bool = False

    def tell(self, *, matched: bool) -> None:
        """The outcome came."""
        self.matched = matched
        self.told.set()


@dataclass
class _Table:
    """A session's background processes (ended ones too), numbered across supervisors."""

    processes: dict[str, RemoteProcess] = field(default_factory=dict)
    numbered: int = 0
    channel: _Channel | None = None

    def end_all(self, reason: str, channel: _Channel | None = None) -> None:
        """End the running processes (of `channel` only, when given), saying why."""
        for process in self.processes.values():
            if process.running and (channel is None or process.channel is channel):
                process.finish(None, reason)


class _Channel:
    """One supervisor on the host and the requests waiting for its answers."""

    def __init__(self, process: asyncssh.SSHClientProcess[bytes], table: _Table, host: str) -> None:
        self.process = process
        self.table = table
        self.host = host
        self.bash = False
        self.closed = False
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self.reader: asyncio.Task[None] | None = None

    async def request(self, op: str, **fields: object) -> dict[str, Any]:
        """Send one request; its answer (`{"error": ...}` when the supervisor refused)."""
        if self.closed:
            raise SSHConnectionFailed(self.host, "the session's supervisor ended")
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        line = json.dumps({"id": self._next, "op": op, **fields}) + "\n"
        try:
            self.process.stdin.write(line.encode())
            answer: dict[str, Any] = await asyncio.wait_for(future, START_TIMEOUT)
        except (asyncssh.Error, OSError, TimeoutError):  # this channel only: keep the rest
            self._pending.pop(self._next, None)
            raise SSHConnectionFailed(
                self.host, "the session's supervisor did not answer"
            ) from None
        return answer

    async def serve(self) -> None:
        """Hand answers to their requests and ends to their processes, until the channel ends."""
        try:
            while line := await self.process.stdout.readline():
                message = json.loads(line)
                event = message.get("event")
                found = self.table.processes.get(message.get("proc", ""))
                if event == "exit":
                    if found is not None:
                        record = base64.b64decode(message.get("record") or "")
                        found.finish(message.get("status"), message.get("ended_by"), record)
                elif event == "line":
                    if found is not None:
                        found.saw_line(message.get("watch"), matched=bool(message.get("matched")))
                else:
                    future = self._pending.pop(message.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(message)
        except (asyncssh.Error, OSError, ValueError):
            pass
        finally:
            self.closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(
                        SSHConnectionFailed(self.host, "the session's supervisor ended")
                    )
            self._pending.clear()
            self.table.end_all("session", self)

    async def close(self) -> None:
        """End the supervisor's input: it kills every process and exits; wait for that."""
        with contextlib.suppress(asyncssh.Error, OSError):
            self.process.stdin.write_eof()
        with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
            await asyncio.wait_for(self.process.wait_closed(), _END_WAIT)
        self.process.close()
        if self.reader is not None:
            with contextlib.suppress(asyncssh.Error, OSError, TimeoutError):
                await asyncio.wait_for(self.reader, _END_WAIT)


class SSHProcesses:
    """The background processes of one session of an `SSHBackend` (see the module).

    Args:
        table: The session's table, or None while it has started nothing.
        start: Starts a command through the session's supervisor.
        update: Keeps the shell state a `yield_after` command recorded.
        accepts: Asks the session's supervisor whether a port of the host listens.
    """

    def __init__(
        self,
        table: Callable[[], _Table | None],
        start: Callable[..., RemoteProcess],
        update: Callable[[ShellState], None],
        accepts: Callable[[int], bool],
    ) -> None:
        """Bind the table of one session."""
        self._table = table
        self._start = start
        self._update = update
        self._accepts = accepts

    def run(
        self, command: str, *, timeout: float, output_limit: int, yield_after: float
    ) -> ExecutionResult:
        """Run `command` on the host, moved to the background past `yield_after`."""
        del timeout  # `yield_after` is below it
        process = self._start(
            command,
            output_limit=output_limit,
            terminal=False,
            remember=True,
            argument="yield_after",
        )
        ended = process.wait(yield_after)
        output = process.read()
        if not ended:
            return ExecutionResult(
                output.text, None, dropped_bytes=output.skipped, process_id=process.ident
            )
        table = self._table()
        if table is not None:
            table.processes.pop(process.ident, None)
        after = process.before.read(process.record)
        self._update(after)
        return ExecutionResult(
            output.text,
            output.exit_code,
            dropped_bytes=output.skipped,
            directory=after.cwd if after.cwd != process.before.cwd else None,
        )

    def start(self, command: str, *, output_limit: int, terminal: bool = False) -> Background:
        """Start `command` in the background on the host."""
        return self._start(
            command,
            output_limit=output_limit,
            terminal=terminal,
            remember=False,
            argument="background",
        )

    def all(self) -> list[Background]:
        """Every background process of the session, in the order they started."""
        table = self._table()
        return [] if table is None else list(table.processes.values())

    def get(self, ident: str) -> Background:
        """The process `ident`.

        Raises:
            InvalidArgument: no such process in this session.
        """
        table = self._table()
        found = None if table is None else table.processes.get(ident.strip())
        if found is None:
            known = ", ".join(table.processes) if table is not None else ""
            raise InvalidArgument(
                "process_id",
                f"{ident!r} is not a process of this thread here (known: {known or 'none'});"
                " processes live in the backend and the session that started them",
            )
        return found

    def review(self, background: Background) -> ChangeSet | None:
        """Nothing: SSH commands write in place, so what they change is not reviewed."""
        del background
        return None

    def reviewed(self, background: Background) -> None:
        """Nothing to do (see `review`)."""
        del background

    def accepts(self, port: int) -> bool:
        """Whether a socket of the host listens on TCP `port` now.

        Asked of the session's supervisor, which reads the host's `/proc/net/tcp` and
        `tcp6` (so nothing connects to the server), else connects to `127.0.0.1`, then
        `::1` (see `backends.ssh.host_supervisor`).
        """
        return self._accepts(port)


class _Processes(_Commands):
    """The sessions' supervisors and process tables, by session key (touched on the loop)."""

    _python_path: str
    _tables: dict[str, _Table]

    async def _start_process(
        self,
        key: str,
        command: str,
        *,
        output_limit: int,
        terminal: bool,
        remember: bool,
        argument: str,
    ) -> RemoteProcess:
        """Start `command` through the supervisor of session `key` (started if needed)."""
        await self._session()
        table = self._tables.setdefault(key, _Table())
        if sum(1 for one in table.processes.values() if one.running) >= MAX_PROCESSES:
            raise ProcessLimit(MAX_PROCESSES)
        before = self._state(key)
        table.numbered += 1
        ident = f"p{table.numbered}"
        for attempt in range(2):  # once more if the supervisor ended (idle) as it was asked
            channel = await self._supervisor(table, argument)
            remembers = remember and channel.bash
            # in the table before it is asked for: its end can come in the answer's chunk
            process = RemoteProcess(
                ident,
                command,
                channel=channel,
                call=self._call,
                output_limit=output_limit,
                before=before,
            )
            table.processes[ident] = process
            try:
                reply = await channel.request(
                    "start",
                    proc=ident,
                    command=remembering(command) if remembers else command,
                    cwd=before.cwd,
                    fallback_cwd=self._root,
                    env=before.env,
                    terminal=terminal,
                    limit=output_limit,
                    remember=remembers,
                )
                break
            except SSHConnectionFailed:
                del table.processes[ident]
                if attempt or not channel.closed:
                    raise
        if "error" in reply:
            del table.processes[ident]
            raise InvalidArgument("command", f"it could not start on the host ({reply['error']})")
        return process

    async def _port_listens(self, key: str, port: int) -> bool:
        """Whether a socket of the host listens on `port`, asked of session `key`'s supervisor."""
        await self._session()
        channel = await self._supervisor(self._tables.setdefault(key, _Table()), "ready")
        reply = await channel.request("accepts", port=port)
        return bool(reply.get("accepts"))

    async def _supervisor(self, table: _Table, argument: str) -> _Channel:
        """The session's supervisor: the one running, else a new one, ready to serve."""
        if table.channel is not None and not table.channel.closed:
            return table.channel
        table.channel = await self._opened(table, argument)
        return table.channel

    async def _opened(self, table: _Table, argument: str) -> _Channel:
        """Open a channel running the supervisor with the host's Python; ready to serve."""
        connection = self._connection
        if connection is None:
            raise SSHConnectionFailed(self._host, "the connection was lost")
        python = shlex.quote(self._python_path)
        script = (
            f"exec {self._env.shell_prefix()}{python} -I -S -c {shlex.quote(_source())}"
            f" {IDLE_LIMIT:g}"
        )
        try:
            process = await connection.create_process(script, encoding=None)
        except asyncssh.ChannelOpenError:
            raise SSHConnectionFailed(self._host, "the server refused a new channel") from None
        channel = _Channel(process, table, self._host)
        try:
            first = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT)
            ready = json.loads(first) if first.startswith(b"{") else {}
        except (TimeoutError, ValueError):
            ready = {}
        if not ready.get("ready"):
            process.close()
            raise InvalidArgument(
                argument,
                f"the SSH host has no Python 3 at {self._python_path!r}, which background"
                " processes there need; run the command in the foreground instead",
            )
        channel.bash = bool(ready.get("bash"))
        channel.reader = asyncio.ensure_future(channel.serve())
        return channel

    async def _end_sessions(self) -> None:
        """Close every session's supervisor (each kills its processes); wait for them.

        The sessions' shell states are forgotten too: the next command starts in the root.
        """
        tables = list(self._tables.values())
        self._tables.clear()
        self._states.clear()  # the shell state ends with its session, as on local disk
        channels = [table.channel for table in tables if table.channel is not None]
        await asyncio.gather(*(channel.close() for channel in channels))
        for table in tables:
            table.end_all("session")


__all__ = ["RemoteProcess", "SSHProcesses"]
