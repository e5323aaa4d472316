"""`SandboxBackend`: the file tools' backend over any deepagents sandbox provider."""

from __future__ import annotations

import asyncio
import copy
import math
import shlex
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from langchain_fstools.backends.protocol import Backend, check_limit
from langchain_fstools.backends.sandbox.helper import info_of
from langchain_fstools.backends.sandbox.kept_processes import SandboxProcesses
from langchain_fstools.backends.sandbox.recorded_commands import SandboxCommands
from langchain_fstools.backends.sandbox.resident import IDLE_LIMIT
from langchain_fstools.backends.sandbox.search import _Search
from langchain_fstools.backends.sandbox.transport import DEFAULT_TIMEOUT, Execute, Transport
from langchain_fstools.core import paths
from langchain_fstools.core.results import Deletion, ExecutionResult, FileInfo, Write
from langchain_fstools.errors import ChangesNotCommitted, ExecutionUnsupported
from langchain_fstools.shell.sandbox.limits import GiB
from langchain_fstools.shell.session.output import OutputBuffer

PEEK: Final = 16_384
"""Bytes of a file a bound view's `stat` brings along (see `SandboxBackend.bind`): a
window of a small file, or enough to tell text from binary, yet a reply that every
provider prints whole."""

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator, Sequence

    from langchain_fstools.backends.sandbox.transport import Exchange, SandboxLike
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.shell.sandbox.overlay import Layer


class SandboxBackend(_Search, Backend):
    """Files in a remote sandbox (any deepagents `SandboxBackendProtocol` provider).

    The model sees `root` inside the sandbox as `/`. Every call is one `execute` of a
    small helper with the sandbox's `python3` (see `backends.sandbox.transport`), which
    the first call uploads into a private folder of the sandbox; the helper works on the
    sandbox's disk as `LocalBackend` works on this one (`backends.sandbox.helper`). The
    first call also leaves the helper running there (`backends.sandbox.resident`), so
    later file operations fork a worker of it instead of starting Python. Where the
    provider also offers streams (`open_stream`, as `DockerSandbox` does), those
    `execute`s go through a relay kept open in the sandbox instead
    (`backends.sandbox.relay`), so they cost no round trip of the provider's:

    - Confinement: every path is walked beneath the root's directory descriptor, so
      `..` and symlinks that lead outside the root are `OutsideRoot`; links inside are
      followed.
    - Versions: mtime, size and inode, as on local disk (`backends.file_versions`),
      read back in the same run as the write, which stamps an mtime later than the
      replaced file's; a conditional write checks the version in that run too.
    - Atomic writes: a temporary file beside the target, fsynced, given the old file's
      permission bits, renamed over it. `write_many` stages every file, checks every
      version (of its deletions too), then renames them all and removes what it
      deletes, putting back every step taken if one fails: a conflict, a full disk or
      a directory that is not empty changes nothing. A batch of two changes or more
      is journaled (`backends.journal`): a helper killed among its steps leaves a
      record the next helper run finishes or undoes before anything else.
    - Ranged reads read only the range (`read_bytes(path, start, size)`), in the
      sandbox; `read_checked` checks the version in the same run.
    - Search: ripgrep run from the sandbox's shell, one round trip a glob or grep, with
      the local backend's command line and parsing (the sandbox's `rg`, or this
      environment's uploaded once); otherwise the package's own search engine runs
      there (`backends.sandbox.search`).

    A sandbox without Python 3.11+ (`python`) answers the first call with
    `StoreUnavailable` saying so, which the tools turn into one sentence for the model.

    Commands (`execute`) run in `root` through the helper too, and are governed as on
    local disk (`backends.sandbox.recorded_commands`): the helper keeps a copy of the
    workspace, runs the command in place, reads what it changed and puts the workspace
    back, so `execute_changes` returns the command's change set, uncommitted, for the
    review the file tools' changes get (protected paths, permission rules, a person's
    approval in `default` mode, history), and `commit` applies it all or nothing.
    Where the helper cannot run, commands are the provider's own `execute`, writing
    straight to the sandbox's disk, unreviewed (`contains_commands` is False). The
    sandbox's network is the provider's: it is not governed here.

    Background processes (`processes`, the `process` tool) are kept in the sandbox by
    the helper (`backends.sandbox.kept_processes`), as on SSH: they run in place, so what
    they change is not reviewed, and the tools ask before starting one in `default`
    mode. `close` ends them.

    Args:
        sandbox: The provider's sandbox object: anything with deepagents'
            `SandboxBackendProtocol` methods (`execute`, `upload_files`,
            `download_files`, their async twins, and `id`), such as a `BaseSandbox`
            subclass or `DockerSandbox`.
        root: The workspace folder in the sandbox (absolute; it must exist).
            Default: `/workspace`.
        python: Name or path of Python 3.11+ in the sandbox. Default: `python3`.
        timeout: Seconds one file operation may take in the sandbox. Default: 120.
        use_ripgrep: Search with ripgrep: the sandbox's, or this environment's uploaded
            once where the sandbox lacks it and can run it
            (`backends.sandbox.ripgrep_upload`). Default: True.
        helper_folder: Where the helper is kept in the sandbox: a folder the first
            call makes, private to the user commands run as. Default:
            `/tmp/.fstools-<sandbox id>`.
        changed_bytes: Most bytes of new content one command may leave; above, nothing
            it changed is kept. None: no bound. Default: 4 GiB.
        resident_idle: Seconds the resident helper waits for a request before it ends
            (`backends.sandbox.resident`: a server the first call starts in the sandbox,
            so later file operations skip Python's start); 0: none, one Python start
            per operation, and no relay. Default: 600.

    Raises:
        ValueError: `root` or `helper_folder` is not an absolute path, or `timeout` is
            not positive, or `resident_idle` is negative.

    Example:
        ```python
        from langchain_fstools import FileToolkit
        from langchain_fstools.backends.sandbox import SandboxBackend

        tools = FileToolkit(SandboxBackend(my_modal_sandbox, root="/workspace")).get_tools()
        ```
    """

    kind = "sandbox"
    supports_execute = True

    def __init__(
        self,
        sandbox: SandboxLike,
        root: str = "/workspace",
        *,
        python: str = "python3",
        timeout: int = DEFAULT_TIMEOUT,
        use_ripgrep: bool = True,
        helper_folder: str | None = None,
        changed_bytes: int | None = 4 * GiB,
        resident_idle: float = IDLE_LIMIT,
    ) -> None:
        """Remember the sandbox; nothing runs in it until the first call."""
        if not root.startswith("/"):
            raise ValueError(f"root must be an absolute path in the sandbox, not {root!r}")
        if helper_folder is not None and not helper_folder.startswith("/"):
            raise ValueError(f"helper_folder must be absolute, not {helper_folder!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        if not resident_idle >= 0:
            raise ValueError(f"resident_idle must be 0 or more seconds, not {resident_idle}")
        self._root = root.rstrip("/") or "/"
        self._transport = Transport(
            sandbox,
            self._root,
            python=python,
            timeout=timeout,
            folder=helper_folder,
            resident_idle=resident_idle,
        )
        self._use_ripgrep = use_ripgrep
        self._commands = SandboxCommands(self._transport, changed_bytes=changed_bytes)
        self._processes = SandboxProcesses(self._transport)
        self._peeked: dict[str, _Peeked] | None = None

    def bind(self, runtime: Any) -> SandboxBackend:
        """A view for one tool call, which keeps the bytes its calls brought at their version.

        Its `stat` of a file brings the file's first bytes too, and its reads from the
        start keep what they read: a later read of the call at that version (telling
        text from binary, a window of a small file, the window's second pass, the
        parse a read starts in the background) is served from them. One round trip
        for a small file's read. What the view keeps dies with the call, and any
        change it makes forgets it.
        """
        del runtime
        view = copy.copy(self)
        view._peeked = {}  # noqa: SLF001 - the view's own
        return view

    @property
    def transport(self) -> Transport:
        """How operations reach the sandbox (for the command layer built on it)."""
        return self._transport

    def storage_key(self) -> Hashable:
        """The sandbox (by its id) and the root: two backends on them share their files.

        A provider object without an id stands for itself.
        """
        transport = self._transport
        sandbox = transport.sandbox_id if transport.has_id else id(transport.sandbox)
        return ("sandbox", sandbox, self._root)

    # ----- the core, sync and async -----------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`; symlinks inside the root report their target."""
        return self._transport.run(self._stat(path))

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await self._transport.arun(self._stat(path))

    def exists(self, path: str) -> bool:
        """Whether anything exists at `path`."""
        return bool(self._transport.run(self._value("exists", paths.normalize(path))))

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        return bool(await self._transport.arun(self._value("exists", paths.normalize(path))))

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file, whole or `size` bytes from `start`, read in the sandbox."""
        return self._transport.run(self._read(path, start, size, None))

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await self._transport.arun(self._read(path, start, size, None))

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """`read_bytes`, in the same run as the version check."""
        return self._transport.run(self._read(path, start, size, expected_version))

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`."""
        return await self._transport.arun(self._read(path, start, size, expected_version))

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Atomically replace a file's content: temporary file, fsync, rename."""
        return self._transport.run(self._write([Write(path, data, expected_version)]))[0]

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return (await self._transport.arun(self._write([Write(path, data, expected_version)])))[0]

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Write several files and remove entries, all or nothing, in one helper run.

        Every write is staged and every version checked before anything visible
        changes; a step that fails puts back the steps before it (see the class
        docstring). No receipt is kept.
        """
        del receipt
        return self._transport.run(self._write(writes, deletions))

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`."""
        del receipt
        return await self._transport.arun(self._write(writes, deletions))

    def delete(self, path: str) -> None:
        """Remove a file, a symlink (never its target), or an empty directory."""
        self._transport.run(self._change("delete", paths.normalize(path)))

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await self._transport.arun(self._change("delete", paths.normalize(path)))

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""
        self._transport.run(self._change("mkdir", paths.normalize(path)))

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await self._transport.arun(self._change("mkdir", paths.normalize(path)))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name; links listed as their targets."""
        return self._transport.run(self._list(path, None, None))

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return await self._transport.arun(self._list(path, None, None))

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """One page of a directory's entries, described in the sandbox page by page."""
        check_limit(limit)
        return self._transport.run(self._list(path, after, limit))

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Async `list_page`."""
        check_limit(limit)
        return await self._transport.arun(self._list(path, after, limit))

    def resolve(self, path: str) -> str:
        """The virtual path of what `path` reaches: symlinks followed inside the root."""
        return str(self._transport.run(self._value("resolve", paths.normalize(path))))

    async def aresolve(self, path: str) -> str:
        """Async `resolve`."""
        return str(await self._transport.arun(self._value("resolve", paths.normalize(path))))

    def move(self, source: str, destination: str) -> FileInfo:
        """Rename a file or directory as POSIX `rename` does, creating the target's parents."""
        return self._transport.run(self._move(source, destination))

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await self._transport.arun(self._move(source, destination))

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """Every entry below `path`, depth first, sorted, in one run; linked folders not entered."""
        records = self._transport.run(self._value("walk", paths.normalize(path)))
        yield from (info_of(record) for record in records)

    # ----- commands ------------------------------------------------------------------------------

    def contains_commands(self) -> bool:
        """Whether commands are recorded as change sets: the helper runs (asked once)."""
        return self._transport.run(self._commands.probe())

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Run `command` in `root`; what it changed is committed unless refused.

        The change set is committed when the command ends, but for a change no command
        may make by itself (`judge_changes`), which keeps the whole set out
        (`execute_changes` leaves all of it to the caller).

        Raises:
            ChangesNotCommitted: the command changed what git or this program runs
                later, or credentials; nothing it changed was committed.
        """
        result = self._transport.run(self._run(command, timeout, output_limit))
        try:
            return self._transport.run(self._committed(result))
        finally:
            if result.changes is not None:
                result.changes.discard()

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced in the sandbox
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`."""
        result = await self._transport.arun(self._run(command, timeout, output_limit))
        try:
            return await self._transport.arun(self._committed(result))
        finally:
            if result.changes is not None:
                await asyncio.to_thread(result.changes.discard)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Run `command` in `root`, its changes returned uncommitted (None: unrecorded).

        Raises:
            ExecutionUnsupported: a `layer` (a branch's) was given: none is laid here.
            DiskFull: the sandbox's disk is full (nothing the command changed is kept).
        """
        if layer is not None:
            raise ExecutionUnsupported("branch")
        return self._transport.run(self._run(command, timeout, output_limit))

    async def aexecute_changes(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced in the sandbox
        output_limit: int,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Async `execute_changes`."""
        if layer is not None:
            raise ExecutionUnsupported("branch")
        return await self._transport.arun(self._run(command, timeout, output_limit))

    def _run(self, command: str, timeout: float, output_limit: int) -> Exchange[ExecutionResult]:
        """The command recorded by the helper, or, where it cannot run, the provider's run."""
        self._forget()  # a plain command writes in place; a commit follows a recorded one
        if (yield from self._commands.probe()):
            return (
                yield from self._commands.execute(
                    command, timeout=timeout, output_limit=output_limit
                )
            )
        started = time.monotonic()
        response = yield Execute(self._in_root(command), math.ceil(timeout))
        expired = time.monotonic() - started >= timeout
        return _result(response, output_limit, timed_out=expired)

    def _committed(self, result: ExecutionResult) -> Exchange[ExecutionResult]:
        """`execute`'s commit of a recorded result's set, unless the review refuses it."""
        if result.changes:  # an empty set commits nothing: no round trip
            refused = self.judge_changes(result.changes).refused
            if refused is not None:
                raise ChangesNotCommitted(*refused, result.output)
            yield from self._commands.commit(result.changes)
        return replace(result, changes=None)

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Apply a command's change set in the sandbox, all or nothing.

        Every path must still be at its `before` version (checked for all first);
        every file and link is staged before anything visible changes, and a failure
        puts back what was changed.

        Raises:
            VersionConflict: a path changed since (nothing is committed).
            DiskFull: the new contents do not fit on the sandbox's disk (nothing is).
        """
        self._forget()
        return self._transport.run(self._commands.commit(changes))

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`."""
        self._forget()
        return await self._transport.arun(self._commands.commit(changes))

    def command_root(self) -> str:
        """Commands see the workspace at `root` in the sandbox."""
        return self._root

    def contains_background(self) -> bool:
        """False: background processes run in place (`backends.sandbox.kept_processes`)."""
        return False

    def processes(self) -> SandboxProcesses | None:
        """The sandbox's background processes, kept there by the helper (None without it).

        See `backends.sandbox.kept_processes`: what they change is not reviewed.
        """
        return self._processes if self.contains_commands() else None

    def close(self) -> None:
        """End the background processes this backend started in the sandbox.

        The sandbox itself is the provider's to end (`DockerSandbox.close`).
        """
        self._processes.close()
        self._transport.close()

    async def aclose(self) -> None:
        """Async `close`."""
        await self._processes.aclose()
        await asyncio.to_thread(self._transport.close)

    def _in_root(self, command: str) -> str:
        return f"cd {shlex.quote(self._root)} && {command}"

    # ----- the operations as exchanges -----------------------------------------------------------

    def _forget(self) -> None:
        """Drop what a bound view peeked: the call is changing files."""
        if self._peeked:
            self._peeked.clear()

    def _change(self, op: str, *args: Any) -> Exchange[Any]:
        self._forget()
        return (yield from self._value(op, *args))

    def _value(self, op: str, *args: Any) -> Exchange[Any]:
        value, _ = yield from self._transport.call(op, *args)
        return value

    def _info(self, op: str, *args: Any) -> Exchange[FileInfo]:
        return info_of((yield from self._value(op, *args)))

    def _stat(self, path: str) -> Exchange[FileInfo]:
        virtual = paths.normalize(path)
        if self._peeked is None:
            return info_of((yield from self._value("stat", virtual)))
        record, head = yield from self._transport.call("stat", virtual, PEEK)
        info = info_of(record)
        if info.is_file:
            self._peeked[virtual] = _Peeked(info.version, head, whole=len(head) == info.size)
        return info

    def _read(
        self, path: str, start: int, size: int | None, expected: str | None
    ) -> Exchange[bytes]:
        virtual = paths.normalize(path)
        peeked = self._peeked.get(virtual) if self._peeked is not None else None
        if peeked is not None and start >= 0 and (size is None or size >= 0):
            served = peeked.serve(start, size, expected)
            if served is not None:
                return served
        _, data = yield from self._transport.call("read", virtual, start, size, expected)
        if self._peeked is not None and expected is not None and start == 0:
            # read at `expected`: fewer bytes than asked for are the whole file
            read = _Peeked(expected, data, whole=size is None or len(data) < size)
            if peeked is None or peeked.version != expected or read.knows_more(peeked):
                self._peeked[virtual] = read
        return data

    def _write(
        self, writes: Sequence[Write], deletions: Sequence[Deletion] = ()
    ) -> Exchange[list[FileInfo]]:
        self._forget()
        batch = [[paths.normalize(w.path), w.expected_version, len(w.data)] for w in writes]
        data = b"".join(w.data for w in writes)
        if deletions:
            removed = [[paths.normalize(d.path), d.expected_version] for d in deletions]
            call = self._transport.call("write_and_delete", batch, removed, data=data)
        else:
            call = self._transport.call("write", batch, data=data)
        records, _ = yield from call
        return [info_of(record) for record in records]

    def _list(self, path: str, after: str | None, limit: int | None) -> Exchange[list[FileInfo]]:
        records = yield from self._value("list", paths.normalize(path), after, limit)
        return [info_of(record) for record in records]

    def _move(self, source: str, destination: str) -> Exchange[FileInfo]:
        self._forget()
        origin, target = paths.normalize(source), paths.normalize(destination)
        return (yield from self._info("move", origin, target))


@dataclass(frozen=True, slots=True)
class _Peeked:
    """A file's bytes from its start at one version, as a bound view's call read them."""

    version: str
    head: bytes
    whole: bool
    """Whether `head` is the whole file."""

    def serve(self, start: int, size: int | None, expected: str | None) -> bytes | None:
        """The bytes a read asks for, if these hold them at its version; else None."""
        end = None if size is None else start + size
        if expected not in {None, self.version}:
            return None
        if self.whole or (end is not None and end <= len(self.head)):
            return self.head[start:end]
        return None

    def knows_more(self, other: _Peeked) -> bool:
        """Whether these bytes hold more of the file than `other`'s."""
        return (self.whole and not other.whole) or len(self.head) > len(other.head)


PROVIDER_TIMEOUT: Final = 124
"""The exit code deepagents' providers (and `DockerSandbox`) give a command they killed at
its deadline, as coreutils' `timeout` does."""


def _result(response: Any, output_limit: int, *, timed_out: bool) -> ExecutionResult:
    """The provider's `ExecuteResponse` as ours, its output bounded by `output_limit`.

    Exit code 124 once the deadline has passed (`timed_out`) is the provider's kill at
    the deadline: the result says it timed out, as a local command's does, so the model
    gets the same sentence. Before the deadline, 124 is the command's own exit code.
    """
    buffer = OutputBuffer(output_limit)
    buffer.add(str(response.output).encode("utf-8", "surrogateescape"))
    code = response.exit_code
    if timed_out and code == PROVIDER_TIMEOUT:
        return ExecutionResult(
            buffer.text(), None, timed_out=True, dropped_bytes=buffer.dropped_bytes
        )
    return ExecutionResult(buffer.text(), code, dropped_bytes=buffer.dropped_bytes)


__all__ = ["SandboxBackend"]
