"""One running language server: start it, keep its documents in step, ask what it says.

Built on pygls's client and lsprotocol's types (no hand-written JSON-RPC). Everything
here runs on the event loop of the `Diagnostics` that owns the server (one thread for
all its servers), one request at a time per server (`lock`).

Documents: the first touch of a file opens it (`didOpen`), later texts replace it
whole (`didChange`, full sync) and are saved (`didSave`), so the server sees exactly the
text the tools wrote. Diagnostics are pulled (LSP 3.17 `textDocument/diagnostic`) where
the server offers it, else the ones it publishes for that document's version are
awaited.

The server runs in the workspace folder confined as ripgrep's spawner runs rg
(`search.spawner`), with `shell.sandbox.confine`'s pieces applied before exec: a
Landlock ruleset (`confine.read_only_ruleset`) lets it read files and list folders only
beneath the workspace, read and run only its program, the files its command names (a
script) and the loader's folders, and write nowhere; a seccomp filter refuses
`socket()` of the network families and any path or abstract Unix socket (no network,
no host service), as for a command without the network; `no_new_privs`. A server that
cannot be confined does not start. Where the kernel lacks Landlock, the socket filter
still applies and reads are not confined.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

from langchain_fstools.shell.sandbox import confine

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.lsp.servers import ServerSpec

_DENIED_FAMILIES = (1, 2, 10, 17, 40)
"""AF_UNIX, AF_INET, AF_INET6, AF_PACKET, AF_VSOCK: the socket families a language
server may not open (a Unix one only as a stream pair: `confine`'s seccomp filter)."""

_STOP_SECONDS = 2.0
"""How long a server may take to shut down before it is killed."""

_converter = functools.cache(default_converter)
"""One message converter for every client: its (un)structuring code is generated once
per process, not at each start, where it held the loop thread (every server's checks)
for a few hundred ms on a loaded machine (`bench/lsp_start.py`)."""


Place = tuple[str, tuple[tuple[int, str], ...]]
"""A document's virtual path, and its cells' first lines and ids (a notebook's)."""


class ServerGone(Exception):
    """The server process ended, or could not be started."""


@dataclass(frozen=True, slots=True)
class RawDiagnostic:
    """One diagnostic as the server gave it, positions 0-based."""

    uri: str
    line: int
    column: int
    severity: int
    code: str
    message: str


def confinement(program: str, command: Sequence[str], root: str) -> int | None:
    """The Landlock ruleset a server runs under; None where the kernel lacks Landlock.

    It reads beneath `root`; it reads and runs its own files (`runtime_of` `program`
    and of the files `command`'s arguments name, a script) and the loader's folders.
    Blocks (it opens them): call it off the event loop.

    Raises:
        OSError: `root` cannot be opened.
        confine.ConfineError: a rule could not be added.
    """
    named = [argument for argument in command[1:] if Path(argument).is_file()]
    runnable: list[str] = []
    libraries: list[str] = []
    for item in (program, *named):
        files, folders = runtime_of(item)
        runnable += files
        libraries += folders
    descriptor = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return confine.read_only_ruleset(
            descriptor, [*runnable, *confine.LOADER_FOLDERS], libraries
        )
    finally:
        os.close(descriptor)


def runtime_of(program: str) -> tuple[list[str], list[str]]:
    """What running `program` reads: files (it, its real file) and library folders.

    The library folder is the `lib` beside the `bin` folder it is in (as given, and
    really): an interpreter's standard library, an environment's packages (and its
    `pyvenv.cfg`). For a script, its `#!` interpreter's too (found on PATH after `env`).
    """
    given, real = Path(program), Path(program).resolve()
    files = [program, str(real), str(given.parent.parent / "pyvenv.cfg")]
    folders = [str(given.parent.parent / "lib"), str(real.parent.parent / "lib")]
    try:
        with real.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return files, folders
    words = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    if words and Path(words[0]).name == "env":
        files.append(words[0])
        words = [word for word in words[1:] if not word.startswith("-")]
        words[:1] = [shutil.which(words[0]) or ""] if words else []
    if words and words[0] and words[0] != program:
        more_files, more_folders = runtime_of(words[0])
        files += more_files
        folders += more_folders
    return files, folders


def _confined(ruleset: int | None) -> Callable[[], None]:
    """What the server's process applies before exec (`preexec_fn`).

    No privileges to gain, no sockets of `_DENIED_FAMILIES` (seccomp), then `ruleset`.
    """
    spec, _ = confine.parse([*confine.options(deny_family=list(_DENIED_FAMILIES)), "--"])

    def apply() -> None:
        confine.restrict_ahead(spec)
        if ruleset is not None:
            confine.restrict_to(ruleset)

    return apply


class Server:
    """A started language server for one workspace folder."""

    def __init__(self, spec: ServerSpec, program: str, root: str) -> None:
        """Prepare (not start) `spec`'s server, run as `program`, over the folder `root`."""
        self.spec = spec
        self.program = program
        self.root = root
        self.lock = asyncio.Lock()
        self.pull = False
        self.cross_file = True
        """Whether a change of one file may change another's diagnostics (the server
        says so: `interFileDependencies`; assumed for servers that only publish)."""
        self.texts: dict[str, tuple[int, str]] = {}
        """Open documents: uri -> (version, the text the server has)."""
        self.known: dict[str, tuple[RawDiagnostic, ...]] = {}
        """The diagnostics last received for each open document, at its version."""
        self.places: dict[str, Place] = {}
        """Where each open document's lines are: its virtual path, and cells if any."""
        self._published: dict[str, tuple[int | None, Sequence[types.Diagnostic]]] = {}
        self._arrived = asyncio.Condition()
        self._client: LanguageClient | None = None
        self._drain: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """Whether the server's process is running."""
        client = self._client
        process = None if client is None else client._server  # noqa: SLF001 - pygls keeps it there
        return process is not None and process.returncode is None and not client.stopped  # type: ignore[union-attr]

    @property
    def pid(self) -> int | None:
        """The server's process id, while it runs."""
        process = None if self._client is None else self._client._server  # noqa: SLF001
        return None if process is None else process.pid

    async def start(self) -> None:
        """Start the process and initialise it.

        Raises:
            ServerGone: it could not be started or ended during the handshake.
        """
        client = LanguageClient("langchain-fstools", "1", converter_factory=_converter)

        async def on_publish(params: types.PublishDiagnosticsParams) -> None:
            await self._on_publish(params)

        client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(on_publish)
        try:
            ruleset = await asyncio.to_thread(
                confinement, self.program, self.spec.command, self.root
            )
        except (OSError, confine.ConfineError) as exc:
            raise ServerGone(f"it could not be confined ({exc})") from None
        try:
            await client.start_io(
                self.program,
                *self.spec.command[1:],
                cwd=self.root,
                preexec_fn=_confined(ruleset),
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise ServerGone(str(exc)) from None
        finally:
            if ruleset is not None:
                os.close(ruleset)
        self._client = client
        self._drain = asyncio.create_task(self._discard_stderr())
        uri = Path(self.root).as_uri()
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri, Path(self.root).name)],
            capabilities=types.ClientCapabilities(
                text_document=types.TextDocumentClientCapabilities(
                    synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                    diagnostic=types.DiagnosticClientCapabilities(),
                    publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                        version_support=True
                    ),
                )
            ),
        )
        result = await self._request(client.initialize_async(params))
        provider = result.capabilities.diagnostic_provider
        self.pull = provider is not None
        self.cross_file = provider is None or bool(
            getattr(provider, "inter_file_dependencies", True)
        )
        client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        """Shut the server down, or kill it when it does not go in time."""
        client, self._client = self._client, None
        if client is None:
            return
        process = client._server  # noqa: SLF001
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_async(None), _STOP_SECONDS)
            client.exit(None)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), _STOP_SECONDS)  # type: ignore[no-untyped-call]
        if self._drain is not None:
            self._drain.cancel()

    async def show(self, uri: str, text: str) -> int:
        """Make the server see `text` as the document `uri` (opened, or changed and saved).

        Returns:
            The document's version.
        """
        client = self._live()
        held = self.texts.get(uri)
        if held is None:
            version = 1
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(uri, self.spec.language_id, version, text)
                )
            )
        elif held[1] == text:
            return held[0]
        else:
            version = held[0] + 1
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version, uri),
                    [types.TextDocumentContentChangeWholeDocument(text)],
                )
            )
            client.text_document_did_save(
                types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
            )
        self.texts[uri] = (version, text)
        self.known.pop(uri, None)
        return version

    async def close(self, uri: str) -> None:
        """Forget the document `uri` (the file was deleted)."""
        if self.texts.pop(uri, None) is not None and self.alive:
            self._live().text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
            )
        self.known.pop(uri, None)

    async def diagnostics(self, uri: str) -> tuple[RawDiagnostic, ...]:
        """What the server says of the open document `uri` at its current version.

        The caller bounds the wait (`asyncio.wait_for`).

        Raises:
            ServerGone: the server ended meanwhile.
        """
        known = self.known.get(uri)
        if known is not None:
            return known
        version = self.texts[uri][0]
        if self.pull:
            report = await self._request(
                self._live().text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri))
                )
            )
            items = getattr(report, "items", [])
        else:
            items = await self._published_for(uri, version)
        found = tuple(_raw(uri, item) for item in items)
        if self.texts.get(uri, (None,))[0] == version:
            self.known[uri] = found
        return found

    def _live(self) -> LanguageClient:
        if self._client is None or not self.alive:
            raise ServerGone("the server is not running")
        return self._client

    async def _request(self, pending: Any) -> Any:
        """Await a request, as `ServerGone` when the process ends before it answers."""
        try:
            return await pending
        except (RuntimeError, ConnectionError, BrokenPipeError) as exc:
            if not self.alive:
                raise ServerGone(str(exc)) from None
            raise

    async def _published_for(self, uri: str, version: int) -> Sequence[types.Diagnostic]:
        async with self._arrived:
            while True:
                self._live()
                published = self._published.get(uri)
                if published is not None and published[0] in (version, None):
                    return published[1]
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), 0.25)

    async def _on_publish(self, params: types.PublishDiagnosticsParams) -> None:
        self._published[params.uri] = (params.version, params.diagnostics)
        async with self._arrived:
            self._arrived.notify_all()

    async def _discard_stderr(self) -> None:
        """Read the server's log so a full pipe never stops it."""
        process = None if self._client is None else self._client._server  # noqa: SLF001
        stream = None if process is None else process.stderr
        if stream is None:
            return
        with contextlib.suppress(Exception):
            while await stream.read(65536):
                pass


_SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def severity_name(severity: int) -> str:
    """The word for an LSP severity (1 error, 2 warning, 3 info, 4 hint)."""
    return _SEVERITIES.get(severity, "error")


def _raw(uri: str, item: types.Diagnostic) -> RawDiagnostic:
    code = "" if item.code is None else str(item.code)
    severity = int(item.severity) if item.severity is not None else 1
    start = item.range.start
    return RawDiagnostic(uri, start.line, start.character, severity, code, item.message)


__all__ = ["Place", "RawDiagnostic", "Server", "ServerGone", "severity_name"]
