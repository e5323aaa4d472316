"""One MCP client's calls: its tools, permission review, eviction folder and read records.

`mcp.server` lists the tools at start and loads this module only at the first
`tools/call`: running a call brings LangChain's agent middleware (eviction, the approval
request) and LangGraph's tool-call request, which a client's first answer should not
wait for.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.memory import InMemoryStore

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.store import StoreBackend
from langchain_fstools.errors import PermissionDenied
from langchain_fstools.mcp.content import error_result
from langchain_fstools.mcp.notifications import Progress
from langchain_fstools.permissions.approval import approval_request
from langchain_fstools.permissions.gate import PermissionGate
from langchain_fstools.tools.base import FileTool
from langchain_fstools.tools.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.tools.reads import READS_KEY
from langchain_fstools.tools.render import render_error

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from langchain_core.messages import ToolCall
    from langchain_core.tools import BaseTool
    from mcp import types

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.mcp.sdk import ToolRequest
    from langchain_fstools.permissions.rules import Policy
    from langchain_fstools.tools.reads import ReadRecord
    from langchain_fstools.tools.toolkit import FileToolkit

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


@dataclass(frozen=True)
class CallRuntime:
    """The runtime a tool call gets from the server: its id and read records."""

    tool_call_id: str
    stream_writer: Callable[[dict[str, Any]], None] | None = None
    """Where the tools' progress reports go (to the client, when it asked for them)."""
    state: Mapping[str, Any] | None = None
    """The read records the call sees (`{READS_KEY: ...}`): the session's and the handle's."""
    store: None = None
    context: None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ran:
    """A call that ran: its message, and the read records it added (by path)."""

    message: ToolMessage
    reads: dict[str, ReadRecord]


@dataclass
class Session:
    """One MCP session's tools, eviction folder, permission gate and read records."""

    tools: dict[str, BaseTool]
    toolkit: FileToolkit
    eviction: LargeResultEviction | None
    storage: Backend
    """The session's backend without the permission view: resolves paths, serves dry runs."""
    gate: PermissionGate | None
    """The session's permission gate (it previews with the call's read records)."""
    reads: dict[str, ReadRecord] = field(default_factory=dict)
    """What the client read in this session (clients that pass no `read_handle`)."""

    @classmethod
    def open(
        cls,
        toolkit: Callable[[Backend], FileToolkit],
        backend: Backend,
        *,
        policy: Policy | None,
        eviction: LargeResultEviction | bool,
    ) -> Session:
        """A new session over `backend`, its tools from `toolkit` (given the guarded view)."""
        storage = backend
        if eviction:
            results = {RESULTS_DIR + "/": StoreBackend(InMemoryStore())}
            storage = CompositeBackend(storage, results, hidden_while_empty=[RESULTS_DIR])
        gate = None if policy is None else PermissionGate(policy, storage)
        kit = toolkit(storage if gate is None else GuardedBackend(storage, gate.guard_for))
        evicting = None
        if eviction:
            evicting = copy.copy(eviction if eviction is not True else LargeResultEviction())
            evicting.backend = storage
        tools = {tool.name: tool for tool in kit.get_tools()}
        if gate is not None:
            gate.tools = {name: tool for name, tool in tools.items() if isinstance(tool, FileTool)}
        return cls(tools, kit, evicting, storage, gate)

    async def execute(
        self,
        request: ToolRequest,
        tool: BaseTool,
        arguments: dict[str, Any],
        reads: Mapping[str, ReadRecord],
    ) -> Ran | types.CallToolResult:
        """Run one call seeing `reads`, asking the person first if need be.

        Returns:
            What ran, or the refusal to return (a denial, a declined approval).
        """
        call_id = f"mcp_{uuid.uuid4().hex}"
        call: ToolCall = {"name": tool.name, "args": arguments, "id": call_id, "type": "tool_call"}
        seen = {READS_KEY: dict(reads)}
        refusal = await self._review(request, call, CallRuntime(call_id, state=seen))
        if refusal is not None:
            return refusal
        deferred = self.toolkit.context.deferred_updates
        deferred[call_id] = {}  # no graph state: the tool leaves its read records here
        try:
            async with Progress(request) as progress:
                runtime = CallRuntime(call_id, stream_writer=progress.writer, state=seen)
                message = await self.run(tool, call, runtime)
        finally:
            added: dict[str, ReadRecord] = deferred.pop(call_id, {}).get(READS_KEY, {})
            if self.gate is not None:
                self.gate.revoke(call_id)
        self.reads.update(added)
        return Ran(message, added)

    async def run(self, tool: BaseTool, call: ToolCall, runtime: CallRuntime) -> ToolMessage:
        """Run `call` with `runtime`, its large result evicted as the middleware would."""
        invoked: ToolCall = {**call, "args": {**call["args"], "runtime": runtime}}

        async def handler(request: ToolCallRequest) -> ToolMessage:
            result = await tool.ainvoke(request.tool_call)
            return result if isinstance(result, ToolMessage) else _message(request, result)

        request = ToolCallRequest(tool_call=invoked, tool=tool, state={}, runtime=runtime)  # type: ignore[arg-type]
        if self.eviction is None:
            return await handler(request)
        result = await self.eviction.awrap_tool_call(request, handler)
        if isinstance(result, ToolMessage):
            return result
        messages = result.update.get("messages", []) if isinstance(result.update, dict) else []
        return next(m for m in messages if isinstance(m, ToolMessage))

    async def _review(
        self, request: ToolRequest, call: ToolCall, runtime: CallRuntime
    ) -> types.CallToolResult | None:
        """None to run the call (its approval granted), else the refusal to return."""
        gate = self.gate
        if gate is None:
            return None
        storage = self.storage.bind(None)
        assessment = await gate.aassess(call, storage)
        if assessment is None or assessment.verdict.action == "allow":
            return None
        name, verdict = call["name"], assessment.verdict
        if verdict.action == "deny":
            denied = PermissionDenied(name, verdict.operation, verdict.target, verdict.reason)
            return error_result(render_error(denied, tool=name))
        if not request.can_elicit():
            return error_result(
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
        return error_result(
            f"User rejected the tool call for `{name}` with reason: {reason}"
            if reason
            else f"User rejected the tool call for `{name}`. It was not run; do not retry "
            "it unless the user asks."
        )


def _message(request: ToolCallRequest, content: Any) -> ToolMessage:
    return ToolMessage(
        content=content if isinstance(content, str | list) else str(content),
        tool_call_id=request.tool_call["id"] or "",
        name=request.tool_call["name"],
    )


__all__ = ["APPROVAL_SCHEMA", "CallRuntime", "Ran", "Session"]
