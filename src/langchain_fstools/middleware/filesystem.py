"""FilesystemMiddleware: the file tools, their system prompt and state, for create_agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from langchain_fstools.backends import paths
from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.errors import FsToolsError
from langchain_fstools.middleware.capabilities import adapt_messages
from langchain_fstools.middleware.eviction import RESULTS_DIR, LargeResultEviction
from langchain_fstools.state import FilesystemState
from langchain_fstools.toolkit import FileToolkit
from langchain_fstools.tools.apply_patch import patch_paths

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

    from langchain_fstools.backends.protocol import Backend

SYSTEM_PROMPT = """## Files

You have file tools over a workspace whose root is `/`.
- Paths are absolute workspace paths, such as `/src/app.py`.
- Find files by name with `glob` and search their contents with `grep`; do not use a
  shell for that. Read files with `read_file`, in windows (`offset`, `limit`) when long.
- Read a file before you edit or overwrite it; if it changed since, read it again.
- Change existing files with `edit_file` (exact text replacement); use `write_file` for
  new files or complete rewrites, and `notebook_edit` for Jupyter notebooks. For many
  changes at once, in one file or several, send one `apply_patch`.
- Change a file at most once per turn: when one turn asks for several changes to the
  same file, only the first is made; make the others in the next turn.
- With `execute`, run programs (tests, builds, git) from the workspace root with
  relative paths; read, search and change files with the file tools, not the shell.
- A tool result too large for the conversation is saved under `/large_tool_results/`;
  the notice says where. Read it back with `read_file` (`offset`, `limit`) or `grep`."""
"""The section appended to the agent's system prompt."""

PATH_ARGUMENTS = ("file_path", "notebook_path")


class FilesystemMiddleware(AgentMiddleware[FilesystemState, Any]):
    """Give a `create_agent` agent the file tools over one backend.

    Contributes the tools (all, or a chosen subset), a system-prompt section on how to
    use them, and the state they need (`FilesystemState`: the `files` channel for
    `StateBackend`, and the read records that make read-before-write survive a resumed
    thread). When one model turn asks for several changes to the same file, the first
    runs and the others get an error to retry, since parallel calls all see the state
    from before the turn.

    Large results of other tools (shell, MCP, ...) are evicted to
    `/large_tool_results/` (see `LargeResultEviction`). Unless the backend already keeps
    files in graph state, that folder is mounted from graph state
    (`CompositeBackend`), so nothing is written to the user's disk.

    Args:
        backend: Where the files live.
        tools: Names of the tools to give (default: all).
        system_prompt: The section appended to the system prompt; None adds nothing.
            Default: `SYSTEM_PROMPT`.
        eviction: True for the default `LargeResultEviction`, an instance to configure
            it (its backend is replaced by the tools' one), or False. Default: True.
        **settings: `ToolSettings` fields, e.g. `read_limit=500`.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, LocalBackend

        agent = create_agent(
            "anthropic:claude-sonnet-4-5",
            middleware=[FilesystemMiddleware(backend=LocalBackend("./repo"))],
        )
        ```
    """

    state_schema = FilesystemState

    def __init__(
        self,
        *,
        backend: Backend,
        tools: list[str] | None = None,
        system_prompt: str | None = SYSTEM_PROMPT,
        eviction: LargeResultEviction | bool = True,
        **settings: Any,
    ) -> None:
        """Build the tools; raises ValueError for an unknown tool or setting."""
        super().__init__()
        if eviction and backend.kind != "state":
            backend = CompositeBackend(backend, {RESULTS_DIR + "/": StateBackend()})
        self.eviction = (
            None
            if eviction is False
            else _with_backend(eviction if eviction is not True else LargeResultEviction(), backend)
        )
        self.toolkit = FileToolkit(backend, tools=tools, **settings)
        self.tools = self.toolkit.get_tools()
        self.system_prompt = system_prompt
        self._mutating = {t.name for t in self.tools if not (t.metadata or {}).get("read_only")}

    # ----- model calls: the system prompt section ---------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Append the tools' prompt section; fit tool results to the model."""
        return handler(self._prepared(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async `wrap_model_call`."""
        return await handler(self._prepared(request))

    def _prepared(self, request: ModelRequest) -> ModelRequest:
        profile = getattr(request.model, "profile", None)
        messages = adapt_messages(request.messages, profile)
        if messages != request.messages:
            request = request.override(messages=messages)
        if not self.system_prompt:
            return request
        section = {"type": "text", "text": self.system_prompt}
        blocks = (
            [*request.system_message.content_blocks, section]
            if request.system_message
            else [section]
        )
        return request.override(system_message=SystemMessage(content=blocks))  # type: ignore[arg-type]

    # ----- tool calls: one change per file per turn -------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Refuse a second change to one file in one turn; evict large results."""
        refusal = self._parallel_refusal(request)
        if refusal is not None:
            return refusal
        if self.eviction is None:
            return handler(request)
        return self.eviction.wrap_tool_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async `wrap_tool_call`."""
        refusal = self._parallel_refusal(request)
        if refusal is not None:
            return refusal
        if self.eviction is None:
            return await handler(request)
        return await self.eviction.awrap_tool_call(request, handler)

    def _parallel_refusal(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call["name"] not in self._mutating:
            return None
        targets = _targets(call["args"])
        turn = _turn_of(request.state, call["id"])
        if not targets or turn is None:
            return None
        for earlier in turn.tool_calls:
            if earlier["id"] == call["id"]:
                return None
            shared = targets & _targets(earlier["args"])
            if earlier["name"] in self._mutating and shared:
                target = min(shared)
                return ToolMessage(
                    content=(
                        f"Error: another call in this turn already changes {target}; a file "
                        "is changed at most once per turn. Read it again and make this "
                        "change in your next turn."
                    ),
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                )
        return None


def _with_backend(eviction: LargeResultEviction, backend: Backend) -> LargeResultEviction:
    """Point an eviction middleware at the tools' backend."""
    eviction.backend = backend
    return eviction


def _targets(args: dict[str, Any]) -> frozenset[str]:
    """The canonical paths a mutation changes (those of a patch too); invalid ones skipped."""
    named = [value for name in PATH_ARGUMENTS if isinstance(value := args.get(name), str)]
    patch = args.get("patch")
    if isinstance(patch, str):
        named.extend(patch_paths(patch))
    found: set[str] = set()
    for value in named:
        try:
            found.add(paths.normalize(value))
        except FsToolsError:
            continue
    return frozenset(found)


def _turn_of(state: Any, call_id: str | None) -> AIMessage | None:
    """The model message that asked for `call_id`."""
    messages = state.get("messages", []) if isinstance(state, dict) else []
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message
    return None


__all__ = ["PATH_ARGUMENTS", "SYSTEM_PROMPT", "FilesystemMiddleware"]
