"""The SSH backend's search: the server's ripgrep, else its Python, else SFTP.

With ripgrep (`rg_path`), glob and grep run it remotely with the local backend's
command line and parsing, so results are identical; the mtimes come in SFTP batches.

Without ripgrep, the host's Python can run the search (`HostPython`). Walking a tree
over SFTP costs round trips per directory and per file; a host with `python3` can walk
its own disk instead. The program sent is the package's own engine: the source of
`search.host` and of every module it imports (found by reading their imports), plus
the pure-Python third-party packages among them (pathspec), is compressed and piped to
`python3 -I -S -c <loader>` over an exec channel. The loader imports those sources from
memory, so nothing is installed or written on the host, and the answers are the
engine's, with the same ignore and glob rules. When the host's Python reads the same
bytecode as this one (the probe reports its magic number), the modules are sent
compiled instead, which spares the host compiling them on every run.

What the host needs:
    1. Python 3.11 or newer (`MIN_PYTHON`), the version the shipped modules are written
       for. An older one answers the probe with its version, and the search walks over
       SFTP instead.
    2. Nothing else: every module is shipped, except compiled extensions a shipped
       module may import, which the host must have installed in its site-packages
       (`-I` ignores the user's site-packages, `PYTHON*` variables and the working
       directory, so files in the workspace can never shadow a module; `-S` skips
       `.pth` processing, and the loader adds the site-packages directories itself).
       If one is missing, the probe fails and the search walks over SFTP. What a
       shipped third-party package imports only optionally (inside `try`), and the
       program itself does not, is withheld: such a package runs as it does without
       it, whatever the host has installed (pathspec without `typing_extensions`,
       whose `deprecated` would load asyncio).

Whether the host's Python can run the program is asked once per connection (one
round trip, `probe`), which also learns the interpreter's own path, so later runs
skip launchers (pyenv's shims take longer to start than the search takes), and its
bytecode's magic number. If a run later ends without its last record (it crashed, or
was sent code compiled for a Python replaced since), the call is answered by walking
over SFTP, and the connection stops using the host's Python.
"""

from __future__ import annotations

import asyncio
import io
import json
import posixpath
import shlex
import stat as stat_module
import time
from dataclasses import dataclass
from importlib.util import MAGIC_NUMBER
from typing import TYPE_CHECKING, Any

import asyncssh

from langchain_fstools.backends import shipping
from langchain_fstools.backends.shipping import FILE
from langchain_fstools.backends.ssh.exec import _Commands
from langchain_fstools.backends.ssh.files import _Files
from langchain_fstools.core import calls, paths
from langchain_fstools.core.globs import compile_glob_groups
from langchain_fstools.search import engine
from langchain_fstools.search.contract import FileHits, InvalidPattern, ListedFile, Listing
from langchain_fstools.search.host import HostSearchFailed, decode, grep_request, list_request
from langchain_fstools.search.ripgrep import (
    COMMON_OPTIONS,
    first_error_line,
    parent_ignores,
    parse_content,
    parse_summaries,
    query_options,
    split_records,
    type_filter,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.search.contract import GrepRequest, NativeSearch
    from langchain_fstools.search.host import Reply

    HostRun: TypeAlias = Callable[[Callable[[str], dict[str, Any]], float], tuple[bytes, bool]]
    """Runs the program with the request `build(root)` returns (the host's real root
    goes in there, so it never leaves the backend) for at most `seconds`; returns its
    standard output and whether it was killed at the deadline."""

MIN_PYTHON = (3, 11)
"""The oldest Python on the host that runs the shipped modules (`requires-python`)."""

PROGRAM = "langchain_fstools.search.host"
"""The module whose `main` the host runs; it and its imports are shipped."""

# The loader: checks the version, then imports the shipped modules from memory. Its
# input is one JSON line (the request) followed by the zlib-compressed modules: JSON
# with their sources, or, when the request names the host's own bytecode magic number,
# marshalled code objects. The collector of reference cycles is off: the run is short,
# makes almost none, and would otherwise scan every object the imports made, again and
# again (about 5 ms a run).
_LOADER = """\
import gc, json, sys
gc.disable()
if sys.version_info < {floor}:
    sys.stdout.write(json.dumps(["python", *sys.version_info[:2]]) + "\\n")
    sys.exit(0)
import importlib, importlib.machinery, importlib.util, site, zlib
sys.path.extend(site.getsitepackages())
request = json.loads(sys.stdin.buffer.readline())
shipped = zlib.decompress(sys.stdin.buffer.read())
if request.pop("bytecode", None) == importlib.util.MAGIC_NUMBER.hex():
    import marshal
    shipped = marshal.loads(shipped)
else:
    shipped = json.loads(shipped)
modules, packages = shipped["modules"], set(shipped["packages"])
withheld = set(shipped["withheld"])
class Shipped:
    def find_spec(self, name, path=None, target=None):
        if name in withheld:
            raise ModuleNotFoundError(name, name=name)
        if name in modules:
            spec = importlib.machinery.ModuleSpec(name, self, is_package=name in packages)
            return spec
        return None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        code = modules[module.__name__]
        if isinstance(code, str):
            code = compile(code, {file!r}.format(module.__name__.replace(".", "/")), "exec")
        exec(code, module.__dict__)
sys.meta_path.insert(0, Shipped())
importlib.import_module({program!r}).main(request)
"""


def command(python: str) -> str:
    """The shell command that starts the program with the host's `python`."""
    loader = _LOADER.format(floor=MIN_PYTHON, program=PROGRAM, file=FILE)
    return shlex.join([python, "-I", "-S", "-c", loader])


def program_input(request: dict[str, Any], *, compiled: bool = False) -> bytes:
    """The program's standard input for one request.

    Args:
        request: What `search.host.main` is asked.
        compiled: Send the modules compiled: only for a host whose Python reported
            this interpreter's bytecode magic number (`probe`).
    """
    if compiled:
        request = {**request, "bytecode": MAGIC_NUMBER.hex()}
    modules = shipping.compiled(PROGRAM) if compiled else shipping.sources(PROGRAM)
    return json.dumps(request).encode() + b"\n" + modules


def probe(run: HostRun, seconds: float) -> Reply | None:
    """The host's answer if its Python loads the program, else None (module docstring).

    Args:
        run: Runs the program on the host.
        seconds: Time allowed.

    Returns:
        The reply, naming the interpreter's path as it names itself ("" if it cannot
        tell) and its bytecode's magic number; None if the program does not load.
    """
    try:
        data, timed_out = run(lambda _root: {"op": "probe"}, seconds)
        reply = decode(data, timed_out=timed_out)
    except HostSearchFailed:
        return None
    return reply if reply.ready else None


@dataclass(frozen=True)
class HostPython:
    """`NativeSearch` that runs the engine on the host (see the module docstring).

    Attributes:
        run: Runs the program on the host.
        backend: Walked through its calls (SFTP) when the host's run fails.
        broken: Called when a run fails, so the connection stops using the host.
    """

    run: HostRun
    backend: Backend
    broken: Callable[[], None]

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """List on the host (every file: `newest` and `excluded` are left to the caller)."""
        del newest, excluded
        try:
            reply = self._reply(lambda root, s: list_request(root, directory, globs, s), deadline)
        except HostSearchFailed:
            self.broken()
            effect = engine.list_files(directory, globs=globs, deadline=deadline)
            return calls.run(effect, self.backend)
        return reply.listing

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Search on the host; each file's hits are handed to `sink` in this thread."""
        try:
            reply = self._reply(lambda root, s: grep_request(root, request, s), deadline)
        except HostSearchFailed:
            self.broken()
            outcome = calls.run(engine.grep(request, deadline=deadline, sink=sink), self.backend)
            return outcome.complete
        for hits in reply.hits:
            sink(hits)
        return reply.complete

    def _reply(self, build: Callable[[str, float], dict[str, Any]], deadline: float) -> Reply:
        seconds = max(deadline - time.monotonic(), 0.0)
        data, timed_out = self.run(lambda root: build(root, seconds), seconds)
        return decode(data, timed_out=timed_out)


_STAT_BATCH = 512
"""SFTP stat requests in flight at once when collecting search results' mtimes."""


class _Search(_Files, _Commands):
    """Glob and grep on the server: `native_search` and what it runs."""

    _use_ripgrep: bool
    _rg_path: str
    _use_python: bool
    _python_path: str
    _python: str
    _python_compiled: bool

    def native_search(self) -> NativeSearch | None:
        """The server's ripgrep, else the engine run by the server's Python, else None.

        Each is tried only if `use_ripgrep` / `use_python` allow it. Whether it runs is
        asked once per connection (one round trip) and remembered.
        """
        if self._use_ripgrep and self._has_ripgrep is None:
            self._has_ripgrep = self._call(self._probe_ripgrep())
        if self._use_ripgrep and self._has_ripgrep:
            return _RemoteRipgrep(self._list_with_ripgrep, self._grep_with_ripgrep)
        if self._use_python and self._has_python is None:
            self._python, self._python_compiled = self._python_path, False
            found = probe(self._on_host, self._connect_timeout)
            self._python = (found and found.executable) or self._python_path
            self._python_compiled = found is not None and found.bytecode == MAGIC_NUMBER.hex()
            self._has_python = found is not None
        if self._use_python and self._has_python:
            return HostPython(self._on_host, self, self._python_broken)
        return None

    # ----- search with the server's Python ----------------------------------------------------

    def _on_host(
        self, build: Callable[[str], dict[str, Any]], seconds: float
    ) -> tuple[bytes, bool]:
        """Run the search program (`HostRun`): its stdout, and if it timed out."""
        return self._call(self._run_program(build, seconds))

    async def _run_program(
        self, build: Callable[[str], dict[str, Any]], seconds: float
    ) -> tuple[bytes, bool]:
        await self._session()
        out = bytearray()

        def take(data: bytes, *, stderr: bool = False) -> None:
            if not stderr:  # a crash's traceback names host paths: never kept
                out.extend(data)

        request = program_input(build(self._root), compiled=self._python_compiled)
        # Run from "/": nothing in the workspace is on the path of the host's Python.
        _, timed_out = await self._run(command(self._python), "/", seconds, take, stdin=request)
        return bytes(out), timed_out

    def _python_broken(self) -> None:
        self._has_python = False

    # ----- search with the server's ripgrep --------------------------------------------------

    async def _probe_ripgrep(self) -> bool:
        await self._session()
        found: list[bytes] = []
        code, _ = await self._run(
            f"{shlex.quote(self._rg_path)} --version",
            self._root,
            self._connect_timeout,
            lambda data, stderr: found.append(data) if not stderr else None,
        )
        return code == 0 and b"ripgrep" in b"".join(found)

    def _list_with_ripgrep(
        self, directory: str, globs: tuple[tuple[str, ...], ...], deadline: float
    ) -> Listing:
        return self._call(self._rg_list(directory, globs, deadline))

    def _grep_with_ripgrep(
        self, request: GrepRequest, deadline: float
    ) -> tuple[list[FileHits], bool]:
        return self._call(self._rg_grep(request, deadline))

    async def _rg_output(
        self, arguments: list[str], cwd: str, deadline: float, separator: bytes
    ) -> tuple[bytes, bytes, int | None, bool]:
        out, err = bytearray(), bytearray()

        def take(data: bytes, *, stderr: bool = False) -> None:
            (err if stderr else out).extend(data)

        command = shlex.join([self._rg_path, *arguments])
        code, timed_out = await self._run(command, cwd, deadline - time.monotonic(), take)
        data = bytes(out)
        if timed_out:  # the last record may be cut short
            data = data[: data.rfind(separator) + 1]
        return data, bytes(err), code, timed_out

    async def _rg_list(
        self, directory: str, globs: tuple[tuple[str, ...], ...], deadline: float
    ) -> Listing:
        cwd = await self._resolve(directory)
        arguments = [
            "--files",
            "--null",
            *COMMON_OPTIONS,
            *parent_ignores(directory),
            *type_filter(globs),
        ]
        data, _, _, timed_out = await self._rg_output(arguments, cwd, deadline, b"\0")
        keep = compile_glob_groups(globs)
        relatives = [
            relative
            for raw in split_records(io.BytesIO(data), b"\0")
            if keep(relative := raw.decode("utf-8", "surrogateescape"))
        ]
        mtimes = await self._mtimes([posixpath.join(cwd, relative) for relative in relatives])
        found = [
            ListedFile(paths.join(directory, relative), mtime)
            for relative, mtime in zip(relatives, mtimes, strict=True)
            if mtime is not None
        ]
        return Listing(found, not timed_out)

    async def _rg_grep(self, request: GrepRequest, deadline: float) -> tuple[list[FileHits], bool]:
        target = await self._resolve(request.directory)
        single_file = stat_module.S_ISREG(
            (await self._attrs(request.directory, target)).permissions or 0
        )
        cwd = posixpath.dirname(target) if single_file else target
        arguments = [*COMMON_OPTIONS, *parent_ignores(request.directory), *query_options(request)]
        if single_file:
            arguments += ["--", posixpath.basename(target)]
        base = paths.parent(request.directory) if single_file else request.directory
        wanted = compile_glob_groups(() if single_file else request.globs)
        separator = b"\0" if request.mode == "files_with_matches" else b"\n"
        data, errors, code, timed_out = await self._rg_output(arguments, cwd, deadline, separator)
        found: list[FileHits] = []

        def keep(hits: FileHits) -> None:
            if wanted(hits.path[len(base) :].lstrip("/")):
                found.append(hits)

        stream = io.BytesIO(data)
        if request.mode == "content":
            delivered = parse_content(stream, base, _unknown_mtime, keep)
        else:
            delivered = parse_summaries(stream, request, base, _unknown_mtime, keep)
        if code == 2 and not delivered and errors.strip():  # noqa: PLR2004 - rg's error status
            raise InvalidPattern(first_error_line(errors.decode("utf-8", "replace")))
        remote = [posixpath.join(cwd, hits.path[len(base) :].lstrip("/")) for hits in found]
        results: list[FileHits] = []
        for hits, mtime in zip(found, await self._mtimes(remote), strict=True):
            if mtime is not None:
                hits.mtime = mtime
            elif request.mode != "content":  # as local rg: a vanished file is dropped
                continue
            results.append(hits)
        return results, not timed_out

    async def _mtimes(self, remote_paths: list[str]) -> list[float | None]:
        """Modification times of many remote files, pipelined over the SFTP session."""
        sftp = await self._session()

        async def one(path: str) -> float | None:
            try:
                return float((await sftp.stat(path)).mtime or 0)
            except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied):
                return None

        mtimes: list[float | None] = []
        for start in range(0, len(remote_paths), _STAT_BATCH):
            batch = remote_paths[start : start + _STAT_BATCH]
            mtimes += await asyncio.gather(*(one(path) for path in batch))
        return mtimes


@dataclass(frozen=True)
class _RemoteRipgrep:
    """`NativeSearch` adapter: runs the backend's remote ripgrep, sinks in the caller."""

    lister: Callable[[str, tuple[tuple[str, ...], ...], float], Listing]
    searcher: Callable[[GrepRequest, float], tuple[list[FileHits], bool]]

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """`rg --files` on the server, with mtimes from SFTP (every file: `newest` unused)."""
        del newest, excluded
        return self.lister(directory, globs, deadline)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Run rg on the server; each file's hits are handed to `sink` in this thread."""
        found, complete = self.searcher(request, deadline)
        for hits in found:
            sink(hits)
        return complete


def _unknown_mtime(relative: str) -> float:
    """Placeholder mtime while parsing; the real ones come in one SFTP batch after."""
    del relative
    return 0.0


__all__ = ["MIN_PYTHON", "PROGRAM", "HostPython", "command", "probe", "program_input"]
