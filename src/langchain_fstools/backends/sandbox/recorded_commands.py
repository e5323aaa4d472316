"""Commands in a sandbox, recorded as change sets: the host side of `command_helper`.

A deepagents sandbox offers `execute`, `upload_files` and `download_files`, and no
copy-on-write view. So a command runs in place, through the command helper (see its
module), which keeps a baseline of the workspace in the sandbox's private folder
(`/tmp/.fstools-<hash of the workspace path>`, mode 0700), runs the command, reads
what it changed, and puts the workspace back as it was: nothing a command does lasts
until its change set is committed, exactly as under the local overlay view. Here the
set's new contents are unpacked into a private host folder (`ChangeSet.source`), so
the review, the approval diff, the pending store and history treat it as any other;
`commit` sends them back and the helper applies them all or nothing, each path's
`before` version checked first. Discarding a set needs nothing in the sandbox.

The helper is sent once (its file named by the hash of its source), with the first
call; a sandbox without python3 (3.7 or newer) cannot run it, and there `available`
is False: commands then run plainly, in place and unrecorded (`run_plain`).

One round trip per command: the request rides in the command line (base64 in a
here-document) and the answer in its output, after `command_helper.FRAME`; contents
above `INLINE_LIMIT` travel as a file through `download_files` / `upload_files`.
Every call is a generator of `Exchange`s run by `run` or `arun`, so the sync and async
forms share one body.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import inspect
import json
import os
import secrets
import shlex
import tempfile
import zlib
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.backends.sandbox.command_helper import FRAME
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet, remove_folder
from langchain_fstools.core.results import EntryKind, ExecutionResult, FileInfo, LimitHit
from langchain_fstools.errors import DiskFull, SandboxFailed, VersionConflict
from langchain_fstools.shell.sandbox.overlay import open_upper, upper_path
from langchain_fstools.shell.session.output import OutputBuffer

T = TypeVar("T")

INLINE_LIMIT: Final = 48 * 1024
"""Base64 characters of a helper's request or answer carried inside a command line or
its output (providers cut long outputs: `DockerSandbox` at 100,000 bytes); above, it
travels as a file (`upload_files`, `download_files`)."""

HELPER_GRACE: Final = 60
"""Seconds the sandbox's own deadline adds to a command's, for the helper's scans."""

_MISSING: Final = "--fstools-helper-missing--"
_HELPER_SOURCE: Final = Path(__file__).with_name("command_helper.py")


@dataclass(frozen=True)
class Exchange:
    """One call of the sandbox: `execute` a command, or `download_files` / `upload_files`.

    Attributes:
        op: `execute`, `download` or `upload`.
        command: The command (`execute`).
        timeout: Its deadline in whole seconds (`execute`).
        paths: What to download.
        files: What to upload: (path, bytes) pairs.
    """

    op: str
    command: str = ""
    timeout: int | None = None
    paths: tuple[str, ...] = ()
    files: tuple[tuple[str, bytes], ...] = ()


Calls = Generator[Exchange, Any, T]
"""A body that asks the sandbox for `Exchange`s and returns a `T`."""


def run(body: Calls[T], sandbox: Any) -> T:
    """Run `body`, answering its exchanges with the sandbox's sync calls."""
    answer: Any = None
    while True:
        try:
            exchange = body.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = _answered(exchange, sandbox)


async def arun(body: Calls[T], sandbox: Any) -> T:
    """Run `body`, answering its exchanges with the sandbox's async calls."""
    answer: Any = None
    while True:
        try:
            exchange = body.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = await _aanswered(exchange, sandbox)


def _answered(exchange: Exchange, sandbox: Any) -> Any:
    if exchange.op == "execute":
        if exchange.timeout is not None and _takes_timeout(sandbox.execute):
            return _ran(sandbox.execute(exchange.command, timeout=exchange.timeout))
        return _ran(sandbox.execute(exchange.command))
    if exchange.op == "download":
        return sandbox.download_files(list(exchange.paths))
    return sandbox.upload_files(list(exchange.files))


async def _aanswered(exchange: Exchange, sandbox: Any) -> Any:
    if exchange.op == "execute":
        if exchange.timeout is not None and _takes_timeout(sandbox.execute):
            return _ran(await sandbox.aexecute(exchange.command, timeout=exchange.timeout))
        return _ran(await sandbox.aexecute(exchange.command))
    if exchange.op == "download":
        return await sandbox.adownload_files(list(exchange.paths))
    return await sandbox.aupload_files(list(exchange.files))


def _ran(response: Any) -> tuple[str, int | None]:
    """An `ExecuteResponse` as the bodies take it: the output and the exit code."""
    return str(response.output), response.exit_code


def _takes_timeout(execute: Any) -> bool:
    """Whether a provider's `execute` takes `timeout` (older ones do not)."""
    try:
        return "timeout" in inspect.signature(execute).parameters
    except (TypeError, ValueError):
        return False


class SandboxCommands:
    """Commands in one sandbox's workspace, recorded as change sets (see the module).

    Args:
        root: The workspace's path inside the sandbox.
        changed_bytes: Most bytes of new content one command's set may hold; above,
            nothing it changed is kept (`LimitHit("changed_bytes")`). None: no bound.
    """

    def __init__(self, root: str, *, changed_bytes: int | None) -> None:
        """Keep the settings; nothing is sent to the sandbox before the first call."""
        self.root = root.rstrip("/") or "/"
        self.changed_bytes = changed_bytes
        digest = hashlib.sha256(self.root.encode()).hexdigest()[:16]
        self.state = f"/tmp/.fstools-{digest}"  # noqa: S108 - the sandbox's, checked private
        source = _HELPER_SOURCE.read_text(encoding="utf-8")
        self._source = source
        name = hashlib.sha256(source.encode()).hexdigest()[:16]
        self.helper = f"{self.state}/command-{name}.py"
        self.available: bool | None = None
        """Whether the helper runs in the sandbox (None: not asked yet)."""
        self.host_code: tuple[str, ...] = ()
        """Workspace paths of the code the helper runs (its python3's prefixes)."""

    # ----- bodies --------------------------------------------------------------------

    def probe(self) -> Calls[bool]:
        """Send the helper and ask it to answer: whether it runs (python3 is there)."""
        if self.available is None:
            request = {"op": "probe", "root": self.root}
            output, _ = yield Exchange("execute", self._install() + self._call(request), 60)
            answer = _frame(output)
            self.available = answer is not None and "host_code" in answer
            self.host_code = tuple(answer["host_code"]) if self.available and answer else ()
        return self.available

    def execute(self, command: str, *, timeout: float, output_limit: int) -> Calls[ExecutionResult]:
        """Run `command` through the helper: its result, and its changes uncommitted."""
        request = {
            "op": "run",
            "root": self.root,
            "state": self.state,
            "command": command,
            "timeout": timeout,
            "output_limit": output_limit,
            "changed_limit": self.changed_bytes if self.changed_bytes is not None else 1 << 62,
            "inline_limit": INLINE_LIMIT,
        }
        answer = yield from self._helper(request, int(timeout) + HELPER_GRACE)
        result = _result(answer, output_limit)
        error = answer.get("error")
        if error is not None:
            if error["kind"] == "changed_limit":
                return ExecutionResult(
                    result.output,
                    result.exit_code,
                    result.timed_out,
                    result.dropped_bytes,
                    limit=LimitHit("changed_bytes", int(error["limit"])),
                )
            raise _failure(error)
        blob = zlib.decompress(base64.b64decode(answer["blob"]))
        changes = _unpacked(answer["changes"], blob, self.host_code)
        return ExecutionResult(
            result.output, result.exit_code, result.timed_out, result.dropped_bytes, changes
        )

    def commit(self, changes: ChangeSet) -> Calls[list[FileInfo]]:
        """Apply `changes` in the sandbox, all or nothing; what each file and link now is.

        Raises:
            VersionConflict: a path is no longer at its `before` version (nothing applied).
            DiskFull: the sandbox's disk has no room for the new contents.
        """
        records = [_record(change) for change in changes.changes]
        blob = _packed(changes)
        request: dict[str, Any] = {
            "op": "commit",
            "root": self.root,
            "state": self.state,
            "changes": records,
            "inline_limit": INLINE_LIMIT,
        }
        encoded = base64.b64encode(blob).decode()
        if len(encoded) <= INLINE_LIMIT:
            request["blob"] = encoded
        else:
            path = f"{self.state}/in-{secrets.token_hex(8)}"
            responses = yield Exchange("upload", files=((path, blob),))
            _check_transfers(responses, "upload")
            request["blob_path"] = path
        answer = yield from self._helper(request, HELPER_GRACE)
        if "error" in answer:
            raise _failure(answer["error"])
        written = answer["written"]
        infos = []
        for change in changes.changes:
            relative = change.path.lstrip("/")
            if relative in written:
                token, size, mtime_ns = written[relative]
                link = change.entry == "link"
                infos.append(
                    FileInfo(change.path, EntryKind.FILE, size, mtime_ns / 1e9, token, link)
                )
        return infos

    def run_plain(
        self, command: str, *, timeout: float, output_limit: int
    ) -> Calls[ExecutionResult]:
        """Run `command` with the sandbox's own `execute`, in place and unrecorded."""
        line = f"cd {shlex.quote(self.root)} && {command}"
        output, code = yield Exchange("execute", line, max(1, int(timeout)))
        buffer = OutputBuffer(output_limit)
        buffer.add(output.encode())
        return ExecutionResult(
            buffer.text(), code, timed_out=False, dropped_bytes=buffer.dropped_bytes
        )

    # ----- the helper ------------------------------------------------------------------

    def _helper(self, request: dict[str, Any], timeout: int) -> Calls[dict[str, Any]]:
        """The helper's answer to `request`, sending the helper again if it is gone."""
        output, _ = yield Exchange("execute", self._call(request), timeout)
        if _MISSING in output and FRAME not in output:
            output, _ = yield Exchange("execute", self._install() + self._call(request), timeout)
        answer = _frame(output)
        if answer is None:
            raise SandboxFailed(
                "the command helper did not answer: "
                + (output.strip().splitlines() or ["no output"])[-1][:200]
            )
        if "answer_path" in answer:
            responses = yield Exchange("download", paths=(answer["answer_path"],))
            _check_transfers(responses, "download")
            answer = _frame(FRAME + "\n" + responses[0].content.decode())
            if answer is None:
                raise SandboxFailed("the command helper's answer could not be read")
        return answer

    def _call(self, request: dict[str, Any]) -> str:
        encoded = base64.b64encode(json.dumps(request).encode()).decode()
        helper = shlex.quote(self.helper)
        return (
            f"if [ -f {helper} ]; then python3 -I -S {helper} <<'FSTOOLS_REQUEST'\n"
            f"{encoded}\nFSTOOLS_REQUEST\nelse echo {_MISSING}; fi"
        )

    def _install(self) -> str:
        """Shell that writes the helper into the private folder (made mode 0700)."""
        state, helper = shlex.quote(self.state), shlex.quote(self.helper)
        return (
            f"(umask 077 && mkdir -p {state} && cat > {helper}.new <<'FSTOOLS_HELPER_SOURCE'\n"
            f"{self._source}\nFSTOOLS_HELPER_SOURCE\nmv {helper}.new {helper}) >/dev/null 2>&1\n"
        )


def _frame(output: str) -> dict[str, Any] | None:
    """The helper's answer in `output` (after its last `FRAME` line), or None."""
    _, found, rest = output.rpartition(FRAME + "\n")
    if not found:
        return None
    try:
        return json.loads(zlib.decompress(base64.b64decode(rest.strip())))  # type: ignore[no-any-return]
    except (ValueError, zlib.error):
        return None


def _result(answer: dict[str, Any], output_limit: int) -> ExecutionResult:
    """The command's output replayed through `OutputBuffer`, its exit code, its end."""
    buffer = OutputBuffer(output_limit)
    for stream, data in answer.get("head", ()):
        buffer.add(base64.b64decode(data), stderr=stream == "stderr")
    buffer.skip(int(answer.get("dropped", 0)))
    for stream, data in answer.get("tail", ()):
        buffer.add(base64.b64decode(data), stderr=stream == "stderr")
    return ExecutionResult(
        buffer.text(), answer.get("exit_code"), bool(answer.get("timed_out")), buffer.dropped_bytes
    )


def _unpacked(records: list[dict[str, Any]], blob: bytes, host_code: tuple[str, ...]) -> ChangeSet:
    """The change set of a `run` answer, its new files written into a private host folder."""
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
    """A change as the helper's `commit` takes it (paths relative to the workspace)."""
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
    """The new files' bytes in the changes' order, compressed (`commit`'s blob).

    Each file is read as committed; its size is what the change says it holds.
    """
    packer = zlib.compressobj(1)
    parts: list[bytes] = []
    for change in changes.changes:
        if change.kind is ChangeKind.DELETED or change.entry != "file":
            continue
        with os.fdopen(open_upper(upper_path(changes, change.path)), "rb") as file:
            data = file.read()
        if len(data) != change.size:
            raise VersionConflict(change.path, change.before or ABSENT, None)
        parts.append(packer.compress(data))
    parts.append(packer.flush())
    return b"".join(parts)


def _check_transfers(responses: list[Any], what: str) -> None:
    for response in responses:
        if getattr(response, "error", None):
            raise SandboxFailed(f"the sandbox's {what} failed ({response.error})")


def _failure(error: dict[str, Any]) -> Exception:
    """The exception of a helper's failure answer."""
    kind = error["kind"]
    if kind == "conflict":
        path = "/" + error["path"]
        return VersionConflict(path, error.get("expected") or ABSENT, error.get("actual"))
    if kind == "disk_full":
        return DiskFull("/", 0, 0)
    if kind == "private":
        return SandboxFailed("its private folder is not this user's own")
    return OSError(errno.EIO, f"the command helper failed: {error.get('message')}", "/")


__all__ = ["INLINE_LIMIT", "Calls", "Exchange", "SandboxCommands", "arun", "run"]
