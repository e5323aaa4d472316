"""The tools a model call is offered: the middleware's own, each while it can be of use.

Every model call pays for the schemas it carries, so a file tool that cannot help yet
(`notebook_edit` before any notebook was named, `undo_edit` before there is a change to
undo) is left out of the request; `FileTool.usable` decides. The tools that run
commands are left out too when the backend a factory returns for this call cannot
(`call_runtime` is the runtime it is given, as deepagents did). The tools stay registered
with the agent, so a call to one that was not offered still runs and answers. Tools of
other middleware and of the agent itself are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.config import get_config
from langgraph.prebuilt import ToolRuntime

from langchain_fstools.tools.base import FileTool

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.tools import BaseTool

    from langchain_fstools.backends.factory import FactoryBackend


def offered(
    request: ModelRequest, own: Sequence[BaseTool], factory: FactoryBackend | None = None
) -> ModelRequest:
    """`request` without those of the `own` tools that are not usable at this call.

    With a backend `factory`, the tools that run commands (`requires_execute`) are
    withheld too unless the backend it gives for this call runs them.
    """
    commands = factory is None or factory.resolved(call_runtime(request)).supports_execute
    mine = {id(tool) for tool in own}
    withheld = {
        id(tool)
        for tool in request.tools
        if id(tool) in mine
        and isinstance(tool, FileTool)
        and (
            not tool.usable(request.state, request.messages)
            or (not commands and getattr(tool, "requires_execute", False))
        )
    }
    if not withheld:
        return request
    return request.override(tools=[tool for tool in request.tools if id(tool) not in withheld])


def call_runtime(request: ModelRequest) -> ToolRuntime[Any, Any]:
    """The model call's runtime as a tool call's: its state, context, store and config.

    What a backend factory is given at a model call (no tool call id).
    """
    runtime = request.runtime
    try:
        config = get_config()
    except RuntimeError:  # outside a runnable context (a hook called directly)
        config = {}
    return ToolRuntime(
        state=request.state,
        context=getattr(runtime, "context", None),
        config=config,
        stream_writer=getattr(runtime, "stream_writer", lambda _: None),
        tool_call_id=None,
        store=getattr(runtime, "store", None),
    )


__all__ = ["call_runtime", "offered"]
