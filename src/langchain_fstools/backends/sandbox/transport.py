"""How `SandboxBackend` asks its helper in the sandbox: one `execute` per operation.

A sandbox provider (deepagents' `SandboxBackendProtocol`: Modal, Daytona, Runloop,
`DockerSandbox`, ...) offers `execute`, `upload_files` and `download_files`, each a
round trip. An operation is one `execute` of

    python3 -I -S -c <LOADER> <folder> <digest> <request>

where the request is `helper`'s wire format (base64 on the command line, or an
uploaded file when longer than `INLINE_REQUEST`), and the reply is the framed text the
helper prints. The loader runs the helper program (the module `helper` and what it
imports, `backends.shipping`), kept in a private folder of the sandbox
(`/var/tmp/.fstools-<sandbox id>`, mode 0700, owned by the user commands run as):

    1. The first call finds no program there: the loader says `MISSING`, the client
       uploads the program (`upload_files`, named by its SHA-256) and asks again. So a
       sandbox pays two extra round trips once; a new version of this package uploads
       its own program beside the old one. Where the provider's uploads cannot reach
       the folder (the loader still finds nothing), the program is written through
       `execute`, a part per command line; large requests and replies then travel the
       same way (`fetch` reads a reply in parts).
    2. The loader checks the program's digest, compiles it once and keeps the code
       beside it (marshalled module by module, per Python bytecode version), so later runs
       only load what they import.
    3. A folder that is not private (another owner, group or other permissions, a
       link) is refused (`UNSAFE`): code kept there could have been planted.

A file operation is asked of the resident helper first (`backends.sandbox.resident`):
the `execute` is then a short `sh` client that falls through to the loader above when
no server answers, and the loader starts one for next time. Where the provider offers
streams, that client (and a search's shell) is run by a relay kept open in the sandbox
instead of the provider's `execute` (`backends.sandbox.relay`); the agent's own
commands never are (`AGENTS_COMMANDS`).

Without `python3` (or with one older than 3.11) the first call fails with
`StoreUnavailable` naming what is missing, a sentence the model can pass on; nothing is
written. A reply the provider cut short (`truncated`) is asked again to be written to
the private folder and downloaded.

The transport is written once as requests (`Execute`, `Upload`, `Download`) that a
generator yields: `run` performs them with the provider's sync methods, `arun` awaits
its async twins, as `core.calls` drives backend calls.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import os
import re
import shlex
import zlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from langchain_fstools.backends import shipping
from langchain_fstools.backends.sandbox import helper, resident
from langchain_fstools.backends.sandbox.relay import Relayed, Relays, StreamingSandbox
from langchain_fstools.core import calls
from langchain_fstools.errors import StoreUnavailable

T = TypeVar("T")

PROGRAM: Final = "langchain_fstools.backends.sandbox.helper"
"""The module whose `main` the sandbox runs; it and its imports are shipped."""

MIN_PYTHON: Final = (3, 11)
"""The oldest Python in the sandbox that runs the shipped modules (`requires-python`)."""

INLINE_REQUEST: Final = 96_000
"""Longest request (base64 characters) sent on the command line; longer ones are
uploaded (Linux refuses a single argument above 128 KiB)."""

INLINE_REPLY: Final = 4_000_000
"""Longest reply (base64 characters) printed; a longer one is written to the private
folder and downloaded."""

DEFAULT_TIMEOUT: Final = 120
"""Seconds one operation may take in the sandbox (the provider's `execute` timeout)."""

READS: Final = frozenset(
    {"probe", "stat", "exists", "read", "list", "walk", "resolve", "search", "fetch"}
)
"""Operations that change nothing: asked again when the provider cut their reply short."""

AGENTS_COMMANDS: Final = frozenset({"command_run"})
"""Operations that run the agent's own command: never relayed (`backends.sandbox.relay`),
so that it gets the provider's `execute` (its environment, its way of ending what a
command leaves behind), as without a relay."""

STARTS: Final = 3
"""Resident servers started in a row without one answering, after which a transport stops
asking for them (a provider that ends what its commands leave behind)."""

_LEAST_INLINE: Final = 4096
"""The shortest reply a provider is assumed to print whole."""

MISSING: Final = "<fstools-missing>"
UNSAFE: Final = "<fstools-unsafe>"
OLD_PYTHON: Final = "<fstools-python:"

# The loader: checks the Python, the private folder, then loads the helper (its code
# kept from an earlier run, or its sources checked against the digest and compiled) and
# imports its modules from memory. Reference cycles are left to the end of the run:
# it is short, and the collector would scan every object the imports made. The cache
# keeps each module's code marshalled apart (`.each`), so a run unmarshals only the
# modules it imports, not the search engine's and the commands'. `inspect` is
# loaded only when something uses it: `dataclasses` imports it for the docstrings of
# classes that have none (ours all have one), and it takes longer to load than the
# helper takes to run.
_LOADER = """\
import sys
if sys.version_info < {floor}:
    print("{old}%d.%d>" % sys.version_info[:2])
    raise SystemExit(0)
import gc, importlib, importlib.machinery, marshal, os, stat
gc.disable()
folder, digest, argument = sys.argv[1:4]
try:
    os.mkdir(folder, 0o700)
except FileExistsError:
    pass
status = os.lstat(folder)
if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.geteuid() or status.st_mode & 0o77:
    print("{unsafe}")
    raise SystemExit(0)
cache = os.path.join(
    folder, digest + "." + importlib._bootstrap_external.MAGIC_NUMBER.hex() + ".each"
)
try:
    with open(cache, "rb") as file:
        shipped = marshal.loads(file.read())
except (OSError, ValueError, EOFError):
    try:
        with open(os.path.join(folder, digest), "rb") as file:
            packed = file.read()
    except OSError:
        packed = b""
    import hashlib, json, zlib
    if hashlib.sha256(packed).hexdigest() != digest:
        print("{missing}")
        raise SystemExit(0)
    shipped = json.loads(zlib.decompress(packed))
    shipped["modules"] = {{
        name: marshal.dumps(compile(
            source, {file!r}.format(name.replace(".", "/")), "exec", dont_inherit=True
        ))
        for name, source in shipped["modules"].items()
    }}
    temporary = "%s.%d" % (cache, os.getpid())
    with open(temporary, "wb") as file:
        file.write(marshal.dumps(shipped))
    os.replace(temporary, cache)
modules, packages = shipped["modules"], set(shipped["packages"])
withheld = set(shipped["withheld"])
class Shipped:
    def find_spec(self, name, path=None, target=None):
        if name in withheld:
            raise ModuleNotFoundError(name, name=name)
        if name in modules:
            return importlib.machinery.ModuleSpec(name, self, is_package=name in packages)
        return None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        exec(marshal.loads(modules[module.__name__]), module.__dict__)
sys.meta_path.insert(0, Shipped())
class Deferred(type(sys)):
    def __getattr__(self, name):
        del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)
for name in ("inspect",):
    sys.modules[name] = Deferred(name)
program = importlib.import_module({program!r})
program.main(argument, folder)
if len(sys.argv) > 4:
    program.serve(folder, digest, float(sys.argv[4]))
"""


# Writes one part of a file into the private folder (made by the loader's first run),
# the last part renaming the whole into place.
_WRITER = """\
import binascii, os, sys
folder, name, number, last, part = sys.argv[1:6]
path = os.path.join(folder, os.path.basename(name))
flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if number != "0" else os.O_TRUNC)
descriptor = os.open(path + ".part", flags, 0o600)
os.write(descriptor, binascii.a2b_base64(part))
os.close(descriptor)
if last == "1":
    os.replace(path + ".part", path)
"""


class SandboxLike(Protocol):
    """What `SandboxBackend` needs of a sandbox: deepagents' `SandboxBackendProtocol` shape.

    `execute` returns an object with `output` (str), `exit_code` and `truncated`
    (deepagents' `ExecuteResponse`); uploads and downloads return one response per
    file, with `error` (None on success) and, for a download, `content`.
    """

    @property
    def id(self) -> str:
        """The sandbox's unique id."""
        ...

    def execute(self, command: str, *, timeout: int | None = None) -> Any:
        """Run a shell command."""
        ...

    async def aexecute(self, command: str, *, timeout: int | None = None) -> Any:  # noqa: ASYNC109 - the provider's
        """Async `execute`."""
        ...

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[Any]:
        """Write files at absolute paths."""
        ...

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[Any]:
        """Async `upload_files`."""
        ...

    def download_files(self, paths: list[str]) -> list[Any]:
        """Read files at absolute paths."""
        ...

    async def adownload_files(self, paths: list[str]) -> list[Any]:
        """Async `download_files`."""
        ...


@dataclass(frozen=True, slots=True)
class Execute:
    """Run `command` in the sandbox; the result is the provider's response.

    `relayed`: the transport's own command, which a relay may run instead of the
    provider's `execute` (`backends.sandbox.relay`); `repeatable`: running it twice is
    harmless (it changes nothing).
    """

    command: str
    timeout: int
    relayed: bool = False
    repeatable: bool = False


@dataclass(frozen=True, slots=True)
class Upload:
    """Write files in the sandbox; the result is the provider's responses."""

    files: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Download:
    """Read files from the sandbox; the result is the provider's responses."""

    paths: tuple[str, ...]


Request = Execute | Upload | Download

Exchange = Generator[Request, Any, T]
"""A computation over sandbox requests returning a `T` (`Transport.run`/`arun` drive it)."""


class Transport:
    """The helper in one sandbox, asked one operation at a time (module docstring).

    Args:
        sandbox: The provider's sandbox object.
        root: The workspace root in the sandbox (absolute).
        python: Name or path of Python 3.11+ in the sandbox. Default: `python3`.
        timeout: Seconds an operation may take. Default: `DEFAULT_TIMEOUT`.
        folder: The helper's private folder in the sandbox (made by the first call).
            Default: `/var/tmp/.fstools-<sandbox id>`.
        resident_idle: Seconds the resident helper (`backends.sandbox.resident`) waits
            for a request before it ends; 0: none, a Python start per operation (and
            no relay: each one an `execute`). Default: `resident.IDLE_LIMIT`.
    """

    def __init__(
        self,
        sandbox: SandboxLike,
        root: str,
        *,
        python: str = "python3",
        timeout: int = DEFAULT_TIMEOUT,
        folder: str | None = None,
        resident_idle: float = resident.IDLE_LIMIT,
    ) -> None:
        """Remember the sandbox; nothing runs until the first operation."""
        self.sandbox = sandbox
        self.root = root
        self.python = python
        self.timeout = timeout
        self.sandbox_id = _sandbox_id(sandbox)
        """The provider's id of the sandbox ("sandbox" when it has none)."""
        self.has_id = self.sandbox_id != _NO_ID
        self.folder = folder or _folder(self.sandbox_id)
        self._drop: list[str] = []
        self.offers: dict[str, Any] | None = None
        """What the sandbox offers (its Python, its `rg`), once asked (`probe`)."""
        self._inline = INLINE_REPLY
        self._uploads_reach = True
        self._downloads_reach = True
        self.resident_idle = resident_idle
        self._starts = 0
        """Resident servers asked for in a row that never answered (`STARTS`)."""
        self._relays = (
            Relays(sandbox, python)
            if resident_idle and isinstance(sandbox, StreamingSandbox)
            else None
        )
        """Where the transport's own commands run when the sandbox offers streams."""

    # ----- driving ------------------------------------------------------------------------

    def run(self, exchange: Exchange[T]) -> T:
        """Drive `exchange` with the provider's sync methods."""
        return calls.drive(exchange, self._perform)

    async def arun(self, exchange: Exchange[T]) -> T:
        """Drive `exchange` with the provider's async methods."""
        if not _digest.cache_info().currsize:  # the process's first call reads the sources
            await asyncio.to_thread(_digest)
        return await calls.adrive(exchange, self._aperform)

    def close(self) -> None:
        """Let the relays go (they end in the sandbox); the next operation starts one."""
        if self._relays is not None:
            self._relays.close()

    def _perform(self, request: Request) -> Any:
        try:
            match request:
                case Execute(command=command, timeout=timeout):
                    if self._relayable(request) and (relayed := self._relay(request)):
                        return relayed
                    return self.sandbox.execute(command, timeout=timeout)
                case Upload(files=files):
                    return self.sandbox.upload_files(list(files))
                case Download(paths=paths):
                    return self.sandbox.download_files(list(paths))
        except Exception as exc:
            raise _unanswered(exc) from exc

    async def _aperform(self, request: Request) -> Any:
        try:
            match request:
                case Execute(command=command, timeout=timeout):
                    if self._relayable(request) and (
                        relayed := await asyncio.to_thread(self._relay, request)
                    ):
                        return relayed
                    return await self.sandbox.aexecute(command, timeout=timeout)
                case Upload(files=files):
                    return await self.sandbox.aupload_files(list(files))
                case Download(paths=paths):
                    return await self.sandbox.adownload_files(list(paths))
        except Exception as exc:
            raise _unanswered(exc) from exc

    def _relayable(self, request: Execute) -> bool:
        """Whether a relay is asked to run `request` (`backends.sandbox.relay`)."""
        return request.relayed and self._relays is not None and self._relays.usable

    def _relay(self, request: Execute) -> Relayed | None:
        """The request run by a relay; None when the provider's `execute` is to run it."""
        assert self._relays is not None  # noqa: S101 - `_relayable` said so
        return self._relays.execute(request.command, request.timeout, repeatable=request.repeatable)

    # ----- one operation -----------------------------------------------------------------

    def call(
        self, op: str, *args: Any, data: bytes = b"", timeout: int | None = None
    ) -> Exchange[tuple[Any, bytes]]:
        """Run operation `op` of the helper: its value and bytes, or its error raised.

        Raises:
            StoreUnavailable: the sandbox cannot run the helper, or failed to answer.
            OSError, FsToolsError: what the operation raised in the sandbox.
        """
        header = {"op": op, "root": self.root, "args": list(args), "inline": self._inline}
        installed = 0  # the program: 1 uploaded, 2 written through `execute`
        spilled = False
        resident_failed = False  # the resident helper answered nothing: asked without it
        seconds = timeout or self.timeout
        while True:
            if self._drop:
                header["drop"], self._drop = self._drop, []
            argument = yield from self._argument(helper.pack(header, data))
            served = self._served(op) and not resident_failed
            command = self._command(argument, seconds, served=served)
            relayed = served and op not in AGENTS_COMMANDS
            response = yield Execute(command, seconds, relayed=relayed, repeatable=op in READS)
            header.pop("drop", None)
            output = str(response.output)
            reply = _reply(output)
            self._count_start(output, answered=served and reply is not None)
            if reply is None:
                if MISSING in output and installed < 2:  # noqa: PLR2004 - both ways tried
                    yield from self._put(_digest(), _program(), through_execute=installed == 1)
                    installed += 1
                    continue
                truncated = getattr(response, "truncated", False)
                if served and not truncated and resident.NO_SERVER not in output:
                    resident_failed = self._unanswered(op, output)
                    continue
                if truncated and op in READS and not spilled:
                    self._inline = max(len(output) // 2, _LEAST_INLINE)  # the provider's cap
                    header["inline"], spilled = self._inline, True
                    continue
                raise _failure(output, response)
            answer, out = reply
            if answer.get("unread") and self._uploads_reach:  # the upload went elsewhere
                self._uploads_reach = False
                continue
            if "file" in answer:
                answer, out = helper.unpack((yield from self._fetch(answer["file"])))
            if "error" in answer:
                raise helper.raised(answer["error"])
            return answer["ok"], out

    def ask(
        self, command: Callable[[int], str], timeout: int, declined: str
    ) -> Exchange[tuple[Any, bytes] | None]:
        """Run a command (not the helper) that prints a reply in the helper's format.

        The command changes nothing (a relay that ended may have it run again).

        Args:
            command: The command, given the longest reply it may print (base64
                characters; a longer one is spilled to the private folder).
            timeout: The provider's timeout, in seconds.
            declined: What the command prints instead of a reply when it declines.

        Returns:
            The reply's value and bytes; None if the command declined.

        Raises:
            StoreUnavailable: the sandbox failed to answer, or the command printed
                neither a reply nor `declined`.
            OSError, FsToolsError: an error the reply carries.
        """
        spilled = False
        while True:
            response = yield Execute(command(self._inline), timeout, relayed=True, repeatable=True)
            output = str(response.output)
            reply = _reply(output)
            if reply is None:
                if getattr(response, "truncated", False) and not spilled:
                    self._inline = max(len(output) // 2, _LEAST_INLINE)  # the provider's cap
                    spilled = True
                    continue
                if declined in output:
                    return None
                raise _failure(output, response)
            answer, out = reply
            if "file" in answer:
                answer, out = helper.unpack((yield from self._fetch(answer["file"])))
            if "error" in answer:
                raise helper.raised(answer["error"])
            return answer["ok"], out

    def _count_start(self, output: str, *, answered: bool) -> None:
        """Count a resident helper not found (the loader answered, and started one)."""
        if answered:
            self._starts = self._starts + 1 if resident.NO_SERVER in output else 0

    def _unanswered(self, op: str, output: str) -> bool:
        """The resident helper printed no reply: whether to ask again without it.

        The folder is no longer private (the loader then says so), or the worker was
        killed: a read is asked again, a change is reported (what it left is settled
        by the next request).

        Raises:
            StoreUnavailable: a change was left unanswered.
        """
        if resident.REFUSED in output:
            self._starts = STARTS
            return True
        if op in READS:
            return True
        raise StoreUnavailable(
            "sandbox",
            "the sandbox's helper ended before it answered; check the file, then try again",
        )

    def _served(self, op: str) -> bool:
        """Whether `op` is asked of the resident helper (`backends.sandbox.resident`)."""
        return bool(self.resident_idle) and self._starts < STARTS and resident.served(op)

    def _command(self, argument: str, seconds: int, *, served: bool) -> str:
        loader = [self.python, "-I", "-S", "-c", _loader()]
        if not served:
            return shlex.join([*loader, self.folder, _digest(), argument])
        nonce = os.urandom(8).hex()
        return resident.client(
            self.folder, _digest(), argument, loader, nonce, seconds, self.resident_idle
        )

    def _argument(self, packed: bytes) -> Exchange[str]:
        """The request as an argument: inline, or put in the private folder."""
        text = base64.b64encode(packed).decode("ascii")
        if len(text) <= INLINE_REQUEST:
            return text
        name = f"in-{hashlib.sha256(packed).hexdigest()[:16]}"
        yield from self._put(name, packed, through_execute=not self._uploads_reach)
        return helper.REQUEST_FILE + name

    def _put(self, name: str, data: bytes, *, through_execute: bool) -> Exchange[None]:
        """Put a file in the private folder: uploaded, or written by `execute`s.

        Some providers' uploads cannot reach every folder the commands see (Docker's
        archive API does not see a tmpfs such as `/tmp`): the loader then still finds
        nothing, and the file is written through `execute`, a part per command line.
        """
        if not through_execute:
            responses = yield Upload(((f"{self.folder}/{name}", data),))
            errors = [r.error for r in responses if getattr(r, "error", None)]
            if not errors:
                return
        text = base64.b64encode(data).decode("ascii")
        parts = [text[at : at + INLINE_REQUEST] for at in range(0, len(text), INLINE_REQUEST)]
        for number, part in enumerate(parts or [""]):
            last = "1" if number == len(parts) - 1 or not parts else "0"
            command = shlex.join(
                [self.python, "-I", "-S", "-c", _WRITER, self.folder, name, str(number), last, part]
            )
            response = yield Execute(command, self.timeout)
            if response.exit_code != 0:
                raise StoreUnavailable(
                    "sandbox",
                    "the sandbox could not keep the helper's files in its private folder"
                    f" ({str(response.output).strip()[-200:]})",
                )

    def _fetch(self, name: str) -> Exchange[bytes]:
        """A reply the helper wrote to the private folder: downloaded, or read in parts.

        The next request asks the helper to remove it.
        """
        if self._downloads_reach:
            (response,) = yield Download((f"{self.folder}/{name}",))
            content = getattr(response, "content", None)
            if not getattr(response, "error", None) and content is not None:
                self._drop.append(name)
                return bytes(content)
            self._downloads_reach = False
        parts: list[bytes] = []
        while True:
            size = max(self._inline // 2, _LEAST_INLINE)
            _, part = yield from self.call("fetch", name, sum(map(len, parts)), size)
            parts.append(part)
            if len(part) < size:
                self._drop.append(name)
                return b"".join(parts)


def _reply(output: str) -> tuple[dict[str, Any], bytes] | None:
    """The helper's reply in a command's output; None if there is no whole one."""
    for packed in helper.frames(output):
        with contextlib.suppress(zlib.error, ValueError):  # not ours, or mangled on the way
            return helper.unpack(packed)
    return None


def _unanswered(exc: Exception) -> StoreUnavailable:
    """A provider's own failure (the sandbox is gone, its API refused), in our terms."""
    return StoreUnavailable("sandbox", f"the sandbox did not answer ({type(exc).__name__}: {exc})")


def _failure(output: str, response: Any) -> StoreUnavailable:
    """Why a run printed no reply, as the sentence the model gets."""
    code = getattr(response, "exit_code", None)
    if OLD_PYTHON in output:
        found = output.split(OLD_PYTHON, 1)[1].split(">", 1)[0]
        floor = ".".join(map(str, MIN_PYTHON))
        return StoreUnavailable(
            "sandbox",
            f"the sandbox's python3 is {found}; the file tools need {floor} or newer",
            lasting=True,
        )
    if UNSAFE in output:
        return StoreUnavailable(
            "sandbox",
            "the helper's folder in the sandbox is not private to its user",
            lasting=True,
        )
    if getattr(response, "truncated", False):
        return StoreUnavailable(
            "sandbox", "the sandbox cut the helper's reply short; check the file, then try again"
        )
    if code == 127:  # noqa: PLR2004 - the shell's "command not found"
        return StoreUnavailable(
            "sandbox", "the sandbox has no python3, which the file tools need there", lasting=True
        )
    if code is None and output.startswith("Error: "):  # the provider's own failure, in words
        said = output.removeprefix("Error: ").strip().splitlines()[0].rstrip(".")
        return StoreUnavailable("sandbox", said[:300])
    last = output.strip().splitlines()[-1:] or ["no output"]
    return StoreUnavailable(
        "sandbox", f"the sandbox's helper failed (exit {code}: {last[0][:200]})"
    )


def _folder(sandbox_id: str) -> str:
    """The default private folder: in the sandbox's /var/tmp, named by its id.

    Not `/tmp`: it is often a tmpfs, which some providers' file transfers cannot reach.
    """
    return f"/var/tmp/.fstools-{_safe(sandbox_id)}"  # noqa: S108 - private, checked


_NO_ID: Final = "sandbox"
"""The id a provider object without one is given (its folder's name)."""


def _sandbox_id(sandbox: SandboxLike) -> str:
    try:
        return str(sandbox.id)
    except (AttributeError, NotImplementedError):
        return _NO_ID


def _safe(name: str) -> str:
    """A folder name from a sandbox id: its safe characters, and a digest when cut."""
    kept = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:40]
    if kept == name:
        return kept
    return f"{kept}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


@functools.cache
def _program() -> bytes:
    return shipping.sources(PROGRAM)


@functools.cache
def _digest() -> str:
    return hashlib.sha256(_program()).hexdigest()


@functools.cache
def _loader() -> str:
    return _LOADER.format(
        floor=MIN_PYTHON,
        old=OLD_PYTHON,
        unsafe=UNSAFE,
        missing=MISSING,
        file=shipping.FILE,
        program=PROGRAM,
    )


__all__ = [
    "DEFAULT_TIMEOUT",
    "INLINE_REPLY",
    "INLINE_REQUEST",
    "MIN_PYTHON",
    "PROGRAM",
    "Download",
    "Exchange",
    "Execute",
    "Request",
    "SandboxLike",
    "Transport",
    "Upload",
]
