"""One MCP client's calls: its tools, permission review, eviction folder and read records.

`mcp.server` lists the tools at start and loads this module only at the first
`tools/call`: running a call brings LangChain's agent middleware (eviction, the approval
request) and LangGraph's tool-call request, which a client's first answer should not
wait for.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.memory import InMemoryStore
from mcp import types

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import GuardedBackend
from langchain_fstools.backends.store import StoreBackend
from langchain_fstools.errors import PermissionDenied, StaleApproval
from langchain_fstools.mcp.content import error_result
from langchain_fstools.mcp.notifications import Progress
from langchain_fstools.permissions.approval import approval_request
from langchain_fstools.permissions.gate import PermissionGate
from langchain_fstools.tools.base import FileTool, call_key
from langchain_fstools.tools.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.tools.reads import READS_KEY
from langchain_fstools.tools.render import render_error

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from langchain_core.messages import ToolCall
    from langchain_core.tools import BaseTool

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.mcp.handles import ReadHandles
    from langchain_fstools.mcp.sdk import ToolRequest
    from langchain_fstools.permissions.rules import Policy, Verdict
    from langchain_fstools.tools.reads import ReadRecord
    from langchain_fstools.tools.targets import Preview
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

APPROVAL_KEY = "approval"
"""The key of the approval form in an input-required result (2026-07-28)."""


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
    """What a call came to.

    The tool's message and the read records it added (by path), or, when the tool did
    not run, the server's own reply: a refusal, or a question for the person.
    """

    message: ToolMessage | None
    reads: dict[str, ReadRecord] = field(default_factory=dict)
    reply: Any = None


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
    signer: ReadHandles
    """Signs what a person is asked, so the retry that answers applies exactly that."""
    reads: dict[str, ReadRecord] = field(default_factory=dict)
    """What the client read in this session (clients that pass no `read_handle`); the
    server keeps it, for clients that keep a session."""

    @classmethod
    def open(
        cls,
        toolkit: Callable[[Backend], FileToolkit],
        backend: Backend,
        *,
        policy: Policy | None,
        eviction: LargeResultEviction | bool,
        signer: ReadHandles,
    ) -> Session:
        """A new session over `backend`, its tools from `toolkit` (given the guarded view)."""
        storage = backend
        if eviction:
            results = {RESULTS_DIR + "/": StoreBackend(InMemoryStore())}
            storage = CompositeBackend(
                storage, results, reroot=True, hidden_while_empty=[RESULTS_DIR]
            )  # a new store: no release 0.1 layout to look for
        gate = None if policy is None else PermissionGate(policy, storage, after_effect=False)
        kit = toolkit(storage if gate is None else GuardedBackend(storage, gate.guard_for))
        evicting = None
        if eviction:
            evicting = copy.copy(eviction if eviction is not True else LargeResultEviction())
            evicting.backend = storage
        tools = {tool.name: tool for tool in kit.get_tools()}
        if gate is not None:
            gate.tools = {name: tool for name, tool in tools.items() if isinstance(tool, FileTool)}
        return cls(tools, kit, evicting, storage, gate, signer)

    async def execute(
        self,
        request: ToolRequest,
        tool: BaseTool,
        arguments: dict[str, Any],
        reads: Mapping[str, ReadRecord],
    ) -> Ran:
        """Run one call seeing `reads`, asking the person first if need be."""
        call_id = f"mcp_{uuid.uuid4().hex}"
        call: ToolCall = {"name": tool.name, "args": arguments, "id": call_id, "type": "tool_call"}
        seen = {READS_KEY: dict(reads)}
        refusal = await self._review(request, call, CallRuntime(call_id, state=seen))
        if refusal is not None:
            return Ran(None, reply=refusal)
        deferred = self.toolkit.context.deferred_updates
        key = call_key(CallRuntime(call_id))
        deferred[key] = {}  # no graph state: the tool leaves its read records here
        try:
            async with Progress(request) as progress:
                runtime = CallRuntime(call_id, stream_writer=progress.writer, state=seen)
                message = await self.run(tool, call, runtime)
        finally:
            added: dict[str, ReadRecord] = deferred.pop(key, {}).get(READS_KEY, {})
            if self.gate is not None:
                self.gate.revoke(call_id)
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

    async def _review(self, request: ToolRequest, call: ToolCall, runtime: CallRuntime) -> Any:
        """None to run the call (its approval granted), else the reply to return instead.

        The reply is a refusal, or, on the 2026-07-28 protocol, the input-required result
        asking the person: the client retries the call with the answer and the signed
        digest of what was shown, and the retry runs only if the call would still make
        that change (else it is refused as stale).
        """
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
        preview = await assessment.tool.apreview(storage, assessment.args, runtime)
        unaskable = _unaskable(request, name, verdict, preview)
        if unaskable is not None:
            return unaskable
        (action,) = approval_request([(call, verdict, preview)])["action_requests"]
        answer = await self._ask(request, call, action.get("description") or name, verdict.target)
        if not isinstance(answer, types.ElicitResult):
            return answer  # the question (2026-07-28), or a stale answer's refusal
        refusal = _refusal(answer, name)
        if refusal is None:
            gate.grant(call["id"] or "", gate.approval(assessment, call["args"], preview))
        return refusal

    async def _ask(self, request: ToolRequest, call: ToolCall, message: str, target: object) -> Any:
        """The person's answer to `message`, or the reply to return instead.

        Over an elicitation (older protocols) the answer comes back in this call. On
        2026-07-28 the first call returns the question, with the signed digest of what
        is shown as its state, and the retry carries the answer and that state; a
        state that no longer matches what the call would do is refused as stale.
        """
        if not request.asks_by_result:
            return await request.elicit(message, APPROVAL_SCHEMA)
        shown = self.signer.seal(_digest(call, message))
        answer = request.answer(APPROVAL_KEY)
        if answer is None or request.state is None:
            return request.input_required(APPROVAL_KEY, message, APPROVAL_SCHEMA, shown)
        if not hmac.compare_digest(request.state, shown):
            return error_result(render_error(StaleApproval(str(target)), tool=call["name"]))
        return answer


def _unaskable(
    request: ToolRequest, name: str, verdict: Verdict, preview: Preview | None
) -> types.CallToolResult | None:
    """The refusal of a call a person is not asked about, or None (ask).

    A call that would fail is refused with its error: approving it would change nothing
    (a retry carrying an answer is left to the stale check, which says what changed).
    A client that cannot show a form gets a refusal saying why (`_cannot_ask`).
    """
    retry = request.asks_by_result and request.state is not None
    if preview is not None and preview.error is not None and not retry:
        return error_result(preview.error)
    if not request.can_elicit():
        return error_result(_cannot_ask(name, verdict, session=request.knows_client()))
    return None


def _cannot_ask(name: str, verdict: Verdict, *, session: bool) -> str:
    """Why a call that needs a person's approval was not run: no way to ask one.

    With a session the client said it cannot show a form (no elicitation); without one
    (`--stateless` on an older protocol) the server cannot tell, nor send a request.
    """
    needs = f"Error: {name} needs a person's approval ({verdict.reason} asks for {verdict.target})"
    if session:
        return (
            f"{needs}, but this MCP client cannot ask one (it does not support elicitation),"
            " so the call was not run. Ask the user to allow it in the server's permissions,"
            " or to use a client that supports elicitation."
        )
    return (
        f"{needs}, but this server keeps no session between calls (--stateless), so it"
        " cannot ask a person during a call, and the call was not run. Ask the user to allow"
        " it in the server's permissions, or to run the server without --stateless."
    )


def _refusal(answer: types.ElicitResult, name: str) -> types.CallToolResult | None:
    """None when the person approved, else the refusal (with their reason, if given)."""
    content = answer.content or {}
    if answer.action == "accept" and content.get("approve") is True:
        return None
    reason = content.get("reason") if answer.action == "accept" else None
    return error_result(
        f"User rejected the tool call for `{name}` with reason: {reason}"
        if reason
        else f"User rejected the tool call for `{name}`. It was not run; do not retry "
        "it unless the user asks."
    )


def _digest(call: ToolCall, shown: str) -> str:
    """What identifies an approval: the tool, its arguments and what the person was shown."""
    payload = json.dumps([call["name"], call["args"], shown], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _message(request: ToolCallRequest, content: Any) -> ToolMessage:
    return ToolMessage(
        content=content if isinstance(content, str | list) else str(content),
        tool_call_id=request.tool_call["id"] or "",
        name=request.tool_call["name"],
    )


__all__ = ["APPROVAL_KEY", "APPROVAL_SCHEMA", "CallRuntime", "Ran", "Session"]
