"""The SSH backend's commands: exec channels, one process group per command.

Each command runs in its own session started by a small POSIX shell wrapper, which
first prints the group's id, so a timeout can kill the whole group over a second
channel (see `SSHBackend`).

A shell that remembers: where the host has bash, `execute` runs the command with the
EXIT trap of `shell.session.shell_state`, its state descriptor a temporary file on the host
that is read back (and removed) over SFTP once the command ended; the next command of
the same session (`shell.session.session.session_key`) starts in that directory with those
exported variables. Without bash, commands run with `sh` and nothing carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import signal
from typing import TYPE_CHECKING

import asyncssh

from langchain_fstools.backends.ssh.connection import _LOST, _Connection
from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.errors import SSHConnectionFailed
from langchain_fstools.shell.sandbox.environment import CommandEnv
from langchain_fstools.shell.session.output import OutputBuffer, reporter_if_listening
from langchain_fstools.shell.session.shell_state import ShellState, remembering

if TYPE_CHECKING:
    from collections.abc import Callable


_COMMAND_CHANNELS = 6
"""Commands run at once per connection; the rest wait. OpenSSH allows 10 channels
(`MaxSessions`), one is the SFTP session, and timeouts need room for `kill`."""

_DRAIN_SECONDS = 1.0
"""How long output is still collected after a timed-out command was killed."""


# The command runs in a new session (so its own process group, id = its pid) started
# in the background of a small POSIX shell script; its first output line is that id,
# read off by the client so a timeout can kill the whole group from a second channel.
_INNER = 'printf "%s\\n" "$$"; exec sh -c "$1"'
# `wait`'s stderr is dropped so no shell reports the killed job in the output.
_WRAPPER = (
    'cd -- {cwd} || exit 1\nsetsid sh -c {inner} fstools {command} &\nwait "$!" 2>/dev/null\n'
)
# A command given input: a background job's stdin is /dev/null, so the channel's is
# handed over on descriptor 3.
_WRAPPER_WITH_INPUT = _WRAPPER.replace("&\n", "<&3 3<&- &\n").replace("\n", "\nexec 3<&0\n", 1)
# A command that remembers its shell state: with bash, descriptor 1023 is the state file
# (`$2`, or nothing if it cannot be made) and the trap (`$3`) goes before the command.
# `--norc`: bash started under sshd reads `~/.bashrc` unless told not to (its SHLVL test
# misses a restored environment, which carries no SHLVL), and a command killed in the
# middle of it may leave what it started half done (a tool's lock file, say).
_INNER_REMEMBERING = (
    'printf "%s\\n" "$$"; { exec 1023>"$2"; } 2>/dev/null || exec 1023>/dev/null;'
    ' exec bash --norc -c "$3$1"'
)
_WRAPPER_REMEMBERING = (
    "cd -- {cwd} 2>/dev/null || cd -- {fallback} || exit 1\n"
    "if command -v bash >/dev/null 2>&1; then\n"
    "setsid bash --norc -c {remembering} fstools {command} {record} {trap} &\n"
    "else\nsetsid sh -c {inner} fstools {command} &\nfi\n"
    'wait "$!" 2>/dev/null\n'
)
_RECORDS = "/tmp/fstools-state-"  # noqa: S108 - a random name, read back and removed
"""Where a command's shell state is written on the host (a random suffix follows)."""


class _Commands(_Connection):
    """Commands on the server, at most `_COMMAND_CHANNELS` at once per connection."""

    _env: CommandEnv
    _command_slots: asyncio.Semaphore | None
    _states: dict[str, ShellState]
    """The shell state of each session (`session_key`), touched on the loop only."""

    def _state(self, key: str) -> ShellState:
        """Where the next command of session `key` starts (the root, at first)."""
        return self._states.setdefault(key, ShellState(self._root))

    async def _execute(
        self, command: str, seconds: float, output_limit: int, key: str = ""
    ) -> ExecutionResult:
        buffer = OutputBuffer(output_limit)
        reporter = reporter_if_listening()
        output = buffer.add
        if reporter is not None:

            def output(data: bytes, *, stderr: bool = False) -> None:
                buffer.add(data, stderr=stderr)
                reporter.add(data, stderr=stderr)

        await self._session()
        before = self._state(key)
        record = _RECORDS + secrets.token_hex(16)
        environment = (
            self._env if before.env is None else CommandEnv.of(before.env, inherit_env=False)
        )
        try:
            code, timed_out = await self._run(
                command, before.cwd, seconds, output, environment=environment, record=record
            )
        finally:
            if reporter is not None:
                reporter.flush()
        recorded = await self._take_record(record)
        after = before if timed_out else before.read(recorded)
        self._states[key] = after
        return ExecutionResult(
            buffer.text(),
            code,
            timed_out,
            buffer.dropped_bytes,
            directory=after.cwd if after.cwd != before.cwd else None,
        )

    async def _take_record(self, record: str) -> bytes:
        """The shell state a command wrote to `record` on the host (removed); b"" if none."""
        sftp = await self._session()
        try:
            async with sftp.open(record, "rb") as handle:
                data: bytes = await handle.read()
        except asyncssh.SFTPError as exc:  # none was written (no bash), or it is unreadable
            if isinstance(exc, _LOST):
                raise
            return b""
        with contextlib.suppress(asyncssh.SFTPError):
            await sftp.remove(record)
        return data

    async def _run(
        self,
        command: str,
        cwd: str,
        seconds: float,
        output: Callable[..., None],
        *,
        environment: CommandEnv | None = None,
        stdin: bytes | None = None,
        record: str | None = None,
    ) -> tuple[int | None, bool]:
        """Run `command` in `cwd` in its own process group; kill the group after `seconds`.

        Args:
            command: A POSIX shell command line.
            cwd: Remote working directory.
            seconds: Time allowed before the group is killed.
            output: Called as `output(data, stderr=...)` with each chunk, in order.
            environment: The command's environment. Default: the session's.
            stdin: The command's input. Default: none (`/dev/null`).
            record: Where the host's bash writes the command's shell state (the
                command then starts in the root if `cwd` is gone). Default: nowhere.

        Returns:
            The exit status (128 + signal if killed by one; None on timeout) and
            whether the time ran out.
        """
        if self._command_slots is None:
            self._command_slots = asyncio.Semaphore(_COMMAND_CHANNELS)
        async with self._command_slots:
            return await self._run_now(command, cwd, seconds, output, environment, stdin, record)

    async def _run_now(  # noqa: PLR0917 - `_run`'s arguments
        self,
        command: str,
        cwd: str,
        seconds: float,
        output: Callable[..., None],
        environment: CommandEnv | None,
        stdin: bytes | None,
        record: str | None,
    ) -> tuple[int | None, bool]:
        await self._session()
        connection = self._connection
        if connection is None:
            raise SSHConnectionFailed(self._host, "the connection was lost")
        wrapper = (_WRAPPER if stdin is None else _WRAPPER_WITH_INPUT).format(
            cwd=shlex.quote(cwd), inner=shlex.quote(_INNER), command=shlex.quote(command)
        )
        if record is not None and stdin is None:
            wrapper = _WRAPPER_REMEMBERING.format(
                cwd=shlex.quote(cwd),
                fallback=shlex.quote(self._root),
                remembering=shlex.quote(_INNER_REMEMBERING),
                inner=shlex.quote(_INNER),
                command=shlex.quote(command),
                record=shlex.quote(record),
                trap=shlex.quote(remembering("")),
            )
        prefix = environment.shell_prefix() if environment is not None else ""
        script = f"exec {prefix}sh -c {shlex.quote(wrapper)}"  # POSIX sh, any login shell
        try:
            process = await connection.create_process(script, encoding=None)
        except asyncssh.ChannelOpenError:  # e.g. the server's MaxSessions: keep the connection
            raise SSHConnectionFailed(self._host, "the server refused a new channel") from None
        if stdin:
            process.stdin.write(stdin)
        process.stdin.write_eof()
        group = _GroupId()
        collecting = asyncio.ensure_future(_collect(process, group, output))
        finished = False
        try:
            await asyncio.wait_for(asyncio.shield(collecting), max(seconds, 0.0))
            finished = True
        except TimeoutError:
            pass
        finally:
            if not finished:  # the deadline, or the caller gave up: end the whole group
                await self._kill(connection, group.value)
                with contextlib.suppress(TimeoutError, *_LOST):
                    await asyncio.wait_for(asyncio.shield(collecting), _DRAIN_SECONDS)
                collecting.cancel()
                process.close()
        return (_exit_code(process), False) if finished else (None, True)

    @staticmethod
    async def _kill(connection: asyncssh.SSHClientConnection, group: int | None) -> None:
        if group is None:
            return
        with contextlib.suppress(asyncssh.Error, OSError):
            await connection.run(f"kill -KILL -- -{group}", check=False)


class _GroupId:
    """Reads the process-group id line off the front of a command's stdout."""

    def __init__(self) -> None:
        self.value: int | None = None
        self.pending = b""
        self._done = False

    def take(self, chunk: bytes) -> bytes:
        """Consume the id from `chunk` while it is still arriving; return the rest."""
        if self._done:
            return chunk
        self.pending += chunk
        line, newline, rest = self.pending.partition(b"\n")
        if not newline:
            return b""
        self._done = True
        self.pending = b""
        if line.isdigit():
            self.value = int(line)
            return rest
        return line + newline + rest

    def flush(self) -> bytes:
        """Output that ended before a whole first line arrived."""
        pending, self.pending, self._done = self.pending, b"", True
        return pending


async def _collect(
    process: asyncssh.SSHClientProcess[bytes], group: _GroupId, output: Callable[..., None]
) -> None:
    """Hand a command's stdout (without the group id line) and stderr to `output`."""

    async def pump_stdout() -> None:
        while chunk := await process.stdout.read(1 << 16):
            if rest := group.take(chunk):
                output(rest, stderr=False)
        if group.pending:
            output(group.flush(), stderr=False)

    async def pump_stderr() -> None:
        while chunk := await process.stderr.read(1 << 16):
            output(chunk, stderr=True)

    await asyncio.gather(pump_stdout(), pump_stderr())
    await process.wait_closed()


def _exit_code(process: asyncssh.SSHClientProcess[bytes]) -> int | None:
    if process.exit_status is not None and process.exit_status >= 0:
        return process.exit_status
    if process.exit_signal:
        name = process.exit_signal[0]
        with contextlib.suppress(KeyError):
            return 128 + signal.Signals[f"SIG{name}"].value
    return None
