"""Read state: what the agent has read, which lines, at which version.

The safety model rests on it: an existing file may be edited only after the agent
read it at its current version, and overwritten only after it saw every line; a file
that changed on storage since is refused. Repeating an identical read of an unchanged
file returns a short stub instead of the same text again, but only while the earlier
result is still in the conversation as the model sees it: each record names the tool
call that showed it, and the stub is given only when that call's `ToolMessage` is still
in `state["messages"]`, not summarised away (`SummarizationMiddleware`) and not cleared
(`ContextEditingMiddleware`, seen by `FilesystemMiddleware` in the requests it wraps).
Where no conversation can be seen (a standalone toolkit, an MCP server), a repeated read
returns the content.

Inside a graph the records live in graph state under `file_reads` (per thread, kept by
the checkpointer); a graph without that channel, or a call outside any graph, uses the
in-process `ReadTracker` the toolkit owns, keyed by thread id.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Final,
    NotRequired,
)

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 (schemas)

from langchain_fstools.channels.cadence import MINIMUM_CADENCE, ScaledDeltaChannel
from langchain_fstools.core.reducers import merge_keyed

READS_KEY = "file_reads"
"""Name of the graph-state channel holding read records."""


class ReadRecord(TypedDict):
    """What the agent has seen of one file."""

    version: str
    """The file's version when it was read."""
    ranges: list[list[int]]
    """Merged, sorted `[first, last]` 1-based line ranges seen at `version`."""
    total_lines: int | None
    """The file's line count at `version`, once a read reached its end."""
    view: str
    """What the last read showed (e.g. `lines:1:2000`, `image`, `pages:1-5`), for the
    unchanged-read stub."""
    call: NotRequired[str]
    """The tool call whose result showed `view` (empty outside a graph), so the stub is
    given only while that result is still in the conversation."""


MAX_CLEARED: Final = 10_000
"""Most cleared tool-call ids a `ReadTracker` remembers (oldest forgotten first)."""


def merge_reads(
    current: dict[str, ReadRecord] | None, update: Mapping[str, ReadRecord | None] | None
) -> dict[str, ReadRecord]:
    """Reducer for the `file_reads` channel: later records replace, None forgets.

    `update` may be a whole value handed back by LangGraph (a fork, `update_state`,
    a subagent's final state); its records replace the current ones of their paths.
    """
    return merge_keyed(current, [update])


def merge_read_updates(
    current: Mapping[str, ReadRecord] | None,
    updates: Sequence[Mapping[str, ReadRecord | None] | None],
) -> dict[str, ReadRecord]:
    """Batch reducer of the `file_reads` delta channel (`ReadsChannel`).

    Each update maps a path to its new record, or to None to forget it. An update may
    also be a whole value, as LangGraph hands one back (`update_state`, a fork, a
    subagent's final state): its records replace those of their paths. A None update
    changes nothing. Batching-invariant, as `DeltaChannel` requires.
    """
    return merge_keyed(current, [update for update in updates if update is not None])


ReadsChannel = Annotated[
    dict[str, ReadRecord],
    ScaledDeltaChannel(merge_read_updates, snapshot_frequency=MINIMUM_CADENCE),
]
"""State annotation of the `file_reads` channel; declare it `NotRequired[ReadsChannel]`.

A delta channel, as `files` is: checkpoints store each call's new records (and a full
snapshot as often as `channels.cadence` decides), not every record at every step."""


def after_read(
    previous: ReadRecord | None,
    *,
    version: str,
    first: int,
    last: int,
    total_lines: int | None,
    view: str,
) -> ReadRecord:
    """Return the record after lines `first..last` were shown at `version`.

    Ranges seen at the same version accumulate, so paging through a file counts as
    reading all of it; a new version starts afresh.
    """
    same_version = previous is not None and previous["version"] == version
    ranges = list(previous["ranges"]) if previous and same_version else []
    if last >= first:
        ranges = _merge_ranges([*ranges, [first, last]])
    if total_lines is None and previous and same_version:
        total_lines = previous["total_lines"]
    return ReadRecord(version=version, ranges=ranges, total_lines=total_lines, view=view)


def after_write(
    previous: ReadRecord | None,
    *,
    previous_version: str,
    version: str,
    total_lines: int,
    whole: bool = False,
) -> ReadRecord:
    """Return the record of a file the agent itself just changed.

    The agent knows every line of the new file only when it wrote all of it (`whole`:
    a new file, a full overwrite) or had seen every line of the version it changed; an
    edit of a partly read file leaves the rest unseen, so a later full overwrite still
    needs a read of the whole file. Either way the record carries the new version, so
    further edits are allowed and a change on storage is still detected.

    Args:
        previous: The record before the change, if any.
        previous_version: The version the change was made against (`ABSENT` for a new
            file).
        version: The file's version after the change.
        total_lines: The new file's line count.
        whole: Whether the change wrote every line of the file.
    """
    knew_all = (
        previous is not None
        and previous["version"] == previous_version
        and saw_everything(previous)
    )
    seen = [[1, total_lines]] if (whole or knew_all) and total_lines else []
    return ReadRecord(
        version=version,
        ranges=seen,
        total_lines=total_lines,
        view="",
    )


def shows_the_same(record: ReadRecord | None, *, version: str, view: str) -> bool:
    """Whether a read of `view` at `version` would repeat what `record` already showed."""
    return record is not None and record["version"] == version and record["view"] == view


def saw_everything(record: ReadRecord) -> bool:
    """Whether the ranges in `record` cover every line of the file."""
    total = record["total_lines"]
    if total is None:
        return False
    ranges = record["ranges"]
    return total == 0 or (len(ranges) == 1 and ranges[0][0] <= 1 and ranges[0][1] >= total)


def _merge_ranges(ranges: list[list[int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


class ReadLedger:
    """The read records visible to one tool call, plus the ones it adds."""

    def __init__(
        self,
        records: Mapping[str, ReadRecord],
        *,
        in_state: bool,
        call_id: str = "",
        still_shown: Callable[[str], bool] | None = None,
    ) -> None:
        """Wrap existing records.

        Args:
            records: Records seen before this call (not mutated).
            in_state: Whether additions must be returned as a graph-state update.
            call_id: The current tool call's id, stamped on the records it adds.
            still_shown: Whether the result of a tool call (by id) is still in the
                conversation the model sees. Default: always (no conversation).
        """
        self._records = records
        self._added: dict[str, ReadRecord] = {}
        self.in_state = in_state
        self._call_id = call_id
        self._still_shown = still_shown

    def get(self, path: str) -> ReadRecord | None:
        """Return the record of `path`, if any."""
        return self._added.get(path) or self._records.get(path)

    def put(self, path: str, record: ReadRecord) -> None:
        """Record what the agent now knows of `path` (as shown by the current call)."""
        self._added[path] = ReadRecord(**{**record, "call": self._call_id})

    def repeats(self, path: str, *, version: str, view: str) -> ReadRecord | None:
        """The earlier read that showed `view` at `version`, while the model sees it.

        None when the content must be shown again: no such read, or its result left
        the conversation (summarised, cleared, or shown in another conversation).
        """
        record = self.get(path)
        if not shows_the_same(record, version=version, view=view) or record is None:
            return None
        if self._still_shown is not None and not self._still_shown(record.get("call", "")):
            return None
        return record

    @property
    def added(self) -> dict[str, ReadRecord]:
        """Records this call added or replaced."""
        return dict(self._added)


class ReadTracker:
    """In-process read records, per thread, for calls outside graph state."""

    def __init__(self) -> None:
        """Start with no records."""
        self._threads: dict[str, dict[str, ReadRecord]] = {}
        self._cleared: OrderedDict[str, None] = OrderedDict()

    def note_cleared(self, messages: Iterable[Any]) -> None:
        """Note the tool results in `messages` that context editing cleared.

        The model no longer sees them, so their reads are shown again in full. Tool-call
        ids are unique, so one set serves every thread; it keeps the newest `MAX_CLEARED`.
        """
        for message in messages:
            call_id = getattr(message, "tool_call_id", None)
            if call_id and was_cleared(message):
                self._cleared[call_id] = None
                self._cleared.move_to_end(call_id)
        while len(self._cleared) > MAX_CLEARED:
            self._cleared.popitem(last=False)

    def ledger(self, runtime: Any) -> ReadLedger:
        """Return the ledger for one tool call.

        Uses graph state when `runtime.state` has the `file_reads` channel, else this
        tracker's records for the run's thread (or a shared default outside graphs).
        """
        state = getattr(runtime, "state", None)
        call_id = getattr(runtime, "tool_call_id", None) or ""
        still_shown = self._shown_in(state)
        if isinstance(state, Mapping) and READS_KEY in state:
            records = state[READS_KEY] or {}
            return ReadLedger(records, in_state=True, call_id=call_id, still_shown=still_shown)
        records = self._threads.setdefault(_thread_id(runtime), {})
        return ReadLedger(records, in_state=False, call_id=call_id, still_shown=still_shown)

    def _shown_in(self, state: Any) -> Callable[[str], bool]:
        """Whether a call's result is still in the conversation of `state`.

        Without a `messages` channel (a direct call, an MCP client, a graph without a
        conversation) nothing can tell whether the caller still has an earlier result
        (a client may have compacted its context), so none counts as shown.
        """
        cleared = self._cleared
        messages = state.get("messages") if isinstance(state, Mapping) else None
        if not isinstance(messages, Sequence):
            return lambda _call_id: False

        def shown(call_id: str) -> bool:
            if not call_id or call_id in cleared:
                return False
            for message in reversed(messages):
                if getattr(message, "tool_call_id", None) == call_id:
                    return not was_cleared(message)
            return False

        return shown

    def commit(self, runtime: Any, ledger: ReadLedger) -> None:
        """Keep an in-process ledger's additions (graph-state ledgers go in a Command)."""
        if not ledger.in_state:
            self._threads.setdefault(_thread_id(runtime), {}).update(ledger.added)


def was_cleared(message: Any) -> bool:
    """Whether `ContextEditingMiddleware` replaced a tool result with its placeholder."""
    metadata = getattr(message, "response_metadata", None) or {}
    editing = metadata.get("context_editing") if isinstance(metadata, Mapping) else None
    return isinstance(editing, Mapping) and bool(editing.get("cleared"))


def _thread_id(runtime: Any) -> str:
    config = getattr(runtime, "config", None) or {}
    configurable = config.get("configurable") or {}
    return str(configurable.get("thread_id", ""))


__all__ = [
    "MAX_CLEARED",
    "READS_KEY",
    "ReadLedger",
    "ReadRecord",
    "ReadTracker",
    "ReadsChannel",
    "after_read",
    "after_write",
    "merge_read_updates",
    "merge_reads",
    "saw_everything",
    "shows_the_same",
    "was_cleared",
]
