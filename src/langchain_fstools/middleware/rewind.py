"""Rewind: put a thread's files back as they were before a tool call, between runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_fstools.core import calls
from langchain_fstools.history.changes import (
    HISTORY_KEY,
    history_of,
    plan_rewind,
    restore,
    rewind_update,
)
from langchain_fstools.tools.runtime import StateRuntime

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.history.changes import Restore


def rewind(storage: Backend, agent: Any, config: RunnableConfig, to: str) -> list[str]:
    """Undo call `to` and every later change of the thread (see `FilesystemMiddleware.rewind`)."""
    state = agent.get_state(config).values
    bound, steps = _plan(storage, state, to)
    versions = calls.run(restore(steps), bound)
    agent.update_state(config, _update(bound, state, to, versions))
    return sorted(versions)


async def arewind(storage: Backend, agent: Any, config: RunnableConfig, to: str) -> list[str]:
    """Async `rewind`."""
    state = (await agent.aget_state(config)).values
    bound, steps = _plan(storage, state, to)
    versions = await calls.arun(restore(steps), bound)
    await agent.aupdate_state(config, _update(bound, state, to, versions))
    return sorted(versions)


def _plan(storage: Backend, state: Any, to: str) -> tuple[Backend, list[Restore]]:
    steps = plan_rewind(history_of(state), to)
    return storage.bind(StateRuntime(state)), steps


def _update(bound: Backend, state: Any, to: str, versions: dict[str, str | None]) -> dict[str, Any]:
    update = rewind_update(history_of(state), to, versions)
    return {**bound.state_update(), HISTORY_KEY: update}


__all__ = ["arewind", "rewind"]
