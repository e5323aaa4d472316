"""The MCP SDK of either generation behind one surface: the only module telling them apart.

mcp 1.x registers a server's handlers with decorators (`@server.list_tools()`), keeps
one `ServerSession` per client connection and hands a handler its request through
`server.request_context`. mcp 2.x takes the handlers as constructor arguments
(`on_list_tools=`, `on_call_tool=`), passes each a context, and builds a
`ServerSession` per request over the client's connection. Both accept the wire
(camelCase) spelling of fields when a model is built (`mimeType=`, `isError=`), which
the rest of the package uses, so only building the server and reading a request
differ; both are here, with the one thing only 2.x speaks: on the 2026-07-28 protocol a
server cannot send a request (no elicitation mid-call); it asks by answering with an
`InputRequiredResult`, and the client retries the call with the answers.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

from mcp import types
from mcp.server.lowlevel import Server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from mcp.server.session import ServerSession

GENERATION: Final = int(metadata.version("mcp").split(".", 1)[0])
"""The installed SDK's major version: 1 or 2."""

_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())

ERA_PROBE: Final = "'server/discover'"
"""How the request an mcp 2.x client asks first (which protocol era the server speaks)
appears in mcp 1.x's validation warning; the 1.x server answers it with an error and
the client falls back to `initialize`."""


class _QuietEraProbe(logging.Filter):
    """Drop mcp 1.x's warning about a 2.x client's era probe (dozens of lines on stderr).

    The probe is how a 2.x client finds which protocol the server speaks: refusing it is
    the answer, not a fault. Any other request that fails validation is still logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Failed to validate request") and ERA_PROBE in message)


@dataclass(frozen=True)
class ToolRequest:
    """One `tools/call` as the server sees it, whichever SDK generation delivered it."""

    name: str
    """The tool called."""
    arguments: dict[str, Any]
    """Its arguments, as the client sent them."""
    session: ServerSession
    """The session to send requests and notifications back through."""
    client: object
    """The client's connection: the same object for every request of one MCP session,
    so it keys per-session state (held weakly)."""
    request_id: types.RequestId | None
    """The request's id, so what the server sends back goes on the request's stream."""
    progress_token: types.ProgressToken | None
    """The client's progress token, when it asked for progress notifications."""
    asks_by_result: bool = False
    """Whether a person is asked by an input-required result the client retries
    (the 2026-07-28 protocol), rather than by an elicitation request."""
    answers: Mapping[str, Any] | None = None
    """A retry's answers to the input requests of the result it retries, by key."""
    state: str | None = None
    """A retry's `requestState`, as the result it retries gave it."""

    def can_elicit(self) -> bool:
        """Whether the client can show a form to a person (elicitation)."""
        return bool(self.session.check_client_capability(_ELICITATION))

    def knows_client(self) -> bool:
        """Whether the server knows the client's capabilities (an MCP session began).

        A stateless server (`--stateless`, protocols before 2026-07-28) never sees the
        client's `initialize`, so it cannot tell whether the client could elicit.
        """
        session = self.session
        # 2.x: on 2026-07-28 each request declares the capabilities (client info optional).
        declared = getattr(session, "client_capabilities", None)
        return declared is not None or getattr(session, "client_params", None) is not None

    def input_required(
        self, key: str, message: str, schema: types.ElicitRequestedSchema, state: str
    ) -> Any:
        """The result asking the person `message` through a form of `schema` (2026-07-28).

        The client answers, then retries the call with the answer under `key` and `state`.
        """
        mcp_types: Any = types
        form = mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
        return mcp_types.InputRequiredResult(
            input_requests={key: mcp_types.ElicitRequest(params=form)}, request_state=state
        )

    def answer(self, key: str) -> types.ElicitResult | None:
        """A retry's answer to the form asked under `key`, if it carries one."""
        answer = (self.answers or {}).get(key)
        if isinstance(answer, types.ElicitResult):
            return answer
        if isinstance(answer, dict) and answer.get("action") in {"accept", "decline", "cancel"}:
            return types.ElicitResult.model_validate(answer)
        return None

    async def elicit(self, message: str, schema: types.ElicitRequestedSchema) -> types.ElicitResult:
        """Ask the person `message` through a form of `schema`; return their answer."""
        return await self.session.elicit_form(message, schema, related_request_id=self.request_id)

    async def progress(self, progress: float, message: str) -> None:
        """Send a `notifications/progress` (only when the client gave a progress token)."""
        if self.progress_token is None:
            return
        await self.session.send_progress_notification(
            self.progress_token,
            progress,
            message=message,
            related_request_id=self.request_id,  # type: ignore[arg-type] # an id of either type
        )


def new_server(
    name: str,
    *,
    version: str,
    instructions: str,
    tools: list[types.Tool],
    call: Callable[[ToolRequest], Awaitable[Any]],
) -> Server[Any, Any]:
    """A low-level SDK `Server` listing `tools` and running each call through `call`.

    Args:
        name: The server's name in the handshake.
        version: The server's version in the handshake (`serverInfo.version`).
        instructions: What the server tells the client at initialisation.
        tools: The tools listed.
        call: Runs one tool call.
    """
    if GENERATION >= 2:  # noqa: PLR2004 - the SDK generation
        return _server_2(name, version, instructions, tools, call)
    return _server_1(name, version, instructions, tools, call)


def _server_1(
    name: str,
    version: str,
    instructions: str,
    tools: list[types.Tool],
    call: Callable[[ToolRequest], Awaitable[Any]],
) -> Server[Any, Any]:
    server: Server[Any, Any] = Server(name, version=version, instructions=instructions)
    root = logging.root  # mcp 1.x logs the warning with `logging.warning`
    if not any(isinstance(known, _QuietEraProbe) for known in root.filters):
        root.addFilter(_QuietEraProbe())

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return tools

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(tool: str, arguments: dict[str, Any] | None) -> Any:
        context = server.request_context
        meta = context.meta
        token = meta.progressToken if meta is not None else None
        session = context.session
        return await call(
            ToolRequest(tool, dict(arguments or {}), session, session, context.request_id, token)
        )

    return server


def _server_2(
    name: str,
    version: str,
    instructions: str,
    tools: list[types.Tool],
    call: Callable[[ToolRequest], Awaitable[Any]],
) -> Server[Any, Any]:
    modern = importlib.import_module("mcp_types.version").MODERN_PROTOCOL_VERSIONS  # 2.x only

    async def on_list_tools(context: Any, params: Any) -> Any:
        del context, params
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(context: Any, params: Any) -> Any:
        session = context.session
        # 2.x builds a ServerSession per request; the connection lasts the MCP session.
        client = getattr(session, "_connection", session)
        return await call(
            ToolRequest(
                params.name,
                dict(params.arguments or {}),
                session,
                client,
                context.request_id,
                _progress_token(context.meta),
                asks_by_result=context.protocol_version in modern,
                answers=params.input_responses,
                state=params.request_state,
            )
        )

    constructor: Any = Server
    server: Server[Any, Any] = constructor(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return server


def _progress_token(meta: Mapping[str, Any] | None) -> types.ProgressToken | None:
    if not meta:
        return None
    token = meta.get("progress_token", meta.get("progressToken"))
    return token if isinstance(token, str | int) else None


__all__ = ["GENERATION", "ToolRequest", "new_server"]
