"""Diagnostics of a change: what the language servers say after it that they did not before.

`Diagnostics` owns the servers of a toolkit: one per (workspace folder, server name),
started on the first change of a file it checks, shared by every call and thread,
stopped by `close`, after `idle_seconds` unused, or when the agent's process ends (a
server exits when its stdin closes). Its servers run on one event loop in one daemon
thread; `check` hands it a change and waits a bounded time (the tools call it from a
worker thread on the async path, `core.calls.blocking`).

A check, for each changed file and each server of its extension:
1. the server is shown the text before the change (nothing for a new file) and asked
   what it says: the file's earlier diagnostics (remembered from the last check when the
   server still holds that text);
2. it is shown the new text (`didChange`, `didSave`) and asked again;
3. the other documents the server holds (files changed or read earlier) are asked
   again too, when the server says a file's diagnostics depend on others
   (`interFileDependencies`), so a renamed function's broken callers show.
A diagnostic is *introduced* when the after-list holds more of it than the before-list,
*fixed* when fewer; it is compared by file, server, severity, code and message, not by
line (lines move when text is added above). Whatever goes wrong (no program, a crash,
no answer in time) becomes one sentence in `DiagnosticsReport.notes`, never an
exception: a server that ends is restarted once, then left out for the toolkit's life.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import posixpath
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_fstools.lsp.client import Place, RawDiagnostic, Server, ServerGone, severity_name
from langchain_fstools.lsp.report import Diagnostic, DiagnosticsReport, TextChange
from langchain_fstools.lsp.servers import ServerSpec, server_table

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

MAX_OTHER_DOCUMENTS = 20
"""At most this many other open documents are asked again after a change."""

MAX_STARTS = 2
"""A server is started at most this often per folder: once, and once again after a crash."""


@dataclass
class _Slot:
    """A server's place in the pool: its process, restarts and use."""

    server: Server | None = None
    starts: int = 0
    dead: str | None = None
    """Why it is no longer used (it ended after its restart)."""
    starting: asyncio.Future[None] | None = None
    """The server's start, which every check arriving meanwhile waits for."""
    used: float = field(default_factory=time.monotonic)


class Diagnostics:
    """Language servers that check every change the tools make.

    Example:
        ```python
        from langchain_fstools import FilesystemMiddleware, LocalBackend
        from langchain_fstools.lsp import Diagnostics

        FilesystemMiddleware(backend=LocalBackend("."), diagnostics=Diagnostics(timeout=3))
        ```
    """

    def __init__(
        self,
        *,
        servers: Mapping[str, ServerSpec | None] | None = None,
        timeout: float = 2.0,
        start_timeout: float = 10.0,
        idle_seconds: float = 600.0,
    ) -> None:
        """Configure the servers; none starts before the first change it checks.

        Args:
            servers: Servers laid over `DEFAULT_SERVERS` (a name mapped to None removes
                one). Default: the defaults. A default server whose program is not
                found is skipped silently; one given here is reported missing.
            timeout: Seconds a check waits for the servers' answers before it says
                "diagnostics not ready". Default: 2.
            start_timeout: Seconds a server may take to start; a check waits for it
                within `timeout`, the start goes on meanwhile. Default: 10.
            idle_seconds: A server unused this long is stopped. Default: 600.

        Raises:
            ValueError: a bad server spec or a time that is not positive.
        """
        if min(timeout, start_timeout, idle_seconds) <= 0:
            raise ValueError("diagnostics timeouts and idle time must be positive")
        self.servers = server_table(servers)
        self._named = frozenset(name for name, spec in (servers or {}).items() if spec)
        """Servers the user gave: their missing program is said; a default's is not."""
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.idle_seconds = idle_seconds
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._reaper: concurrent.futures.Future[None] | None = None
        self._programs: dict[str, str | None] = {}
        """Each server's program as found at its first use (None: not found)."""
        self._held: dict[tuple[str, str], dict[str, str]] = {}
        """Files read while their server was not running: (root, name) -> path -> text,
        shown to the server when a change it checks starts it (`hold`)."""

    def checks(self, path: str) -> bool:
        """Whether some server of the table checks `path` (by its extension)."""
        return bool(self._specs_for(path))

    def extensions(self) -> frozenset[str]:
        """The extensions of the files a server checks, but one whose program is missing.

        A program is looked up when a file of its server is first changed or asked
        about (or read, in the background); until then its server counts. No PATH
        search here: safe on the event loop.
        """
        return frozenset(
            extension
            for name, spec in self.servers.items()
            if self._programs.get(name, spec.command[0]) is not None
            for extension in spec.extensions
        )

    def check(self, root: str, changes: Sequence[TextChange]) -> DiagnosticsReport:
        """What `changes` (already written under the host folder `root`) introduced and fixed.

        Blocks: call it from a worker thread on the async path (`core.calls.blocking`).
        """
        self._find_programs(changes)
        future = asyncio.run_coroutine_threadsafe(self._check(root, changes), self._running())
        return _wait(future, self.timeout)

    def current(self, root: str, files: Sequence[tuple[str, str]]) -> DiagnosticsReport:
        """The diagnostics the servers give now for `(path, text)` files, as `introduced`."""
        changes = [TextChange(path, None, text) for path, text in files]
        self._find_programs(changes)
        future = asyncio.run_coroutine_threadsafe(
            self._check(root, changes, fresh=True), self._running()
        )
        return _wait(future, self.timeout)

    def hold(self, root: str, files: Sequence[tuple[str, str]]) -> None:
        """Let the servers hold `(path, text)` files, so a later change that breaks them shows.

        A running server is shown them now and asked what it says (the "before" of the
        next change); a server not running is shown them when a change it checks starts
        it. Holding never starts a server: only a checked change does (or `current`).
        """
        changes = [TextChange(path, None, text) for path, text in files]
        self._find_programs(changes)
        future = asyncio.run_coroutine_threadsafe(self._hold(root, changes), self._running())
        with contextlib.suppress(Exception):
            future.result(self.timeout + 1)

    def server_pids(self) -> list[int]:
        """The process ids of the running servers (for measuring them)."""
        return [
            slot.server.pid
            for slot in self._slots.values()
            if slot.server is not None and slot.server.pid is not None
        ]

    def close(self) -> None:
        """Stop every server and the loop thread. The next check starts them again."""
        with self._guard:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if self._reaper is not None:
            self._reaper.cancel()
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)

    # ----- on the loop thread ------------------------------------------------------------

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_serve, args=(loop,), name="fstools-lsp", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
                self._reaper = asyncio.run_coroutine_threadsafe(self._reap_idle(), loop)
            return self._loop

    def _find_programs(self, changes: Sequence[TextChange]) -> None:
        """Look the servers' programs up (a PATH search) here, never on the loop thread."""
        for change in changes:
            for name, spec in self._specs_for(change.checked_as):
                if name not in self._programs:
                    self._programs[name] = spec.program()

    def _specs_for(self, path: str) -> list[tuple[str, ServerSpec]]:
        extension = _suffix(path)
        return [(name, spec) for name, spec in self.servers.items() if extension in spec.extensions]

    async def _check(
        self, root: str, changes: Sequence[TextChange], *, fresh: bool = False
    ) -> DiagnosticsReport:
        deadline = time.monotonic() + self.timeout
        names = {name for change in changes for name, _ in self._specs_for(change.checked_as)}
        results = await asyncio.gather(
            *(self._check_one(root, name, changes, deadline, fresh=fresh) for name in sorted(names))
        )
        introduced: list[Diagnostic] = []
        fixed: list[Diagnostic] = []
        notes: list[str] = []
        for report in results:
            introduced += report.introduced
            fixed += report.fixed
            notes += report.notes
        return DiagnosticsReport(tuple(introduced), tuple(fixed), tuple(notes))

    async def _hold(self, root: str, files: Sequence[TextChange]) -> None:
        for name in sorted({name for file in files for name, _ in self._specs_for(file.path)}):
            mine = [file for file in files if _suffix(file.path) in self.servers[name].extensions]
            slot = self._slots.get((root, name))
            started = slot is not None and slot.starting is not None and slot.starting.done()
            server = slot.server if started and slot is not None else None
            if server is None or not server.alive:
                held = self._held.setdefault((root, name), {})
                for file in mine:
                    held.pop(file.path, None)
                    held[file.path] = file.new_text or ""
                for path in list(held)[:-MAX_OTHER_DOCUMENTS]:
                    del held[path]
                continue
            async with asyncio.timeout(self.timeout), server.lock:
                await _show_held(server, root, {f.path: f.new_text or "" for f in mine})

    async def _check_one(
        self,
        root: str,
        name: str,
        changes: Sequence[TextChange],
        deadline: float,
        *,
        fresh: bool,
    ) -> DiagnosticsReport:
        spec = self.servers[name]
        mine = [change for change in changes if _suffix(change.checked_as) in spec.extensions]
        if name not in self._named and self._programs.get(name) is None:
            return DiagnosticsReport()  # a default server whose program is not here
        server_or_note = await self._server(root, name, spec, deadline)
        if isinstance(server_or_note, str):
            return DiagnosticsReport(notes=(server_or_note,))
        server = server_or_note
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0)):
                async with server.lock:
                    held = self._held.pop((root, name), {})
                    for change in mine:
                        held.pop(change.checked_as, None)
                    return await _compare(server, name, root, mine, held, fresh=fresh)
        except TimeoutError:
            return DiagnosticsReport(
                notes=(f"Diagnostics not ready: {name} did not answer within {self.timeout:g} s.",)
            )
        except ServerGone:
            return DiagnosticsReport(notes=(self._ended(self._slots[(root, name)], name),))
        except Exception as exc:  # noqa: BLE001 - a server's bad answer never fails a change
            return DiagnosticsReport(notes=(f"Diagnostics unavailable: {name} failed ({exc!r}).",))
        finally:  # idle from the end of its last check, not its start
            slot = self._slots.get((root, name))
            if slot is not None:
                slot.used = time.monotonic()

    async def _server(
        self, root: str, name: str, spec: ServerSpec, deadline: float
    ) -> Server | str:
        """The running server for (root, name), started if needed; else why not."""
        slot = self._slots.setdefault((root, name), _Slot())
        slot.used = time.monotonic()
        if slot.starting is not None and not slot.starting.done():
            return await self._started(slot, name, deadline)
        if slot.server is not None and not slot.server.alive:  # it ended since the last check
            self._ended(slot, name)
        if slot.dead is not None:
            return slot.dead
        if slot.server is not None:
            return slot.server
        program = self._programs.get(name)
        if program is None:
            return f"Diagnostics unavailable: {name} ({spec.command[0]}) is not installed."
        server = slot.server = Server(spec, program, root)
        slot.starts += 1
        slot.starting = asyncio.ensure_future(asyncio.wait_for(server.start(), self.start_timeout))
        slot.starting.add_done_callback(_retrieved)
        return await self._started(slot, name, deadline)

    async def _started(self, slot: _Slot, name: str, deadline: float) -> Server | str:
        """The slot's server once its start ends, waiting until `deadline` (it goes on after).

        The start's own outcome decides, not how the wait ended: a start that ends in the
        turn the deadline passes (a loaded machine) is a started server, not a failed one.
        """
        starting = slot.starting
        assert starting is not None  # noqa: S101 - set by the caller
        with contextlib.suppress(Exception):  # the outcome is read from `starting` below
            await asyncio.wait_for(asyncio.shield(starting), max(deadline - time.monotonic(), 0))
        if not starting.done():
            return f"Diagnostics not ready: {name} is still starting."
        exc = starting.exception()
        if exc is None:
            return slot.server or f"Diagnostics unavailable: {name} stopped."
        if isinstance(exc, TimeoutError):
            failure = f"did not start within {self.start_timeout:g} s"
        else:
            failure = "could not start" if isinstance(exc, ServerGone) else f"failed ({exc!r})"
        server, slot.server = slot.server, None
        if server is not None:
            await server.stop()
        slot.dead = f"Diagnostics unavailable: {name} {failure}."
        return slot.dead

    @staticmethod
    def _ended(slot: _Slot, name: str) -> str:
        """Forget a server that ended: restarted on the next change once, then left out."""
        slot.server = None
        if slot.starts >= MAX_STARTS:
            slot.dead = f"{name} stopped working and is no longer used for diagnostics."
            return slot.dead
        return f"Diagnostics unavailable: {name} stopped; it restarts on the next change."

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(min(self.idle_seconds / 4, 30))
            now = time.monotonic()
            for slot in self._slots.values():
                server = slot.server
                if server is None or server.lock.locked() or now - slot.used <= self.idle_seconds:
                    continue  # running, checking, or used lately
                slot.server, slot.starts = None, 0
                await server.stop()

    async def _stop_all(self) -> None:
        servers = [slot.server for slot in self._slots.values() if slot.server is not None]
        self._slots.clear()
        await asyncio.gather(*(server.stop() for server in servers), return_exceptions=True)


async def _compare(
    server: Server,
    name: str,
    root: str,
    changes: Sequence[TextChange],
    held: Mapping[str, str],
    *,
    fresh: bool,
) -> DiagnosticsReport:
    """Show `server` each change and compare what it says before and after.

    The texts before the change are shown first, then the files reads handed over
    (`held`, whose diagnostics now are their "before": the change, already on disk, must
    not be visible yet), then the texts after.
    """
    before: list[Diagnostic] = []
    after: list[Diagnostic] = []
    touched = {_uri(root, change.checked_as) for change in changes}
    for change in changes:
        if change.old_text is not None and not fresh:
            uri = _uri(root, change.checked_as)
            await server.show(uri, change.old_text)
            was: Place = (change.path, change.old_cells)
            before += [_diagnostic(root, name, i, was) for i in await server.diagnostics(uri)]
    await _show_held(server, root, held)
    for change in changes:
        uri = _uri(root, change.checked_as)
        if change.new_text is None:
            await server.close(uri)
            server.places.pop(uri, None)
            continue
        await server.show(uri, change.new_text)
        server.places[uri] = (change.path, change.new_cells)
    others: list[str] = []
    if server.cross_file and not fresh:
        others = [uri for uri in server.texts if uri not in touched and uri in server.known]
    others = others[-MAX_OTHER_DOCUMENTS:]
    for uri in others:
        known = server.known.pop(uri, ())
        before += [_diagnostic(root, name, item, server.places.get(uri)) for item in known]
    for uri in [*(u for u in server.texts if u in touched), *others]:
        place = server.places.get(uri)
        after += [_diagnostic(root, name, item, place) for item in await server.diagnostics(uri)]
    return _delta(before, after)


async def _show_held(server: Server, root: str, files: Mapping[str, str]) -> None:
    """Show `server` the files a read handed it, and ask what it says of each (kept)."""
    for path, text in files.items():
        uri = _uri(root, path)
        await server.show(uri, text)
        server.places[uri] = (path, ())
        await server.diagnostics(uri)


def _delta(before: Iterable[Diagnostic], after: Iterable[Diagnostic]) -> DiagnosticsReport:
    """The diagnostics added and removed, compared by `Diagnostic.key`."""
    before_list = [item for item in before if item.severity != "hint"]
    after_list = [item for item in after if item.severity != "hint"]
    old = Counter(item.key() for item in before_list)
    new = Counter(item.key() for item in after_list)
    introduced = _take(after_list, new - old)
    fixed = _take(before_list, old - new)
    return DiagnosticsReport(tuple(introduced), tuple(fixed))


def _take(
    items: list[Diagnostic], wanted: Counter[tuple[str, str, str, str, str]]
) -> list[Diagnostic]:
    """The last items of each key, as many as `wanted` counts (the new ones sit lower)."""
    taken: list[Diagnostic] = []
    for item in reversed(items):
        if wanted[item.key()] > 0:
            wanted[item.key()] -= 1
            taken.append(item)
    return sorted(taken, key=lambda item: (item.path, item.line, item.column))


def _diagnostic(
    root: str, server: str, item: RawDiagnostic, place: Place | None = None
) -> Diagnostic:
    """A server's diagnostic at a virtual path (and cell), with host paths hidden."""
    path = _virtual(root, item.uri) if place is None else place[0]
    line, cell = item.line, None
    for start, ident in place[1] if place is not None else ():
        if start <= item.line:
            line, cell = item.line - start, ident
    folder = Path(root).as_posix().rstrip("/")
    message = item.message.replace(Path(root).as_uri(), "").replace(folder, "")
    return Diagnostic(
        path,
        line + 1,
        item.column + 1,
        severity_name(item.severity),
        item.code,
        message,
        server,
        cell,
    )


def _uri(root: str, path: str) -> str:
    return (Path(root) / path.lstrip("/")).as_uri()


def _virtual(root: str, uri: str) -> str:
    base = Path(root).as_uri().rstrip("/")
    return uri[len(base) :] if uri.startswith(base + "/") else "/"


def _suffix(path: str) -> str:
    return posixpath.splitext(path)[1].lower()


def _retrieved(future: asyncio.Future[None]) -> None:
    """Take a start's failure (each waiting check reports it in its own words)."""
    if not future.cancelled():
        future.exception()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()
    loop.close()


def _wait(
    future: concurrent.futures.Future[DiagnosticsReport], timeout: float
) -> DiagnosticsReport:
    """The check's report; its own deadline answers first, this is the backstop."""
    try:
        return future.result(timeout + 1)
    except concurrent.futures.TimeoutError:
        future.cancel()
        return DiagnosticsReport(notes=("Diagnostics not ready: the servers did not answer.",))
    except Exception as exc:  # noqa: BLE001 - a broken check never fails a change
        return DiagnosticsReport(notes=(f"Diagnostics unavailable: {exc!r}.",))


__all__ = ["Diagnostics"]
