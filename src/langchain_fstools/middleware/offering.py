"""The tools a model call is offered: the middleware's own, each while it can be of use.

Every model call pays for the schemas it carries, so a file tool that cannot help yet
(`notebook_edit` before any notebook was named, `undo_edit` before there is a change to
undo) is left out of the request; `FileTool.usable` decides. The tools stay registered
with the agent, so a call to one that was not offered still runs and answers. Tools of
other middleware and of the agent itself are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools.tools.base import FileTool

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.tools import BaseTool


def offered(request: ModelRequest, own: Sequence[BaseTool]) -> ModelRequest:
    """`request` without those of the `own` tools that are not usable at this call."""
    mine = {id(tool) for tool in own}
    withheld = {
        id(tool)
        for tool in request.tools
        if id(tool) in mine
        and isinstance(tool, FileTool)
        and not tool.usable(request.state, request.messages)
    }
    if not withheld:
        return request
    return request.override(tools=[tool for tool in request.tools if id(tool) not in withheld])


__all__ = ["offered"]
