"""A `task` call's branch, written to the thread's checkpointer before the call's result.

LangGraph saves a call's result (its state update, which keeps the branch for the merge
before the next model call) when the call ends, by default in the background. A worker
killed before that save runs the call again when the thread resumes: the subagent
resumes from its own finished checkpoint and does nothing again, so a new, empty branch
would lose its work. So the branch is first written, synchronously, beside the
checkpoint the call runs from (as a pending write of its own, which LangGraph matches to
no task and leaves alone), and the call run again takes it from there
(`BranchedCalls._branch`). It lives and dies with the thread's checkpoints.
"""

from __future__ import annotations

import logging
from typing import Any, Final

logger = logging.getLogger(__name__)

_CHANNEL: Final = "__fstools_branch__"
"""The write's channel: no graph has it."""

_TASK: Final = "fstools-branch:"
"""The prefix of the write's task id (then the call's id): no task has it."""


def keep(config: Any, call_id: str, snapshot: dict[str, Any]) -> None:
    """Write `snapshot` as call `call_id`'s branch beside its checkpoint (if it has one).

    A checkpointer that fails is logged: the call's result still carries the branch,
    saved when the call ends.
    """
    found = _place(config)
    if found is not None:
        saver, at = found
        try:
            saver.put_writes(at, [(_CHANNEL, snapshot)], _TASK + call_id)
        except Exception as exc:  # noqa: BLE001 - any checkpointer's failure: logged
            _unkept(exc)


async def akeep(config: Any, call_id: str, snapshot: dict[str, Any]) -> None:
    """Async `keep`."""
    found = _place(config)
    if found is not None:
        saver, at = found
        try:
            await saver.aput_writes(at, [(_CHANNEL, snapshot)], _TASK + call_id)
        except Exception as exc:  # noqa: BLE001 - any checkpointer's failure: logged
            _unkept(exc)


def _unkept(exc: Exception) -> None:
    logger.warning(
        "a subagent's branch could not be written to the checkpointer before its result"
        " (%s); a worker killed before the result is saved loses it",
        exc,
    )


def kept(config: Any, call_id: str) -> dict[str, Any] | None:
    """The branch `keep` wrote for call `call_id` beside its checkpoint, or None.

    Looked up only when the graph resumes (or retries the call): a first run has none,
    and reading the checkpoint back costs what its size does.
    """
    found = _place(config, resuming=True)
    if found is None:
        return None
    saver, at = found
    return _found(saver.get_tuple(at), call_id)


async def akept(config: Any, call_id: str) -> dict[str, Any] | None:
    """Async `kept`."""
    found = _place(config, resuming=True)
    if found is None:
        return None
    saver, at = found
    return _found(await saver.aget_tuple(at), call_id)


def _found(saved: Any, call_id: str) -> dict[str, Any] | None:
    writes = getattr(saved, "pending_writes", None) or []
    found = [v for t, c, v in writes if t == _TASK + call_id and c == _CHANNEL]
    return found[-1] if found and isinstance(found[-1], dict) else None


def _place(config: Any, *, resuming: bool = False) -> tuple[Any, dict[str, Any]] | None:
    """The checkpointer and the config of the checkpoint a task runs from, if both exist.

    With `resuming`, None unless LangGraph resumes the graph or retries the task.
    """
    configurable = (config or {}).get("configurable") or {}
    if resuming and not configurable.get("__pregel_resuming"):
        return None
    saver = configurable.get("__pregel_checkpointer")
    namespace = str(configurable.get("checkpoint_ns") or "")
    parent = namespace.rpartition("|")[0]
    checkpoint = (configurable.get("checkpoint_map") or {}).get(parent)
    thread = configurable.get("thread_id")
    if saver is None or checkpoint is None or thread is None:
        return None
    at = {"thread_id": thread, "checkpoint_ns": parent, "checkpoint_id": checkpoint}
    return saver, {"configurable": at}


__all__ = ["akeep", "akept", "keep", "kept"]
