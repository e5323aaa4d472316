"""A tool runtime outside a tool call: what a review or a rewind binds a backend with."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config


class StateRuntime:
    """The thread's state, config and store, outside a tool call (or for one, by its id).

    Args:
        state: The thread's graph state.
        config: The run's config (default: none).
        store: The graph's store, if any.
        tool_call_id: The tool call this is done for, if any (history records it).
    """

    def __init__(
        self, state: Any, config: Any = None, store: Any = None, tool_call_id: str | None = None
    ) -> None:
        """Keep what a backend binds to."""
        self.state = state
        self.tool_call_id = tool_call_id
        self.config: Any = config or {}
        self.store = store


def running_config() -> Any:
    """The running graph's config (its thread id keys in-process read records), or {}."""
    try:
        return get_config()
    except RuntimeError:
        return {}


__all__ = ["StateRuntime", "running_config"]
