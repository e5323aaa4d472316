"""Branches of `task` calls stopped by an interrupt, kept on this machine until they resume.

A subagent that calls `interrupt()` (a tool inside it asks a person) stops its `task`
call. When the run resumes, LangGraph runs the call again and the subagent continues
from its own checkpoint, without doing again what it did before the interrupt; but
what it wrote then is in the call's branch, which lived in the stopped call's memory.
So the stopped call's branch is kept here, under a key of the call (`suspended_key`:
its thread, its namespace in the graph and its id), and the call that resumes starts
from it, in any process of this machine, within `SUSPENDED_SECONDS`. A branch is kept
as `BranchBackend.snapshot()` serialized as checkpoints are, in a folder only this
user can read. Taking it leaves it there (a worker killed before the resumed call
keeps its branch elsewhere resumes from it again); it is removed (`discard`) once the
call's branch is kept beside the thread's checkpoint, merged or dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from typing import TYPE_CHECKING, Any, Final

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langchain_fstools.core.private_folders import private_folder

if TYPE_CHECKING:
    from pathlib import Path

SUSPENDED_SECONDS: Final = 7 * 24 * 3600.0
"""How long a stopped call's branch waits for the call to resume."""

_SERDE: Final = JsonPlusSerializer()


def suspended_key(thread: object, namespace: str, call_id: str) -> str:
    """The key of one stopped call: its thread, its namespace in the graph and its id."""
    named = json.dumps([str(thread), namespace, call_id])
    return hashlib.sha256(named.encode()).hexdigest()[:32]


def suspend(key: str, snapshot: dict[str, Any]) -> None:
    """Keep `snapshot` under `key` (whatever was kept under it is replaced)."""
    folder = _folder()
    _sweep(folder)
    kind, data = _SERDE.dumps_typed(snapshot)
    partial = folder / f".{key}.{os.getpid()}"
    partial.write_bytes(kind.encode() + b"\n" + data)
    partial.replace(folder / key)


def resume(key: str) -> dict[str, Any] | None:
    """The snapshot kept under `key` (left there); None if none is (or it is too old)."""
    path = _folder() / key
    try:
        age = time.time() - path.stat().st_mtime
        kind, _, data = path.read_bytes().partition(b"\n")
    except OSError:
        return None
    if age > SUSPENDED_SECONDS:
        return None
    found = _SERDE.loads_typed((kind.decode(), data))
    return found if isinstance(found, dict) else None


def discard(key: str) -> None:
    """Remove what is kept under `key` (nothing there is fine)."""
    with contextlib.suppress(FileNotFoundError):
        (_folder() / key).unlink()


def _folder() -> Path:
    """This user's folder of stopped calls' branches (refused if anyone else could use it)."""
    return private_folder("fstools-suspended")


def _sweep(folder: Path) -> None:
    """Remove what no call resumed for in time."""
    oldest = time.time() - SUSPENDED_SECONDS
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < oldest:
                entry.unlink()


__all__ = ["SUSPENDED_SECONDS", "discard", "resume", "suspend", "suspended_key"]
