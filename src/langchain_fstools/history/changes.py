"""File history: what each tool call changed, and how to put it back.

Every change the file tools make through a recording backend
(`history.recording.RecordingBackend`) becomes a `ChangeRecord`: the file's content
before the change and its version after, with the tool call's id. Records live in the
thread's graph state (the `file_history` channel), so they are checkpointed with the
thread, survive a restart, and belong to one thread only. The channel is a
`DeltaChannel`: checkpoints store each step's new records, not the whole history.

History is bounded, oldest records dropped first: at most `MAX_RECORDS` records and
`MAX_BYTES` bytes of kept content per thread. A file above the recorder's per-record
limit is recorded without its content (`kept=False`); going back past that change is
refused rather than guessed.

Putting files back (`restore`) is all or nothing: every file must still be at the
version the agent left it (else `ChangedOutsideAgent`, and nothing is written), writes
are conditional on that version, and a failure midway restores the files already put
back. A file created in folders that did not exist yet records those folders
(`created_folders`); when it is removed again, each of them left empty goes too. A
folder a call created and left empty (`mkdir -p build/x`) is a record of its own
(`folder`): undoing the call removes it if it is still empty, and leaves it otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NotRequired,
)

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (schemas)

from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.channels.cadence import MINIMUM_CADENCE, ScaledDeltaChannel
from langchain_fstools.core import calls
from langchain_fstools.core.records import decode_content, encode_content
from langchain_fstools.core.wording import plural
from langchain_fstools.errors import (
    ChangedOutsideAgent,
    ChangeNotKept,
    UnknownChange,
    VersionConflict,
)

HISTORY_KEY: Final = "file_history"
"""Name of the graph-state channel holding the file history."""

MAX_RECORDS: Final = 200
"""Most change records kept per thread. Default: 200."""

MAX_BYTES: Final = 8 * 1024 * 1024
"""Most bytes of earlier content kept per thread (as stored). Default: 8 MiB."""

MAX_RECORD_BYTES: Final = 1024 * 1024
"""Largest earlier content one record keeps; above it, `kept=False`. Default: 1 MiB."""


class ChangeRecord(TypedDict):
    """One file changed by one tool call."""

    id: str
    """Unique id: `<tool_call_id>:<n>`."""
    tool_call_id: str
    """The tool call that made the change."""
    path: str
    """Canonical virtual path of the file."""
    existed: bool
    """Whether the file existed before the change."""
    kept: bool
    """Whether `before` holds the earlier content (False: it was too large to keep)."""
    before: str
    """The earlier content, as UTF-8 text or base64 (see `encoding`); empty if none."""
    encoding: Literal["utf-8", "base64"]
    """How `before` stores the bytes."""
    after: str | None
    """The file's version right after the change; None if the change removed it."""
    created_folders: NotRequired[list[str]]
    """The folders the change created for a new file, deepest first (absent: none)."""
    folder: NotRequired[bool]
    """True: `path` is a folder the call created, with no file of its own (`before`
    empty, `after` None); undoing the call removes it while it is empty."""


class HistoryUpdate(TypedDict):
    """An update of the `file_history` channel: ids to drop, versions to re-stamp, adds."""

    add: NotRequired[list[ChangeRecord]]
    drop: NotRequired[list[str]]
    stamp: NotRequired[dict[str, str | None]]
    """Record id → the file's version now: a restore rewrote the file the record's
    change left behind, so the next restore expects the new version."""


def merge_history(
    current: Sequence[ChangeRecord] | None,
    updates: Sequence[HistoryUpdate | Sequence[ChangeRecord] | None],
) -> list[ChangeRecord]:
    """Reducer of the `file_history` channel: add, drop, then trim the oldest.

    An update is a `HistoryUpdate`, or a whole history as LangGraph hands one back
    (`invoke(previous_state)`, `update_state(config, values)`, a subagent's final
    state): its records not already kept are added, in order, so no record is lost
    or repeated. None changes nothing. A fold over the updates in order, so it is
    batching-invariant as `DeltaChannel` requires; never mutates its inputs.
    """
    records = list(current or ())
    for update in updates:
        if update is None:
            continue
        if not isinstance(update, Mapping):
            known = {r["id"] for r in records}
            records = _trimmed([*records, *(r for r in update if r["id"] not in known)])
            continue
        dropped = set(update.get("drop", ()))
        stamps = update.get("stamp", {})
        records = [
            ChangeRecord(**{**r, "after": stamps[r["id"]]}) if r["id"] in stamps else r
            for r in records
            if r["id"] not in dropped
        ]
        records += update.get("add", [])
        records = _trimmed(records)
    return records


def combined_updates(first: HistoryUpdate, then: HistoryUpdate) -> HistoryUpdate:
    """One update doing what `first` then `then` do (`merge_history` folds them alike)."""
    dropped = set(then.get("drop", ()))
    stamps = then.get("stamp", {})
    added = [
        ChangeRecord(**{**r, "after": stamps[r["id"]]}) if r["id"] in stamps else r
        for r in first.get("add", [])
        if r["id"] not in dropped
    ]
    return HistoryUpdate(
        add=[*added, *then.get("add", [])],
        drop=[*first.get("drop", []), *then.get("drop", [])],
        stamp={**first.get("stamp", {}), **stamps},
    )


def _trimmed(records: list[ChangeRecord]) -> list[ChangeRecord]:
    kept: list[ChangeRecord] = []
    total = 0
    for record in reversed(records[-MAX_RECORDS:]):
        total += len(record["before"])
        if total > MAX_BYTES:
            break
        kept.append(record)
    kept.reverse()
    return kept


HistoryChannel = Annotated[
    list[ChangeRecord], ScaledDeltaChannel(merge_history, snapshot_frequency=MINIMUM_CADENCE)
]
"""State annotation of the `file_history` channel; declare it `NotRequired[HistoryChannel]`."""


class HistoryState(TypedDict):
    """The state a graph needs for file history: merge it into your own state."""

    file_history: NotRequired[HistoryChannel]
    """Changes made by the file tools, oldest first (see `ChangeRecord`)."""


def change_record(
    *,
    tool_call_id: str,
    index: int,
    path: str,
    before: bytes | None,
    kept: bool,
    after: str | None,
    created_folders: Sequence[str] = (),
) -> ChangeRecord:
    """Build the record of one change (`before` None: the file did not exist)."""
    content, encoding = encode_content(before if kept and before is not None else b"")
    record = ChangeRecord(
        id=f"{tool_call_id}:{index}",
        tool_call_id=tool_call_id,
        path=path,
        existed=before is not None,
        kept=kept,
        before=content,
        encoding=encoding,
        after=after,
    )
    if created_folders:
        record["created_folders"] = list(created_folders)
    return record


def folder_record(*, tool_call_id: str, index: int, path: str) -> ChangeRecord:
    """Build the record of a folder a call created (see `ChangeRecord.folder`)."""
    record = change_record(
        tool_call_id=tool_call_id, index=index, path=path, before=None, kept=True, after=None
    )
    record["folder"] = True
    return record


def earlier_bytes(record: ChangeRecord) -> bytes | None:
    """The file's bytes before the change, or None if it did not exist.

    Raises:
        ChangeNotKept: the content was too large to keep.
    """
    if not record["existed"]:
        return None
    if not record["kept"]:
        raise ChangeNotKept(record["path"], record["tool_call_id"])
    return decode_content(record["before"], record["encoding"])


@dataclass(frozen=True, slots=True)
class Restore:
    """Put `path` back to `content` (None: remove it), if it is at version `expected`.

    `folders`: those the change made for the file, removed after it when left empty.
    `folder`: `path` is a folder the change made; it is removed when left empty, and
    `content` and `expected` are None.
    """

    path: str
    content: bytes | None
    expected: str | None
    folders: tuple[str, ...] = ()
    folder: bool = False


def _restore(record: ChangeRecord, expected: str | None) -> Restore:
    """Undo `record`'s change to a file now at version `expected`."""
    if record.get("folder", False):
        return Restore(record["path"], None, None, folder=True)
    folders = () if record["existed"] else tuple(record.get("created_folders", ()))
    return Restore(record["path"], earlier_bytes(record), expected, folders)


def unrewindable(records: Sequence[ChangeRecord]) -> str | None:
    """Why the history cannot put back all that one call's `records` changed, or None.

    A file too large to keep (`kept=False`), more records than `MAX_RECORDS`, or more
    earlier content than `MAX_BYTES`: the history keeps only part of such a call.
    """
    if len(records) > MAX_RECORDS:
        return (
            f"it changed {plural(len(records), 'file')} and the history keeps at most {MAX_RECORDS}"
        )
    if sum(len(record["before"]) for record in records) > MAX_BYTES:
        return (
            "the earlier contents of the files it changed are more than the"
            f" {MAX_BYTES // (1 << 20)} MiB the history keeps"
        )
    large = next((record["path"] for record in records if not record["kept"]), None)
    if large is not None:
        return f"the earlier content of {large} was too large for the history to keep"
    return None


def history_of(state: Any) -> list[ChangeRecord]:
    """The history records in a graph state (empty when there are none)."""
    records = state.get(HISTORY_KEY) if isinstance(state, Mapping) else None
    return list(records) if isinstance(records, list) else []


def plan_rewind(history: Sequence[ChangeRecord], to: str) -> list[Restore]:
    """What to write to undo tool call `to` and every change after it.

    Raises:
        UnknownChange: no record of `to` (it changed nothing, or was trimmed away).
        ChangeNotKept: a file's earlier content was too large to keep.
    """
    start = next((i for i, r in enumerate(history) if r["tool_call_id"] == to), None)
    if start is None:
        raise UnknownChange(to)
    first: dict[str, ChangeRecord] = {}
    last: dict[str, ChangeRecord] = {}
    folders: list[Restore] = []
    for record in history[start:]:
        if record.get("folder", False):
            folders.append(_restore(record, None))
            continue
        first.setdefault(record["path"], record)
        last[record["path"]] = record
    return [*(_restore(first[path], last[path]["after"]) for path in first), *folders]


def plan_undo(history: Sequence[ChangeRecord], path: str) -> tuple[ChangeRecord, Restore]:
    """The last change to `path` and how to undo it.

    Raises:
        UnknownChange: no recorded change to `path`.
        ChangeNotKept: its earlier content was too large to keep.
    """
    for record in reversed(history):
        if record["path"] == path and not record.get("folder", False):
            return record, _restore(record, record["after"])
    raise UnknownChange(path)


def rewind_update(
    history: Sequence[ChangeRecord], to: str, versions: Mapping[str, str | None]
) -> HistoryUpdate:
    """The history update after rewinding to call `to`.

    Its records and later ones go; each restored file's last earlier record expects
    the version written now.
    """
    start = next((i for i, r in enumerate(history) if r["tool_call_id"] == to), len(history))
    return HistoryUpdate(
        drop=[r["id"] for r in history[start:]],
        stamp=_stamps(history[:start], versions),
    )


def undo_update(
    history: Sequence[ChangeRecord], undone: ChangeRecord, version: str | None
) -> HistoryUpdate:
    """The history update after undoing `undone`.

    It goes; the file's earlier record expects the version written now.
    """
    earlier = [r for r in history if r["id"] != undone["id"]]
    stamp = _stamps(earlier[: history.index(undone)], {undone["path"]: version})
    return HistoryUpdate(drop=[undone["id"]], stamp=stamp)


def _stamps(
    earlier: Sequence[ChangeRecord], versions: Mapping[str, str | None]
) -> dict[str, str | None]:
    last = {r["path"]: r["id"] for r in earlier if not r.get("folder", False)}
    return {last[path]: version for path, version in versions.items() if path in last}


def restore(restores: Sequence[Restore]) -> calls.Effect[dict[str, str | None]]:
    """Put files back, all or nothing, then remove the emptied folders the changes made.

    Returns:
        Each restored file's new version, and None for each folder removed.

    Raises:
        ChangedOutsideAgent: a file is not at the version the agent left it (nothing
            is written then).
    """
    current: list[tuple[Restore, str | None, bytes | None]] = []
    for item in (r for r in restores if not r.folder):
        version = yield from _version_of(item.path)
        if version != item.expected:
            raise ChangedOutsideAgent(item.path)
        data = None if version is None else (yield from calls.read_bytes(item.path))
        current.append((item, version, data))
    done: list[tuple[str, str | None, bytes | None]] = []
    try:
        for item, version, data in current:
            written = yield from _put(item.path, item.content, version)
            done.append((item.path, written, data))
    except Exception:
        for path, written, data in reversed(done):
            yield from _put(path, data, written)
        raise
    made = [
        folder
        for item in restores
        if item.content is None
        for folder in ((item.path,) if item.folder else item.folders)
    ]
    removed = yield from _remove_empty(made)
    return {**{path: written for path, written, _ in done}, **dict.fromkeys(removed)}


def _remove_empty(folders: Sequence[str]) -> calls.Effect[list[str]]:
    """Remove each of `folders` (made by the changes undone) that is now empty, deepest first.

    A folder holding anything (a file written since, by anyone) stays, and so does one
    that is gone already or is no folder now: only the folders the undone changes
    created can go. Returns those removed.
    """
    removed: list[str] = []
    for folder in sorted(set(folders), key=lambda f: f.count("/"), reverse=True):
        try:
            info = yield from calls.stat(folder)
            if not info.is_dir or info.link:
                continue  # something else took its place since: not the change's to remove
            yield from calls.delete(folder)
        except OSError:
            continue  # not empty, or already gone
        removed.append(folder)
    return removed


def _version_of(path: str) -> calls.Effect[str | None]:
    try:
        info = yield from calls.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.version if info.is_file else f"{info.kind.value}:{info.version}"


def _put(path: str, content: bytes | None, expected: str | None) -> calls.Effect[str | None]:
    """Write `content` (None: delete) if `path` is at `expected`; return the new version."""
    if content is None:
        if expected is not None:
            version = yield from _version_of(path)
            if version != expected:
                raise ChangedOutsideAgent(path)
            yield from calls.delete(path)
        return None
    try:
        info = yield from calls.write_bytes(
            path, content, expected_version=ABSENT if expected is None else expected
        )
    except VersionConflict:
        raise ChangedOutsideAgent(path) from None
    return info.version


__all__ = [
    "HISTORY_KEY",
    "MAX_BYTES",
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "ChangeRecord",
    "HistoryChannel",
    "HistoryState",
    "HistoryUpdate",
    "Restore",
    "change_record",
    "combined_updates",
    "earlier_bytes",
    "folder_record",
    "history_of",
    "merge_history",
    "plan_rewind",
    "plan_undo",
    "restore",
    "rewind_update",
    "undo_update",
    "unrewindable",
]
