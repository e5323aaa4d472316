"""Local disk, confined to one root directory."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, get_args

from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.beneath import Beneath
from langchain_fstools.backends.host_paths import is_inside, real_path
from langchain_fstools.backends.local.atomic_writes import AtomicWrites
from langchain_fstools.backends.local.local_commands import LocalCommands
from langchain_fstools.backends.protocol import Backend, FileInfo
from langchain_fstools.backends.write_locks import DEFAULT_LOCK_TIMEOUT
from langchain_fstools.core import paths
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.errors import (
    ChangesNotCommitted,
    ExecutionUnsupported,
    OutsideRoot,
    PartialWrite,
)
from langchain_fstools.search.ripgrep import MEMORY_LIMIT, RipgrepSearch, find_ripgrep
from langchain_fstools.search.spawner import SpawnedProcess, Spawner, available
from langchain_fstools.shell.sandbox.environment import MINIMAL_ENV, CommandEnv, InheritEnv
from langchain_fstools.shell.sandbox.sandbox import DEFAULT_SANDBOX, Sandbox

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator, Mapping, Sequence

    from langchain_fstools.backends.local.local_processes import LocalProcesses
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.search.contract import NativeSearch
    from langchain_fstools.shell.sandbox.overlay import Layer

logger = logging.getLogger(__name__)


Durability = Literal["fsync", "rename"]
"""How far a write is made durable: through power loss (`fsync`) or process death only."""

DURABILITIES: Final = get_args(Durability)

_LEAST_SEARCH_MEMORY = 32 << 20
"""The smallest `search_memory_limit`: rg's spawner process lives under it too."""


class LocalBackend(Backend):
    """Files on local disk under `root_dir`, which the model sees as `/`.

    Confinement: every virtual path passes `paths.normalize` and is walked beneath the
    root's directory descriptor, one component at a time, each opened relative to the
    one before with `O_NOFOLLOW` (see `backends.beneath`); the open, create, rename or
    remove then names only the last component, relative to the directory reached. A
    symlink on the way is followed only when its target, resolved, lies inside the
    root, and the walk continues from the root descriptor. So `..`, a symlinked file or
    parent directory, a chain of links and a dangling link that leads outside are all
    refused with `OutsideRoot`, for reads and writes alike; links that stay inside are
    followed (a write through one updates its target, and the link survives). No host
    path is resolved twice: a process that swaps a directory for a symlink to the
    outside at any moment (a command run by `execute`, or anyone who can write in the
    workspace) makes a call fail or land elsewhere inside the root, never outside it.
    An absolute host path given as a path is just a virtual path under the root. Errors
    are built-in `OSError` subclasses re-raised with the virtual path only: no host
    path ever appears in an exception.

    Writes are atomic: a hidden temporary file in the target's directory is written,
    fsynced, given the old file's owner and permission bits (a new file gets the
    umask default) and renamed over the target, then the directory is fsynced. A
    writer killed midway leaves the old content (and possibly a stale
    `*.fstools-tmp` file, which listings show as it is). A batch (`write_many`, used
    by `apply_patch`, and `commit`) writes and fsyncs every temporary file at once,
    checks every expected version, renames them all, then fsyncs each directory
    once: each file still holds its old or its new content at any moment, and a
    batch that does not fit on the disk changes nothing (`DiskFull`). A batch is
    journaled (`backends.journal`): a process killed in its middle leaves an
    intent record, and the next call on the workspace, from any process, finishes
    the batch or undoes it and removes its temporary files. `durability="rename"`
    skips the syncs: a killed process still leaves old or new content, a power cut
    may lose recent writes. A conditional write compares versions and renames while
    holding a lock on the target's folder that every writer of this package takes (any
    thread, any process; see `backends.write_locks`), so of two writers that read one
    version exactly one succeeds; a program that does not take the lock (an editor)
    can still slip in between the check and the rename. The version token combines
    mtime, size and inode; each write stamps a precise mtime later than the replaced
    file's, so quick same-size writes never share a token. Devices, FIFOs and sockets
    are listed as special entries and never opened; reads never block.

    Limits: a directory that another process moves out of the root while a call
    holds it open is still written in (only a process that can write outside can do
    that). The ripgrep fast path (`host_path`) hands `rg` resolved host paths, and
    runs it confined (`search.spawner`): it reads only beneath the root (Landlock, where
    the kernel has it), so a folder swapped for a link out of the root while it walks
    is refused, and it has a memory limit (`search_memory_limit`).

    Running commands is opt-in (`execute=True`): without it the backend cannot run
    commands and the toolkit offers no `execute` tool. Commands run through bash (or
    `/bin/sh` without bash) with the root as working directory, in their own process
    group; everything they started is killed when they end or at their deadline (see
    `shell.session.process`). Inside a command, `/` is the machine's
    root, not the workspace; wherever the root's host path appears in the output it is
    replaced by `/`, the workspace's virtual name. Commands run in an OS sandbox by
    default (`Sandbox()`, see `shell.sandbox.sandbox`): the host read-only, the workspace
    writable, a private `/tmp`, credential folders masked, no capabilities, no
    network. Where no sandbox can start, `execute` refuses (`SandboxUnavailable`);
    `sandbox=None` is the unsafe opt-out: a command can then do whatever this process
    may do. Commands get only `PATH`, `HOME`, `LANG`, `TERM` and `TMPDIR`, plus `env`
    (see `shell.sandbox.environment`); with `sandbox=None`, this process's environment.

    Args:
        root_dir: The workspace directory. It must exist.
        use_ripgrep: Search with ripgrep when `rg` is available. Default: True.
        search_memory_limit: Bytes one ripgrep run may allocate (`RLIMIT_DATA`), or
            None for no limit; a search that reaches it fails saying so. Default:
            `MEMORY_LIMIT` (1 GiB).
        execute: Let the agent run shell commands in the workspace. Default: False.
        sandbox: The OS sandbox of commands: a `Sandbox` (network, extra writable,
            read-only or hidden paths), `"bwrap"` (bubblewrap only), or None to run
            commands unconfined (unsafe). Default: `Sandbox()`.
        env: Variables set for every command, over inherited ones. Default: none.
        inherit_env: Which of this process's variables commands get: True (all),
            False (none) or a list of names; inside a sandbox, names that look like
            secrets are never inherited (pass them in `env`). Default: `MINIMAL_ENV`,
            True with `sandbox=None`.
        durability: `"fsync"` makes every write survive power loss; `"rename"` skips
            the syncs, so a write survives a killed process (old or new content,
            never a mix) but a power cut may lose it. Default: `"fsync"`.
        lock_timeout: Seconds a write waits for other writers of the same folders
            before it fails with `WriteLockTimeout`. Default: 10.

    Example:
        ```python
        from langchain_fstools import FileToolkit, LocalBackend

        tools = FileToolkit(LocalBackend("./repo")).get_tools()

        # with execute: commands in the default sandbox (workspace writable, no network)
        tools = FileToolkit(LocalBackend("./repo", execute=True)).get_tools()
        ```
    """

    kind = "local"

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        use_ripgrep: bool = True,
        search_memory_limit: int | None = MEMORY_LIMIT,
        execute: bool = False,
        sandbox: Sandbox | Literal["bwrap"] | None = DEFAULT_SANDBOX,
        env: Mapping[str, str] | None = None,
        inherit_env: InheritEnv | None = None,
        durability: Durability = "fsync",
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        """Confine the backend to `root_dir`.

        Args:
            root_dir: The workspace directory.
            use_ripgrep: Search with ripgrep when `rg` is available. Default: True.
            search_memory_limit: Bytes one ripgrep run may allocate, or None.
                Default: `MEMORY_LIMIT` (1 GiB).
            execute: Let the agent run shell commands in the workspace. Default: False.
            sandbox: The OS sandbox of commands, or None (unsafe). Default: `Sandbox()`.
            env: Variables set for every command. Default: none.
            inherit_env: True, False or the names of the variables commands inherit.
                Default: `MINIMAL_ENV`, True with `sandbox=None`.
            durability: `"fsync"` (writes survive power loss) or `"rename"` (writes
                survive a killed process only, without syncs). Default: `"fsync"`.
            lock_timeout: Seconds a write waits for other writers of its folders.
                Default: 10.

        Raises:
            ValueError: `root_dir` is not an existing directory, `sandbox` is unknown
                or a non-default one is given without `execute=True`,
                or `env`/`inherit_env` are malformed or given without `execute=True`,
                or `durability` is unknown, or `lock_timeout` is not positive,
                or `search_memory_limit` is not a positive number of bytes (or None).
        """
        if durability not in DURABILITIES:
            raise ValueError(f"unknown durability {durability!r}; choose from {list(DURABILITIES)}")
        if not lock_timeout > 0:
            raise ValueError(
                f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}"
            )
        if search_memory_limit is not None and (
            isinstance(search_memory_limit, bool)
            or not isinstance(search_memory_limit, int)
            or search_memory_limit < _LEAST_SEARCH_MEMORY
        ):
            raise ValueError(
                "search_memory_limit must be a number of bytes of at least"
                f" {_LEAST_SEARCH_MEMORY} (32 MiB), or None, not {search_memory_limit!r}"
            )
        self._search_memory_limit = search_memory_limit
        self._durability: Durability = durability
        # Not `real_path`: a graph factory may build this on an event loop, where
        # `langgraph dev` refuses `os.readlink`; `os.path.realpath` only lstats.
        root = os.path.realpath(os.fspath(root_dir))
        if not os.path.isdir(root):
            what = "is a file" if os.path.exists(root) else "does not exist"
            raise ValueError(
                f"root_dir must be an existing directory, but {os.fspath(root_dir)!r} ({root})"
                f" {what}: create it first (os.makedirs) or pass another directory"
            )
        if sandbox == "bwrap":
            sandbox = Sandbox(method="bwrap")
        if sandbox is not None and not isinstance(sandbox, Sandbox):
            raise ValueError(f"unknown sandbox {sandbox!r}; pass a Sandbox(...), 'bwrap' or None")
        if sandbox not in {None, DEFAULT_SANDBOX} and not execute:
            raise ValueError("a sandbox is for commands: pass execute=True with it")
        if (env is not None or inherit_env is not None) and not execute:
            raise ValueError("env and inherit_env are for commands: pass execute=True with them")
        if inherit_env is None:
            inherit_env = True if sandbox is None else MINIMAL_ENV
        env_built = CommandEnv.of(env, inherit_env)
        self.supports_execute = execute
        self._root = root
        self._beneath = Beneath(root)
        self._sandbox = sandbox if execute else None
        self._writes = AtomicWrites(
            self._beneath, durable=durability == "fsync", lock_timeout=lock_timeout
        )
        self._commands = LocalCommands(
            self._beneath, self._writes, sandbox=self._sandbox, env=env_built
        )
        self._use_ripgrep = use_ripgrep
        # Looked up on first use (PATH lookups block: a graph factory may build this
        # backend on an event loop, while searches and commands run in a thread there).
        self._ripgrep: RipgrepSearch | Literal["unresolved"] | None = "unresolved"

    @property
    def sandbox(self) -> Sandbox | None:
        """The OS sandbox commands run in, or None (no commands, or unconfined)."""
        return self._sandbox

    def storage_key(self) -> Hashable:
        """The root directory: two backends on one folder share its files."""
        return ("local", self._root)

    def native_search(self) -> NativeSearch | None:
        """The ripgrep search of the root, when `rg` exists and `use_ripgrep` is set.

        The first call looks `rg` up (a blocking PATH search): the tools ask from the
        sync path or a worker thread.
        """
        if self._ripgrep == "unresolved":
            executable = find_ripgrep() if self._use_ripgrep else None
            self._ripgrep = None
            if executable is not None and available():
                spawner = Spawner(self._beneath.descriptor, executable, self._search_memory_limit)
                self._ripgrep = RipgrepSearch(
                    executable,
                    self.host_path,
                    start=functools.partial(_start_confined, spawner),
                    memory_limit=self._search_memory_limit,
                )
            elif executable is not None:
                self._ripgrep = RipgrepSearch(executable, self.host_path)
            logger.debug(
                "LocalBackend searches with %s",
                f"ripgrep ({executable})" if executable else "the Python engine",
            )
        return self._ripgrep

    def host_path(self, path: str) -> Path:
        """Return the confined host path of a virtual path, for fast paths such as rg.

        The result is for the process only: never show it to a model.

        Args:
            path: A virtual path.

        Returns:
            The real host path (symlinks resolved), guaranteed inside the root.

        Raises:
            OutsideRoot: the path, with symlinks followed, leaves the root.
            InvalidPath: `paths.normalize` refuses the path.
        """
        return Path(self._resolve(paths.normalize(path)))

    # ----- the core --------------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`; symlinks inside the root report their target."""
        self._writes.settle()
        return disk_operations.stat(self._beneath, paths.normalize(path))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file, whole or `size` bytes from `start`.

        Decides from `stat` before opening, opens with `O_NOFOLLOW | O_NONBLOCK` and
        checks the open descriptor again, so devices, FIFOs and sockets are refused
        without blocking. Memory is bounded by what is asked for.

        Raises:
            OSError: `start` or `size` is negative (errno EINVAL, as `pread` says).
        """
        self._writes.settle()
        return disk_operations.read(self._beneath, paths.normalize(path), start, size)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Atomically replace a file's content: temporary file, fsync, rename."""
        try:
            return self.write_many([Write(path, data, expected_version)])[0]
        except PartialWrite as partial:  # the rename happened, the directory sync failed
            raise partial.cause from None

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Replace several files and remove entries, as one commit, with one round of syncs.

        Every deletion's version is checked, every temporary file is written (and, with
        `durability="fsync"`, fsynced, all at once), then every expected version is
        checked, then the deletions are made (deepest first), the files renamed into
        place and each directory touched fsynced once. A conflict, or any failure before
        the first visible step (a full disk), changes nothing. Two changes or more are
        journaled (`backends.journal`): a process killed once every file is staged
        leaves the whole batch (the next call on the workspace finishes it), one killed
        before leaves none of it. A `receipt` is kept with the commit, in its journal,
        once it took effect (`committed`).

        Raises:
            DiskFull: the new files do not fit on the disk (nothing was changed).
            PartialWrite: a removal, a rename or a directory sync failed after others
                took effect.
        """
        return self._writes.write_many(writes, deletions, receipt)

    def committed(self, receipt: str) -> bool:
        """Whether a batch given `receipt` took effect (a cut one is finished or undone first)."""
        return self._writes.committed(receipt)

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`, in a worker thread."""
        return await asyncio.to_thread(lambda: self.write_many(writes, deletions, receipt=receipt))

    def delete(self, path: str) -> None:
        """Remove a file, a symlink (never its target), or an empty directory.

        Raises:
            InvalidPath: `path` is the root.
        """
        disk_operations.delete(self._beneath, paths.normalize(path))

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine.

        Raises:
            FileExistsError: `path` or one of its parents is a file.
        """
        disk_operations.mkdir(self._beneath, paths.normalize(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name.

        A symlink is listed as what it points to, with `link` set; one that leads
        outside the root, or nowhere, is listed as a special entry (visible, never
        opened).
        """
        virtual = paths.normalize(path)
        self._writes.settle()
        descriptor = disk_operations.open_directory(self._beneath, virtual)
        try:
            return list(disk_operations.entries(self._beneath, virtual, descriptor))
        finally:
            os.close(descriptor)

    # ----- optional fast paths ---------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The virtual path of what `path` reaches: symlinks followed inside the root."""
        return disk_operations.resolve(self._beneath, paths.normalize(path))

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename a file or a directory tree as POSIX `rename` does, creating parents.

        A file replaces a file, a directory replaces an empty directory, and a symlink
        is moved as a link (on either side, the link itself is renamed or replaced).
        Errors are the kernel's: `EINVAL` for a move into itself, `ENOTEMPTY` onto a
        non-empty directory or an ancestor, `EISDIR`/`ENOTDIR` for kind mismatches.
        """
        origin, target = paths.normalize(source), paths.normalize(destination)
        durable = self._durability == "fsync"
        return disk_operations.move(self._beneath, origin, target, durable=durable)

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, sorted; symlinked directories not entered.

        Walks to `path` once, then opens each directory relative to its parent, never
        through a link; one replaced or removed meanwhile is skipped.
        """
        virtual = paths.normalize(path)
        self._writes.settle()
        descriptor = disk_operations.open_directory(self._beneath, virtual)
        try:
            yield from disk_operations.walk(self._beneath, virtual, descriptor)
        finally:
            os.close(descriptor)

    # ----- capability: running commands --------------------------------------------------

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run `command` with bash in the root, bounded by `timeout` and `output_limit`.

        On a copy-on-write view, what the command changed is committed when it ends,
        but for a change no command may make by itself (`judge_changes`), which keeps
        the whole set out (`execute_changes` leaves all of it to the caller).

        Raises:
            ExecutionUnsupported: the backend was made without `execute=True`.
            SandboxUnavailable: no OS sandbox can start here (the reason says why).
            ChangesNotCommitted: the command changed what git or this program runs
                later, or credentials; nothing it changed was committed.
            OSError: the shell (or bwrap) could not be started; names `/` only.
        """
        result = self.execute_changes(command, timeout=timeout, output_limit=output_limit)
        if result.changes is not None:
            try:
                if result.changes:  # an empty set commits nothing
                    refused = self.judge_changes(result.changes).refused
                    if refused is not None:
                        raise ChangesNotCommitted(*refused, result.output)
                    self.commit(result.changes)
            finally:
                result.changes.discard()
        return replace(result, changes=None)

    def execute_changes(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int,
        yield_after: float | None = None,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Run `command` as `execute` does, on a copy-on-write view where the sandbox has one.

        What the command changed is then returned as `changes`, not yet committed:
        `commit` applies it, `ChangeSet.discard` drops it. Without a view (Landlock
        alone, `workspace="direct"`, `sandbox=None`) the command wrote in place and
        `changes` is None. A command still running after `yield_after` seconds moves
        to the background (`process_id`; see `processes`). `layer` (a branch's
        changes) is laid over the workspace under the command's view; the change set
        is then what the command changed over the layer.

        Raises:
            ExecutionUnsupported: no commands here, or a layer without a view.
        """
        if not self.supports_execute:
            raise ExecutionUnsupported(self.kind)
        return self._commands.run(
            command,
            timeout=timeout,
            output_limit=output_limit,
            yield_after=yield_after,
            layer=layer,
        )

    def processes(self) -> LocalProcesses | None:
        """The background processes of the current sandbox session (None without execute)."""
        return self._commands.processes() if self.supports_execute else None

    def close(self) -> None:
        """End the sandbox sessions of this backend's commands (and every process in them)."""
        self._commands.close()

    def command_root(self) -> str | None:
        """The workspace's real host path, where commands see it (None without execute)."""
        return self._root if self.supports_execute else None

    def command_network(self) -> bool | tuple[str, ...] | None:
        """None without execute; True unconfined (`sandbox=None`); else the sandbox's."""
        return self._commands.network() if self.supports_execute else None

    def contains_commands(self) -> bool:
        """Whether commands run on a copy-on-write view with no network.

        True with bubblewrap working here, `workspace="copy-on-write"` and no network;
        probes the sandbox the first time.
        """
        return self.supports_execute and self._commands.contained()

    def hides_from_commands(self) -> bool:
        """Whether commands get a mount namespace to mask paths in (bubblewrap).

        Not with Landlock alone or `sandbox=None`; probes the sandbox the first time.
        """
        return self.supports_execute and self._commands.hidden()

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Apply a command's change set to the workspace, or nothing of it.

        Every path must still be as it was when the set was read (its `before`
        version; absent for an addition): that is checked for all of them first, and
        again for each file and link as it is renamed into place, under the folder
        locks every writer takes. Every file and link is staged first, so a set that
        does not fit on the disk changes nothing; then, journaled (see
        `backends.journal`), deletions (deepest first), new directories and mode
        changes, and the files and links renamed into place (see `write_many`).

        Returns:
            What each added or modified file and link now is.

        Raises:
            VersionConflict: a path changed since (nothing is committed when found
                before the first change; a writer that slips in later stops the rest).
            DiskFull: the set does not fit on the disk (nothing is committed).
        """
        return self._commands.commit(changes)

    # ----- helpers -----------------------------------------------------------------------

    def _resolve(self, virtual: str) -> str:
        """The real host path of a canonical virtual path, for `host_path` only.

        `OutsideRoot` if it leaves the root. File operations never use it: they walk
        beneath the root's descriptor (`backends.beneath`).
        """
        host = real_path(os.path.join(self._root, virtual.lstrip("/")))
        if not is_inside(self._root, host):
            raise OutsideRoot(virtual)
        return host


def _start_confined(spawner: Spawner, command: list[str], cwd: Path, stdin: bool) -> SpawnedProcess:  # noqa: FBT001 - the `RipgrepSearch.start` signature
    """Start rg through `spawner`, in the folder `cwd` (opened here, read beneath the root)."""
    directory = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return spawner.spawn(command, cwd=directory, stdin=stdin)
    finally:
        os.close(directory)


__all__ = ["DURABILITIES", "Durability", "LocalBackend"]
