"""A `task` call's branch, written to the thread's checkpointer before the call's result.

LangGraph saves a call's result (its state update, which keeps the branch for the merge
before the next model call) when the call ends, by default in the background. A worker
killed before that save runs the call again when the thread resumes: the subagent
resumes from its own finished checkpoint and does nothing again, so a new, empty branch
would lose its work. So the branch is first written, synchronously, beside the
checkpoint the call runs from (as a pending write of its own, which LangGraph matches to
no task and leaves alone), and the call run again takes it from there
(`BranchedCalls._branch`). The same is done after each tool step of a subagent still at
work, before its own checkpoint records the step: a worker killed mid-subagent resumes
it with the branch holding every step its replay takes as done. Each write is named by
the time it was made and the newest is found (a checkpointer keeps the first write of
a name). It lives and dies with the thread's checkpoints: LangGraph deletes a pending
write with its checkpoint only (`prune`, `delete_thread`), never alone.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

logger = logging.getLogger(__name__)

_CHANNEL: Final = "__fstools_branch__"
"""The write's channel: no graph has it."""

_TASK: Final = "fstools-branch:"
"""The prefix of the write's task id (then the call's id): no task has it."""


def keep(config: Any, call_id: str, snapshot: dict[str, Any]) -> bool:
    """Write `snapshot` as call `call_id`'s branch beside its checkpoint (if it has one).

    A checkpointer that fails is logged: the call's result still carries the branch,
    saved when the call ends.

    Returns:
        Whether it was written.
    """
    found = _place(config)
    if found is None:
        return False
    saver, at = found
    try:
        saver.put_writes(at, [(_CHANNEL, snapshot)], _task(call_id))
    except Exception as exc:  # noqa: BLE001 - any checkpointer's failure: logged
        _unkept(exc)
        return False
    return True


async def akeep(config: Any, call_id: str, snapshot: dict[str, Any]) -> bool:
    """Async `keep`."""
    found = _place(config)
    if found is None:
        return False
    saver, at = found
    try:
        await saver.aput_writes(at, [(_CHANNEL, snapshot)], _task(call_id))
    except Exception as exc:  # noqa: BLE001 - any checkpointer's failure: logged
        _unkept(exc)
        return False
    return True


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


def _task(call_id: str) -> str:
    """The task id of a write of call `call_id`'s branch made now (they sort by time)."""
    return f"{_TASK}{call_id}:{time.time_ns():020d}"


def _found(saved: Any, call_id: str) -> dict[str, Any] | None:
    """The newest branch written for call `call_id` among a checkpoint's pending writes."""
    writes = getattr(saved, "pending_writes", None) or []
    prefix = f"{_TASK}{call_id}:"
    found = [(t, v) for t, c, v in writes if t.startswith(prefix) and c == _CHANNEL]
    newest = max(found, key=lambda write: write[0])[1] if found else None
    return newest if isinstance(newest, dict) else None


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
