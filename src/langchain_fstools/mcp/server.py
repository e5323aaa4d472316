"""The MCP server: the file tools, with their safety model, for any MCP client.

`create_server(backend)` returns an MCP SDK `Server` that lists the toolkit's tools (same
names, descriptions and argument schemas, with annotations from each tool's declared
metadata) and runs them. What a client has read travels with its calls: each `read_file`
answer, and each change of one file, ends with a signed `read_handle` (`mcp.handles`)
that `read_file`, `edit_file`, `write_file` and `notebook_edit` take back, so read-before-
write and staleness hold with no session (the 2026-07-28 protocol, a client that opens a
session per call). Where a client keeps a session, the session's reads count too. Each
MCP session gets its own tool instances and `/large_tool_results/` folder (in memory),
where large results are evicted as `FilesystemMiddleware` does. Permissions
follow `langchain_fstools.permissions.rules`; an `ask` becomes an MCP elicitation when the
client supports it, and a refusal saying why otherwise.
"""

from __future__ import annotations

import copy
import os
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.memory import InMemoryStore
from mcp import types
from pydantic import BaseModel

from langchain_fstools._version import __version__
from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.store import StoreBackend
from langchain_fstools.errors import PermissionDenied
from langchain_fstools.mcp.content import to_call_result
from langchain_fstools.mcp.handles import HANDLE, InvalidHandle, ReadHandles
from langchain_fstools.mcp.notifications import Progress
from langchain_fstools.mcp.sdk import ToolRequest, new_server
from langchain_fstools.permissions.approval import approval_request
from langchain_fstools.permissions.gate import PermissionGate
from langchain_fstools.permissions.rules import PROTECTED_PATHS, Mode, Permission, Policy
from langchain_fstools.tools.base import FileTool
from langchain_fstools.tools.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.tools.reads import READS_KEY
from langchain_fstools.tools.render import render_error
from langchain_fstools.tools.toolkit import TOOL_CLASSES, FileToolkit

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from langchain_core.messages import ToolCall
    from langchain_core.tools import BaseTool
    from mcp.server.lowlevel import Server

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.tools.reads import ReadRecord

SERVER_NAME = "langchain-fstools"
"""The server's name in the MCP handshake."""

INSTRUCTIONS = """File tools over a workspace whose root is `/`; paths are absolute \
workspace paths such as `/src/app.py`. Read a file before you edit or overwrite it, and \
pass the `read_handle` the read ends with to the change; if the file changed since, read it \
again. Find files with `glob`, search contents with `grep`, change \
files with `edit_file` (or `apply_patch` for many changes at once). Results too large for \
the conversation are saved under `/large_tool_results/`; read them back with `read_file`."""
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

APPROVAL_SCHEMA: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Run this call."},
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "If you refuse: why, for the agent.",
        },
    },
    "required": ["approve"],
}
"""What an approval elicitation asks of the person."""


def create_server(
    backend: Backend,
    *,
    tools: Sequence[str] | None = None,
    execute: bool = False,
    mode: Mode | None = None,
    permissions: Sequence[Permission] = (),
    protected_paths: Sequence[str] = PROTECTED_PATHS,
    eviction: LargeResultEviction | bool = True,
    name: str = SERVER_NAME,
    handle_key: str | bytes | None = None,
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
        protected_paths: Globs that always ask. Default: `permissions.PROTECTED_PATHS`.
        eviction: True for the default `LargeResultEviction`, an instance to configure
            it, or False. Evicted results live in memory, per session. Default: True.
        name: The server's name in the handshake. Default: `"langchain-fstools"`.
        handle_key: The key signing read handles; servers that must accept each other's
            handles (behind a balancer, or one process per call) share it, e.g.
            `mcp.handles.handle_key()`. Default: a random key for this server.
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
        settings=settings,
        handle_key=handle_key.encode() if isinstance(handle_key, str) else handle_key,
    )
    return files.build(name)


@dataclass(frozen=True)
class CallRuntime:
    """The runtime a tool call gets from the server: its id, no graph state."""

    tool_call_id: str
    stream_writer: Callable[[dict[str, Any]], None] | None = None
    """Where the tools' progress reports go (to the client, when it asked for them)."""
    state: Mapping[str, Any] | None = None
    """The read records the call sees (`{READS_KEY: ...}`): the session's and the handle's."""
    store: None = None
    context: None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Session:
    """One MCP session's tools (with their read records) and eviction folder."""

    tools: dict[str, BaseTool]
    toolkit: FileToolkit
    eviction: LargeResultEviction | None
    storage: Backend
    """The session's backend without the permission view: resolves paths, serves dry runs."""
    gate: PermissionGate | None
    """The session's permission gate (it previews with the session's read records)."""
    reads: dict[str, ReadRecord] = field(default_factory=dict)
    """What the client read in this session (clients that pass no `read_handle`)."""


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
        settings: `ToolSettings` fields.
        handle_key: The key signing read handles (see `create_server`).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        tools: Sequence[str] | None,
        execute: bool,
        mode: Mode | None,
        permissions: Sequence[Permission],
        protected_paths: Sequence[str],
        eviction: LargeResultEviction | bool,
        settings: dict[str, Any],
        handle_key: bytes | None = None,
    ) -> None:
        """Check the configuration by building the tools once (for listing)."""
        if backend.kind == "state":
            raise ValueError(
                "StateBackend keeps files in graph state, which an MCP server does not have;"
                " use LocalBackend, SSHBackend or StoreBackend"
            )
        names = (
            list(tools)
            if tools is not None
            else [n for n in TOOL_CLASSES if execute or not _runs_commands(n)]
        )
        runs_commands = [n for n in names if _runs_commands(n)]
        if runs_commands and not execute:
            raise ValueError(
                f"{runs_commands} run commands, so they are served only with execute=True"
            )
        self.backend = backend
        self.names = names
        self.settings = {"pdf_file_blocks": True, **settings}
        self.eviction = eviction
        self.policy: Policy | None = None
        if mode is not None or permissions:
            self.policy = Policy(permissions, mode=mode or "default", protected=protected_paths)
        self.handles = ReadHandles(handle_key or os.urandom(32))
        self.listed = self._new_session().tools
        self._sessions: weakref.WeakKeyDictionary[object, _Session] = weakref.WeakKeyDictionary()

    def build(self, name: str) -> Server[Any, Any]:
        """The MCP server: lists the tools, runs calls in the caller's session."""
        return new_server(
            name,
            version=__version__,
            instructions=INSTRUCTIONS,
            tools=[describe(tool) for tool in self.listed.values()],
            call=self.call,
        )

    async def call(self, request: ToolRequest) -> types.CallToolResult:
        """Run one tool call in its client's session, asking the person first if need be."""
        state = self._sessions.get(request.client)
        if state is None:
            state = self._sessions[request.client] = self._new_session()
        name = request.name
        tool = state.tools.get(name)
        if tool is None:
            return _error(f"Error: no tool named {name!r}; call one of {sorted(state.tools)}.")
        arguments = dict(request.arguments)
        reads = dict(state.reads)
        if takes_handle(tool):
            try:
                reads.update(self._opened(arguments.pop(HANDLE, None)))
            except InvalidHandle:
                return _error(
                    f"Error: {HANDLE} is not one this server gave (or it was altered); "
                    f"read the file with read_file and pass the {HANDLE} its answer ends with."
                )
        call_id = f"mcp_{uuid.uuid4().hex}"
        call: ToolCall = {"name": name, "args": arguments, "id": call_id, "type": "tool_call"}
        seen = {READS_KEY: reads}
        refusal = await self._review(request, state, call, CallRuntime(call_id, state=seen))
        if refusal is not None:
            return refusal
        deferred = state.toolkit.context.deferred_updates
        deferred[call_id] = {}  # no graph state: the tool leaves its read records here
        try:
            async with Progress(request) as progress:
                runtime = CallRuntime(call_id, stream_writer=progress.writer, state=seen)
                message = await self._run(state, tool, call, runtime)
        finally:
            added: dict[str, ReadRecord] = deferred.pop(call_id, {}).get(READS_KEY, {})
            if state.gate is not None:
                state.gate.revoke(call_id)
        state.reads.update(added)
        handle = None
        if takes_handle(tool) and len(added) == 1:
            handle = self.handles.mint(*next(iter(added.items())))
        return to_call_result(message, handle=handle)

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

    async def _run(
        self, state: _Session, tool: BaseTool, call: ToolCall, runtime: CallRuntime
    ) -> ToolMessage:
        invoked: ToolCall = {**call, "args": {**call["args"], "runtime": runtime}}

        async def handler(request: ToolCallRequest) -> ToolMessage:
            result = await tool.ainvoke(request.tool_call)
            return result if isinstance(result, ToolMessage) else _message(request, result)

        request = ToolCallRequest(tool_call=invoked, tool=tool, state={}, runtime=runtime)  # type: ignore[arg-type]
        if state.eviction is None:
            return await handler(request)
        result = await state.eviction.awrap_tool_call(request, handler)
        if isinstance(result, ToolMessage):
            return result
        messages = result.update.get("messages", []) if isinstance(result.update, dict) else []
        return next(m for m in messages if isinstance(m, ToolMessage))

    async def _review(
        self, request: ToolRequest, state: _Session, call: ToolCall, runtime: CallRuntime
    ) -> types.CallToolResult | None:
        """None to run the call (its approval granted), else the refusal to return."""
        gate = state.gate
        if gate is None:
            return None
        storage = state.storage.bind(None)
        assessment = await gate.aassess(call, storage)
        if assessment is None or assessment.verdict.action == "allow":
            return None
        name, verdict = call["name"], assessment.verdict
        if verdict.action == "deny":
            denied = PermissionDenied(name, verdict.operation, verdict.target, verdict.reason)
            return _error(render_error(denied, tool=name))
        if not request.can_elicit():
            return _error(
                f"Error: {name} needs a person's approval ({verdict.reason} asks for "
                f"{verdict.target}), but this MCP client cannot ask one (it does not support "
                "elicitation), so the call was not run. Ask the user to allow it in the "
                "server's permissions, or to use a client that supports elicitation."
            )
        preview = await assessment.tool.apreview(storage, assessment.args, runtime)
        (action,) = approval_request([(call, verdict, preview)])["action_requests"]
        answer = await request.elicit(action.get("description") or name, APPROVAL_SCHEMA)
        content = answer.content or {}
        if answer.action == "accept" and content.get("approve") is True:
            gate.grant(call["id"] or "", gate.approval(assessment, call["args"], preview))
            return None
        reason = content.get("reason") if answer.action == "accept" else None
        return _error(
            f"User rejected the tool call for `{name}` with reason: {reason}"
            if reason
            else f"User rejected the tool call for `{name}`. It was not run; do not retry "
            "it unless the user asks."
        )

    def _new_session(self) -> _Session:
        storage = self.backend
        if self.eviction:
            results = {RESULTS_DIR + "/": StoreBackend(InMemoryStore())}
            storage = CompositeBackend(storage, results, hidden_while_empty=[RESULTS_DIR])
        gate = None if self.policy is None else PermissionGate(self.policy, storage)
        guarded = storage if gate is None else GuardedBackend(storage, gate.guard_for)
        toolkit = FileToolkit(guarded, tools=self.names, **self.settings)
        toolkit.context.reader = READER
        toolkit.context.unchanged_note = False
        eviction = None
        if self.eviction:
            eviction = copy.copy(
                self.eviction if self.eviction is not True else LargeResultEviction()
            )
            eviction.backend = storage
        tools = {tool.name: tool for tool in toolkit.get_tools()}
        if gate is not None:
            gate.tools = {name: tool for name, tool in tools.items() if isinstance(tool, FileTool)}
        return _Session(tools, toolkit, eviction, storage, gate)


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


def _runs_commands(name: str) -> bool:
    """Whether the tool `name` runs shell commands (it needs `execute=True`)."""
    return bool(getattr(TOOL_CLASSES.get(name), "requires_execute", False))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)


def _message(request: ToolCallRequest, content: Any) -> ToolMessage:
    return ToolMessage(
        content=content if isinstance(content, str | list) else str(content),
        tool_call_id=request.tool_call["id"] or "",
        name=request.tool_call["name"],
    )


__all__ = [
    "APPROVAL_SCHEMA",
    "CHANGE_HANDLE_NOTE",
    "HANDLE_SCHEMA",
    "INSTRUCTIONS",
    "READER",
    "READ_HANDLE_NOTE",
    "CallRuntime",
    "FileServer",
    "create_server",
    "describe",
    "takes_handle",
]
