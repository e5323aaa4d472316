"""Background processes on local disk: started in the call's sandbox session, reviewed by effect.

`LocalBackend.processes()` gives the process table of the current session
(`shell.session.session.session_key`). A background process keeps its copy-on-write view for
its lifetime; `review` pauses it, reads what it changed since the last review into a
change set of its own (the changed entries copied out, so the process may go on
writing while the set waits for a person), and resumes it. The caller judges and
commits the set as a command's, then calls `reviewed`: the stale check of the next
review counts only what changed in the workspace after that commit.
"""

from __future__ import annotations

import shutil
import stat as stat_module
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from langchain_fstools.core.changesets import ChangeKind, ChangeSet, remove_folder
from langchain_fstools.core.sparse_files import copy_sparse
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.shell.sandbox.overlay import Overlay, stamp, upper_path
from langchain_fstools.shell.sandbox.sandbox import MOUNT_RACE_TRIES, mounts_raced
from langchain_fstools.shell.session.session import SessionEnded

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.shell.sandbox.overlay import LowerTree
    from langchain_fstools.shell.session.background import Background
    from langchain_fstools.shell.session.session import Session


_PROBE_TIMEOUT: Final = 2.0
"""Seconds one probe of a port may take (a connection that hangs is not ready)."""


class LocalProcesses:
    """The background processes of one sandbox session of a `LocalBackend`.

    Args:
        current: The call's current session (a new one when the last could not start):
            the table's, asked for again when a start meets `mounts_raced`.
        start_view: Makes a command's copy-on-write view in a session (None when
            commands write in place).
        command_args: The keyword arguments every command of the session gets
            (`interpreter`, `env`, `masks`, `read_only`).
        workspace: The workspace's host path (the lower layer of each view).
        lower: The workspace, as change sets are compared with it.
        host_code: What change sets carry as code the host runs (`shell.sandbox.protected`).
        run: The backend's own foreground run (`execute_changes` with `yield_after`).
    """

    def __init__(
        self,
        current: Callable[[], Session],
        *,
        start_view: Callable[[Session], Overlay | None],
        command_args: Callable[[Session], Mapping[str, object]],
        workspace: str,
        lower: LowerTree,
        host_code: Sequence[str],
        run: Callable[..., ExecutionResult],
    ) -> None:
        """Bind the table to the current session."""
        self._session = current()
        self._current = current
        self._start_view = start_view
        self._command_args = command_args
        self._workspace = workspace
        self._lower = lower
        self._host_code = tuple(host_code)
        self._run = run

    def run(
        self, command: str, *, timeout: float, output_limit: int, yield_after: float
    ) -> ExecutionResult:
        """Run `command` as `execute_changes` does, moved to the background past `yield_after`.

        A command moved to the background returns no changes: they are reviewed when
        it is read and when it ends; `process_id` names it.
        """
        return self._run(
            command, timeout=timeout, output_limit=output_limit, yield_after=yield_after
        )

    def start(self, command: str, *, output_limit: int, terminal: bool = False) -> Background:
        """Start `command` in the background, on a copy-on-write view of its own.

        A session whose bubblewrap met a host mount going away as it started
        (`mounts_raced`) is started again, up to `MOUNT_RACE_TRIES` times: the command
        had not run.
        """
        tried = 1
        while True:
            try:
                return self._start_once(command, output_limit=output_limit, terminal=terminal)
            except SessionEnded as exc:
                if tried >= MOUNT_RACE_TRIES or not mounts_raced(str(exc.strerror or exc)):
                    raise
                tried += 1
                self._session = self._current()

    def _start_once(self, command: str, *, output_limit: int, terminal: bool) -> Background:
        overlay = self._start_view(self._session)
        view = None if overlay is None else [self._workspace, overlay.upper, overlay.work]
        try:
            args = self._command_args(self._session)
            if overlay is not None:
                masks = cast("list[str]", args["masks"])
                overlay = overlay.masking(self._session.plan.masked, masks)
            background = self._session.spawn(
                command,
                view=view,
                output_limit=output_limit,
                terminal=terminal,
                **args,  # type: ignore[arg-type]
            )
        except BaseException:
            if overlay is not None:
                remove_folder(overlay.folder)
            raise
        background.view = overlay
        return background

    def accepts(self, port: int) -> bool:
        """Whether `port` accepts connections on the session's loopback now.

        Probed from inside the session (its network namespace is not the host's), by a
        command that connects with the shell's `/dev/tcp` (IPv4, then IPv6) and changes
        nothing; False under a shell without it.
        """
        probe = f"(: <>/dev/tcp/127.0.0.1/{port} || : <>/dev/tcp/::1/{port}) 2>/dev/null"
        result, _, _ = self._session.run(
            probe,
            timeout=_PROBE_TIMEOUT,
            output_limit=256,
            **self._command_args(self._session),  # type: ignore[arg-type]
        )
        return result.exit_code == 0

    def adopt(self, background: Background, overlay: Overlay | None) -> None:
        """Keep `overlay` as the view of a command that moved to the background."""
        background.view = overlay

    def all(self) -> list[Background]:
        """Every background process of the session, in the order they started."""
        return list(self._session.background.values())

    def get(self, ident: str) -> Background:
        """The process `ident`.

        Raises:
            InvalidArgument: no such process in this session (the sentence says that
                processes live in the worker that started them).
        """
        found = self._session.background.get(ident.strip())
        if found is None:
            known = ", ".join(self._session.background) or "none"
            raise InvalidArgument(
                "process_id",
                f"{ident!r} is not a process of this thread here (known: {known}); processes"
                " live in the worker process that started them and end with its session",
            )
        return found

    def review(self, background: Background) -> ChangeSet | None:
        """What `background` changed since its last review (None without a view).

        None too, and the view dropped, once it was stopped at a limit. The process is
        paused while its upper layer is read; the changed entries are copied out, so the
        set stays as read while the process goes on. The view goes once a review began
        after the process ended (that read saw all it will ever write); one that ends
        while it is read (or just after) is reviewed again at the next read.
        """
        overlay = background.view
        if not isinstance(overlay, Overlay):
            return None
        limit = background.limit
        if limit is not None and limit.name == "changed_bytes":  # nothing more is kept
            remove_folder(overlay.folder)
            background.view = None
            return None
        ended = not background.running
        paused = not ended and self._session.pause(background)
        try:
            changes = _copied(overlay.read_changes(self._lower, self._host_code), overlay.folder)
        finally:
            if paused:
                self._session.resume(background)
        if ended:
            remove_folder(overlay.folder)
            background.view = None
        return changes

    def reviewed(self, background: Background) -> None:
        """The last review's set was committed (or dropped): the stale clock starts again."""
        overlay = background.view
        if isinstance(overlay, Overlay):
            # the fine clock: never behind the inode times the commit (and its clean-up) set
            background.view = replace(overlay, started_ns=stamp(overlay.folder))


def _copied(changes: ChangeSet, parent: str) -> ChangeSet:
    """`changes` with its new entries copied to a folder of its own, beside `parent`."""
    folder = tempfile.mkdtemp(prefix="fstools-review-", dir=Path(parent).parent)
    for change in changes.changes:
        if change.kind is ChangeKind.DELETED:
            continue
        source = Path(upper_path(changes, change.path))
        target = Path(upper_path(ChangeSet((), folder), change.path))
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = source.lstat().st_mode
        if stat_module.S_ISDIR(mode):
            target.mkdir(exist_ok=True)
        elif stat_module.S_ISLNK(mode):
            target.symlink_to(source.readlink())
        elif stat_module.S_ISREG(mode):
            _copy_file(source, target)
        else:  # what shutil makes of it (a named pipe: refused)
            shutil.copy2(source, target, follow_symlinks=False)
    return replace(changes, source=folder)


def _copy_file(source: Path, target: Path) -> None:
    """Copy the file `source` to `target` with its mode and times, holes kept as holes."""
    with source.open("rb") as reading, target.open("xb") as writing:
        copy_sparse(reading.fileno(), writing.fileno())
    shutil.copystat(source, target, follow_symlinks=False)


__all__ = ["LocalProcesses"]
