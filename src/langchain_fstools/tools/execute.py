"""execute: run a shell command in the workspace, bounded in time and output."""

from __future__ import annotations

import functools
import math
import re
import time
from typing import TYPE_CHECKING, Any, ClassVar, Final

from pydantic import Field, field_validator

from langchain_fstools.core import calls, paths
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import (
    ChangesNotCommitted,
    CommandTimedOut,
    InvalidArgument,
    NeverReady,
    UnsupportedInvocation,
    VersionConflict,
)
from langchain_fstools.patch.invocation import InvalidInvocation, PatchInvocation, parse_invocation
from langchain_fstools.shell.session.pending import digest, keep
from langchain_fstools.shell.session.session import in_session, session_key
from langchain_fstools.tools.apply_patch import run_patch, write_targets
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome
from langchain_fstools.tools.changes_shown import (
    COMMAND_REVIEWS_KEY,
    effect_diff,
    left_out_note,
    rewind_note,
    summary,
)
from langchain_fstools.tools.diagnosing import texts_after, texts_before
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import ChangeReview, ChangeSet
    from langchain_fstools.core.results import ExecutionResult, LimitHit
    from langchain_fstools.lsp.report import TextChange
    from langchain_fstools.shell.session.background import Background, Processes
    from langchain_fstools.tools.settings import ToolSettings


class ExecuteArgs(ToolArgs):
    """Arguments of execute."""

    command: str = Field(description="e.g. `pytest -q tests/`.")
    timeout: float | None = Field(default=None, description="Seconds before it is killed.")
    background: bool = Field(default=False, description="For servers.")
    tty: bool = Field(default=False, description="With a terminal.")
    yield_after: float | None = Field(default=None, description="Seconds, then background.")
    ready: str | None = Field(default=None, description="Await port or output regex.")

    @field_validator("ready", mode="before")
    @classmethod
    def _port_as_text(cls, value: object) -> object:
        """A port given as a number is taken as its digits."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


DESCRIPTION = """Run a bash command.

-[read_file, grep, glob, edit_file] Not for files: use read_file, grep, glob, edit_file, not
  cat/head/tail, grep/rg, find, sed/awk/echo >.
- Use relative paths: `/` in the shell is the machine's root.
-[command_root] The workspace (file tools' `/`) is `{command_root}` in the shell, where
  the first command starts; `cd` and exports carry over.
- stdin is empty (pass `--yes`); leftover processes end with it.
-[network_off] No network (ask the user).
-[network_domains] Network only to {network_domains} (HTTP(S)).
-[network_on] Network on.
- On timeout all is killed. Output over
  {execute_output_limit:*byte} is cut in the middle; stderr lines start `[stderr] `.
"""


class ExecuteTool(FileTool):
    """Run a shell command on backends that can (`supports_execute`), killably."""

    name: str = "execute"
    description: str = DESCRIPTION
    args_schema: type[ExecuteArgs] = ExecuteArgs
    argument_defaults: ClassVar[dict[str, str]] = {
        "timeout": "{execute_timeout:,g}; at most {execute_max_timeout:,g}"
    }
    read_only: bool = False
    requires_execute: ClassVar[bool] = True

    bounds_output: ClassVar[bool] = False

    def targets(self, args: ExecuteArgs) -> list[Target]:
        """The command; for an `apply_patch` invocation, the patch's files instead.

        Such a command is applied in-process by the apply_patch planner, not run by a
        shell, so it touches exactly the files the patch names.
        """
        if isinstance(parse_invocation(args.command), PatchInvocation):
            return write_targets(args.command)
        network = _in_words(self.context.backend.command_network())
        return [Target("execute", command=args.command, network=network)]

    def contained(self, args: ExecuteArgs) -> bool:
        """Whether the command runs on a copy-on-write view with no network.

        Then nothing it does lasts until its change set is reviewed and committed. An
        `apply_patch` invocation is not a command: its patch is previewed instead.
        """
        if isinstance(parse_invocation(args.command), PatchInvocation):
            return False
        if args.background or args.yield_after is not None:
            return self.context.backend.contains_background()
        return self.context.backend.contains_commands()

    def previews(self, args: ExecuteArgs) -> bool:
        """Only an `apply_patch` invocation can be dry-run (a command never is)."""
        return isinstance(parse_invocation(args.command), PatchInvocation)

    def _effect(self, scope: CallScope, args: ExecuteArgs) -> Effect[ToolOutcome]:
        match parse_invocation(args.command):
            case PatchInvocation(patch=patch, workdir=workdir):
                return (yield from run_patch(scope, patch, workdir or paths.ROOT))
            case InvalidInvocation(reason=reason):
                raise UnsupportedInvocation(reason)
        return (yield from self._run_command(scope, args))

    def _run_command(self, scope: CallScope, args: ExecuteArgs) -> Effect[ToolOutcome]:
        settings = scope.context.settings
        if not args.command.strip():
            raise InvalidArgument("command", "it is empty; give a shell command to run")
        timeout = _timeout(args.timeout, settings)
        refusal = settings.command_policy.check(args.command)
        if refusal is not None:
            raise refusal
        limit = settings.execute_output_limit
        ready = _ready(args)
        if args.background or args.yield_after is not None:
            moved = yield from _through_processes(scope, args, timeout, limit, ready)
            if isinstance(moved, ToolOutcome):
                return moved
            result = moved
        else:
            with in_session(session_of(scope.runtime)):
                result = yield from calls.execute_changes(
                    args.command, timeout=timeout, output_limit=limit
                )
        body = _reported(result)
        artifact: dict[str, Any] = {
            "command": args.command,
            "exit_code": result.exit_code,
            "timeout": timeout,
            "dropped_bytes": result.dropped_bytes,
            "directory": result.directory,
        }
        if result.limit is not None:
            artifact["limit"] = {"name": result.limit.name, "value": result.limit.value}
        state: dict[str, Any] = {}
        texts: list[TextChange] = []
        if result.changes is not None:
            body, state, texts = yield from settle(
                scope, args.command, result.changes, body, artifact
            )
        if result.timed_out:
            raise CommandTimedOut(timeout, body)
        return ToolOutcome(body, artifact, state, changes=tuple(texts))


def _reported(result: ExecutionResult) -> str:
    """The output, the exit code, and what the model should know of how it ended."""
    body = result.output or "(no output)"
    if not body.endswith("\n"):
        body += "\n"
    if not result.timed_out:
        body += f"Exit code: {result.exit_code}"
    if result.directory is not None:
        body += f"\nThe shell is now in {result.directory} (the next command starts there)."
    if result.limit is not None:
        body += ("" if body.endswith("\n") else "\n") + limit_note(result.limit)
    return body


def _through_processes(
    scope: CallScope,
    args: ExecuteArgs,
    timeout: float,
    limit: int,
    ready: int | re.Pattern[str] | None,
) -> Effect[ToolOutcome | ExecutionResult]:
    """Start a background process, or run a command that may move to the background.

    A process started with `ready` is waited for (up to `timeout`) until it is.
    Returns the tool's result when a process was started or a command moved to the
    background, else the command's result (it ended within `yield_after`).
    """
    with in_session(session_of(scope.runtime)):
        table = yield from calls.blocking(scope.backend.processes)
        if table is None:
            raise InvalidArgument(
                "background" if args.background else "yield_after",
                "this backend runs each command to its end; leave it out",
            )
        if args.background:
            started = yield from calls.blocking(
                functools.partial(table.start, args.command, output_limit=limit, terminal=args.tty)
            )
            standing = ""
            artifact: dict[str, Any] = {"command": args.command, "process_id": started.ident}
            if ready is not None:
                wait = functools.partial(_wait_ready, table, started, ready, timeout)
                try:
                    artifact["ready"], standing = yield from calls.blocking(wait)
                except InvalidArgument:  # the backend cannot tell: nothing is left running
                    yield from calls.blocking(started.kill)
                    raise
            return ToolOutcome(
                f"Started process {started.ident} in the background{standing}. Read its output"
                f' with process(action="read", process_id="{started.ident}").'
                + _view_note(started),
                artifact,
            )
        after = _yield_after(args.yield_after, timeout)
        result = yield from calls.blocking(
            functools.partial(
                table.run, args.command, timeout=timeout, output_limit=limit, yield_after=after
            )
        )
        if result.process_id is None:
            return result
        moved = yield from calls.blocking(functools.partial(table.get, result.process_id))
    return ToolOutcome(
        (result.output or "(no output yet)\n").rstrip("\n")
        + f"\nStill running after {after:g} s: moved to the background as process"
        f" {result.process_id}. Read it with"
        f' process(action="read", process_id="{result.process_id}").' + _view_note(moved),
        {"command": args.command, "process_id": result.process_id},
    )


def _view_note(process: Background) -> str:
    """What the model must know of a process on a copy-on-write view of its own.

    Its view keeps the workspace's files as it first looked them up: a file the agent
    replaces later (every write tool writes a new file and renames it into place), or
    makes where the process had looked for one, stays out of its sight (overlayfs
    keeps the lower layer's entries it found), so a server goes on serving old code.
    """
    if process.view is None:
        return ""
    return (
        " It runs on its own copy-on-write view of the workspace: files changed or made"
        " after it started may stay out of its sight, so after editing what it runs,"
        " kill it and start it again."
    )


_PROBE_EVERY: Final = 0.1
"""Seconds between two probes of a port a starting process should listen on."""


def _ready(args: ExecuteArgs) -> int | re.Pattern[str] | None:
    """What `ready` waits for: a port, or a compiled regex of an output line (checked)."""
    ready = args.ready
    if ready is None:
        return None
    if not args.background:
        raise InvalidArgument("ready", "it waits for a background process; add background=true")
    if ready.strip().isdecimal():
        port = int(ready)
        if not 0 < port < 65536:  # noqa: PLR2004 - the TCP port range
            raise InvalidArgument("ready", f"{port} is not a TCP port (1 to 65535)")
        return port
    try:
        return re.compile(ready)
    except re.error as bad:
        raise InvalidArgument("ready", f"{ready!r} is not a regex ({bad})") from None


def _wait_ready(
    table: Processes, process: Background, ready: int | re.Pattern[str], timeout: float
) -> tuple[bool, str]:
    """Wait up to `timeout` seconds for `process` to be ready: whether it is, and the clause.

    Raises:
        NeverReady: it ended first (with its output).
    """
    until = time.monotonic() + timeout
    if isinstance(ready, int):
        what, yet = f"port {ready} accepts connections", f"port {ready} does not accept connections"
        while not (done := table.accepts(ready)) and time.monotonic() < until:
            if process.wait(min(_PROBE_EVERY, until - time.monotonic())):
                break
    else:
        what = f"it printed a line matching {ready.pattern!r}"
        yet = f"no line matched {ready.pattern!r}"
        done = process.wait_for_line(ready, timeout)
        if not done:  # its output ended: so does it, unless it closed its output only
            process.wait(max(0.0, until - time.monotonic()))
    if done:
        return True, f"; it is ready: {what}"
    if not process.running:
        output = process.read()
        raise NeverReady(process.ident, output.exit_code, output.text)
    return False, f"; after {timeout:g} s it is not ready yet ({yet}) and still runs"


def settle(
    scope: CallScope, command: str, changes: ChangeSet, body: str, artifact: dict[str, Any]
) -> Effect[tuple[str, dict[str, Any], list[TextChange]]]:
    """Review a command's change set: commit it, keep it for a person, or refuse it whole.

    Returns the result text with the changes summarised, the state update (a review
    waiting for a person), and the committed files' texts before and after for the
    language servers (none unless the toolkit has them). `artifact` gets the changes
    (and `waiting`).

    Raises:
        ChangesNotCommitted: refused, stale, or no one to ask (nothing committed).
    """
    state: dict[str, Any] = {}
    texts: list[TextChange] = []
    try:
        review = yield from _reviewed(changes, body)
        if review.asks:
            state = yield from _waiting(scope, command, changes, review)
            artifact["waiting"] = True
            body += WAITING + summary(changes.changes) + left_out_note(changes)
        else:
            files = [change.path for change in changes.changes if change.entry == "file"]
            before = yield from texts_before(scope.context.diagnostics, files)
            yield from _committed(changes, body)
            texts = yield from texts_after(before)
            body += summary(changes.changes) + left_out_note(changes)
            body += rewind_note(scope.backend.state_update())
    finally:
        yield from calls.blocking(changes.discard)
    artifact["changes"] = [f"{c.kind} {c.path}" for c in changes.changes]
    return body, state, texts


def _yield_after(requested: float | None, timeout: float) -> float:
    """The seconds before a command moves to the background: the request, checked."""
    if requested is None or not math.isfinite(requested) or not 0 < requested < timeout:
        raise InvalidArgument(
            "yield_after",
            f"{requested} is not a positive number of seconds below the timeout ({timeout:g})",
        )
    return requested


_LIMIT_WORDS = {
    "memory": ("A process ran out of memory at", "memory limit"),
    "processes": ("A new process was refused at", "process limit"),
    "cpu_seconds": ("A process was killed at", "CPU time limit"),
    "file_size": ("A write was stopped at", "file size limit"),
    "open_files": ("A file was refused at", "limit of open files per process"),
    "changed_bytes": (
        "The command was stopped, and nothing it changed was kept, at",
        "limit on what one command may write",
    ),
}


_STATE_NOTE = (
    "The shell's state (its directory and exported variables) passed the {amount} a"
    " command may leave the next, so it was not kept: the next command starts where this"
    " one started, with its variables. Keep large values in files, not in variables."
)


def limit_note(limit: LimitHit) -> str:
    """The sentence saying which sandbox limit a command hit, and how it is raised."""
    if limit.name == "shell_state":
        return _STATE_NOTE.format(amount=_bytes(limit.value))
    start, what = _LIMIT_WORDS.get(limit.name, ("The command hit", f"{limit.name} limit"))
    if limit.name == "processes":
        amount = plural(limit.value, "process", "processes")
    elif limit.name == "cpu_seconds":
        amount = plural(limit.value, "second")
    elif limit.name == "open_files":
        amount = plural(limit.value, "file")
    else:
        amount = _bytes(limit.value)
    return (
        f"{start} the sandbox's {what} ({amount}); if the command needs more, the user can"
        f" raise it with Sandbox(limits=Limits({limit.name}=...))."
    )


def _bytes(count: int) -> str:
    """`2 GiB`, `64 MiB`, `512 KiB` for exact multiples, else `1,000,000 bytes`."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size:,} {unit}"
    return plural(count, "byte")


WAITING = "\nNothing is kept yet: a person decides on these changes before your next step."
"""What a result says of a command whose changes wait for a person's approval."""


def _reviewed(changes: ChangeSet, output: str) -> Effect[ChangeReview]:
    """The review of a command's change set, or `ChangesNotCommitted` saying why none.

    Refused whole: a change no command may make by itself where no one can approve
    it (`shell.sandbox.protected`), a path a permission rule denies, a path that also changed
    in the workspace while the command ran.
    """
    if changes.unreadable is not None:
        raise ChangesNotCommitted("unreadable", changes.unreadable, "", output)
    review = yield from calls.judge_changes(changes)
    if review.refused is not None:
        reason, path, why = review.refused
        raise ChangesNotCommitted(reason, path, why, output)
    stale = next((change for change in changes.changes if change.stale), None)
    if stale is not None:
        raise ChangesNotCommitted("stale", stale.path, "", output)
    return review


def _committed(changes: ChangeSet, output: str) -> Effect[None]:
    """Commit a command's change set whole (`ChangesNotCommitted` if it cannot be)."""
    if not changes:
        return
    try:
        yield from calls.commit(changes)
    except VersionConflict as conflict:
        raise ChangesNotCommitted("stale", conflict.path, "", output) from None
    except PermissionError as refused:  # the disk's own permissions, not a rule's
        raise ChangesNotCommitted("unwritable", str(refused.filename), "", output) from None


def _waiting(
    scope: CallScope, command: str, changes: ChangeSet, review: ChangeReview
) -> Effect[dict[str, Any]]:
    """Keep a change set for a person's approval; the state update that asks for it.

    The set is kept on this machine under a fresh key (`shell.session.pending`); the
    review (what is shown, the key, and the digest of the set shown) goes into the
    thread's state, where the middleware asks a person before the next model call and
    commits the set, if it is still the one shown, or drops it.
    """
    runtime = scope.runtime
    call_id = getattr(runtime, "tool_call_id", None)
    config = getattr(runtime, "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    if call_id is None or thread is None:  # no thread to ask in
        raise ChangesNotCommitted("unapproved", review.asks[0], "", "")
    kept, key = yield from calls.blocking(functools.partial(keep, changes))
    diff = yield from effect_diff(kept, review.asks)
    shown = (summary(kept.changes) + left_out_note(kept)).removeprefix("\n")
    request = {
        "key": key,
        "digest": (yield from calls.blocking(functools.partial(digest, kept))),
        "command": command,
        "summary": f"execute ran `{command}`; approve the changes it made to keep them.",
        "changes": shown,
        "diff": diff,
        "asks": list(review.asks),
    }
    return {COMMAND_REVIEWS_KEY: {call_id: request}}


def session_of(runtime: Any) -> str:
    """The sandbox session of a call: its thread and the graph it runs in.

    The checkpoint namespace names each node with the id of its task; the last task
    (this tool node's, new at every step) is left out, the ones above it kept: parallel
    subagents that inherit a thread id run under task ids of their own, so each gets a
    session (and a shell state) of its own, and each keeps it from step to step. A graph
    run without a thread id (no checkpointer) names its sessions the same way under the
    caller's session: parallel subagents never share one (a subagent's session ends
    with its call).
    """
    config = getattr(runtime, "config", None) or {}
    configurable = config.get("configurable") or {}
    thread = configurable.get("thread_id")
    namespace = str(configurable.get("checkpoint_ns", ""))
    if thread is None and not namespace:  # no graph: the caller's session (an MCP client's)
        return session_key.get()
    *above, own = namespace.split("|")
    base = session_key.get() if thread is None else str(thread)
    return "|".join([base, *above, own.partition(":")[0]])


def _timeout(requested: float | None, settings: ToolSettings) -> float:
    """The seconds a command may run: the request, checked, or the default."""
    limit = settings.execute_max_timeout
    if requested is None:
        return min(settings.execute_timeout, limit)
    if not math.isfinite(requested) or requested <= 0:
        raise InvalidArgument(
            "timeout", f"{requested:g} is not a positive number of seconds (at most {limit:g})"
        )
    if requested > limit:
        raise InvalidArgument(
            "timeout",
            f"{plural(requested, 'second')} is above the maximum of {plural(limit, 'second')}",
        )
    return requested


def _in_words(network: bool | tuple[str, ...] | None) -> str | None:  # noqa: FBT001 - the backend's answer
    """The network a command will have, for a person asked about it (None: none)."""
    if network is True:
        return "the whole network"
    if isinstance(network, tuple) and network:
        return "the network, to " + ", ".join(network)
    return None


__all__ = ["DESCRIPTION", "ExecuteArgs", "ExecuteTool", "session_of", "settle"]
