"""Relays: the helper's commands run through a process kept in the sandbox, not an `execute` each.

A provider's `execute` is a round trip of its own each time: `docker exec` costs a
Docker sandbox about 40 ms, more than the file operation it runs. A sandbox that also
offers a stream (`StreamingSandbox.open_stream`: a process in the sandbox whose standard
input this side writes and whose output it reads, as `docker exec -i` gives) gets a
relay instead: one `python3 -I -S -c RELAY` per stream, started once, that runs each
command it is sent with `sh -c` and sends back what `execute` would have returned. The
commands are the transport's own (the resident helper's client, a search's shell), never
the agent's (`transport.AGENTS_COMMANDS`): those keep the provider's `execute`, with its
environment and its way of ending what they leave.

The wire, each way (a command and its output are bytes, never parsed):

    relay -> here   `HELLO`, once it runs
    here -> relay   `<timeout> <length>\n<command>`
    relay -> here   `+` as soon as it has the whole command (before it runs it), then
                    `<exit code> <cut> <length>\n<output>`

A command runs in a session of its own with standard input from `/dev/null` and its
standard error in its output (as a provider's `execute` gives them); when its shell
ends, what is left of its process group is killed, and at its timeout the whole group
is (exit code 124, the output saying so, as deepagents' providers do). Output beyond
`OUTPUT_LIMIT` is left out (`cut`: the response is `truncated`). The relay ends when
its standard input ends (this side closed the stream: a command still running is killed
first) or after `RELAY_IDLE` seconds without a command, so a provider's own idle end
(`DockerSandbox(idle_timeout=...)`) still comes.

What a failure means here: a relay that cannot start (no python3, a provider that
refuses streams) is not used again after `STARTS` tries, and each command it would have
run goes to `execute`; a stream that ends before the `+`, or that did not take the whole
command by its deadline, ran nothing, and its command goes to `execute` too. One that
ends after the `+` may have run its command, and so may one silent past its command's
timeout and `REPLY_GRACE` (then let go): a command the caller marked `repeatable` (a
read) goes to `execute`, any other gets a response with no exit code and a sentence, as
a sandbox that went away mid-command would give.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import threading
import time
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

OUTPUT_LIMIT: Final = 64 << 20
"""Bytes of one command's output a relay sends back; the rest is left out (`truncated`)."""

RELAY_IDLE: Final = 30.0
"""Seconds a relay in the sandbox waits for a command before it ends."""

KEPT_IDLE: Final = RELAY_IDLE / 2
"""Seconds this side keeps an unused relay: well before it ends by itself, so a command is
never sent to a relay that is ending."""

KEPT: Final = 4
"""Idle relays kept open at most (more run at once while calls overlap)."""

STARTS: Final = 2
"""Relays that failed to start in a row, after which a sandbox's commands all use `execute`."""

HELLO_WAIT: Final = 15.0
"""Seconds a new relay has to say it runs (a provider's start of a process, then Python's)."""

REPLY_GRACE: Final = 5.0
"""Seconds beyond a command's timeout this side waits for its reply (the relay's own kill
at the timeout, then the output's way back)."""

HELLO: Final = b"<fstools-relay>\n"
RECEIVED: Final = b"+"

UNANSWERED: Final = "Error: the sandbox ended the helper's command before it answered."
"""The output of a response for a command whose relay ended after it took the command."""

_RELAY: Final = r"""
import os, select, signal, subprocess, sys, time
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
idle, limit = float(sys.argv[1]), int(sys.argv[2])
pending = bytearray()
def send(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
def fill(wait):
    if not select.select([0], [], [], wait)[0]:
        return False
    chunk = os.read(0, 1 << 16)
    pending.extend(chunk)
    return bool(chunk)
def kill(group):
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
def run(command, seconds):
    child = subprocess.Popen(
        ["sh", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    out = child.stdout.fileno()
    try:
        ended = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        ended = None
    output, cut, timed_out, draining = bytearray(), 0, False, False
    deadline = time.monotonic() + seconds if seconds > 0 else None
    watched = [out, 0] + ([ended] if ended is not None else [])
    while True:
        wait = 0.05 if ended is None and not draining else None
        if deadline is not None:
            left = max(deadline - time.monotonic(), 0.0)
            wait = left if wait is None else min(wait, left)
        ready = select.select(watched, [], [], wait)[0]
        if not ready and deadline is not None and time.monotonic() >= deadline:
            if draining:
                break
            timed_out = True
        elif 0 in ready and not fill(0):
            kill(child.pid)
            child.wait()
            raise SystemExit(0)
        elif not draining and (ended in ready if ended is not None else child.poll() is not None):
            pass
        elif out in ready:
            chunk = os.read(out, 1 << 16)
            if not chunk:
                break
            if len(output) + len(chunk) <= limit:
                output += chunk
            else:
                cut += len(chunk)
            continue
        else:
            continue
        if not draining:
            draining = True
            kill(child.pid)
            if ended is not None:
                watched.remove(ended)
            grace = time.monotonic() + 2.0
            deadline = grace if deadline is None or timed_out else min(deadline, grace)
    child.stdout.close()
    if ended is not None:
        os.close(ended)
    kill(child.pid)
    code = child.wait()
    if code < 0:
        code = 128 - code
    if timed_out:
        code = 124
        output += b"\n\nError: Command timed out after %d seconds and was killed." % seconds
    send(b"%d %d %d\n" % (code, cut, len(output)) + output)
send(b"<fstools-relay>\n")
while True:
    while b"\n" not in pending:
        if not fill(idle):
            raise SystemExit(0)
    line = bytes(pending[: pending.index(b"\n")])
    del pending[: len(line) + 1]
    seconds, size = map(int, line.split())
    while len(pending) < size:
        if not fill(idle):
            raise SystemExit(0)
    command = bytes(pending[:size]).decode("utf-8", "surrogateescape")
    del pending[:size]
    send(b"+")
    run(command, seconds)
"""


@runtime_checkable
class SandboxStream(Protocol):
    """A process in the sandbox: its standard input written here, its output read here."""

    def send(self, data: bytes, timeout: float | None) -> None:
        """Write `data` to the process's standard input, within `timeout` seconds.

        Raises:
            TimeoutError: it did not all go within `timeout` (the stream is then not
                written again).
            OSError: the stream is broken.
        """
        ...

    def receive(self, timeout: float | None) -> bytes:
        """The next bytes of its output, as they come; `b""` once it ended.

        Raises:
            TimeoutError: nothing came within `timeout` seconds (the stream is then
                not read again).
            OSError: the stream is broken.
        """
        ...

    def close(self) -> None:
        """End the standard input and let the stream go (the process then ends)."""
        ...


@runtime_checkable
class StreamingSandbox(Protocol):
    """A sandbox that can keep a process open for this side (`DockerSandbox` is one)."""

    def open_stream(self, command: str) -> SandboxStream:
        """Start `sh -c command` in the sandbox with its standard input open to this side.

        Raises:
            OSError: the sandbox could not start it.
        """
        ...


@dataclass(frozen=True, slots=True)
class Relayed:
    """What a relay returned for one command: deepagents' `ExecuteResponse` shape."""

    output: str
    exit_code: int | None
    truncated: bool = False


class _Ended(Exception):
    """The stream ended (or broke) before a whole message came."""


class _Relay:
    """One relay's stream and what it sent that was not read yet."""

    def __init__(self, stream: SandboxStream) -> None:
        self.stream = stream
        self.pending = bytearray()
        self.used = time.monotonic()

    def take(self, size: int, until: float) -> bytes:
        """The next `size` bytes it sends, by `until` (monotonic; `math.inf`: no limit).

        Raises:
            TimeoutError: they did not come in time.
            _Ended: the stream ended first.
        """
        while len(self.pending) < size:
            self._more(until)
        taken = bytes(self.pending[:size])
        del self.pending[:size]
        return taken

    def expect(self, message: bytes, until: float) -> None:
        """Read `message`, the next thing it sends, by `until`.

        Raises:
            TimeoutError: it did not come in time.
            _Ended: the stream ended first, or sent something else.
        """
        if self.take(len(message), until) != message:
            raise _Ended

    def line(self, until: float) -> bytes:
        """The next line it sends (without its newline), by `until`."""
        while b"\n" not in self.pending:
            self._more(until)
        return self.take(self.pending.index(b"\n") + 1, until)[:-1]

    def _more(self, until: float) -> None:
        left = _left(until)
        if left == 0:
            raise TimeoutError
        try:
            chunk = self.stream.receive(left)
        except TimeoutError:  # an OSError too, but not a broken stream
            raise
        except OSError as error:
            raise _Ended from error
        if not chunk:
            raise _Ended
        self.pending += chunk

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a broken stream's own failure to close
            self.stream.close()


def _left(until: float) -> float | None:
    """Seconds left until `until` (None: no limit)."""
    return None if until == math.inf else max(until - time.monotonic(), 0.0)


class Relays:
    """The relays of one sandbox: started when needed, kept while they serve (module docstring).

    Args:
        sandbox: The provider's sandbox, which offers streams.
        python: Name or path of Python 3 in the sandbox.
    """

    def __init__(self, sandbox: StreamingSandbox, python: str) -> None:
        """Remember the sandbox; no relay starts before the first command."""
        self._sandbox = sandbox
        self._command = shlex.join(
            [python, "-I", "-S", "-c", _RELAY, f"{RELAY_IDLE:g}", str(OUTPUT_LIMIT)]
        )
        self._idle: list[_Relay] = []
        self._lock = threading.Lock()
        self._failed_starts = 0
        self._pid = os.getpid()
        """The process whose relays `_idle` holds: a forked child starts its own."""

    @property
    def usable(self) -> bool:
        """Whether commands are still sent to relays (not after `STARTS` failed starts)."""
        return self._failed_starts < STARTS

    def execute(self, command: str, timeout: int, *, repeatable: bool) -> Relayed | None:
        """Run `command` through a relay, as the provider's `execute` would.

        Args:
            command: The shell command.
            timeout: Seconds it may run (0: no limit).
            repeatable: Whether running it twice is harmless (a read): then a relay that
                ended after it took the command hands it back to `execute`.

        Returns:
            Its response; None when `execute` should run it instead (no relay could
            be had, or the command surely did not run, or it is repeatable).
        """
        relay = self._relay()
        if relay is None:
            return None
        body = command.encode("utf-8", "surrogateescape")
        until = time.monotonic() + timeout + REPLY_GRACE if timeout > 0 else math.inf
        received = False
        try:
            relay.stream.send(b"%d %d\n" % (timeout, len(body)) + body, _left(until))
        except OSError:  # the relay never had the whole command: it cannot run it
            relay.close()
            return None
        try:
            relay.expect(RECEIVED, until)
            received = True
            code, cut, size = map(int, relay.line(until).split())
            output = relay.take(size, until)
        except TimeoutError:  # silent: it may run the command yet
            relay.close()
            return None if repeatable else Relayed(UNANSWERED, None)
        except (_Ended, OSError, ValueError):  # ended or broken: before the `+`, nothing ran
            relay.close()
            return None if repeatable or not received else Relayed(UNANSWERED, None)
        self._keep(relay)
        return Relayed(output.decode("utf-8", "replace"), code, truncated=cut > 0)

    def close(self) -> None:
        """Let every idle relay go (each then ends in the sandbox)."""
        self._forget_if_forked()
        with self._lock:
            idle, self._idle = self._idle, []
        for relay in idle:
            relay.close()

    def _relay(self) -> _Relay | None:
        """An idle relay used lately, or a new one; None if none starts."""
        stale: list[_Relay] = []
        found = None
        self._forget_if_forked()
        with self._lock:
            now = time.monotonic()
            while self._idle:
                relay = self._idle.pop()
                if now - relay.used < KEPT_IDLE:
                    found = relay
                    break
                stale.append(relay)
        for relay in stale:
            relay.close()
        return found or self._start()

    def _forget_if_forked(self) -> None:
        """In a forked child, drop the parent's relays and its lock.

        Closing the relays would end the parent's streams; another thread may have held
        the lock at the fork.
        """
        if self._pid != os.getpid():
            self._lock, self._idle, self._pid = threading.Lock(), [], os.getpid()

    def _start(self) -> _Relay | None:
        if not self.usable:
            return None
        try:
            relay = _Relay(self._sandbox.open_stream(self._command))
        except Exception:  # noqa: BLE001 - any provider's refusal: `execute` runs it instead
            self._failed_starts += 1
            return None
        try:
            relay.expect(HELLO, time.monotonic() + HELLO_WAIT)
        except (_Ended, TimeoutError):
            relay.close()
            self._failed_starts += 1
            return None
        self._failed_starts = 0
        return relay

    def _keep(self, relay: _Relay) -> None:
        relay.used = time.monotonic()
        with self._lock:
            if len(self._idle) < KEPT:
                self._idle.append(relay)
                return
        relay.close()


__all__ = [
    "OUTPUT_LIMIT",
    "RELAY_IDLE",
    "Relayed",
    "Relays",
    "SandboxStream",
    "StreamingSandbox",
]
