"""The pure-Python engine run on the machine that holds the files.

A backend whose files live on another host (SSH) can start a Python there: it ships
this module together with the engine's own modules (`backends.ssh.search` builds the
program) and the host runs `main`. The engine is the same code, so the answers are the
same; it only reads the host's disk through `HostFiles` instead of asking for each
directory and file over the network. Results stream back as JSON lines, one record a
line, which `decode` turns back into the engine's values:

    ["file", path, mtime]                       a listed file (list)
    ["hits", path, mtime, count, [[n, text, is_match, column], ...]]  a file with a match
    ["end", complete]                           the run finished (in time or not)
    ["error", kind, detail]                     the run was refused (see `decode`)
    ["ready", executable, magic]                the modules load (probe)

Paths in records and errors are virtual: the host knows the workspace root only to
join it with virtual paths, and never names it. Modification times are whole seconds,
the precision SFTP gives, so sorting by time agrees with every other call, unless the
request says `"whole_seconds": false` (a sandbox's helper, whose calls keep the disk's
precision).
"""

from __future__ import annotations

import errno
import json
import os
import stat as stat_module
import sys
import time
from dataclasses import dataclass, field, fields, replace
from importlib.util import MAGIC_NUMBER
from operator import attrgetter
from typing import IO, TYPE_CHECKING, Any, ClassVar

from langchain_fstools import errors
from langchain_fstools.core import calls
from langchain_fstools.core.results import EntryKind, FileInfo
from langchain_fstools.search import engine
from langchain_fstools.search.contract import (
    FileHits,
    GrepRequest,
    InvalidPattern,
    LineHit,
    ListedFile,
    Listing,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_fstools.search.contract import NativeSearch

STOP_AHEAD = 0.25
"""Seconds before the caller's deadline at which the host stops by itself, so its
partial results are sent before the caller gives up on it."""


@dataclass
class HostFiles:
    """The engine's backend calls over the host's own disk, below `root`.

    It answers like the SSH backend: entries sorted by name, a symlink listed as its
    target with `link` set (or as a special entry when it leads outside the root or
    nowhere), `PermissionError` and the other `OSError`s naming the virtual path, and
    paths that resolve outside the root refused with `OutsideRoot`. Only `stat`,
    `list_dir` and `read_bytes` exist: the engine calls nothing else.

    A path is resolved with `realpath` unless its directory was listed and it was
    not a link there. Files are opened without following a link (`O_NOFOLLOW`), so
    one swapped for a link since it was listed is refused, not followed; a file is
    checked to be regular before it is opened (from its listing, else by `stat`) and
    again once open.

    Attributes:
        root: The workspace root's real path on the host.
        whole_seconds: Modification times in whole seconds, as SFTP gives them (for
            SSH, so search results sort as its other calls report); False keeps the
            disk's precision (a sandbox's helper, whose `stat` keeps it). Default: True.
    """

    root: str
    whole_seconds: bool = True
    calls_may_block: ClassVar[bool] = False
    """No worker thread per call for the search deadline: the caller keeps it, by
    stopping this process (see `STOP_AHEAD`), so each call runs directly."""
    _known: dict[str, str] = field(default_factory=dict)
    """Real paths of the entries listed so far that are no links."""
    _regular: dict[str, str] = field(default_factory=dict)
    """Those of them that are regular files."""

    def stat(self, path: str) -> FileInfo:
        """Metadata of `path`, links followed."""
        real = self._resolve(path)
        return self._info(path, _os(path, os.stat, real))

    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries of a directory, sorted by name."""
        real = self._resolve(path)
        with _os(path, os.scandir, real) as entries:
            listed = sorted(entries, key=attrgetter("name"))
        prefix, base = ("" if path == "/" else path), real.rstrip("/")
        return [
            self._listed(f"{prefix}/{entry.name}", f"{base}/{entry.name}", entry)
            for entry in listed
        ]

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        """Bytes of a regular file; anything else is refused before it is opened."""
        real = self._regular.get(path)
        if real is None:
            real = self._resolve(path)
            _require_regular(path, _os(path, os.stat, real).st_mode)
        try:
            return _read_regular(path, real, start, size)
        except OSError as exc:
            raise _error(path, exc.errno or errno.EIO) from None

    def _listed(self, path: str, real: str, entry: os.DirEntry[str]) -> FileInfo:
        try:
            own = entry.stat(follow_symlinks=False)
        except OSError as exc:
            raise _error(path, exc.errno or errno.EIO) from None
        if stat_module.S_ISREG(own.st_mode):
            self._known[path] = self._regular[path] = real
            return FileInfo(path, EntryKind.FILE, own.st_size, self._mtime(own), "")
        if not stat_module.S_ISLNK(own.st_mode):
            self._known[path] = real
            return self._info(path, own)
        try:
            target = _os(path, os.stat, self._resolve(path))
        except (OSError, errors.OutsideRoot):
            return FileInfo(path, EntryKind.SPECIAL, 0, self._mtime(own), "", link=True)
        return replace(self._info(path, target), link=True)

    def _info(self, path: str, status: os.stat_result) -> FileInfo:
        kind = _kind(status.st_mode)
        size = status.st_size if kind is EntryKind.FILE else 0
        return FileInfo(path, kind, size, self._mtime(status), "")

    def _mtime(self, status: os.stat_result) -> float:
        return float(int(status.st_mtime)) if self.whole_seconds else status.st_mtime

    def _resolve(self, path: str) -> str:
        known = self._known.get(path)
        if known is not None:
            return known
        real = os.path.realpath(self.root + path if path != "/" else self.root)
        if real != self.root and not real.startswith(self.root.rstrip("/") + "/"):
            raise errors.OutsideRoot(path)
        return real


def main(
    request: dict[str, Any], out: IO[bytes] | None = None, native: NativeSearch | None = None
) -> None:
    """Run one request from the caller and write its records to `out` (stdout).

    Args:
        request: `{"op": "probe"}`, or `{"op": "list" | "search", "root": ...,
            "seconds": ..., ...}` as `list_request` and `grep_request` build it.
        out: Where the JSON lines go. Default: standard output.
        native: A native search of the host's files to run instead of the engine (a
            sandbox's ripgrep: `backends.sandbox.helper`). Default: None (the engine).
    """
    stream = out if out is not None else sys.stdout.buffer

    def emit(*record: object) -> None:
        stream.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")

    if request["op"] == "probe":
        emit("ready", sys.executable, MAGIC_NUMBER.hex())
        stream.flush()
        return
    search = native or EngineSearch(HostFiles(request["root"], request.get("whole_seconds", True)))
    deadline = time.monotonic() + request["seconds"] - STOP_AHEAD
    try:
        if request["op"] == "list":
            globs = _tuples(request["globs"])
            listing = search.list_files(request["directory"], globs=globs, deadline=deadline)
            for listed in listing.files:
                emit("file", listed.path, listed.mtime)
            emit("end", listing.complete)
        else:
            grep = GrepRequest(**{key: _tuples(value) for key, value in request["search"].items()})

            def sink(hits: FileHits) -> None:
                lines = [
                    [line.number, line.text, line.is_match, line.column] for line in hits.lines
                ]
                emit("hits", hits.path, hits.mtime, hits.count, lines)

            emit("end", search.grep(grep, deadline=deadline, sink=sink))
    except InvalidPattern as exc:
        emit("error", "pattern", exc.reason)
    except errors.FsToolsError as exc:
        emit("error", "fstools", [type(exc).__name__, vars(exc)])
    except OSError as exc:  # built by HostFiles: a virtual path and an errno
        emit("error", "os", [exc.errno, exc.filename])
    stream.flush()


@dataclass(frozen=True)
class EngineSearch:
    """`NativeSearch` by the pure-Python engine over the host's files (`HostFiles`)."""

    files: HostFiles

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """`engine.list_files` on the host (every file: `newest` and `excluded` unused)."""
        del newest, excluded
        return calls.run(engine.list_files(directory, globs=globs, deadline=deadline), self.files)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """`engine.grep` on the host; whether it finished in time."""
        return calls.run(engine.grep(request, deadline=deadline, sink=sink), self.files).complete


def list_request(
    root: str, directory: str, globs: tuple[tuple[str, ...], ...], seconds: float
) -> dict[str, Any]:
    """The request that lists `directory` on the host (see `engine.list_files`)."""
    return {"op": "list", "root": root, "directory": directory, "globs": globs, "seconds": seconds}


def grep_request(root: str, request: GrepRequest, seconds: float) -> dict[str, Any]:
    """The request that runs `request` on the host (see `engine.grep`)."""
    grep = {item.name: getattr(request, item.name) for item in fields(request)}
    return {"op": "search", "root": root, "search": grep, "seconds": seconds}


class HostSearchFailed(Exception):
    """The host's run ended without its last record (it crashed, or could not start)."""


@dataclass
class Reply:
    """What a run sent back, decoded.

    Attributes:
        files: Listed files, in the order sent.
        hits: Files with a match, in the order sent.
        complete: Whether the run finished before its deadline.
        ready: Whether the host said its modules load (probe).
        executable: The host's interpreter, as it named itself (probe), so later runs
            skip launchers such as pyenv's shims; "" if it could not tell.
        bytecode: Its bytecode's magic number in hex (probe), so later runs may be sent
            code compiled by an interpreter with the same one; "" if not told.
    """

    files: list[ListedFile] = field(default_factory=list)
    hits: list[FileHits] = field(default_factory=list)
    complete: bool = False
    ready: bool = False
    executable: str = ""
    bytecode: str = ""

    @property
    def listing(self) -> Listing:
        """The listed files as a `Listing`."""
        return Listing(self.files, self.complete)


def decode(data: bytes, *, timed_out: bool) -> Reply:
    """Decode a run's output; re-raise the error it reported.

    Args:
        data: Everything the host wrote to standard output.
        timed_out: Whether the run was killed at its deadline: its last line may be
            cut short, and a missing `end` record then means a partial result.

    Raises:
        InvalidPattern: the pattern does not compile on the host.
        OSError: a file or directory could not be read (the virtual path named).
        errors.FsToolsError: e.g. `OutsideRoot`, as the engine raised it.
        HostSearchFailed: the run ended without an `end` record, in time.
    """
    reply, ended = Reply(), False
    lines = data.split(b"\n")
    for line in lines[:-1] if timed_out else lines:
        if not line.startswith(b"["):  # e.g. a shell start-up file's chatter
            continue
        kind, *rest = json.loads(line)
        if kind == "file":
            reply.files.append(ListedFile(rest[0], rest[1]))
        elif kind == "hits":
            path, mtime, count, shown = rest
            lines_hit = [LineHit(*line) for line in shown]
            reply.hits.append(FileHits(path, mtime, count, lines_hit))
        elif kind == "end":
            reply.complete, ended = rest[0], True
        elif kind == "ready":
            reply.ready, reply.executable, ended = True, rest[0], True
            reply.bytecode = rest[1] if len(rest) > 1 else ""
        elif kind == "error":
            raise _raised(*rest)
    if not ended and not timed_out:
        raise HostSearchFailed
    return reply


def _raised(kind: str, detail: Any) -> Exception:
    if kind == "pattern":
        return InvalidPattern(detail)
    if kind == "os":
        return _error(detail[1], detail[0])
    name, values = detail
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.FsToolsError)):
        return HostSearchFailed(name)
    return cls(**values)


def _os(path: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call an `os` function; its error names the virtual `path`, never the host's."""
    try:
        return function(*args, **kwargs)
    except OSError as exc:
        raise _error(path, exc.errno or errno.EIO) from None


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Non-blocking, so a FIFO swapped in since the check is refused, not waited on."""


def _read_regular(path: str, real: str, start: int, size: int | None) -> bytes:
    """`HostFiles.read_bytes` once `real` was found: its `OSError`s name the host path."""
    descriptor = os.open(real, _READ_FLAGS)
    try:
        status = os.fstat(descriptor)
        _require_regular(path, status.st_mode)
        # As over SFTP: the size when opened, from `start`, at most `size`.
        wanted = max(status.st_size - start, 0)
        wanted = wanted if size is None else min(size, wanted)
        chunks: list[bytes] = []
        while wanted > 0 and (chunk := os.pread(descriptor, wanted, start)):
            chunks.append(chunk)
            start, wanted = start + len(chunk), wanted - len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _require_regular(path: str, mode: int) -> None:
    """Refuse anything but a regular file, as the backends do (never opened)."""
    if stat_module.S_ISDIR(mode):
        raise _error(path, errno.EISDIR)
    if not stat_module.S_ISREG(mode):
        raise errors.SpecialFile(path, "special file")


def _error(path: str, code: int) -> OSError:
    return OSError(code, os.strerror(code), path)


def _kind(mode: int) -> EntryKind:
    if stat_module.S_ISREG(mode):
        return EntryKind.FILE
    if stat_module.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    return EntryKind.SPECIAL


def _tuples(value: Any) -> Any:
    """JSON arrays back into the tuples the request types hold."""
    if isinstance(value, list):
        return tuple(_tuples(item) for item in value)
    return value


__all__ = [
    "STOP_AHEAD",
    "EngineSearch",
    "HostFiles",
    "HostSearchFailed",
    "Reply",
    "decode",
    "grep_request",
    "list_request",
    "main",
]
