"""The session supervisor: one long-lived process that starts a session's commands.

`shell.session.session` starts it once per session (inside bubblewrap when there is a sandbox)
as `python -I -S supervisor.py [--hidden PATH] OPTIONS --`, with its control socket (a
Unix `SOCK_SEQPACKET` socket) inherited as the descriptor `CONTROL_VARIABLE` names.
`OPTIONS` are the confinement helper's (`shell.sandbox.confine`): what every command of the
session gets. Like that helper it is a script that imports only light standard-library
modules.

The agent sends one message per request, JSON with file descriptors attached
(`SCM_RIGHTS`); the supervisor answers the same way:

- The supervisor sends `{"op": "spare", "spare": K}` with one descriptor: a socket to a
  command's process forked ahead (see below), one at a time. The agent starts a
  command on it, with no round trip through the supervisor: it sends there `{"id": N,
  "argv": [...], "cwd": ..., "fallback_cwd": ..., "env": {...}, "targets": [0, 1, 2,
  T], "view": V, "masks": [...], "read_only": [...]}` with five descriptors: four the
  command gets as the numbers in `targets` (its standard streams and its state file),
  and a pipe its keeper writes the command's status to (`S\n`) as soon as it ended,
  before the supervisor's message, so the agent's waiting thread wakes at once.
  `V` is None (the workspace as the session mounts it) or `[workspace, upper, work]`:
  a copy-on-write view of `workspace` over that upper layer, mounted for this command
  alone; `masks` are paths made to look empty over it, `read_only` paths the command
  may not change. A spare whose process has ended refuses the message (the next
  spare comes). Then the agent sends the supervisor `{"op": "start", "id": N, "spare":
  K, "mounts": [...]}` (the paths the command mounts over: its view's workspace, masks
  and read-only paths). Answer, once it ended: `{"op": "exited", "id": N, "status":
  S}`, or `{"op": "failed", "id": N, "error": ...}` when it could not start. The next
  spare is forked when that command ends, or `SPARE_DELAY` seconds after its start,
  or at once when the agent, holding none, asks with `{"op": "spare"}`; where none
  could be forked (the process limit), the supervisor sends `{"op": "spare", "error":
  ...}` instead.
- `{"op": "kill", "id": N}`: the command and everything it started end.
- `{"op": "pause", "id": N}`: every process of the command stops (`SIGSTOP`); answer
  `{"op": "paused", "id": N}`. `{"op": "resume", "id": N}` lets them go on.

Each command gets a keeper: a child of the supervisor that is not confined, so no
command can signal or trace it (Landlock puts the command in a domain of its own). The
keeper, and the command's process below it, are forked ahead of the request they will
serve, so a start waits for no fork: the keeper makes a mount namespace of its own
(with a sandbox), becomes a child subreaper and forks the command's process, which
starts a session of its own and applies ahead what of the confinement no mount changes
(`confine.restrict_ahead`: no_new_privs, the seccomp filter, part of the Landlock
ruleset). Given its request, the command's process mounts its view in that namespace,
masks and protects the paths the request names over it, hides the session's folder,
takes its descriptors, finishes the confinement (`confine.restrict_after`) and runs
`argv`. The keeper, which also holds the namespace (so its teardown waits until after
the report), reads its request's id when it needs it. When the command exits, or the
keeper is told to stop, the keeper kills every process the command started (also those
that left through `setsid` or a double fork), reports the command's status (`128 + N`
for signal N) and exits; a keeper that ended otherwise is reported by the supervisor.
A keeper that is killed all the same leaves its orphans to the supervisor, a subreaper
too, which kills every process it did not start itself. Either reports an end only once
no process of the command is left (a subreaper with no child has none below it), so a
command's change set is read, and committed, with nothing of it running; and the
command cannot take from either what it needs for that (the seccomp filter keeps it to
its own processes: `confine`; with a sandbox).

When the control socket closes (the agent ended, or closed the session), the supervisor
kills every command and exits.
"""

from __future__ import annotations

import array
import ctypes
import errno
import gc
import json
import os
import signal
import socket
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

if __package__:
    from langchain_fstools.shell.sandbox import confine
else:  # run as a script (`-I -S`): the confinement helper is the file next to this one
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import confine  # type: ignore[import-not-found,no-redef]

CONTROL_VARIABLE = "FSTOOLS_SUPERVISOR_CONTROL"
"""The environment variable holding the control socket's descriptor number."""
MESSAGE_SIZE = 128 << 10
"""The largest message either side sends (a command's environment included): below any
socket's default send buffer, past which the kernel refuses a message (`EMSGSIZE`)."""
FDS_PER_START = 5
"""Standard input, output, error, the state file, and where the end is told at once."""

_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_KEEPER_SIGNALS = frozenset({signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2})
"""What a keeper is told by: end its command, pause it, resume it."""
SPARE_DELAY = 0.05
"""Seconds after a start before the next spare is forked if the command still runs; one
that ended sooner gets it forked at its end (not beside it, on a busy machine's cores),
and the agent asks for one at once when it has none (`{"op": "spare"}`)."""
_SIGNALS = {"kill": signal.SIGTERM, "pause": signal.SIGUSR1, "resume": signal.SIGUSR2}
"""What the keeper of a request's command is sent for each of these requests."""
_REPORTED = 0
"""A keeper's exit status once it reported its command's end itself."""
_PR_SET_DUMPABLE = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18


class MessageTooLarge(ValueError):
    """A message over `MESSAGE_SIZE` (or the socket's buffer): refused, nothing sent."""

    def __init__(self, size: int) -> None:
        """Say how large the refused message was (`size`, in bytes)."""
        super().__init__(f"a message of {size} B, over {MESSAGE_SIZE} B")
        self.size = size


def send(channel: socket.socket, message: dict[str, object], fds: list[int] = ()) -> None:  # type: ignore[assignment]
    """Send one message with `fds` attached.

    Raises:
        MessageTooLarge: the message is too large to send (the channel stays usable).
    """
    data = json.dumps(message).encode()
    if len(data) > MESSAGE_SIZE:
        raise MessageTooLarge(len(data))
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    try:
        channel.sendmsg([data], ancillary)
    except OSError as exc:
        if exc.errno == errno.EMSGSIZE:
            raise MessageTooLarge(len(data)) from None
        raise


def receive(channel: socket.socket) -> tuple[dict[str, object] | None, list[int]]:
    """One message and the descriptors it carried; (None, []) at end of file."""
    space = socket.CMSG_SPACE(FDS_PER_START * array.array("i").itemsize)
    data, ancillary, _flags, _address = channel.recvmsg(MESSAGE_SIZE, space)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), list(fds)


class Supervisor:
    """The supervisor's state: its control socket, the confinement, its keepers."""

    def __init__(self, channel: socket.socket, spec: confine.Spec, hidden: str | None) -> None:
        """Serve `channel`, starting commands confined by `spec`; hide `hidden` from them."""
        self.channel = channel
        self.spec = spec
        self.hidden = hidden
        self.keepers: dict[int, int] = {}  # keeper pid -> request id
        self.spares: dict[int, int] = {}
        """The keepers forked ahead and handed to the agent: spare number -> pid."""
        self.numbered = 0
        self.gone: dict[int, int | None] = {}
        """Spares whose keeper ended before the agent said it started them: the status
        to report, or None when the keeper reported its command's end itself."""
        self.wanted = 0
        """Spares the agent asked for while one was out (parallel commands)."""
        self.due: float | None = None
        """When to fork the next spare if no command ended before (`SPARE_DELAY`)."""
        self.later: list[str] = []
        """Where the last request mounted (the next likely mounts there too)."""
        self.libc = confine._libc()  # noqa: SLF001 - the one its keepers inherit

    def serve(self) -> NoReturn:
        """Answer requests until the control socket closes, then end every command."""
        self.libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(-1)
        reader, writer = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(writer)
        import selectors  # noqa: PLC0415 - only the supervisor needs it

        self.fork_spare()
        with selectors.DefaultSelector() as selector:
            selector.register(self.channel, selectors.EVENT_READ, "control")
            selector.register(reader, selectors.EVENT_READ, "child")
            while True:
                wait = None if self.due is None else max(self.due - time.monotonic(), 0)
                for key, _events in selector.select(wait):
                    if key.data == "child":
                        while True:
                            try:
                                if not os.read(reader, 512):
                                    break
                            except BlockingIOError:
                                break
                        self.reap()
                    elif not self.handle():
                        self.end()
                if self.due is not None and time.monotonic() >= self.due:
                    self.fork_spare()

    def handle(self) -> bool:
        """Answer one request; False once the control socket has closed."""
        try:
            message, fds = receive(self.channel)
        except OSError:
            return False
        if message is None:
            return False
        for fd in fds:  # no request hands the supervisor a descriptor
            os.close(fd)
        ident, op = message.get("id"), message.get("op")
        try:
            if op == "start":
                self.start(message)
            elif op in _SIGNALS:
                self.signal(ident, _SIGNALS[op])
        except OSError as exc:
            send(self.channel, {"op": "failed", "id": ident, "error": str(exc)})
        if op == "spare" and self.spares:  # one is on its way; another is wanted after it
            self.wanted += 1
        elif op == "start" and not self.wanted:
            self.due = time.monotonic() + SPARE_DELAY
        else:  # asked for one (or any other request), when none is out
            self.wanted = max(self.wanted - (op == "start"), 0)
            self.fork_spare()
        return True

    def start(self, message: dict[str, object]) -> None:
        """Note whose keeper keeps the command the agent started on a spare."""
        number, ident = message.get("spare"), int(message["id"])  # type: ignore[call-overload]
        self.later = [str(path) for path in message.get("mounts") or ()]  # type: ignore[attr-defined]
        if number in self.spares:
            self.keepers[self.spares.pop(number)] = ident
        elif number in self.gone:  # it ran and ended before this message came
            status = self.gone.pop(number)
            if status is not None:
                send(self.channel, {"op": "exited", "id": ident, "status": status})
        else:
            raise OSError(0, f"no spare numbered {number}")

    def fork_spare(self) -> None:
        """Fork a keeper, and its command's process, that wait for a request; hand it out.

        So a start waits for no fork, and the command's process has done ahead what
        does not depend on its request (`confine.restrict_ahead`). The agent gets a
        socket to the command's process (`{"op": "spare"}`), or why there is none (a
        fork refused at the process limit: `{"op": "spare", "error": ...}`; it asks
        again with `{"op": "spare"}`). Nothing while one is out.
        """
        self.due = None
        if self.spares:
            return  # one is out: the agent gets it
        to_command, for_command = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # held until the keeper handles them: a pause or kill sent at once waits for it
        signal.pthread_sigmask(signal.SIG_BLOCK, _KEEPER_SIGNALS)
        me = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _KEEPER_SIGNALS)
            to_command.close()
            for_command.close()
            try:  # noqa: SIM105 - contextlib costs start-up time
                send(self.channel, {"op": "spare", "error": f"fork: {exc.strerror}"})
            except OSError:
                pass
            return
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                _die_with(self.libc, me)
                to_command.close()
                later = [*self.later, *([self.hidden] if self.hidden is not None else [])]
                keeper = Keeper(self.spec, self.hidden, self.channel)
                keeper.run(Command(for_command, self.spec, self.hidden, later))
            finally:
                os._exit(confine.FAILED)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _KEEPER_SIGNALS)
        for_command.close()
        self.numbered += 1
        self.spares[self.numbered] = pid
        try:  # noqa: SIM105 - contextlib costs start-up time
            send(self.channel, {"op": "spare", "spare": self.numbered}, [to_command.fileno()])
        except OSError:
            pass  # the agent is gone: the control socket's end of file ends this process
        to_command.close()

    def signal(self, ident: object, signum: int) -> None:
        """Signal the keeper of request `ident`: end (SIGTERM), pause or resume its command."""
        for pid, known in self.keepers.items():
            if known == ident:
                try:  # noqa: SIM105 - contextlib costs start-up time
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass

    def reap(self) -> None:
        """Report every keeper that ended; kill any process this supervisor did not start."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            for number, waiting in list(self.spares.items()):
                if waiting == pid:  # ended before the agent's start came: its status kept
                    del self.spares[number]
                    self.gone[number] = None if status == _REPORTED << 8 else _status(status)
            ident = self.keepers.pop(pid, None)
            if ident is not None and status != _REPORTED << 8:  # else it told the agent itself
                self.quiesce()  # what its keeper left is gone before its end is told
                send(self.channel, {"op": "exited", "id": ident, "status": _status(status)})
        self.quiesce()
        if not self.spares:
            self.fork_spare()

    def quiesce(self) -> None:
        """Kill every process this supervisor did not start, and wait until none is left.

        A keeper that ended without reporting (killed, or failed) leaves what its command
        started to this subreaper: each is killed and reaped, then what each left in
        turn, so no process of the command lives on once its end is told.
        """
        while orphans := [
            pid
            for pid in _children()
            if pid not in self.keepers and pid not in self.spares.values()
        ]:
            for pid in orphans:
                _kill_tree(pid)
            for pid in orphans:
                try:  # noqa: SIM105 - contextlib costs start-up time
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass

    def end(self) -> NoReturn:
        """Kill every command and every process left, then exit."""
        for pid in list(self.keepers):
            _kill_tree(pid)
        confine.kill_descendants()
        os._exit(0)


class Keeper:
    """One command's keeper (see the module docstring)."""

    def __init__(self, spec: confine.Spec, hidden: str | None, channel: socket.socket) -> None:
        """A keeper whose answers (the command's end, a pause) go on `channel`."""
        self.spec = spec
        self.hidden = hidden
        self.channel = channel
        self.libc = confine._libc()  # noqa: SLF001 - loaded once, before the fork
        self.told: socket.socket | None = None
        """Where the command's process tells its request's id (and where its end goes)."""
        self._ident: int | None = None
        self.ender = -1
        """The agent's pipe told the command's status as soon as it is known."""

    @property
    def ident(self) -> int | None:
        """The id of the request this keeper serves; None if its command got none.

        Read once it is needed: written as soon as the request came, so this waits
        only for a command's process still reading its request.
        """
        if self._ident is None and self.told is not None:
            try:
                said, fds = receive(self.told)
            except (OSError, ValueError):
                said, fds = None, []
            self.told.close()
            self.told = None
            self.ender = fds[0] if fds else -1
            for fd in fds[1:]:
                os.close(fd)
            ident = said.get("id") if said is not None else None
            self._ident = ident if isinstance(ident, int) else None
        return self._ident

    def run(self, command: Command) -> NoReturn:
        """Fork `command`'s process, wait for it, kill what it left, report, exit."""
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG: the supervisor ended
        self.handle_signals()  # held until the command's process exists to tell its id
        if self.hidden is not None:  # the command's mount namespace, shared with its keeper,
            try:  # which holds it: tearing it down waits until after the report
                _unshare_mounts(self.libc)
            except OSError as exc:
                command.fault = f"sandbox: {exc}\n"
        self.libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        self.told, command.tell = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        child = os.fork()
        if child == 0:
            for signum in _KEEPER_SIGNALS:  # still held: the defaults first
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _KEEPER_SIGNALS)
            self.channel.close()
            self.told.close()
            command.run(unshared=self.hidden is not None)
        command.channel.close()
        command.tell.close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _KEEPER_SIGNALS)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                break
        signal.pthread_sigmask(signal.SIG_BLOCK, _KEEPER_SIGNALS)
        confine.kill_descendants()
        self.report(status)

    def report(self, status: int) -> NoReturn:
        """Tell the agent the command's end (wait status `status`), then exit."""
        ident = self.ident  # its process is gone: said, or never will be
        if ident is None:  # no request came (or it could not be read)
            os._exit(_status(status))
        if self.ender >= 0:  # the agent's waiting thread learns it first, from its own pipe
            try:  # noqa: SIM105 - contextlib costs start-up time
                os.write(self.ender, b"%d\n" % _status(status))
            except OSError:
                pass
        try:  # told before this process ends: tearing down its mounts takes a while
            send(self.channel, {"op": "exited", "id": ident, "status": _status(status)})
        except OSError:
            os._exit(_status(status))
        os._exit(_REPORTED)

    def handle_signals(self) -> None:
        """SIGTERM ends the command and all it started; SIGUSR1 pauses it, SIGUSR2 resumes."""

        def stop(_signum: int, _frame: object) -> NoReturn:
            confine.kill_descendants()
            os._exit(128 + signal.SIGTERM)

        def pause(_signum: int, _frame: object) -> None:
            ident = self.ident  # before it stops: its process may be telling it
            _signal_all(confine.descendants(), signal.SIGSTOP)
            send(self.channel, {"op": "paused", "id": ident})

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGUSR1, pause)
        signal.signal(signal.SIGUSR2, lambda *_: _signal_all(confine.descendants(), signal.SIGCONT))


class Command:
    """A command's process, forked ahead of its request by its keeper.

    Ahead, it starts a session of its own and applies what of the confinement no
    mount changes (`confine.restrict_ahead`); given its request, it mounts its view,
    masks and protects the paths the request names over it, hides the session's
    folder, takes its descriptors, finishes the confinement and runs `argv`.
    """

    def __init__(
        self, channel: socket.socket, spec: confine.Spec, hidden: str | None, later: list[str]
    ) -> None:
        """A command that reads its request on `channel`; `later`: where mounts may come."""
        self.channel = channel
        self.spec = spec
        self.hidden = hidden
        self.later = later
        self.libc = confine._libc()  # noqa: SLF001 - loaded once, before the fork
        self.fault: str | None = None
        """Why the command cannot run (said on its standard error once it has one)."""
        self.tell: socket.socket | None = None
        """Where it tells its keeper its request's id."""

    def run(self, *, unshared: bool) -> NoReturn:
        """Prepare, wait for the request, then run it (`unshared`: in a mount namespace)."""
        ahead = None
        try:
            os.setsid()
            if self.fault is None:
                ahead = confine.restrict_ahead(self.spec, self.later)
        except (OSError, confine.ConfineError) as exc:
            self.fault = f"sandbox: {exc}\n"
        message, fds = receive(self.channel)
        self.channel.close()
        if message is None:
            os._exit(confine.FAILED)
        ender = fds[FDS_PER_START - 1 :]  # the pipe its keeper tells its end on
        assert self.tell is not None  # noqa: S101 - set by the keeper before the fork
        send(self.tell, {"id": int(message["id"])}, ender)  # type: ignore[call-overload]
        self.tell.close()
        for fd in ender:
            os.close(fd)
        fds = fds[: FDS_PER_START - 1]
        if len(fds) < FDS_PER_START - 1:
            os._exit(confine.FAILED)
        if self.fault is not None or ahead is None:
            os.write(fds[2], (self.fault or "sandbox: not prepared\n").encode())
            os._exit(confine.FAILED)
        try:
            mounted = self.mount(message, unshared=unshared)
        except OSError as exc:
            os.write(fds[2], f"sandbox: {exc}\n".encode())
            os._exit(confine.FAILED)
        self.start(message, fds, ahead, mounted)

    def mount(self, message: dict[str, object], *, unshared: bool) -> list[str]:
        """The command's view, and the session's folder hidden; the paths mounted over."""
        view = message.get("view")
        read_only = [str(path) for path in message.get("read_only") or ()]  # type: ignore[attr-defined]
        masks = [str(path) for path in message.get("masks") or ()]  # type: ignore[attr-defined]
        if view is None and not read_only and not masks and self.hidden is None:
            return []  # nothing to mount (Landlock alone, or no sandbox: no mount namespace)
        originals = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in read_only]
        if not unshared:
            _unshare_mounts(self.libc)
        mounted: list[str] = []
        if isinstance(view, list):
            workspace, upper, work, *layers = (str(part) for part in view)
            lower = ":".join([*layers, workspace])
            options = f"lowerdir={lower},upperdir={upper},workdir={work},userxattr"
            _call(
                self.libc.mount(b"overlay", workspace.encode(), b"overlay", 0, options.encode()),
                "mounting the copy-on-write view",
            )
            mounted.append(workspace)
        for path, original in zip(read_only, originals, strict=True):
            self.bind(f"/proc/self/fd/{original}", path)
            os.close(original)
        for path in [*masks, *([self.hidden] if self.hidden is not None else [])]:
            self.mask(path)
        return [*mounted, *read_only, *masks, *([self.hidden] if self.hidden is not None else [])]

    def bind(self, source: str, path: str) -> None:
        """Mount `source` read-only at `path`."""
        result = self.libc.mount(source.encode(), path.encode(), None, _MS_BIND, None)
        if result == 0:
            remount = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
            result = self.libc.mount(None, path.encode(), None, remount, None)
        _call(result, f"making {path} read-only")

    def mask(self, path: str) -> None:
        """Make `path` look empty: an empty read-only folder, or `/dev/null` over a file."""
        if os.path.isdir(path):
            flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV
            result = self.libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, b"size=4k")
            _call(result, f"masking {path}")
        elif os.path.lexists(path):
            self.bind("/dev/null", path)

    def start(
        self, message: dict[str, object], fds: list[int], ahead: confine.Ahead, mounted: list[str]
    ) -> NoReturn:
        """Its descriptors, the rest of its confinement, then `argv`."""
        try:
            targets = [int(n) for n in message["targets"]]  # type: ignore[attr-defined]
            moved = [os.dup(fd) for fd in fds]  # none of them on a target number
            for fd in fds:
                os.close(fd)
            for fd, target in zip(moved, targets, strict=True):
                os.dup2(fd, target)
                os.close(fd)
            try:
                os.chdir(str(message["cwd"]))
            except OSError:
                os.chdir(str(message["fallback_cwd"]))
            # an ordinary process again (the supervisor's capabilities made it one whose
            # /proc files only root may write): the command sets its own OOM score
            self.libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
            confine.restrict_after(self.spec, ahead, mounted)
        except (OSError, confine.ConfineError) as exc:
            os.write(2, f"sandbox: {exc}\n".encode())
            os._exit(confine.FAILED)
        argv = [str(part) for part in message["argv"]]  # type: ignore[attr-defined]
        env = {str(k): str(v) for k, v in message["env"].items()}  # type: ignore[attr-defined]
        try:
            os.execvpe(argv[0], argv, env)  # noqa: S606 - running the command is the point
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)


def _die_with(libc: ctypes.CDLL, parent: int) -> None:
    """Be killed when `parent` ends; exit at once if it already has.

    A child forked just before its parent was killed may set its parent-death signal
    only once the parent is gone: none would ever come. A keeper left so holds the
    control socket, so the agent would see the session live on in it.
    """
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(confine.FAILED)


def _unshare_mounts(libc: ctypes.CDLL) -> None:
    """A mount namespace of this process's own, its mounts private to it."""
    _call(libc.unshare(_CLONE_NEWNS), "unsharing the mount namespace")
    _call(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")


def _call(result: int, what: str) -> None:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what} failed: {os.strerror(code)}")


def _status(status: int) -> int:
    """A wait status as a shell reports it (`128 + N` for signal N)."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _children() -> list[int]:
    """This process's direct children (read from /proc)."""
    me = os.getpid()
    found: list[int] = []
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as listing:
            found = [int(pid) for pid in listing.read().split()]
    except OSError:
        pass
    return found


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:  # noqa: SIM105 - contextlib costs start-up time
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _kill_tree(pid: int) -> None:
    """SIGKILL `pid` (its own keeper kills what is below it; the supervisor reaps)."""
    try:  # noqa: SIM105 - contextlib costs start-up time
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(arguments: list[str]) -> NoReturn:
    """Serve the control socket; hide `--hidden PATH` (the session's folder) from commands."""
    hidden = None
    if arguments[:1] == ["--hidden"] and len(arguments) > 1:
        hidden, arguments = arguments[1], arguments[2:]
    try:
        spec, _rest = confine.parse(arguments)
        confine.prepare(spec)
    except confine.ConfineError as exc:
        sys.stderr.write(f"sandbox: {exc}\n")
        os._exit(confine.FAILED)
    confine._libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # noqa: SLF001 - PR_SET_PDEATHSIG
    control = int(os.environ[CONTROL_VARIABLE])
    os.set_inheritable(control, False)  # noqa: FBT003 - no command may inherit it
    channel = socket.socket(fileno=control)
    gc.freeze()  # what is here now stays shared with every fork, never copied
    Supervisor(channel, spec, hidden).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
