"""Run one command as a bounded, killable process group on this machine.

`run_process` is pure process handling: spawn, read both pipes into an `OutputBuffer`
as data arrives, enforce the deadline, kill, and report the exit status. It knows
nothing of workspaces, paths or models; `LocalBackend.execute` builds the argv (a
shell, optionally inside a sandbox) and hides host paths.

The rules, in the order they apply:

1. The process starts in a new session (`start_new_session=True`), so it leads its own
   process group; standard input is `/dev/null`; stdout and stderr are two pipes.
2. Both pipes are read as data arrives (`selectors`), so stdout and stderr are
   interleaved in the order they were read. Writes to the two streams that follow each
   other within microseconds may be read in either order: two pipes carry no common
   clock.
3. At the deadline the process gets SIGTERM and up to `STOP_GRACE` seconds to end,
   then the whole process group gets SIGKILL (children and grandchildren that stayed
   in the group, such as `sleep 1000 &`). The process `LocalBackend` starts is the
   confinement helper (`shell.sandbox.confine`) or bubblewrap: on SIGTERM the helper kills
   every process the command started, also those that left the group (`setsid`), and
   bubblewrap's PID namespace ends with everything in it.
4. Once the command has exited or been killed, the pipes get `grace` seconds to reach
   end of file. A process that left the group (`setsid`) may hold them open forever;
   it is not waited for.
5. Before returning, whatever is left of the process group is killed: nothing a
   command started outlives the call, even when the command itself exited normally.
6. The exit status is the command's; a command ended by signal N reports `128 + N`,
   as shells do. A command killed at its deadline reports None and `timed_out`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.shell.session.output import OutputBuffer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

DRAIN_GRACE = 0.5
"""Seconds the pipes may stay open after the command exited or was killed."""

STOP_GRACE = 2.0
"""Seconds the process has, after SIGTERM at the deadline, before SIGKILL."""

_READ_SIZE = 64 * 1024
_POLL = 0.05
"""Seconds between checks whether the command exited while its pipes stay quiet."""


def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    timeout: float,
    output_limit: int,
    env: Mapping[str, str] | None = None,
    grace: float = DRAIN_GRACE,
    on_output: Callable[..., None] | None = None,
) -> ExecutionResult:
    """Run `argv` in its own process group until it exits or `timeout` passes.

    Args:
        argv: The program and its arguments (e.g. `["/bin/bash", "-c", command]`).
        cwd: Working directory of the process.
        timeout: Seconds before the process group is killed.
        output_limit: Most bytes of output kept (see `OutputBuffer`).
        env: Environment of the process. Default: this process's environment.
        grace: Seconds the pipes may stay open once the command ended. Default:
            `DRAIN_GRACE`.
        on_output: Also called as `on_output(data, stderr=...)` with each chunk as it
            is read (e.g. `OutputReporter.add`, to stream it). Default: None.

    Returns:
        The output, the exit status and whether the deadline passed.

    Raises:
        OSError: the program could not be started (missing, not executable, bad cwd).
    """
    buffer = OutputBuffer(output_limit)
    sink = buffer.add if on_output is None else _tee(buffer.add, on_output)
    deadline = time.monotonic() + timeout
    process = subprocess.Popen(  # noqa: S603 - the argv is the caller's, by design
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    pipes = (process.stdout, process.stderr)
    try:
        with _exit_watch(process.pid) as exit_fd:
            watch = Watch(
                exited=lambda: _has_exited(process.pid),
                stop=lambda: _stop(process.pid),
                exit_fd=exit_fd,
            )
            timed_out = pump(
                [p.fileno() for p in pipes if p is not None], sink, deadline, grace, watch
            )
    finally:
        _kill_group(process.pid)
        for pipe in pipes:
            if pipe is not None:
                pipe.close()
        status = process.wait()
    if timed_out:
        return ExecutionResult(
            buffer.text(), None, timed_out=True, dropped_bytes=buffer.dropped_bytes
        )
    exit_code = 128 - status if status < 0 else status
    return ExecutionResult(buffer.text(), exit_code, dropped_bytes=buffer.dropped_bytes)


@dataclass(frozen=True)
class Watch:
    """How `pump` sees a command end and stops it.

    Attributes:
        exited: Whether the command has ended (not reaping it).
        stop: Ends the command (and what it started) at the deadline.
        exit_fd: A descriptor readable once the command ended (a pidfd), so waiting
            for output also wakes at the exit; None to poll every 50 ms.
    """

    exited: Callable[[], bool]
    stop: Callable[[], None]
    exit_fd: int | None = None
    over: Callable[[], bool] | None = None
    """Whether the command went past a limit `pump` checks as it waits (it is stopped)."""


def pump(
    fds: Sequence[int], sink: Callable[..., None], deadline: float, grace: float, watch: Watch
) -> bool:
    """Read the output descriptors `fds` (stdout, then stderr) until the command is done.

    Returns whether the deadline passed (and `watch.stop` was called).
    """
    timed_out = False
    drain_until: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd, is_stderr in zip(fds, (False, True), strict=False):
            selector.register(fd, selectors.EVENT_READ, is_stderr)
        if watch.exit_fd is not None:
            selector.register(watch.exit_fd, selectors.EVENT_READ, _EXIT)
        while True:
            now = time.monotonic()
            if drain_until is None:
                if watch.exited():
                    drain_until = now + grace
                elif now >= deadline:
                    watch.stop()
                    timed_out = True
                    drain_until = now + grace
                elif watch.over is not None and watch.over():
                    watch.stop()
                    drain_until = now + grace
            if drain_until is not None and (now >= drain_until or not selector.get_map()):
                return timed_out
            wait = min(_POLL, deadline - now) if drain_until is None else drain_until - now
            _read_ready(selector, sink, max(wait, 0.0))


_EXIT: Final = "exit"
"""The selector's mark on the process's pidfd, readable once the process has exited."""


@contextlib.contextmanager
def _exit_watch(pid: int) -> Iterator[int | None]:
    """A pidfd of `pid`, so waiting for output also wakes at its exit (None: no pidfd).

    The command's exit is observed without reaping it (`WNOWAIT`), so its pid, which
    names the process group, cannot be reused before the final `killpg`.

    Without it, a command whose pipes closed just before it exited was noticed only at
    the next `_POLL`, up to 50 ms after it ended.
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or no such process any more
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _tee(first: Callable[..., None], second: Callable[..., None]) -> Callable[..., None]:
    """One output sink feeding two."""

    def both(data: bytes, *, stderr: bool = False) -> None:
        first(data, stderr=stderr)
        second(data, stderr=stderr)

    return both


def _read_ready(selector: selectors.BaseSelector, sink: Callable[..., None], wait: float) -> None:
    """Read what the pipes hold within `wait` seconds; forget pipes at end of file."""
    if not selector.get_map():
        time.sleep(wait)
        return
    for key, _ in selector.select(wait):
        if key.data is _EXIT:  # the caller sees the exit itself (`_has_exited`)
            selector.unregister(key.fileobj)
            continue
        data = os.read(key.fd, _READ_SIZE)
        if data:
            sink(data, stderr=key.data)
        else:
            selector.unregister(key.fileobj)


def _has_exited(pid: int) -> bool:
    """Whether the child `pid` has exited, leaving it unreaped."""
    try:
        result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return result is not None


def _stop(pid: int) -> None:
    """SIGTERM the process `pid`, give it `STOP_GRACE` seconds, then SIGKILL its group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    until = time.monotonic() + STOP_GRACE
    while not _has_exited(pid) and time.monotonic() < until:
        time.sleep(0.01)
    _kill_group(pid)


def _kill_group(pid: int) -> None:
    """SIGKILL every process of the group `pid` leads; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


__all__ = ["DRAIN_GRACE", "STOP_GRACE", "Watch", "pump", "run_process"]
