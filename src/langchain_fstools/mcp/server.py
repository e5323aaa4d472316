"""The MCP server: the file tools, with their safety model, for any MCP client.

`create_server(backend)` returns an MCP SDK `Server` that lists the toolkit's tools (same
names, descriptions and argument schemas, with annotations from each tool's declared
metadata) and runs them. What a client has read travels with its calls: each `read_file`
answer, and each change of one file, ends with a signed `read_handle` (`mcp.handles`)
that `read_file`, `edit_file`, `write_file` and `notebook_edit` take back, so read-before-
write and staleness hold with no session (the 2026-07-28 protocol, a client that opens a
session per call). Where a client keeps a session, the session's reads count too. Each
MCP session gets its own tool instances and `/large_tool_results/` folder (in memory),
where large results are evicted as `FilesystemMiddleware` does; the sessionless calls of
2026-07-28 share one. Permissions follow `langchain_fstools.permissions.rules`; an `ask`
becomes an MCP elicitation when the client supports it (on 2026-07-28, a result asking
the person that the client retries with the answer: `mcp.sessions`), and a refusal
saying why otherwise. What only a call needs loads at the first call (`mcp.sessions`),
and the listing can be kept between starts (`mcp.listing_cache`), so a server answers
its first request as fast as a minimal one.
"""

from __future__ import annotations

import functools
import importlib
import os
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from pydantic import BaseModel

from langchain_fstools._version import __version__
from langchain_fstools.lsp.servers import servers_wanted
from langchain_fstools.mcp.content import error_result, to_call_result
from langchain_fstools.mcp.handles import HANDLE, InvalidHandle, ReadHandles
from langchain_fstools.mcp.listing_cache import keep_listing, kept_listing, listing_key, wire
from langchain_fstools.mcp.sdk import ToolRequest, new_server
from langchain_fstools.shell.session.session import in_session

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from types import ModuleType

    from langchain_core.tools import BaseTool
    from mcp.server.lowlevel import Server

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.mcp.sessions import Session
    from langchain_fstools.permissions.rules import Mode, Permission, Policy
    from langchain_fstools.tools.eviction import LargeResultEviction
    from langchain_fstools.tools.reads import ReadRecord
    from langchain_fstools.tools.toolkit import FileToolkit

SERVER_NAME = "langchain-fstools"
"""The server's name in the MCP handshake."""

INSTRUCTIONS = """File tools over a workspace whose root is `/`; paths are absolute \
workspace paths such as `/src/app.py`. Read a file before you edit or overwrite it, and \
pass the `read_handle` the read ends with to the change; if the file changed since, read \
it again. Find files with `glob`, search contents with `grep`, change files with \
`edit_file` (or `apply_patch` for many changes at once). Results too large for the \
conversation are saved under `/large_tool_results/`; read them back with `read_file`."""
"""What the server tells the client about its tools at initialisation."""

READER = "this MCP client"
"""Who must have read a file before editing it, named when a change is refused."""

HANDLE_SCHEMA = {
    "type": "string",
    "description": "The read_handle from your last read_file or change of this file.",
}
"""The `read_handle` argument in the listing of tools that take it."""

READ_HANDLE_NOTE = """- The answer ends with a `read_handle` line: pass it as `read_handle` to \
edit_file, write_file or notebook_edit of this file, and to read_file, to add this \
window to the next."""
"""Added to the description of the tool that reads (`read_file`) over MCP."""

CHANGE_HANDLE_NOTE = """

Pass `read_handle`: the one your last read_file of this file ended with, or your last \
change of it (each change returns a new one)."""
"""Added to the descriptions of tools that change only files read (edits, overwrites)."""


def create_server(
    backend: Backend,
    *,
    tools: Sequence[str] | None = None,
    execute: bool = False,
    mode: Mode | None = None,
    permissions: Sequence[Permission] = (),
    protected_paths: Sequence[str] | None = None,
    eviction: LargeResultEviction | bool = True,
    processes: bool = True,
    name: str = SERVER_NAME,
    handle_key: str | bytes | None = None,
    listing_cache: Path | None = None,
    reads_only: bool = False,
    **settings: Any,
) -> Server[Any, Any]:
    """Build an MCP server serving the file tools over `backend`.

    Args:
        backend: Where the files live (`LocalBackend`, `SSHBackend`, `StoreBackend`).
            Not `StateBackend`: an MCP server has no graph state.
        tools: Names of the tools to serve. Default: every tool, `execute` only with
            `execute=True`.
        execute: Serve the `execute` tool (the backend must be able to run commands,
            e.g. `LocalBackend(root, execute=True)`). Default: False.
        mode: Permission mode (`"default"`, `"accept_edits"`, `"plan"`, `"bypass"`);
            None for no permission layer. Default: None (`"default"` when `permissions`
            are given).
        permissions: `Permission` rules, tried in order. Default: none.
        protected_paths: Globs that always ask. Default (None):
            `permissions.PROTECTED_PATHS`.
        eviction: True for the default `LargeResultEviction`, an instance to configure
            it, or False. Evicted results live in memory, per session (one for all
            sessionless calls). Default: True.
        processes: Keep background processes for clients that keep a session (each
            client gets a sandbox session of its own: `execute(background=true)`, the
            `process` tool, `cd` carried over). False for a server whose requests each
            stand alone (`--stateless`): such calls are refused. Sessionless
            2026-07-28 calls are refused them either way. Default: True.
        name: The server's name in the handshake. Default: `"langchain-fstools"`.
        handle_key: The key signing read handles; servers that must accept each other's
            handles (behind a balancer, or one process per call) share it, e.g.
            `mcp.handles.handle_key()`. Default: a random key for this server.
        listing_cache: A folder to keep the `tools/list` answer in, so a server made the
            same way again answers before loading its tools (see `mcp.listing_cache`; the
            command line uses `mcp.listing_cache.cache_folder()`). With a folder, this
            reads and writes files: call it off the event loop. Default: none.
        reads_only: Serve only the tools that change nothing (a call to another is
            refused with a sentence): what an HTTP server without a token may serve
            (`run_http(..., no_auth=True)`). Default: False.
        **settings: `ToolSettings` fields. `pdf_file_blocks` defaults to True here, so a
            PDF read also embeds the pages read as a resource.

    Returns:
        An MCP SDK low-level `Server`; run it with `run_stdio` or `run_http`
        (`langchain_fstools.mcp`), or with the SDK's own transports.

    Raises:
        ValueError: a `StateBackend`, an unknown tool or setting, `execute` without
            `execute=True` or on a backend that cannot run commands, or a bad mode/rule.

    Example:
        ```python
        import anyio
        from langchain_fstools import LocalBackend
        from langchain_fstools.mcp import create_server, run_stdio

        server = create_server(LocalBackend("./repo"), mode="accept_edits")
        anyio.run(run_stdio, server)
        ```
    """
    files = FileServer(
        backend,
        tools=tools,
        execute=execute,
        mode=mode,
        permissions=permissions,
        protected_paths=protected_paths,
        eviction=eviction,
        processes=processes,
        settings=settings,
        handle_key=handle_key.encode() if isinstance(handle_key, str) else handle_key,
        listing_cache=listing_cache,
        reads_only=reads_only,
    )
    return files.build(name)


class FileServer:
    """The tools, policy and per-session state behind `create_server`'s `Server`.

    Args:
        backend: Where the files live.
        tools: Tool names (see `create_server`).
        execute: Serve `execute`.
        mode: Permission mode, or None.
        permissions: Permission rules.
        protected_paths: Globs that always ask.
        eviction: Eviction setting (see `create_server`).
        processes: Keep background processes (see `create_server`).
        settings: `ToolSettings` fields.
        handle_key: The key signing read handles (see `create_server`).
        listing_cache: Where listings are kept (see `create_server`).
        reads_only: Serve only the tools that change nothing (see `create_server`).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        tools: Sequence[str] | None,
        execute: bool,
        mode: Mode | None,
        permissions: Sequence[Permission],
        protected_paths: Sequence[str] | None,
        eviction: LargeResultEviction | bool,
        settings: dict[str, Any],
        processes: bool = True,
        handle_key: bytes | None = None,
        listing_cache: Path | None = None,
        reads_only: bool = False,
    ) -> None:
        """Check the configuration by building the tools once, or read a kept listing.

        A kept listing says a server was built the same way before; the tools then load
        at the first call.
        """
        if backend.kind == "state":
            raise ValueError(
                "StateBackend keeps files in graph state, which an MCP server does not have;"
                " use LocalBackend, SSHBackend or StoreBackend"
            )
        self.backend = backend
        self.settings = {"pdf_file_blocks": True, **settings}
        self.eviction = eviction
        self.processes = processes
        self.handles = ReadHandles(handle_key or os.urandom(32))
        self.reads_only = reads_only
        self._asked = (tools, execute, mode, permissions, protected_paths, reads_only)
        self.names: list[str] = []
        self.policy: Policy | None = None
        self._prepared = False
        self._preparing = anyio.Lock()
        self._sessions: weakref.WeakKeyDictionary[object, Session] = weakref.WeakKeyDictionary()
        self._keys: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        """Each client's sandbox session (its shell state and background processes)."""
        self._cache = listing_cache
        self._key = ""
        self.listing: list[types.Tool] = []
        """What `tools/list` answers."""
        if listing_cache is not None:
            kind = (type(backend).__qualname__, backend.kind, backend.supports_execute)
            self._key = listing_key([*self._asked, self.settings, kind, servers_wanted()])
            kept = kept_listing(listing_cache, self._key)
            if kept is not None:
                self.listing = kept
                return
        self.listing = self._prepare()

    def _prepare(self) -> list[types.Tool]:
        """Check the configuration, build the policy, and list the tools (keeping the list).

        Raises:
            ValueError: see `create_server`.
        """
        from langchain_fstools.permissions.rules import PROTECTED_PATHS, Policy  # noqa: PLC0415
        from langchain_fstools.tools.diagnosing import checker  # noqa: PLC0415 - BaseTools
        from langchain_fstools.tools.settings import ToolSettings  # noqa: PLC0415
        from langchain_fstools.tools.toolkit import TOOL_CLASSES  # noqa: PLC0415 - BaseTools

        tools, execute, mode, permissions, protected_paths, reads_only = self._asked
        # One set of language servers for every session's toolkit.
        wanted = ToolSettings(diagnostics=self.settings.get("diagnostics", "auto"))
        servers = checker(wanted, self.backend)
        self.settings["diagnostics"] = False if servers is None else servers
        names = (
            list(tools)
            if tools is not None
            else [
                n
                for n in TOOL_CLASSES
                if (execute or not _runs_commands(TOOL_CLASSES[n]))
                and (servers is not None or not _needs_servers(TOOL_CLASSES[n]))
            ]
        )
        if reads_only:
            names = [n for n in names if n in TOOL_CLASSES and _reads(TOOL_CLASSES[n])]
        runs_commands = [n for n in names if n in TOOL_CLASSES and _runs_commands(TOOL_CLASSES[n])]
        if runs_commands and not execute:
            raise ValueError(
                f"{runs_commands} run commands, so they are served only with execute=True"
            )
        self.names = names
        if mode is not None or permissions:
            protected = PROTECTED_PATHS if protected_paths is None else protected_paths
            self.policy = Policy(permissions, mode=mode or "default", protected=protected)
        listing = [describe(tool) for tool in self._toolkit(self.backend).get_tools()]
        self._prepared = True
        if self._cache is not None and wire(listing) != wire(self.listing):
            keep_listing(self._cache, self._key, listing)
        return listing

    def build(self, name: str) -> Server[Any, Any]:
        """The MCP server: lists the tools, runs calls in the caller's session."""
        return new_server(
            name,
            version=__version__,
            instructions=INSTRUCTIONS,
            tools=self.listing,
            call=self.call,
        )

    async def call(self, request: ToolRequest) -> Any:
        """Run one tool call in its client's session, asking the person first if need be.

        Returns:
            The call's `CallToolResult`, or (2026-07-28) the input-required result asking
            the person, which the client retries with the answer.
        """
        # 2026-07-28 has no sessions: its calls share one, whose reads never count (only
        # handles do), so tools are built once and evicted results outlive the call.
        sessionless = request.asks_by_result
        session = await self._session(self if sessionless else request.client)
        name = request.name
        tool = session.tools.get(name)
        if tool is None:
            if self.reads_only:
                return error_result(READS_ONLY.format(name=name))
            return error_result(
                f"Error: no tool named {name!r}; call one of {sorted(session.tools)}."
            )
        arguments = dict(request.arguments)
        reads = {} if sessionless else dict(session.reads)
        if takes_handle(tool):
            try:
                reads.update(self._opened(arguments.pop(HANDLE, None)))
            except InvalidHandle:
                return error_result(
                    f"Error: {HANDLE} is not one this server gave (or it was altered); "
                    f"read the file with read_file and pass the {HANDLE} its answer ends with."
                )
        if (sessionless or not self.processes) and _starts_a_process(tool, arguments):
            return error_result(NO_PROCESSES)
        with in_session(self._keys.setdefault(request.client, f"mcp-{uuid.uuid4().hex}")):
            ran = await session.execute(request, tool, arguments, reads)
        if ran.message is None:
            return ran.reply
        if not sessionless:
            session.reads.update(ran.reads)
        handle = None
        if takes_handle(tool) and len(ran.reads) == 1:
            handle = self.handles.mint(*next(iter(ran.reads.items())))
        return to_call_result(ran.message, handle=handle)

    async def _session(self, client: object) -> Session:
        """The client's session, opened on its first call (the first loads `mcp.sessions`).

        The server itself is the key of the one that sessionless calls share.
        """
        session = self._sessions.get(client)
        if session is None:
            async with self._preparing:
                if not self._prepared:  # the listing was a kept one
                    await anyio.to_thread.run_sync(self._prepare)
            sessions = await anyio.to_thread.run_sync(_sessions_module)
            session = sessions.Session.open(
                self._toolkit,
                self.backend,
                policy=self.policy,
                eviction=self.eviction,
                signer=self.handles,
            )
            self._sessions[client] = session
        return session

    def _toolkit(self, backend: Backend) -> FileToolkit:
        """The tools over `backend`, told they serve MCP: reads travel in handles."""
        from langchain_fstools.tools.toolkit import FileToolkit  # noqa: PLC0415 - BaseTools

        toolkit = FileToolkit(backend, tools=self.names, **self.settings)
        toolkit.context.reader = READER
        return toolkit

    def _opened(self, handle: object) -> dict[str, ReadRecord]:
        """The read record a `read_handle` argument stands for (none without one).

        Raises:
            InvalidHandle: not a handle this server's key signed.
        """
        if handle is None or handle == "":
            return {}
        if not isinstance(handle, str):
            raise InvalidHandle(str(handle))
        path, record = self.handles.open(handle)
        return {path: record}


def describe(tool: BaseTool) -> types.Tool:
    """The MCP listing of a tool: its schema, and hints from its declared metadata.

    A read-only tool is idempotent and not destructive; a mutating one may be
    destructive, and is idempotent when it says so (`write_file`: the same content
    twice leaves the same file); only tools that run commands reach beyond the
    workspace.
    """
    metadata = tool.metadata or {}
    read_only = bool(metadata.get("read_only", False))
    idempotent = getattr(tool, "idempotent", None)
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        input_schema = schema
    elif issubclass(schema, BaseModel):
        input_schema = schema.model_json_schema()
    else:
        input_schema = schema.schema()
    # The description is the tool's; LangChain repeats it on the schema, which would
    # double the listing's size.
    input_schema = {key: value for key, value in input_schema.items() if key != "description"}
    description = tool.description
    if takes_handle(tool):
        properties = {**input_schema.get("properties", {}), HANDLE: HANDLE_SCHEMA}
        input_schema = {**input_schema, "properties": properties}
        reads = getattr(tool, "records_reads", False)
        description += f"\n{READ_HANDLE_NOTE}" if reads else CHANGE_HANDLE_NOTE
    return types.Tool(
        name=tool.name,
        description=description,
        inputSchema=input_schema,
        annotations=types.ToolAnnotations(
            readOnlyHint=read_only,
            destructiveHint=not read_only,
            idempotentHint=read_only if idempotent is None else bool(idempotent),
            openWorldHint=bool(getattr(tool, "requires_execute", False)),
        ),
    )


def takes_handle(tool: BaseTool) -> bool:
    """Whether `tool` takes a `read_handle`: it reads one file, or changes only files read."""
    return bool(getattr(tool, "records_reads", False) or getattr(tool, "needs_read", False))


NO_PROCESSES = (
    "Error: this server keeps no session between calls (MCP 2026-07-28, or --stateless),"
    " so it cannot keep a process running; run the command to its end (no background or"
    " yield_after)."
)
"""What a sessionless call that would start or use a background process gets."""


def _starts_a_process(tool: BaseTool, arguments: dict[str, Any]) -> bool:
    """Whether a call would start or use a background process (which needs a session)."""
    if getattr(tool, "uses_processes", False):
        return True
    return bool(arguments.get("background")) or arguments.get("yield_after") is not None


READS_ONLY = (
    "Error: {name} is not served here: this server takes requests without a token, so it"
    " only reads. Ask the user to restart it with a token (see docs/mcp.md) to change files"
    " or run commands."
)
"""What a server serving only reads (`reads_only`) answers a call of another tool."""


def _reads(tool: object) -> bool:
    """Whether `tool` (a tool class) changes nothing (its declared `read_only`)."""
    fields = getattr(tool, "model_fields", {})
    return "read_only" in fields and fields["read_only"].default is True


def _runs_commands(tool: object) -> bool:
    """Whether `tool` (a tool class) runs shell commands (it needs `execute=True`)."""
    return bool(getattr(tool, "requires_execute", False))


def _needs_servers(tool: object) -> bool:
    """Whether `tool` (a tool class) needs language servers (`diagnostics`)."""
    return bool(getattr(tool, "requires_servers", False))


@functools.cache
def _sessions_module() -> ModuleType:
    """`mcp.sessions`, imported once (off the event loop: it loads the agent stack)."""
    return importlib.import_module("langchain_fstools.mcp.sessions")


__all__ = [
    "CHANGE_HANDLE_NOTE",
    "HANDLE_SCHEMA",
    "INSTRUCTIONS",
    "READER",
    "READS_ONLY",
    "READ_HANDLE_NOTE",
    "FileServer",
    "create_server",
    "describe",
    "takes_handle",
]
