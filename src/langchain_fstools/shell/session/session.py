"""A sandbox session: one warm supervisor per thread that starts its commands in milliseconds.

`Session.run` starts one command through the session's supervisor (`shell.sandbox.supervisor`)
and reads its output as `shell.session.process.run_process` does; the supervisor is started on
first use, inside bubblewrap when the confinement has it (`Confinement.session`), so the
namespaces, the private `/tmp` and the loopback network are the session's, shared by
its commands, while each command still gets a copy-on-write view of its own.

The session is owned by a thread of its own (`_Owner`), which starts the supervisor
and lives as long as it: bubblewrap's `--die-with-parent` and the supervisor's parent-
death signal fire when the *thread* that started them exits, so a session started from
a worker pool's thread would otherwise die with that thread. The owner reads the
supervisor's messages; when the agent's process ends, the control socket closes and
the supervisor kills every command and exits (`close` does the same at once).

The shell state (`shell.session.shell_state`) lives here: each command starts from the state
the last one to finish recorded, so parallel commands of one session start alike.

`session_key` names the session a call belongs to (the tools set it from the thread id
and checkpoint namespace); backends keep one session per key (`Sessions`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from langchain_fstools.core.changesets import remove_folder
from langchain_fstools.core.results import ExecutionResult, LimitHit
from langchain_fstools.errors import CommandTooLarge, ProcessLimit
from langchain_fstools.shell.sandbox import supervisor
from langchain_fstools.shell.sandbox.limits import CgroupSet, ChangedBytes, limit_hit
from langchain_fstools.shell.session.background import Background
from langchain_fstools.shell.session.output import STDERR_MARK, OutputBuffer
from langchain_fstools.shell.session.process import DRAIN_GRACE, Watch, pump
from langchain_fstools.shell.session.shell_state import (
    STATE_FD,
    STATE_LIMIT,
    ShellState,
    recorded,
    remembering,
    state_record,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from langchain_fstools.shell.sandbox.plan import SessionPlan

session_key: contextvars.ContextVar[str] = contextvars.ContextVar("fstools_session_key", default="")
"""The session of the current call: a thread id and checkpoint namespace, or "" (one
session of the backend's own)."""

START_TIMEOUT: Final = 30.0
"""Seconds a supervisor may take to start and answer its first request."""

_KILL_WAIT: Final = 5.0
"""Seconds a killed command's keeper may take to report its end."""


MAX_PROCESSES: Final = 8
"""Background processes one session runs at once."""

MAX_SESSIONS: Final = 16
"""Sessions one backend keeps; past it, the one idle the longest is ended first."""

_started_here: contextvars.ContextVar[list[tuple[Sessions, str]] | None] = contextvars.ContextVar(
    "fstools_started_sessions", default=None
)
"""The sessions started inside the innermost `started_sessions` block, if any."""


class SessionEnded(OSError):
    """The session's supervisor is gone (it could not start, or ended); the reason says why."""


@dataclass(frozen=True)
class _Launched:
    job: _Job
    fds: tuple[int, int, int]
    before: ShellState
    stdin: int | None = None


@dataclass
class _Job:
    ident: int
    ended: threading.Event = field(default_factory=threading.Event)
    paused: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    status: int | None = None
    wake: tuple[int, int] = field(default_factory=lambda: os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK))
    """Readable once the command ended: its keeper writes the status there (`N\\n`) as
    soon as it knows it, and `finish` a mark once the supervisor's message came."""
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def finish(self, status: int | None, error: str | None = None) -> None:
        # one lock with `close`: the waiter, woken by `ended`, may close the pipe at once,
        # and a write after that would land in whatever took the descriptor's number
        with self._lock:
            if self.ended.is_set():  # told already: a session ending after it changes nothing
                return
            self.status, self.error = status, error
            self.ended.set()
            if not self.closed:
                with contextlib.suppress(OSError):
                    os.write(self.wake[1], b"x")

    def exited(self) -> bool:
        """Whether the command has ended, as its keeper or the supervisor said."""
        if self.ended.is_set():
            return True
        with self._lock:
            if self.closed:
                return self.ended.is_set()
            try:
                said = os.read(self.wake[0], 64)
            except BlockingIOError:
                said = b""
            told = [int(line) for line in said.split(b"\n") if line.isdigit()]
            if told and not self.ended.is_set():
                self.status = told[0]
                self.ended.set()
        return self.ended.is_set()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            for fd in self.wake:
                os.close(fd)


class Session:
    """One warm supervisor and the shell state of the commands it starts."""

    def __init__(self, plan: SessionPlan) -> None:
        """A session that starts `plan`'s supervisor on first use."""
        self.plan = plan
        self.state = ShellState(plan.cwd)
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._spares: list[tuple[int, socket.socket]] = []
        """Sockets to command processes the supervisor forked ahead, by spare number."""
        self._spared = threading.Condition(self._lock)
        self._no_spare: str | None = None
        """Why the supervisor could fork no spare (until it is asked again)."""
        self._channel: socket.socket | None = None
        self._owner: threading.Thread | None = None
        self.process: subprocess.Popen[bytes] | None = None
        """The supervisor (or its bubblewrap) once started."""
        self._jobs: dict[int, _Job] = {}
        self._next = 0
        self._numbered = 0
        self.background: dict[str, Background] = {}
        """The session's background processes, by process id."""
        self._jobs_of: dict[str, _Job] = {}
        self._ended: str | None = None
        self._closed = False
        self._cgroups: CgroupSet | None = None

    def run(
        self,
        command: str,
        *,
        interpreter: str,
        env: Mapping[str, str],
        timeout: float,
        output_limit: int,
        view: Sequence[str] | None = None,
        masks: Sequence[str] = (),
        read_only: Sequence[str] = (),
        on_output: Callable[..., None] | None = None,
        grace: float = DRAIN_GRACE,
        yield_after: float | None = None,
    ) -> tuple[ExecutionResult, ShellState, Background | None]:
        """Run `command` with `interpreter` in the session until it exits or `timeout` passes.

        Args:
            command: The shell line.
            interpreter: The shell (`bash`) that runs it.
            env: The environment, unless the shell state carries one.
            timeout: Seconds before the command and everything it started are killed.
            output_limit: Most bytes of output kept (see `OutputBuffer`).
            view: `[workspace, upper, work, *layers]` (paths as the sandbox shows them,
                layers laid over the workspace topmost first) for a
                copy-on-write view of its own; None for the workspace as mounted.
            masks: Paths made to look empty over the view.
            read_only: Paths the command may not change.
            on_output: Also called with each chunk of output as it is read.
            grace: Seconds the output may stay open once the command ended.
            yield_after: Seconds after which a command still running moves to the
                background (returned third) instead of running on to `timeout`.

        Returns:
            The result, the shell state the command left (also kept as the session's
            `state` for the next command), and the background process it became.

        Raises:
            SessionEnded: the supervisor could not start or ended meanwhile.
        """
        buffer = OutputBuffer(output_limit)
        sink = buffer.add if on_output is None else _tee(buffer.add, on_output)
        launched = self._launch(
            command, interpreter, env, view=view, masks=masks, read_only=read_only
        )
        job, (out_r, err_r, record) = launched.job, launched.fds
        counted = self._limit_counts()
        yielding = yield_after is not None and yield_after < timeout
        until = time.monotonic() + (
            yield_after if yield_after is not None and yielding else timeout
        )
        over = self._over_changed_bytes(view)
        watch = Watch(
            job.exited,
            (lambda: None) if yielding else (lambda: self._kill(job)),
            job.wake[0],
            None if yielding else over,  # moved to the background, its reader checks
        )
        try:
            timed_out = pump([out_r, err_r], sink, until, grace, watch) and not (
                yielding and job.ended.is_set()
            )
            if timed_out and yielding:
                background = self._adopt(
                    launched, command, buffer, output_limit, over, counted=counted
                )
                result = ExecutionResult(
                    buffer.text(),
                    None,
                    dropped_bytes=buffer.dropped_bytes,
                    process_id=background.ident,
                )
                return result, self.state, background
        except BaseException:
            self._close_launched(launched)
            raise
        try:
            if timed_out and not job.ended.is_set():
                self._kill(job)
                job.ended.wait(_KILL_WAIT)
            record_read = b"" if timed_out else recorded(record)
            after = launched.before.read(record_read or b"")
        finally:
            self._close_launched(launched)
        if job.error is not None:
            raise SessionEnded(job.error)
        if over is not None:
            over(now=True)  # what it wrote since the last check counts too
        self.state = after
        status = None if timed_out else job.status
        result = ExecutionResult(
            buffer.text(),
            status,
            timed_out=timed_out,
            dropped_bytes=buffer.dropped_bytes,
            limit=(
                over.hit
                if over is not None and over.hit
                else self._limit_hit(counted, status, _errors(buffer.text()))
                or (LimitHit("shell_state", STATE_LIMIT) if record_read is None else None)
            ),
        )
        return result, after, None

    def _over_changed_bytes(self, view: Sequence[str] | None) -> ChangedBytes | None:
        """The check of `Limits.changed_bytes` on the command's upper layer, if both are set."""
        limit = None if self.plan.limits is None else self.plan.limits.changed_bytes
        if view is None or limit is None:
            return None
        return ChangedBytes(view[1], limit)

    def _limit_counts(self) -> dict[str, int]:
        """How often the session's cgroup has refused or killed so far, by limit."""
        return self._cgroups.counts() if self._cgroups is not None else {}

    def _limit_hit(
        self, before: Mapping[str, int], status: int | None, errors: str
    ) -> LimitHit | None:
        """The limit a command hit (cgroup counts since `before`, its status, its `errors`)."""
        if self.plan.limits is None:
            return None
        now = self._limit_counts()
        events = [name for name, count in now.items() if count > before.get(name, 0)]
        return limit_hit(self.plan.limits, events, status, errors)

    def _close_launched(self, launched: _Launched) -> None:
        for fd in launched.fds:
            if fd >= 0:
                os.close(fd)
        self._forget(launched.job)

    def spawn(
        self,
        command: str,
        *,
        interpreter: str,
        env: Mapping[str, str],
        output_limit: int,
        view: Sequence[str] | None = None,
        masks: Sequence[str] = (),
        read_only: Sequence[str] = (),
        terminal: bool = False,
    ) -> Background:
        """Start `command` in the background (see `shell.session.background`).

        Args:
            command: The shell line.
            interpreter: The shell (`bash`) that runs it.
            env: The environment, unless the shell state carries one.
            output_limit: Bytes of output kept between two reads.
            view: As for `run`: its copy-on-write view, kept for its lifetime.
            masks: Paths made to look empty over the view.
            read_only: Paths the command may not change.
            terminal: Give it a pseudo-terminal (for programs that need one).

        Raises:
            SessionEnded: the supervisor could not start or ended meanwhile.
            ProcessLimit: the session runs `MAX_PROCESSES` background processes already.
        """
        with self._lock:
            running = sum(1 for one in self.background.values() if one.running)
        if running >= MAX_PROCESSES:
            raise ProcessLimit(MAX_PROCESSES)
        counted = self._limit_counts()
        if terminal:  # one pseudo-terminal for input and output
            ours, theirs = os.openpty()  # neither inheritable
        else:
            theirs, ours = os.pipe2(os.O_CLOEXEC)
        try:
            launched = self._launch(
                command,
                interpreter,
                env,
                view=view,
                masks=masks,
                read_only=read_only,
                stdin=theirs,
                output=theirs if terminal else None,
            )
        finally:
            os.close(theirs)
        if terminal:
            os.close(launched.fds[0])
            os.close(launched.fds[1])
            launched = replace(launched, fds=(ours, -1, launched.fds[2]))
        launched = replace(launched, stdin=ours)
        over = self._over_changed_bytes(view)
        return self._adopt(
            launched, command, OutputBuffer(output_limit), output_limit, over, counted=counted
        )

    def pause(self, background: Background) -> bool:
        """Stop every process of `background` until `resume` (False if it has ended)."""
        job = self._jobs_of.get(background.ident)
        channel = self._channel
        if job is None or channel is None or job.ended.is_set():
            return False
        job.paused.clear()
        with contextlib.suppress(OSError), self._send_lock:
            supervisor.send(channel, {"op": "pause", "id": job.ident})
        return job.paused.wait(_KILL_WAIT)

    def resume(self, background: Background) -> None:
        """Let the processes of `background` run again."""
        job = self._jobs_of.get(background.ident)
        channel = self._channel
        if job is None or channel is None:
            return
        with contextlib.suppress(OSError), self._send_lock:
            supervisor.send(channel, {"op": "resume", "id": job.ident})

    def _launch(
        self,
        command: str,
        interpreter: str,
        env: Mapping[str, str],
        *,
        view: Sequence[str] | None,
        masks: Sequence[str],
        read_only: Sequence[str],
        stdin: int | None = None,
        output: int | None = None,
    ) -> _Launched:
        """Start `command`; its output, state record and job (stdin empty unless given)."""
        before = self.state
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        record = state_record()
        given = stdin
        if stdin is None:
            stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        request: dict[str, object] = {
            "argv": [interpreter, "-c", remembering(command)],
            "cwd": before.cwd,
            "fallback_cwd": self.plan.cwd,
            "env": dict(before.env) if before.env is not None else {**env, **self.plan.command_env},
            "targets": [0, 1, 2, STATE_FD],
            "view": list(view) if view is not None else None,
            "masks": list(masks),
            "read_only": list(read_only),
        }
        sent = [stdin, out_w if output is None else output, err_w if output is None else output]
        mounts = [*([view[0]] if view else []), *read_only, *masks]
        try:
            job = self._start(request, [*sent, record], mounts)
        except BaseException:
            for fd in (out_r, err_r, record):
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
            if given is None:
                os.close(stdin)
        return _Launched(job, (out_r, err_r, record), before)

    def _adopt(
        self,
        launched: _Launched,
        command: str,
        buffer: OutputBuffer,
        output_limit: int,
        over: ChangedBytes | None,
        *,
        counted: Mapping[str, int],
    ) -> Background:
        """Keep a launched command as a background process of this session.

        `counted`: the session's limit counts when it started, by which its end names
        the limit it hit (`_limit_hit`).
        """
        job = launched.job
        out_r, err_r, record = launched.fds
        os.close(record)
        with self._lock:
            self._numbered += 1
            ident = f"p{self._numbered}"
        background = Background(
            ident,
            command,
            fds=[fd for fd in (out_r, err_r) if fd >= 0],
            stdin=launched.stdin,
            ended=job.ended,
            status=lambda: job.status,
            stop=lambda: self._kill(job),
            output_limit=output_limit,
            buffer=buffer,
            over=over,
            judge=functools.partial(self._limit_hit, counted),
            release=lambda: self._forget(job),
        )
        with self._lock:
            self.background[ident] = background
            self._jobs_of[ident] = job
        return background

    def close(self, *, wait: bool = True) -> None:
        """End every command and the supervisor; remove the session's folders.

        With `wait=False` (the garbage collector's call, maybe on an event loop) it
        only tells the supervisor to end; the owner thread finishes the rest.
        """
        for background in list(self.background.values()):
            if background.running:
                background.kill("session", wait=wait)
        with self._spared:
            self._closed = True
            self._spared.notify_all()
            channel, owner = self._channel, self._owner
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.shutdown(socket.SHUT_RDWR)
        if owner is None:
            self._remove_folders()
        elif wait and owner is not threading.current_thread():
            owner.join(START_TIMEOUT)

    @property
    def alive(self) -> bool:
        """Whether the supervisor runs (or has yet to be started)."""
        return self._ended is None and not self._closed

    @property
    def idle(self) -> bool:
        """Whether no command and no background process runs in the session now."""
        with self._lock:
            busy = bool(self._jobs)
        return not busy and not any(found.running for found in self.background.values())

    # ----- the supervisor ------------------------------------------------------------

    def _start(self, request: Mapping[str, object], fds: list[int], mounts: list[str]) -> _Job:
        """Send `request` to a spare command process, then tell the supervisor."""
        channel = self._running()
        with self._lock:
            self._next += 1
            job = _Job(self._next)
            self._jobs[job.ident] = job
        try:
            while True:
                number, spare = self._spare(channel)
                try:
                    supervisor.send(spare, {"id": job.ident, **request}, [*fds, job.wake[1]])
                    break
                except (BrokenPipeError, ConnectionError):  # its process ended: another comes
                    continue
                finally:
                    spare.close()
            started = {"op": "start", "id": job.ident, "spare": number, "mounts": mounts}
            with self._send_lock:
                supervisor.send(channel, started)
        except SessionEnded:
            self._forget(job)
            raise
        except supervisor.MessageTooLarge as exc:
            self._forget(job)
            raise CommandTooLarge(exc.size, supervisor.MESSAGE_SIZE) from None
        except OSError as exc:
            self._forget(job)
            raise SessionEnded(f"the sandbox session ended ({exc.strerror})") from None
        return job

    def _spare(self, channel: socket.socket) -> tuple[int, socket.socket]:
        """The next spare command process the supervisor handed out (asks, waits for one).

        Raises:
            SessionEnded: the session ended, or no spare could be forked.
        """
        with self._spared:
            missing = not self._spares
        if missing:  # the supervisor forks one when its last command ended, or when asked
            with contextlib.suppress(OSError), self._send_lock:
                supervisor.send(channel, {"op": "spare"})
        with self._spared:
            if not self._spared.wait_for(
                lambda: self._spares or self._no_spare or self._ended or self._closed,
                START_TIMEOUT,
            ):
                raise SessionEnded("the sandbox session did not answer in time")
            if self._spares:
                return self._spares.pop(0)
            refused, self._no_spare = self._no_spare, None
        if refused is None:
            raise SessionEnded(self._ended or "the sandbox session was closed")
        raise SessionEnded(f"the command could not start ({refused})")

    def _kill(self, job: _Job) -> None:
        channel = self._channel
        if channel is None or job.ended.is_set():
            return
        with contextlib.suppress(OSError), self._send_lock:
            supervisor.send(channel, {"op": "kill", "id": job.ident})

    def _forget(self, job: _Job) -> None:
        with self._lock:
            self._jobs.pop(job.ident, None)
        job.close()

    def _running(self) -> socket.socket:
        """The control socket, starting the supervisor (and its owner thread) if needed."""
        with self._lock:
            if self._closed:
                raise SessionEnded("the sandbox session was closed")
            if self._ended is not None:
                raise SessionEnded(self._ended)
            if self._channel is not None:
                return self._channel
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            ready = threading.Event()
            owner = threading.Thread(
                target=self._own, args=(theirs, ready), name="fstools-session", daemon=True
            )
            self._channel, self._owner = ours, owner
            owner.start()
        ready.wait(START_TIMEOUT)
        if self._ended is not None:
            raise SessionEnded(self._ended)
        return ours

    def _own(self, theirs: socket.socket, ready: threading.Event) -> None:
        """The owner thread: start the supervisor, dispatch its messages, outlive it."""
        channel = self._channel
        assert channel is not None  # noqa: S101 - set before the thread starts
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - read at the end
        try:
            process = subprocess.Popen(  # noqa: S603 - our own supervisor
                self.plan.argv,
                env={**self.plan.env, supervisor.CONTROL_VARIABLE: str(theirs.fileno())},
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            self._ended = f"the sandbox session could not start ({exc.strerror})"
            ready.set()
            errors.close()
            return
        finally:
            theirs.close()
        self.process = process
        self._cgroups = CgroupSet.create(self.plan.limits) if self.plan.limits else None
        if self._cgroups is not None:
            self._cgroups.place(process.pid)
        ready.set()
        try:
            self._dispatch(channel)
        finally:
            process.wait()
            errors.seek(0)
            said = errors.read().decode("utf-8", "replace").strip().splitlines()
            errors.close()
            reason = said[-1] if said else f"exit status {process.returncode}"
            self._ended = f"the sandbox session ended ({reason})"
            with self._spared:
                jobs = list(self._jobs.values())
                for _number, spare in self._spares:
                    spare.close()
                self._spares.clear()
                self._spared.notify_all()
            for job in jobs:
                job.finish(None, self._ended)
            channel.close()
            if self._cgroups is not None:
                self._cgroups.remove()
            self._remove_folders()

    def _dispatch(self, channel: socket.socket) -> None:
        while True:
            try:
                message, fds = supervisor.receive(channel)
            except OSError:
                return
            if message is not None and message.get("op") == "spare":
                self._keep_spare(message, fds)
                continue
            for fd in fds:
                os.close(fd)
            if message is None:
                return
            with self._lock:
                ident = message.get("id")
                job = self._jobs.get(ident) if isinstance(ident, int) else None
            if job is None:
                continue
            if message.get("op") == "paused":
                job.paused.set()
            elif message.get("op") == "exited":
                job.finish(int(message["status"]))  # type: ignore[call-overload]
            elif message.get("op") == "failed":
                job.finish(None, f"the command could not start ({message.get('error')})")

    def _keep_spare(self, message: Mapping[str, object], fds: list[int]) -> None:
        """Keep the spare the supervisor handed out, or why it could fork none."""
        with self._spared:
            if len(fds) == 1:
                spare = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fds[0])
                self._spares.append((int(message["spare"]), spare))  # type: ignore[call-overload]
            else:
                self._no_spare = str(message.get("error"))
                for fd in fds:
                    os.close(fd)
            self._spared.notify_all()

    def _remove_folders(self) -> None:
        remove_folder(self.plan.folder)
        if self.plan.temporary is not None:
            shutil.rmtree(self.plan.temporary, ignore_errors=True)


class Sessions:
    """The sessions of one backend, by `session_key`; closed together.

    At most `MAX_SESSIONS` are kept: a new one ends the session idle the longest first
    (none is ended while a command or a background process runs in it). A session
    started inside a `started_sessions` block (a subagent's `task` call) ends with it.
    A copy (`copy`, `deepcopy`, `pickle`) starts with no session: sessions belong to
    the process and the object that started them. They close with this object.
    """

    def __init__(self) -> None:
        """No session yet."""
        self._sessions: dict[str, Session] = {}
        """By key, the one used last at the end."""
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._sessions)

    def current(self, plan: Callable[[], SessionPlan]) -> Session:
        """The session of `session_key`; a new one started as `plan()` says if none runs."""
        key = session_key.get()
        evicted = None
        with self._lock:
            found = self._sessions.pop(key, None)
            if found is None or not found.alive:
                evicted = self._evicted()
                found = Session(plan())
                started = _started_here.get()
                if started is not None:
                    started.append((self, key))
            self._sessions[key] = found
        if evicted is not None:
            evicted.close()
        return found

    def _evicted(self) -> Session | None:
        """The session idle the longest, taken out, when a new one would pass the bound."""
        if len(self._sessions) < MAX_SESSIONS:
            return None
        key = next((key for key, one in self._sessions.items() if one.idle), None)
        return None if key is None else self._sessions.pop(key)

    def end(self, key: str) -> None:
        """End the session `key` (and every process in it), if it runs."""
        with self._lock:
            found = self._sessions.pop(key, None)
        if found is not None:
            found.close()

    def close(self) -> None:
        """Close every session, and wait until their processes ended."""
        with self._lock:
            _close_all(self._sessions, wait=True)

    def __reduce__(self) -> tuple[type[Sessions], tuple[()]]:
        """A copy has sessions of its own (none yet)."""
        return (Sessions, ())


class StartedSessions:
    """The sessions started inside a `started_sessions` block, to end with a `task` call."""

    def __init__(self) -> None:
        """None yet."""
        self.started: list[tuple[Sessions, str]] = []

    def end(self) -> None:
        """End them (and every process in them); this blocks: off an event loop."""
        found, self.started = self.started, []
        for sessions, key in found:
            sessions.end(key)


@contextlib.contextmanager
def started_sessions() -> Iterator[StartedSessions]:
    """Note the sessions started inside the block, for the caller to `end` (a subagent's).

    Nested blocks note theirs each. Whatever the block calls, in this context or in
    contexts copied from it (threads, tasks), counts as inside it.
    """
    noted = StartedSessions()
    token = _started_here.set(noted.started)
    try:
        yield noted
    finally:
        _started_here.reset(token)


def _close_all(sessions: dict[str, Session], *, wait: bool = False) -> None:
    found = list(sessions.values())
    sessions.clear()
    for one in found:
        one.close(wait=wait)


@contextlib.contextmanager
def in_session(key: str) -> Iterator[None]:
    """Run the calls inside the block in the session `key`."""
    token = session_key.set(key)
    try:
        yield
    finally:
        session_key.reset(token)


def _errors(output: str) -> str:
    """The standard error lines of `output` (each starts with `STDERR_MARK`)."""
    mark = STDERR_MARK.decode()
    return "\n".join(line for line in output.splitlines() if line.startswith(mark))


def _tee(first: Callable[..., None], second: Callable[..., None]) -> Callable[..., None]:
    def both(data: bytes, *, stderr: bool = False) -> None:
        first(data, stderr=stderr)
        second(data, stderr=stderr)

    return both


__all__ = [
    "MAX_PROCESSES",
    "MAX_SESSIONS",
    "START_TIMEOUT",
    "Session",
    "SessionEnded",
    "Sessions",
    "StartedSessions",
    "in_session",
    "session_key",
    "started_sessions",
]
