"""The guarded view: a backend that sees less, for one tool call's permissions.

`GuardedBackend` (a `backends.view.BackendView`) hides and refuses paths a `PathGuard`
forbids: denied paths are missing from listings and searches and raise
`PermissionError` (with the virtual path) when named, so no tool can reach them,
whatever it does. The history recorder (`history.recording`) is another view.

A view is built around the *unbound* backend and binds with it: `bind(runtime)` binds
the inner backend, then wraps the result for that one call.
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from langchain_fstools.backends.protocol import ABSENT, Backend, FileInfo, check_limit
from langchain_fstools.backends.view import BackendView, as_given
from langchain_fstools.core import calls, paths
from langchain_fstools.core.changesets import ChangeKind, ChangeReview
from langchain_fstools.core.records import digest
from langchain_fstools.errors import FsToolsError, PartialWrite, StaleApproval
from langchain_fstools.search.engine import ignored_among
from langchain_fstools.search.roots import WrappedSearch
from langchain_fstools.shell.sandbox.protected import classify
from langchain_fstools.shell.sandbox.unreadable import hiding

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.changesets import Change, ChangeSet
    from langchain_fstools.core.results import Deletion, ExecutionResult, Write
    from langchain_fstools.search.contract import (
        FileHits,
        GrepRequest,
        Listing,
        NativeSearch,
        SearchPart,
    )
    from langchain_fstools.shell.sandbox.overlay import Layer
    from langchain_fstools.shell.sandbox.protected import Finding
    from langchain_fstools.shell.sandbox.unreadable import Unreadable
    from langchain_fstools.shell.session.background import Background, Processes

CommitDecision = Literal["allow", "ask", "deny", "refuse"]
"""How a command's change of one path may be committed: as it is, once a person
approves, never (a rule denies it), or never in this mode (no command may make it by
itself, and there is no person to ask)."""


class PathGuard(Protocol):
    """What one tool call may do with each canonical virtual path."""

    def visible(self, path: str) -> bool:
        """Whether the path may be named, stat'ed and listed."""

    def readable(self, path: str) -> bool:
        """Whether the file's content may be read (or searched)."""

    def writable(self, path: str) -> bool:
        """Whether the path may be written, deleted, created or moved."""

    def unreadable(self, *, masked: bool = True) -> Unreadable | None:
        """What commands must not see, or None: nothing.

        `masked`: whether the backend can hide paths from commands; where it cannot,
        a command a person approved to run was asked about because of them, and sees them.
        """

    def commit_decision(
        self, path: str, finding: Finding | None, *, ignored: bool = False
    ) -> CommitDecision:
        """How a command's change of the path may be committed (see `CommitDecision`).

        `finding`: its category when not ordinary, protected or host-run
        (`shell.sandbox.protected`); `ignored`: whether the workspace's ignore files ignore it.
        """

    def expectation(self, path: str) -> tuple[str, str | None] | None:
        """The approved change pinned at `path`, if any.

        Returns the file's version when the person saw it and the SHA-256 of the
        approved post-image (None: removed); None when nothing is pinned.
        """


class GuardedBackend(BackendView):
    """A backend whose every call passes a `PathGuard` first.

    Each path is checked as spelled (normalised) and as the inner backend resolves it
    (`Backend.resolve`: symlinks followed inside the workspace), at the moment of the
    call, so a link swapped after a decision cannot lead a call anywhere the guard has
    not allowed; the stricter answer wins. Precedence, per path:
        1. Not `visible`: absent from `list_dir`, `list_page`, `walk` and search results (a link
           whose target is hidden, too); `exists` is False; `stat` and every other
           call raise `PermissionError`.
        2. Visible but not `readable`: listed, but its bytes are neither read nor
           searched (`read_bytes` raises `PermissionError`; grep skips it).
        3. Not `writable`: `write_bytes`, `delete`, `mkdir` and `move` (either end)
           raise `PermissionError`. A command's change set is judged path by path
           (`commit_decision`, `judge_changes`); `commit` refuses one with a path that
           is not `allow`ed (`PermissionError`, before anything is written). Commands
           run with what the guard hides (`PathGuard.unreadable`) masked in their view
           (`shell.sandbox.unreadable`), where the inner backend can hide paths.
        4. A change a person approved (`expectation`): `stat` of the file raises
           `StaleApproval` if it is no longer at the version the person saw, and a
           write must carry exactly the approved post-image (a removal must be
           approved as one), so approving applies exactly the previewed change.

    Args:
        inner: The backend to guard.
        guard_for: Builds the guard of one call from its runtime (at `bind`).
    """

    def __init__(self, inner: Backend, guard_for: Callable[[Any], PathGuard]) -> None:
        """Guard `inner` with the guard `guard_for(runtime)` of each call."""
        super().__init__(inner)
        self.guard_for = guard_for
        self.guard: PathGuard | None = None
        self._written: set[str] = set()

    def bind(self, runtime: Any) -> Backend:
        """Bind the inner backend, guarded by this call's guard."""
        bound = GuardedBackend(self.inner.bind(runtime), self.guard_for)
        bound.guard = self.guard_for(runtime)
        return bound

    # ----- checks, one body for sync and async ---------------------------------------------

    def _checking(self, path: str, allowed: Callable[[PathGuard, str], bool]) -> Effect[str]:
        """The normalised path, once it and its resolution are visible and `allowed`."""
        canonical, _ = yield from self._checked(path, allowed)
        return canonical

    def _checked(
        self, path: str, allowed: Callable[[PathGuard, str], bool]
    ) -> Effect[tuple[str, str]]:
        """`_checking`'s path, and what the inner backend resolved it to."""
        canonical = paths.normalize(path)
        resolved = yield from calls.resolve(canonical)
        guard = self._guard()
        for spelling in {canonical, resolved}:
            if not guard.visible(spelling) or not allowed(guard, spelling):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), canonical)
        return canonical, resolved

    def _shown(
        self, directory: str, resolved: str, entries: Iterable[FileInfo]
    ) -> Effect[list[FileInfo]]:
        """The entries whose path, and whose resolved target, are both visible.

        Entries below a linked `directory` (leading to `resolved`) are also checked at
        their place under its target; a linked entry is resolved on its own.
        """
        guard = self._guard()
        shown = []
        for entry in entries:
            if not guard.visible(entry.path):
                continue
            if resolved != directory and not guard.visible(
                _rebase(entry.path, directory, resolved)
            ):
                continue
            if entry.link and not (yield from self._target_visible(entry.path, guard)):
                continue
            shown.append(entry)
        return shown

    def _target_visible(self, path: str, guard: PathGuard) -> Effect[bool]:
        try:
            target = yield from calls.resolve(path)
        except (OSError, FsToolsError):
            return True  # a link leading nowhere or outside: listed as special, never opened
        return guard.visible(target)

    def _guard(self) -> PathGuard:
        return self.guard if self.guard is not None else self.guard_for(None)

    def _pinned(self, path: str) -> Effect[tuple[str, str | None] | None]:
        resolved = yield from calls.resolve(paths.normalize(path))
        return None if resolved in self._written else self._guard().expectation(resolved)

    def _checking_write(
        self, path: str, data: bytes | None, expected_version: str | None
    ) -> Effect[str]:
        """A writable path, once the change matches exactly what a person approved there."""
        canonical = yield from self._checking(path, _writable)
        yield from self._checking_pin(canonical, data, expected_version)
        return canonical

    def _checking_pin(
        self, canonical: str, data: bytes | None, expected_version: str | None
    ) -> Effect[None]:
        """Refuse a change of `canonical` other than the one a person approved there."""
        pinned = yield from self._pinned(canonical)
        if pinned is not None:
            before, after = pinned
            wrong_data = after is None if data is not None else after is not None
            if wrong_data or (data is not None and digest(data) != after):
                raise StaleApproval(canonical)
            if expected_version is not None and expected_version != before:
                raise StaleApproval(canonical)
        self._written.add((yield from calls.resolve(canonical)))

    # ----- operations, one body for sync and async -----------------------------------------

    def _stat(self, path: str) -> Effect[FileInfo]:
        canonical = yield from self._checking(path, _any)
        try:
            info: FileInfo | None = yield from calls.stat(canonical)
        except FileNotFoundError:
            info = None
        pinned = yield from self._pinned(canonical)
        if pinned is not None and (ABSENT if info is None else info.version) != pinned[0]:
            raise StaleApproval(canonical)
        if info is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), canonical)
        return info

    def _read_bytes(self, path: str, start: int, size: int | None) -> Effect[bytes]:
        canonical = yield from self._checking(path, _readable)
        return (yield from calls.read_bytes(canonical, start, size))

    def _read_checked(
        self, path: str, start: int, size: int | None, expected_version: str
    ) -> Effect[bytes]:
        canonical = yield from self._checking(path, _readable)
        data = yield from calls.read_checked(
            canonical, start, size, expected_version=expected_version
        )
        # read at `expected_version`: stale if a person approved a change of another one
        pinned = yield from self._pinned(canonical)
        if pinned is not None and expected_version != pinned[0]:
            raise StaleApproval(canonical)
        return data

    def _list_dir(self, path: str) -> Effect[list[FileInfo]]:
        canonical = yield from self._checking(path, _any)
        resolved = yield from calls.resolve(canonical)
        entries = yield from calls.list_dir(canonical)
        return (yield from self._shown(canonical, resolved, entries))

    def _list_page(self, path: str, after: str | None, limit: int) -> Effect[list[FileInfo]]:
        """A full page of visible entries: further inner pages while hidden ones cut it short."""
        check_limit(limit)
        canonical = yield from self._checking(path, _any)
        resolved = yield from calls.resolve(canonical)
        shown: list[FileInfo] = []
        while len(shown) < limit:
            page = yield from calls.list_page(canonical, after=after, limit=limit)
            shown += yield from self._shown(canonical, resolved, page)
            if len(page) < limit:
                break
            after = page[-1].name
        return shown[:limit]

    def _exists(self, path: str) -> Effect[bool]:
        try:
            canonical = yield from self._checking(path, _any)
        except PermissionError:
            return False
        return (yield from calls.exists(canonical))

    def _write(self, path: str, data: bytes, expected_version: str | None) -> Effect[FileInfo]:
        canonical = yield from self._checking_write(path, data, expected_version)
        return (yield from calls.write_bytes(canonical, data, expected_version=expected_version))

    def _write_many(
        self, writes: Sequence[Write], deletions: Sequence[Deletion], receipt: str | None
    ) -> Effect[list[FileInfo]]:
        """Every write and deletion checked before any is made, as `_write` and `_delete` check.

        A pinned file must receive exactly the approved post-image, at the approved version.
        """
        guarded = []
        for write in writes:
            canonical = yield from self._checking(write.path, _writable)
            guarded.append(replace(write, path=canonical))
        for write in guarded:
            yield from self._checking_pin(write.path, write.data, write.expected_version)
        removed = []
        for deletion in deletions:
            canonical = yield from self._checking_write(deletion.path, None, None)
            removed.append(replace(deletion, path=canonical))
        try:
            return (yield from calls.write_many(guarded, removed, receipt=receipt))
        except PartialWrite as partial:
            raise as_given(partial, [*guarded, *removed], [*writes, *deletions]) from partial.cause

    def _delete(self, path: str) -> Effect[None]:
        canonical = yield from self._checking_write(path, None, None)
        yield from calls.delete(canonical)

    def _mkdir(self, path: str) -> Effect[None]:
        canonical = yield from self._checking(path, _writable)
        yield from calls.mkdir(canonical)

    def _move(self, source: str, destination: str) -> Effect[FileInfo]:
        source = yield from self._checking(source, _writable)
        destination = yield from self._checking(destination, _writable)
        return (yield from calls.move(source, destination))

    def _commit(self, changes: ChangeSet) -> Effect[list[FileInfo]]:
        review = yield from self._judging(changes)
        if review.refused is not None or review.asks:
            path = review.refused[1] if review.refused is not None else review.asks[0]
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return (yield from calls.commit(changes))

    def _judging(self, changes: ChangeSet) -> Effect[ChangeReview]:
        """Judge each change by this call's guard (`PathGuard.commit_decision`).

        Each path is classified once (`shell.sandbox.protected.classify`, with the
        workspace's Python environments and git directories); a rule, or a protected
        path with no one to ask, refuses the set; the paths to ask a person about are
        named, but for those the workspace's ignore files ignore, where only the mode
        would ask (read only when something asks).
        """
        environments, repositories = yield from _marked(changes)
        found = classify(
            changes,
            changes.host_code,
            environment=environments.__contains__,
            git_directory=repositories.__contains__,
        )
        guard = self._guard()
        asks: list[Change] = []
        for change in changes.changes:
            finding = found.get(change.path)
            decision = guard.commit_decision(change.path, finding)
            if decision == "deny":
                return ChangeReview(("denied", change.path, ""))
            if decision == "refuse":
                return ChangeReview(("protected", change.path, finding.reason if finding else ""))
            if decision == "ask":
                asks.append(change)
        if not asks:
            return ChangeReview()
        targets = [(change.path, change.entry == "directory") for change in asks]
        ignored = yield from ignored_among(targets)
        return ChangeReview(
            asks=tuple(
                change.path
                for change in asks
                if guard.commit_decision(
                    change.path, found.get(change.path), ignored=change.path in ignored
                )
                == "ask"
            )
        )

    def judge_changes(self, changes: ChangeSet) -> ChangeReview:
        """`_judging`, sync."""
        return calls.run(self._judging(changes), self.inner)

    async def ajudge_changes(self, changes: ChangeSet) -> ChangeReview:
        """`_judging`, async."""
        return await calls.arun(self._judging(changes), self.inner)

    # ----- commands: run with what the guard hides masked ---------------------------------

    def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
        """Forwarded, hiding what the guard hides from the command."""
        with hiding(self._hidden()):
            return self.inner.execute(command, timeout=timeout, output_limit=output_limit)

    def execute_changes(
        self, command: str, *, timeout: float, output_limit: int, layer: Layer | None = None
    ) -> ExecutionResult:
        """Forwarded, hiding what the guard hides from the command."""
        with hiding(self._hidden()):
            return self.inner.execute_changes(
                command, timeout=timeout, output_limit=output_limit, layer=layer
            )

    async def aexecute(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
    ) -> ExecutionResult:
        """Async `execute`."""
        with hiding(self._hidden()):
            return await self.inner.aexecute(command, timeout=timeout, output_limit=output_limit)

    async def aexecute_changes(
        self,
        command: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the command's deadline, enforced by the backend
        output_limit: int,
        layer: Layer | None = None,
    ) -> ExecutionResult:
        """Async `execute_changes`."""
        with hiding(self._hidden()):
            return await self.inner.aexecute_changes(
                command, timeout=timeout, output_limit=output_limit, layer=layer
            )

    def _hidden(self) -> Unreadable | None:
        """What the guard hides from this call's commands (`PathGuard.unreadable`)."""
        return self._guard().unreadable(masked=self.inner.hides_from_commands())

    def processes(self) -> Processes | None:
        """The inner table, whose commands start with what the guard hides masked."""
        table = self.inner.processes()
        return None if table is None else _HidingProcesses(table, self._hidden())

    # ----- the backend methods -------------------------------------------------------------

    def stat(self, path: str) -> FileInfo:
        """Metadata of a visible path (checked against an approved change's version)."""
        return calls.run(self._stat(path), self.inner)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a readable file."""
        return calls.run(self._read_bytes(path, start, size), self.inner)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Bytes of a readable file at `expected_version` (checked as `stat` checks it)."""
        return calls.run(self._read_checked(path, start, size, expected_version), self.inner)

    def list_dir(self, path: str) -> list[FileInfo]:
        """The visible entries of a visible directory."""
        return calls.run(self._list_dir(path), self.inner)

    def list_page(self, path: str, *, after: str | None = None, limit: int) -> list[FileInfo]:
        """A page of the visible entries of a visible directory."""
        return calls.run(self._list_page(path, after, limit), self.inner)

    def exists(self, path: str) -> bool:
        """Whether a visible path exists (an invisible one never does)."""
        return calls.run(self._exists(path), self.inner)

    def write_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Write a writable file (exactly the approved post-image, if one is pinned)."""
        return calls.run(self._write(path, data, expected_version), self.inner)

    def write_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Write writable files as one batch (all checked before any is written)."""
        return calls.run(self._write_many(writes, deletions, receipt), self.inner)

    def delete(self, path: str) -> None:
        """Delete a writable path (an approved removal, if a change is pinned)."""
        calls.run(self._delete(path), self.inner)

    def mkdir(self, path: str) -> None:
        """Create a writable directory."""
        calls.run(self._mkdir(path), self.inner)

    def move(self, source: str, destination: str) -> FileInfo:
        """Move between two writable paths."""
        return calls.run(self._move(source, destination), self.inner)

    def commit(self, changes: ChangeSet) -> list[FileInfo]:
        """Commit a command's changes if every path is committable (all checked first)."""
        return calls.run(self._commit(changes), self.inner)

    async def astat(self, path: str) -> FileInfo:
        """Async `stat`."""
        return await calls.arun(self._stat(path), self.inner)

    async def aread_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Async `read_bytes`."""
        return await calls.arun(self._read_bytes(path, start, size), self.inner)

    async def aread_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        """Async `read_checked`."""
        return await calls.arun(self._read_checked(path, start, size, expected_version), self.inner)

    async def alist_dir(self, path: str) -> list[FileInfo]:
        """Async `list_dir`."""
        return await calls.arun(self._list_dir(path), self.inner)

    async def alist_page(
        self, path: str, *, after: str | None = None, limit: int
    ) -> list[FileInfo]:
        """Async `list_page`."""
        return await calls.arun(self._list_page(path, after, limit), self.inner)

    async def aexists(self, path: str) -> bool:
        """Async `exists`."""
        return await calls.arun(self._exists(path), self.inner)

    async def awrite_bytes(
        self, path: str, data: bytes, *, expected_version: str | None = None
    ) -> FileInfo:
        """Async `write_bytes`."""
        return await calls.arun(self._write(path, data, expected_version), self.inner)

    async def awrite_many(
        self,
        writes: Sequence[Write],
        deletions: Sequence[Deletion] = (),
        *,
        receipt: str | None = None,
    ) -> list[FileInfo]:
        """Async `write_many`."""
        return await calls.arun(self._write_many(writes, deletions, receipt), self.inner)

    async def adelete(self, path: str) -> None:
        """Async `delete`."""
        await calls.arun(self._delete(path), self.inner)

    async def amkdir(self, path: str) -> None:
        """Async `mkdir`."""
        await calls.arun(self._mkdir(path), self.inner)

    async def amove(self, source: str, destination: str) -> FileInfo:
        """Async `move`."""
        return await calls.arun(self._move(source, destination), self.inner)

    async def acommit(self, changes: ChangeSet) -> list[FileInfo]:
        """Async `commit`."""
        return await calls.arun(self._commit(changes), self.inner)

    # ----- sync only: walking and search parts (the engines walk off the event loop) --------

    def walk(self, path: str = paths.ROOT) -> Iterator[FileInfo]:
        """The visible entries below a visible directory."""
        canonical = calls.run(self._checking(path, _any), self.inner)
        resolved = self.inner.resolve(canonical)
        return iter(
            calls.run(self._shown(canonical, resolved, self.inner.walk(canonical)), self.inner)
        )

    def search_parts(self, directory: str) -> list[SearchPart]:
        """The inner parts, each native search filtered by the guard.

        Parts walked by the pure-Python engine need no filter: it walks this view.
        """
        canonical, resolved = calls.run(self._checked(directory, _any), self.inner)
        guard = self._guard()

        def shown(path: str, *, searched: bool) -> bool:
            spellings = {path, _rebase(path, canonical, resolved)}
            return all(guard.visible(p) and (guard.readable(p) or not searched) for p in spellings)

        return [
            part
            if part.native is None
            else replace(part, native=_GuardedSearch(part.native, shown))
            for part in self.inner.search_parts(canonical)
        ]


def _marked(changes: ChangeSet) -> Effect[tuple[set[str], set[str]]]:
    """The workspace's Python environments and git directories above the set's paths.

    A Python environment holds a `pyvenv.cfg`; a git directory holds `HEAD` and
    `objects`, whatever its name. A folder the set adds is not looked up (the set's
    own files count). A folder the agent's user may not look into (a command's
    `chmod 000`) may be an environment for all the review can tell: it counts as one.
    """
    added = {change.path for change in changes.changes if change.kind is ChangeKind.ADDED}
    above = {folder for change in changes.changes for folder in _folders_above(change.path)}
    environments: set[str] = set()
    repositories: set[str] = set()
    for folder in sorted(above - added):
        try:
            if (yield from calls.exists(paths.join(folder, "pyvenv.cfg"))):
                environments.add(folder)
            if (yield from calls.exists(paths.join(folder, "HEAD"))) and (
                yield from calls.exists(paths.join(folder, "objects"))
            ):
                repositories.add(folder)
        except PermissionError:
            environments.add(folder)
    return environments, repositories


def _folders_above(path: str) -> Iterator[str]:
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        yield "/" + "/".join(parts[:depth])


def _rebase(path: str, directory: str, resolved: str) -> str:
    """`path` below `directory`, placed below `resolved` (what the directory leads to)."""
    if directory == resolved or not paths.is_within(path, directory):
        return path
    suffix = path[len(directory) :].lstrip("/")
    return paths.join(resolved, suffix) if suffix else resolved


def _any(_guard: PathGuard, _path: str) -> bool:
    return True


def _readable(guard: PathGuard, path: str) -> bool:
    return guard.readable(path)


def _writable(guard: PathGuard, path: str) -> bool:
    return guard.writable(path)


class _HidingProcesses:
    """A process table whose commands start with `unreadable` hidden from them."""

    def __init__(self, inner: Processes, unreadable: Unreadable | None) -> None:
        self.inner = inner
        self.unreadable = unreadable

    def run(
        self, command: str, *, timeout: float, output_limit: int, yield_after: float
    ) -> ExecutionResult:
        with hiding(self.unreadable):
            return self.inner.run(
                command, timeout=timeout, output_limit=output_limit, yield_after=yield_after
            )

    def start(self, command: str, *, output_limit: int, terminal: bool = False) -> Background:
        with hiding(self.unreadable):
            return self.inner.start(command, output_limit=output_limit, terminal=terminal)

    def all(self) -> list[Background]:
        return self.inner.all()

    def get(self, ident: str) -> Background:
        return self.inner.get(ident)

    def review(self, background: Background) -> ChangeSet | None:
        return self.inner.review(background)

    def reviewed(self, background: Background) -> None:
        self.inner.reviewed(background)

    def accepts(self, port: int) -> bool:
        with hiding(self.unreadable):
            return self.inner.accepts(port)


class _GuardedSearch(WrappedSearch):
    """A native search whose results leave out what the guard hides."""

    def __init__(self, native: NativeSearch, shown: Callable[..., bool]) -> None:
        super().__init__(native)
        self.shown = shown

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        # Every file, not the newest only: hidden ones are dropped after the listing.
        del newest, excluded
        listing = self.native.list_files(directory, globs=globs, deadline=deadline)
        files = [f for f in listing.files if self.shown(f.path, searched=False)]
        return replace(listing, files=files)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        def keep(hits: FileHits) -> None:
            if self.shown(hits.path, searched=True):
                sink(hits)

        return self.native.grep(request, deadline=deadline, sink=keep)


__all__ = ["BackendView", "CommitDecision", "GuardedBackend", "PathGuard", "as_given"]
