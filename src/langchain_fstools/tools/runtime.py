"""A tool runtime outside a tool call: what a review or a rewind binds a backend with."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config
from langgraph.runtime import get_runtime


class StateRuntime:
    """The thread's state, config and store, outside a tool call (or for one, by its id).

    Args:
        state: The thread's graph state.
        config: The run's config (default: none).
        store: The graph's store, if any.
        tool_call_id: The tool call this is done for, if any (history records it).
        context: The run's context, as a backend factory reads it (default: the running
            graph's, `running_context`).
    """

    def __init__(
        self,
        state: Any,
        config: Any = None,
        store: Any = None,
        tool_call_id: str | None = None,
        context: Any = None,
    ) -> None:
        """Keep what a backend binds to."""
        self.state = state
        self.context = running_context() if context is None else context
        self.tool_call_id = tool_call_id
        self.config: Any = config or {}
        self.store = store


def running_config() -> Any:
    """The running graph's config (its thread id keys in-process read records), or {}."""
    try:
        return get_config()
    except RuntimeError:
        return {}


def running_context() -> Any:
    """The running graph's context (what `agent.invoke(..., context=...)` gave), or None."""
    try:
        runtime = get_runtime()
    except RuntimeError:  # outside a graph run
        return None
    return getattr(runtime, "context", None)


__all__ = ["StateRuntime", "running_config", "running_context"]
