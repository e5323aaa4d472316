"""Commands on local disk: run in a sandbox session, their changes read and committed.

`LocalBackend` holds one `LocalCommands`: it prepares the OS sandbox on the first
command (`shell.sandbox.sandbox.Confinement`), keeps a session per thread
(`shell.session`), runs each command on a fresh copy-on-write view where the sandbox
has one (`shell.sandbox.overlay`), with what the permission rules deny reading masked,
reads the view's upper layer into a change set, and commits a change set through the
backend's atomic multi-file write (`backends.local.atomic_writes`), all or nothing.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.beneath import LISTING, Beneath
from langchain_fstools.backends.file_versions import version_of
from langchain_fstools.backends.host_paths import is_inside
from langchain_fstools.backends.journal import Folder, Removal, Steps
from langchain_fstools.backends.local.atomic_writes import BatchEntry
from langchain_fstools.backends.local.local_processes import LocalProcesses
from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.core import paths
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet, remove_folder
from langchain_fstools.errors import (
    CommandRefused,
    ExecutionUnsupported,
    OutsideRoot,
    SandboxUnavailable,
    VersionConflict,
)
from langchain_fstools.search.ripgrep import find_ripgrep
from langchain_fstools.shell.sandbox.overlay import Overlay, files_equal, open_upper, upper_path
from langchain_fstools.shell.sandbox.protected import host_code_paths
from langchain_fstools.shell.sandbox.sandbox import (
    MOUNT_RACE_TRIES,
    Confinement,
    Sandbox,
    mounts_raced,
)
from langchain_fstools.shell.sandbox.unreadable import commands_unreadable, unreadable_paths
from langchain_fstools.shell.session.output import reporter_if_listening
from langchain_fstools.shell.session.session import Session, SessionEnded, Sessions

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_fstools.backends.local.atomic_writes import AtomicWrites
    from langchain_fstools.core.results import ExecutionResult, FileInfo
    from langchain_fstools.shell.sandbox.environment import CommandEnv
    from langchain_fstools.shell.sandbox.overlay import Layer, LowerTree
    from langchain_fstools.shell.session.background import Background


class LocalCommands:
    """The commands of one `LocalBackend` (module docstring).

    Args:
        beneath: The workspace root, held open.
        writes: The backend's atomic writes, which commit change sets.
        sandbox: The OS sandbox of commands, or None (unconfined).
        env: What commands' environments are built from.
    """

    def __init__(
        self, beneath: Beneath, writes: AtomicWrites, *, sandbox: Sandbox | None, env: CommandEnv
    ) -> None:
        """Hold the parts; the sandbox is probed on the first command."""
        self._beneath = beneath
        self._root = beneath.root
        self._writes = writes
        self._sandbox = sandbox
        self._env = env
        # Found on the first command (it starts bubblewrap once to check it works).
        self._confinement: Confinement | None = None
        self._sessions = Sessions()

    def run(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None = None,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """`LocalBackend.execute_changes`: `command` in this thread's session, its changes read.

        A session whose bubblewrap met a host mount going away as it started
        (`mounts_raced`) is started again, up to `MOUNT_RACE_TRIES` times: the command
        had not run.

        Raises:
            ExecutionUnsupported: a layer without a view (commands would write in place).
        """
        tried = 1
        while True:
            try:
                return self._run_once(
                    command,
                    timeout=timeout,
                    output_limit=output_limit,
                    yield_after=yield_after,
                    layer=layer,
                )
            except SandboxUnavailable as exc:
                if tried >= MOUNT_RACE_TRIES or not mounts_raced(exc.reason):
                    raise
                tried += 1

    def _run_once(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None,
        layer: Layer | None,
    ) -> ExecutionResult:
        confinement = self._confinement_prepared()
        session = self._sessions.current(confinement.session)
        overlay = self._view(session)
        if layer is not None and overlay is None:
            raise ExecutionUnsupported("branch")  # commands would write in place
        try:
            layered = None
            if layer is not None and overlay is not None:
                layered = os.path.join(overlay.folder, "layer")
                os.mkdir(layered, 0o700)
                layer.build(layered)
            overlay, args = self._masked_view(session, overlay, layered)
            result, background = self._run(
                session,
                command,
                overlay,
                layered,
                args,
                timeout=timeout,
                output_limit=output_limit,
                yield_after=yield_after,
            )
            if background is not None:
                background.view = overlay
                return result
            if overlay is None:
                return result
            if result.limit is not None and result.limit.name == "changed_bytes":
                remove_folder(overlay.folder)  # nothing of it is kept
                return result
            lower: LowerTree = _Lower(self._beneath)
            if layer is not None:
                lower = layer.lower(lower)
            changes = overlay.read_changes(lower, self._host_code)
            return replace(result, changes=changes)
        except BaseException:
            if overlay is not None:
                remove_folder(overlay.folder)
            raise

    def processes(self) -> LocalProcesses:
        """The background processes of the current sandbox session."""
        confinement = self._confinement_prepared()
        return LocalProcesses(
            lambda: self._sessions.current(confinement.session),
            start_view=self._view,
            command_args=self._command_args,
            workspace=self._root,
            lower=_Lower(self._beneath),
            host_code=self._host_code,
            run=self.run,
        )

    def _view(self, session: Session) -> Overlay | None:
        """A fresh copy-on-write view in `session`'s folder, or None (commands write in place)."""
        assert self._confinement is not None  # noqa: S101 - prepared by the caller
        return Overlay.create(session.plan.folder) if self._confinement.copy_on_write else None

    def _command_args(self, session: Session, layered: str | None = None) -> dict[str, object]:
        """What a command of `session` gets: the shell, environment, masks and read-only paths.

        Found at its start: the sandbox's masks (`Confinement.command_masks`) and what
        the permission rules deny reading in the workspace now, and in the `layered`
        folder laid over it (`_unreadable`).
        """
        assert self._confinement is not None  # noqa: S101 - prepared by the caller
        masks, read_only = self._confinement.command_masks(session.plan)
        masks += self._unreadable(self._confinement, layered)
        env = self._env.build(os.environ, secrets=self._sandbox is None)
        return {"interpreter": find_shell(), "env": env, "masks": masks, "read_only": read_only}

    def _masked_view(
        self, session: Session, overlay: Overlay | None, layered: str | None
    ) -> tuple[Overlay | None, Mapping[str, object]]:
        """A command's arguments (`_command_args`), and its view told what they mask."""
        args = self._command_args(session, layered)
        if overlay is not None:
            overlay = overlay.masking(session.plan.masked, cast("list[str]", args["masks"]))
        return overlay, args

    def _unreadable(self, confinement: Confinement, layered: str | None) -> list[str]:
        """Real paths of the entries this call's commands must not see, now.

        The workspace's, and those of a layer laid over it (`layered`, a branch's
        files), each where the command's view shows it.

        Raises:
            CommandRefused: there is one, and no mount namespace to hide it in (Landlock
                alone, or `sandbox=None`): the command would read it.
        """
        unreadable = commands_unreadable.get()
        if unreadable is None:
            return []
        found = unreadable_paths(self._root, unreadable)
        if layered is not None:
            found += unreadable_paths(layered, unreadable)
        if found and confinement.bwrap is None:
            raise CommandRefused(
                "unreadable",
                f"{unreadable.why(found[0])} keeps {found[0]} from reads, and commands can be"
                " kept from it only with bubblewrap, which this machine cannot run",
            )
        real = [os.path.realpath(os.path.join(self._root, path.lstrip("/"))) for path in found]
        # a denied link to the workspace or a folder above it hides nothing it holds
        return [path for path in dict.fromkeys(real) if not is_inside(path, self._root)]

    def close(self) -> None:
        """End the sandbox sessions of these commands (and every process in them)."""
        self._sessions.close()

    def network(self) -> bool | tuple[str, ...]:
        """True unconfined (`sandbox=None`); else the sandbox's network."""
        if self._sandbox is None:
            return True
        domains = self._sandbox.domains
        return domains.names if domains is not None else bool(self._sandbox.network)

    def contained(self) -> bool:
        """Whether commands run on a copy-on-write view with no network.

        True with bubblewrap working here, `workspace="copy-on-write"` and no network;
        probes the sandbox the first time.
        """
        if self._sandbox is None or self._sandbox.network:
            return False
        try:
            confinement = self._confinement_prepared()
        except SandboxUnavailable:
            return False
        return confinement.copy_on_write

    def hidden(self) -> bool:
        """Whether commands get a mount namespace to mask paths in (bubblewrap).

        Not with Landlock alone or `sandbox=None`; probes the sandbox the first time.
        """
        if self._sandbox is None:
            return False
        try:
            confinement = self._confinement_prepared()
        except SandboxUnavailable:
            return False
        return confinement.bwrap is not None

    def _confinement_prepared(self) -> Confinement:
        if self._confinement is None:
            self._confinement = Confinement.prepare(self._sandbox, self._root)
        return self._confinement

    @functools.cached_property
    def _host_code(self) -> tuple[str, ...]:
        """Virtual paths of code this process runs later, found once (`shell.sandbox.protected`)."""
        confinement = self._confinement
        executables = [find_ripgrep(), confinement.bwrap if confinement is not None else None]
        return tuple(host_code_paths(self._root, executables))

    def _run(
        self,
        session: Session,
        command: str,
        overlay: Overlay | None,
        layered: str | None,
        args: Mapping[str, object],
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None,
    ) -> tuple[ExecutionResult, Background | None]:
        view = None if overlay is None else [self._root, overlay.upper, overlay.work]
        if view is not None and layered is not None:
            view.append(layered)
        reporter = reporter_if_listening()
        try:
            before = session.state.cwd
            result, after, background = session.run(
                command,
                timeout=timeout,
                output_limit=output_limit,
                view=view,
                on_output=reporter.add if reporter is not None else None,
                yield_after=yield_after,
                **args,  # type: ignore[arg-type]
            )
        except SessionEnded as exc:  # the sandbox could not start, or ended: say why
            raise SandboxUnavailable(str(exc.strerror or exc)) from None
        except OSError as exc:
            code = exc.errno if exc.errno is not None else errno.EIO
            raise type(exc)(code, str(exc.strerror or exc), paths.ROOT) from None
        finally:
            if reporter is not None:
                reporter.flush()
        moved = replace(result, directory=after.cwd if after.cwd != before else None)
        return moved, background

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """`LocalBackend.commit`: every path checked, every file staged, then journaled.

        Deletions go deepest first, then new directories and mode changes, then the
        files and links are renamed into place (`AtomicWrites.write`).
        """
        self._writes.settle()
        deleted = {c.path for c in changes.changes if c.kind is ChangeKind.DELETED}
        for change in changes.changes:
            if not (change.kind is ChangeKind.ADDED and change.path in deleted):
                self._check_before(change)  # an entry replacing a deleted one: checked by it
        removals = [
            Removal(c.path, None if c.entry == "directory" else c.before)
            for c in sorted(
                (c for c in changes.changes if c.kind is ChangeKind.DELETED),
                key=lambda c: c.path.count("/"),
                reverse=True,
            )
        ]
        folders: list[Folder] = []
        batch: list[BatchEntry] = []
        move = os.stat(changes.source).st_dev == os.stat(self._root).st_dev
        for change in changes.changes:
            if change.kind is ChangeKind.DELETED:
                continue
            if change.entry == "directory":
                folders.append(Folder(change.path, change.kind is ChangeKind.ADDED, change.mode))
                continue
            expected = change.before if change.before is not None else ABSENT
            committed = BatchEntry(change.path, expected, follow=False, canonical=True)
            if change.entry == "link":
                batch.append(replace(committed, link=change.target))
                continue
            source = upper_path(changes, change.path)
            batch.append(replace(committed, source=source, move=move, mode=change.mode))
        return self._writes.write(batch, Steps(removals, folders))

    def _check_before(self, change: Change) -> None:
        """`VersionConflict` unless `change.path` is still what the change set found."""
        if change.entry == "directory" and change.kind is not ChangeKind.ADDED:
            return  # a directory's version changes with its entries: its files are checked
        with paths.virtual_errors(change.path):
            try:
                with self._beneath.place(change.path, follow=False) as place:
                    current = place.info
            except (FileNotFoundError, NotADirectoryError):
                current = None
        actual = version_of(current) if current is not None else None
        if actual != change.before:
            raise VersionConflict(change.path, change.before or ABSENT, actual)


@functools.cache
def find_shell() -> str:
    """The `bash` on PATH, else `/bin/sh`; looked up once, when the first command runs."""
    return shutil.which("bash") or "/bin/sh"


@dataclass(frozen=True)
class _Lower:
    """The workspace as a change set is compared with it: walked beneath the root."""

    beneath: Beneath

    def lstat(self, virtual: str) -> os.stat_result | None:
        """The entry's status; None where there is none.

        A folder the agent's user may not look into raises `PermissionError`: what it
        holds is unknown, not absent.
        """
        try:
            with paths.virtual_errors(virtual), self.beneath.place(virtual, follow=False) as place:
                return place.info
        except PermissionError:
            raise
        except (OSError, OutsideRoot):
            return None

    def names(self, virtual: str) -> list[str]:
        with self.beneath.place(virtual, follow=False) as place:
            descriptor = os.open(place.name, LISTING, dir_fd=place.directory)
        try:
            return os.listdir(descriptor)
        finally:
            os.close(descriptor)

    def readlink(self, virtual: str) -> str:
        with self.beneath.place(virtual, follow=False) as place:
            return os.readlink(place.name, dir_fd=place.directory)

    def same_bytes(self, virtual: str, upper: str) -> bool:
        with self.beneath.place(virtual, follow=False) as place:
            lower = os.open(place.name, disk_operations.READ_FLAGS, dir_fd=place.directory)
        try:
            new = open_upper(upper)
            try:
                return files_equal(lower, new)
            finally:
                os.close(new)
        finally:
            os.close(lower)

    def version(self, result: os.stat_result) -> str:
        return version_of(result)


__all__ = ["LocalCommands", "find_shell"]
