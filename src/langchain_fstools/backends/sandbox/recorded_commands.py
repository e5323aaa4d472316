"""Commands in a sandbox, recorded as change sets: the host side of `command_helper`.

A deepagents sandbox offers `execute`, `upload_files` and `download_files`, and no
copy-on-write view. So a command runs in place, through the helper's command
operations (see `command_helper`), which keep a baseline of the workspace in the
helper's private folder, run the command, read what it changed, and put the workspace
back as it was: nothing a command does lasts until its change set is committed,
exactly as under the local overlay view. Here the set's new contents are unpacked into
a private host folder (`ChangeSet.source`), so the review, the approval diff, the
pending store and history treat it as any other; `commit` sends them back and the
helper applies them all or nothing, each path's `before` version checked first.
Discarding a set needs nothing in the sandbox.

Each call is one helper operation through the backend's `Transport` (one `execute`;
a long request or reply travels as a file), written once as an exchange that `run`
and `arun` drive. A sandbox where the helper cannot run (no python3) cannot record:
`available` is False there, and commands run plainly, in place and unrecorded.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet, remove_folder
from langchain_fstools.core.results import EntryKind, ExecutionResult, FileInfo, LimitHit
from langchain_fstools.errors import StoreUnavailable, VersionConflict
from langchain_fstools.shell.sandbox.overlay import open_upper, upper_path
from langchain_fstools.shell.session.output import OutputBuffer

if TYPE_CHECKING:
    from langchain_fstools.backends.sandbox.transport import Exchange, Transport

HELPER_GRACE: Final = 60
"""Seconds an operation may take beyond its command's deadline (the helper's scans)."""

NO_LIMIT: Final = 1 << 62
"""`changed_bytes` when no bound is set."""


class SandboxCommands:
    """Commands in one sandbox's workspace, recorded as change sets (see the module).

    Args:
        transport: The backend's way to its helper in the sandbox.
        changed_bytes: Most bytes of new content one command's set may hold; above,
            nothing it changed is kept (`LimitHit("changed_bytes")`). None: no bound.
    """

    def __init__(self, transport: Transport, *, changed_bytes: int | None) -> None:
        """Keep the settings; nothing is asked of the sandbox before the first call."""
        self.transport = transport
        self.changed_bytes = changed_bytes
        self.available: bool | None = None
        """Whether commands are recorded here (None: not asked yet)."""
        self.host_code: tuple[str, ...] = ()
        """Workspace paths of the code the helper runs (its Python's prefixes)."""

    def probe(self) -> Exchange[bool]:
        """Whether the helper runs in the sandbox, asked once (`available`)."""
        if self.available is None:
            try:
                found, _ = yield from self.transport.call("command_probe")
            except StoreUnavailable as failure:
                if not failure.lasting:
                    raise
                self.available = False
            else:
                self.host_code = tuple(found)
                self.available = True
        return self.available

    def execute(
        self, command: str, *, timeout: float, output_limit: int
    ) -> Exchange[ExecutionResult]:
        """Run `command` through the helper: its result, and its changes uncommitted.

        Raises:
            DiskFull: the sandbox's disk was full for the helper's own copy.
            StoreUnavailable: the helper did not answer (killed, or the sandbox is gone);
                the next helper run puts back what the command changed meanwhile.
        """
        request = {
            "command": command,
            "timeout": timeout,
            "output_limit": output_limit,
            "changed_limit": self.changed_bytes if self.changed_bytes is not None else NO_LIMIT,
        }
        seconds = int(timeout) + HELPER_GRACE
        try:
            answer, blob = yield from self.transport.call("command_run", request, timeout=seconds)
        except StoreUnavailable as failure:  # its changes are put back (`command_helper`)
            cause = failure.cause or "the helper did not answer"
            kept = f"{cause}; nothing the command changed is kept"
            raise replace(failure, cause=kept) from failure
        buffer = OutputBuffer(output_limit)
        for stream, data in answer["head"]:
            buffer.add(base64.b64decode(data), stderr=stream == "stderr")
        buffer.skip(int(answer["dropped"]))
        for stream, data in answer["tail"]:
            buffer.add(base64.b64decode(data), stderr=stream == "stderr")
        result = ExecutionResult(
            buffer.text(), answer["exit_code"], answer["timed_out"], buffer.dropped_bytes
        )
        if "limit" in answer:
            return replace(result, limit=LimitHit("changed_bytes", int(answer["limit"])))
        return replace(result, changes=_unpacked(answer["changes"], blob, self.host_code))

    def commit(self, changes: ChangeSet) -> Exchange[list[FileInfo]]:
        """Apply `changes` in the sandbox, all or nothing; what each file and link now is.

        Raises:
            VersionConflict: a path is no longer at its `before` version (nothing applied).
            DiskFull: the sandbox's disk has no room for the new contents.
        """
        records = [_record(change) for change in changes.changes]
        written, _ = yield from self.transport.call(
            "command_commit", records, data=_packed(changes)
        )
        infos = []
        for change in changes.changes:
            found = written.get(change.path.lstrip("/"))
            if found is not None:
                token, size, mtime_ns = found
                link = change.entry == "link"
                infos.append(
                    FileInfo(change.path, EntryKind.FILE, size, mtime_ns / 1e9, token, link)
                )
        return infos


def _unpacked(records: list[dict[str, Any]], blob: bytes, host_code: tuple[str, ...]) -> ChangeSet:
    """The change set of a `command_run` reply, its new files in a private host folder."""
    folder = tempfile.mkdtemp(prefix="fstools-sandbox-cow-")
    try:
        changes = tuple(_change(record) for record in records)
        offset = 0
        for change in changes:
            if change.kind is ChangeKind.DELETED or change.entry != "file":
                continue
            placed = Path(upper_path(ChangeSet((), folder), change.path))
            placed.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle = os.open(placed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(handle, blob[offset : offset + change.size])
                os.fchmod(handle, change.mode if change.mode is not None else 0o600)
            finally:
                os.close(handle)
            offset += change.size
    except BaseException:
        remove_folder(folder)
        raise
    return ChangeSet(changes, folder, host_code)


def _change(record: dict[str, Any]) -> Change:
    return Change(
        path="/" + record["path"],
        kind=ChangeKind(record["kind"]),
        entry=record["entry"],
        mode=record.get("mode"),
        size=int(record.get("size", 0)),
        target=record.get("target"),
        before=record.get("before"),
        old_mode=record.get("old_mode"),
        dropped=int(record.get("dropped", 0)),
    )


def _record(change: Change) -> dict[str, Any]:
    """A change as `command_commit` takes it (paths relative to the workspace)."""
    return {
        "path": change.path.lstrip("/"),
        "kind": change.kind.value,
        "entry": change.entry,
        "mode": change.mode,
        "size": change.size,
        "target": change.target,
        "before": change.before,
    }


def _packed(changes: ChangeSet) -> bytes:
    """The new files' bytes in the changes' order (`command_commit`'s bytes).

    A file whose size is not what the change says (its waiting copy was changed) fails
    the commit as a conflict.
    """
    parts: list[bytes] = []
    for change in changes.changes:
        if change.kind is ChangeKind.DELETED or change.entry != "file":
            continue
        with os.fdopen(open_upper(upper_path(changes, change.path)), "rb") as file:
            data = file.read()
        if len(data) != change.size:
            raise VersionConflict(change.path, change.before or "", None)
        parts.append(data)
    return b"".join(parts)


__all__ = ["HELPER_GRACE", "SandboxCommands"]
