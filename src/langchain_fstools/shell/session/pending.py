"""Change sets waiting for a person: kept on this machine under a nonce, for a while.

A command whose changes need a person's approval has run already; its change set is
moved to `<temporary folder>/fstools-pending-<uid>/<key>/` (the private upper layer and
a `changes.json`), where the approval, answered later in any process of this machine,
finds it by the key the interrupt carries. The folder is this user's own, checked
(`core.private_folders`): another local user can neither plant a set there nor read
one. The key is a nonce drawn for each kept set, so two calls never share one (not
even two with the same tool call id and command), and the interrupt also carries the
set's `digest` (what each change is, and every new byte), which the commit checks: what
is committed is what the person was shown, or nothing. A set older than
`PENDING_SECONDS`, or gone, is not found: the answer is then that the command must run
again, never another set.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from langchain_fstools.core.changesets import ChangeKind, ChangeSet
from langchain_fstools.core.private_folders import private_folder
from langchain_fstools.core.sparse_files import pieces
from langchain_fstools.shell.sandbox.overlay import open_upper, upper_path

if TYPE_CHECKING:
    from collections.abc import Callable

PENDING_SECONDS: Final = 3600.0
"""How long a change set waits for its approval."""

_RECORD: Final = "changes.json"


def keep(changes: ChangeSet) -> tuple[ChangeSet, str]:
    """Move `changes` where an approval finds it; the set at its new place, and its key.

    Sets older than `PENDING_SECONDS` that no one answered are removed first.
    """
    base = private_folder("fstools-pending")
    _sweep(base)
    key = secrets.token_hex(16)
    folder = base / key
    Path(changes.source).rename(folder)  # a fresh name: never over another's set
    kept = replace(changes, source=str(folder))
    (folder / _RECORD).write_text(json.dumps(kept.to_record()), encoding="utf-8")
    return kept, key


def digest(changes: ChangeSet) -> str:
    """What a set would commit, as a hash: each change, and the bytes of each new file."""
    return _hashed(changes, None)


def take(key: str, shown: str) -> ChangeSet | Literal["gone", "altered"]:
    """The set kept under `key` as it was shown, to commit; it is no longer kept here.

    Its new files are copied, as they are hashed, into a fresh private folder, from
    which the commit moves them: what is committed is exactly what was hashed, whatever
    writes to the kept files meanwhile.

    Returns:
        The set, or `gone` (no set, or too old), or `altered` (its `digest` is not
        `shown`; nothing of it is kept).
    """
    found = _load(key)
    if found is None:
        return "gone"
    copy = tempfile.mkdtemp(prefix=".taken-", dir=private_folder("fstools-pending"))
    try:
        hashed = _hashed(found, copy)
    except OSError:
        hashed = ""
    finally:
        drop(key)
    taken = replace(found, source=copy)
    if not hmac.compare_digest(hashed, shown):
        taken.discard()
        return "altered"
    return taken


def _hashed(changes: ChangeSet, copy: str | None) -> str:
    """`digest`, copying each new file's bytes into the set `copy` (a folder) as it goes."""
    found = hashlib.sha256()
    record = changes.to_record()
    del record["source"]
    found.update(json.dumps(record, sort_keys=True).encode())
    for change in changes.changes:
        if change.kind is ChangeKind.DELETED or change.entry != "file":
            continue
        source = open_upper(upper_path(changes, change.path))
        target = None
        if copy is not None:
            placed = upper_path(ChangeSet((), copy), change.path)
            Path(placed).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            target = os.open(placed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.fchmod(target, change.mode if change.mode is not None else 0o600)
        try:
            _hash_file(found.update, source, target)
        finally:
            os.close(source)
            if target is not None:
                os.close(target)
    return found.hexdigest()


def _hash_file(update: Callable[[bytes], object], source: int, target: int | None) -> None:
    """Hash `source` with `update` (and copy it to `target`) as its data and its holes.

    A sparse file's holes cost nothing to read, and stay holes in the copy.
    """
    offset = 0
    for piece in pieces(source):
        if isinstance(piece, int):
            update(b"hole %d\n" % piece)
        else:
            update(piece)
            if target is not None:
                os.pwrite(target, piece, offset)
        offset += piece if isinstance(piece, int) else len(piece)
    update(b"end %d\n" % offset)
    if target is not None:
        os.ftruncate(target, offset)


def _load(key: str) -> ChangeSet | None:
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
    return private_folder("fstools-pending") / key


__all__ = ["PENDING_SECONDS", "digest", "drop", "keep", "take"]
