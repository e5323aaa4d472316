"""Change sets waiting for a person: kept on this machine by a key, for a while.

A command whose changes need a person's approval has run already; its change set is
moved to `<temporary folder>/fstools-pending/<key>/` (the private upper layer and a
`changes.json`), where the approval, answered later in any process of this machine,
finds it by the key its tool call gives (`pending_key`). A set older than
`PENDING_SECONDS`, or gone, is not found: the answer is then that the command must run
again, never another set.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Final

from langchain_fstools.core.changesets import ChangeSet

PENDING_SECONDS: Final = 3600.0
"""How long a change set waits for its approval."""

_RECORD: Final = "changes.json"


def pending_key(thread: str, call_id: str, command: str) -> str:
    """The key of one call's pending change set: its thread, its id and its command."""
    return hashlib.sha256(json.dumps([thread, call_id, command]).encode()).hexdigest()[:32]


def keep(changes: ChangeSet, key: str) -> ChangeSet:
    """Move `changes` where an approval finds it by `key`; the set at its new place.

    Sets older than `PENDING_SECONDS` that no one answered are removed first.
    """
    folder = _folder(key)
    _sweep(folder.parent)
    shutil.rmtree(folder, ignore_errors=True)
    Path(changes.source).replace(folder)
    kept = ChangeSet(changes.changes, str(folder), changes.host_code)
    (folder / _RECORD).write_text(json.dumps(kept.to_record()), encoding="utf-8")
    return kept


def load(key: str) -> ChangeSet | None:
    """The change set kept under `key`, unless it is gone or older than `PENDING_SECONDS`."""
    folder = _folder(key)
    record = folder / _RECORD
    try:
        age = time.time() - record.stat().st_mtime
        found = ChangeSet.from_record(json.loads(record.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if age > PENDING_SECONDS or found.source != str(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return found


def drop(key: str) -> None:
    """Remove the change set kept under `key`, if any."""
    shutil.rmtree(_folder(key), ignore_errors=True)


def _sweep(base: Path) -> None:
    """Remove the kept sets no approval came for in time."""
    oldest = time.time() - PENDING_SECONDS
    for entry in base.iterdir():
        try:
            stale = entry.stat().st_mtime < oldest
        except OSError:
            continue
        if stale:
            shutil.rmtree(entry, ignore_errors=True)


def _folder(key: str) -> Path:
    if not key.isalnum():
        raise ValueError(f"not a pending key: {key!r}")
    base = Path(tempfile.gettempdir()) / "fstools-pending"
    base.mkdir(mode=0o700, exist_ok=True)
    return base / key


__all__ = ["PENDING_SECONDS", "drop", "keep", "load", "pending_key"]
