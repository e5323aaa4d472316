"""Commands in the sandbox, run in place, recorded as a change set, then undone.

Operations of the sandbox's helper (`backends.sandbox.helper` ships and runs them, one
`execute` each; see `backends.sandbox.recorded_commands` for the host's side). They
keep their files in `commands/` of the helper's private folder: `manifest.json`,
`objects/<sha256>`, `stage/` and, while one runs, `running.json`.

- `command_probe`: the workspace paths of code the helper runs itself (its Python's
  prefixes and site-packages), which no command may change (`host_code`).
- `command_run` (`command`, `timeout`, `output_limit`, `changed_limit`):
    1. The baseline is brought up to date: the workspace is scanned (kind, mode, size,
       mtime, ctime and inode of every entry, a link's target) and every file whose
       stat differs from the last manifest (the file tools wrote it since) is copied,
       by the hash of its bytes, into `objects/`.
    2. The command runs with `sh -c` in the workspace, in a process group of its own,
       its input empty; at the deadline the group is killed, and when the shell ends
       what it left running is killed too. The output is kept as a head and a tail
       (`output_limit` bytes, in `[stream, base64]` chunks) and the bytes between counted.
    3. The workspace is scanned again and compared with the baseline: added, modified
       (bytes, mode, a link's target, a file turned link) and deleted entries, a
       directory replaced by a file or the reverse as a deletion and an addition. Only
       a file whose stat changed is hashed.
    4. The new bytes of added and modified files are the reply's bytes, in the
       changes' order (more than `changed_limit` of them: none, and the reply says so).
    5. The workspace is restored to the baseline: what the command added is removed,
       what it modified or deleted is written back from `objects/` (in place when the
       inode is still there, with its mtime, so its version is as before), modes back.
       Each change's `before` is the version of its path after the restore.
- `command_commit` (the changes as `command_run` gave them; their bytes): every
  `before` is checked first (`VersionConflict`), and that no link leads a path out of
  the workspace (`OutsideRoot`); every file and link is staged as a temporary in its
  target's folder (or its deepest existing ancestor), then the visible steps are taken
  in the journal's order (`backends.journal`): deletions (deepest first), new
  directories, renames into place, directories' modes (deepest first). A failure undoes
  the steps taken (`DiskFull` when the disk is full). The next `command_run` takes the
  commit into its baseline (step 1).

A kill (the provider's timeout, the OOM killer) never leaves a command's effect in the
workspace, nor half a commit. Each operation keeps a record, `running.json` in
`commands/`, locked (`flock`) for its life, before anything visible changes; the next
helper run of any operation finds a record nobody holds and settles it first (`recover`,
under the workspace's lock), and the commit's journal records are settled as every
batch's are (`helper.Disk.settle`). What a kill at each stage leaves, once settled:

- `command_run`, in step 1: the workspace as it was; step 2 (the command running) to
  step 5 (the put-back): what is left of the command's process group is killed, and the
  workspace is put back as the manifest of step 1 has it, from `objects/` (step 5 done
  again: it is idempotent), so the next baseline never takes the command's changes in.
  The command's result is lost with its helper: the call fails, and nothing it did is
  kept. The command's shell waits until its process group is recorded (`_GATE`), so
  no command runs with its group unknown. Limits: a
  process that left the group (`setsid`) is not killed, as at the deadline; and
  a group that ended whole before the next run leaves its id to the kernel, which could
  give it to a new group meanwhile (the kernel does not while one of the group lives).
- `command_commit`, before its journal's commit record: the set absent (staged
  temporaries removed); after it: the set whole (rolled forward). What the commit kept
  aside to undo a failure (its folder `.fstools-stage-<token>`) is removed.
  Limit: a kill while a failed commit is undone (a double fault) may leave it part done.
"""

from __future__ import annotations

import binascii
import collections
import contextlib
import errno
import json
import os
import selectors
import signal
import stat
import subprocess
import sys
import time

from langchain_fstools import errors
from langchain_fstools.backends.file_versions import version_of

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, Protocol

    from langchain_fstools.backends.beneath import Beneath
    from langchain_fstools.backends.journal import Intent, Journal, Placement, Steps

    Entry = list[Any]
    """A scanned entry: [kind, mode, size, mtime_ns, ctime_ns, inode, hash-or-target];
    kind is "f" (file), "d" (directory), "l" (link) or "o" (a FIFO, socket or device)."""

    Manifest = dict[str, Entry]
    """Entries by path relative to the workspace."""

    Reply = tuple[Any, bytes]

    class Disk(Protocol):
        """The workspace as the helper's operations get it (`helper.Disk`)."""

        beneath: Beneath
        folder: str

        def journal(self) -> Journal:
            """The journal of the workspace's multi-file writes."""
            ...


_CHUNK = 1 << 20
_READ = 65536
_NEVER_KEPT = stat.S_ISUID | stat.S_ISGID
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_DRAIN_SECONDS = 0.2
"""How long output is still read once the shell ended (its children may hold the pipes)."""


def probe(disk: Disk, data: bytes) -> Reply:
    """`command_probe`: the workspace paths of the code the helper runs (module docstring)."""
    del data
    root = disk.beneath.root
    import site  # noqa: PLC0415 - only the probe needs it

    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, *site.getsitepackages()]
    found.append(os.path.dirname(os.path.realpath(sys.executable)))
    inside: list[str] = []
    for path in found:
        real = os.path.realpath(path)
        if real.startswith(root.rstrip("/") + "/"):
            virtual = "/" + os.path.relpath(real, root)
            if virtual not in inside:
                inside.append(virtual)
    return inside, b""


class _State:
    """The commands' private folder: `manifest.json`, `objects/<sha256>`, `stage/`."""

    def __init__(self, folder: str, root: str) -> None:
        self.folder = folder
        self.root = root
        _private(folder)
        for name in ("objects", "stage"):
            path = os.path.join(folder, name)
            if not os.path.isdir(path):
                os.mkdir(path, 0o700)

    def object(self, digest: str) -> str:
        return os.path.join(self.folder, "objects", digest)

    def load(self, *, strict: bool = False) -> Manifest:
        """The last manifest; none is empty, unless `strict` (`OSError`, `ValueError`)."""
        try:
            with open(os.path.join(self.folder, "manifest.json")) as file:
                return json.load(file)  # type: ignore[no-any-return]
        except (OSError, ValueError):
            if strict:
                raise
            return {}

    def save(self, manifest: Manifest) -> None:
        temporary = os.path.join(self.folder, "manifest.json.new")
        with open(temporary, "w") as file:
            json.dump(manifest, file)
        os.replace(temporary, os.path.join(self.folder, "manifest.json"))

    def sweep(self, manifest: Manifest) -> None:
        """Remove the objects the manifest no longer names."""
        kept = {entry[6] for entry in manifest.values() if entry[0] == "f"}
        for name in os.listdir(os.path.join(self.folder, "objects")):
            if name not in kept:
                _forget(self.object(name))


def _private(folder: str) -> None:
    """Make `folder` (mode 0700), or check that an existing one is this user's own."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    found = os.lstat(folder)
    if (
        not stat.S_ISDIR(found.st_mode)
        or found.st_uid != os.geteuid()
        or stat.S_IMODE(found.st_mode) & 0o077
    ):
        raise errors.SandboxFailed("the commands' folder in the sandbox is not private")


def _forget(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# ----- scanning -----------------------------------------------------------------------
def _scan(root: str) -> Manifest:
    found: Manifest = {}
    stack = [""]
    while stack:
        relative = stack.pop()
        folder = os.path.join(root, relative) if relative else root
        for name in _names(folder):
            path = relative + "/" + name if relative else name
            try:
                result = os.lstat(os.path.join(root, path))
            except FileNotFoundError:
                continue
            entry = _entry(result)
            if entry[0] == "l":
                entry[6] = os.readlink(os.path.join(root, path))
            elif entry[0] == "d":
                stack.append(path)
            found[path] = entry
    return found


def _names(folder: str) -> list[str]:
    """The names in `folder`, which a command may have made unreadable (opened: u+rwx)."""
    try:
        return os.listdir(folder)
    except PermissionError:
        os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) | stat.S_IRWXU)
        return os.listdir(folder)


def _entry(result: os.stat_result) -> Entry:
    mode = result.st_mode
    kind = "o"
    if stat.S_ISREG(mode):
        kind = "f"
    elif stat.S_ISDIR(mode):
        kind = "d"
    elif stat.S_ISLNK(mode):
        kind = "l"
    size = result.st_size if kind == "f" else 0
    bits = stat.S_IMODE(mode)
    return [kind, bits, size, result.st_mtime_ns, result.st_ctime_ns, result.st_ino, None]


def _same_stat(one: Entry, other: Entry) -> bool:
    return one[:6] == other[:6]


def _open_file(path: str) -> int:
    """A read-only descriptor of the file at `path` (a link not followed), even at mode 000."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags)
    except PermissionError:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        os.chmod(path, mode | stat.S_IRUSR)
        try:
            return os.open(path, flags)
        finally:
            os.chmod(path, mode)


def _store(state: _State, path: str) -> str:
    """Copy the file at `path` into the objects, by the hash of its bytes; the hash."""
    import hashlib  # noqa: PLC0415 - a run that finds nothing new never hashes
    import tempfile  # noqa: PLC0415 - the same

    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(dir=os.path.join(state.folder, "objects"))
    source = _open_file(path)
    try:
        while True:
            data = os.read(source, _CHUNK)
            if not data:
                break
            digest.update(data)
            os.write(handle, data)
    except BaseException:
        os.close(handle)
        _forget(temporary)
        raise
    finally:
        os.close(source)
    os.close(handle)
    name = digest.hexdigest()
    os.replace(temporary, state.object(name))
    return name


def _hash(path: str) -> str:
    import hashlib  # noqa: PLC0415 - a run that finds nothing changed never hashes

    digest = hashlib.sha256()
    source = _open_file(path)
    try:
        while True:
            data = os.read(source, _CHUNK)
            if not data:
                return digest.hexdigest()
            digest.update(data)
    finally:
        os.close(source)


def _baseline(state: _State) -> Manifest:
    """The workspace now, each file's bytes kept in the objects (step 1 of `run`)."""
    old = state.load()
    now = _scan(state.root)
    changed = False
    for path, entry in now.items():
        if entry[0] != "f":
            continue
        before = old.get(path)
        if (
            before is not None
            and _same_stat(before, entry)
            and os.path.exists(state.object(before[6]))
        ):
            entry[6] = before[6]
        else:
            entry[6] = _store(state, os.path.join(state.root, path))
            changed = True
    if changed or now != old:
        state.save(now)
        state.sweep(now)
    return now


# ----- records of operations under way --------------------------------------------------

_RECORD = "running.json"
_GROUP_WIDTH = 12
"""Characters kept in a run's record for its process group's id (JSON, padded)."""


class _Record:
    """`running.json`: a command or commit under way, locked until it ends (module docstring).

    Made before anything visible changes; `end` removes it, `release` leaves it for
    the next helper run (`recover`). A run's process group is written in place once
    known (`started`): one write of a fixed width, whole or not at all.
    """

    def __init__(self, state: _State, op: str, aside: str | None = None) -> None:
        import fcntl  # noqa: PLC0415 - only commands and commits take it

        self.path = os.path.join(state.folder, _RECORD)
        self.descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fcntl.flock(self.descriptor, fcntl.LOCK_EX)
            head = json.dumps({"op": op, "root": state.root, "aside": aside})[:-1]
            self.offset = len((head + ', "group": ').encode())
            text = head + ', "group": ' + "null".ljust(_GROUP_WIDTH) + "}"
            os.write(self.descriptor, text.encode())
        except BaseException:
            self.release()
            raise

    def started(self, group: int) -> None:
        os.pwrite(self.descriptor, str(group).ljust(_GROUP_WIDTH).encode(), self.offset)

    def end(self) -> None:
        _forget(self.path)
        self.release()

    def release(self) -> None:
        if self.descriptor >= 0:
            os.close(self.descriptor)
            self.descriptor = -1


def pending(folder: str) -> bool:
    """Whether the private `folder` holds the record of an operation whose helper died."""
    import fcntl  # noqa: PLC0415 - only when there is a record

    try:
        descriptor = os.open(os.path.join(folder, "commands", _RECORD), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # a live command or commit
    finally:
        os.close(descriptor)
    return True


def recover(folder: str) -> None:
    """Settle the record a killed helper left in `folder` (module docstring).

    Called under the workspace's lock held alone (`helper.Disk.settle_commands`): a
    run's process group is killed and its workspace put back as its manifest has it;
    a commit's folder of entries kept aside is removed (its journal settles the set).
    The record goes last: a helper killed here leaves it for the next run.
    """
    import fcntl  # noqa: PLC0415 - only when there is a record

    path = os.path.join(folder, "commands", _RECORD)
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return  # settled by another run meanwhile
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        try:
            record = json.loads(os.read(descriptor, 1 << 16))
        except ValueError:
            record = {}  # cut while written: nothing was changed yet
        with _disk_errors():
            _settle_record(os.path.join(folder, "commands"), record)
        _forget(path)
    finally:
        os.close(descriptor)


def _settle_record(folder: str, record: dict[str, Any]) -> None:
    if record.get("op") == "run":
        group = record.get("group")
        if isinstance(group, int) and group > 1:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
        state = _State(folder, record["root"])
        try:
            base = state.load(strict=True)
        except (OSError, ValueError):
            return  # no baseline to put back (never so after a run began): nothing is removed
        after = _scan(state.root)
        if not _untouched(base, after):
            _restore(state, base, after, set())
            _settle(state, base, after)
    elif record.get("op") == "commit" and record.get("aside"):
        import shutil  # noqa: PLC0415 - only a killed commit's

        shutil.rmtree(record["aside"], ignore_errors=True)


# ----- running ------------------------------------------------------------------------


class _Window:
    """A command's output: the head and tail chunks, `[stream, bytes]`, and bytes between."""

    def __init__(self, limit: int) -> None:
        self.head_room = limit // 2
        self.tail_limit = limit - self.head_room
        self.head: list[list[Any]] = []
        self.tail: collections.deque[list[Any]] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, stream: str, data: bytes) -> None:
        if self.head_room > 0:
            self.head.append([stream, data[: self.head_room]])
            data = data[self.head_room :]
            self.head_room -= len(self.head[-1][1])
        if not data:
            return
        self.tail.append([stream, data])
        self.tail_size += len(data)
        while self.tail_size > self.tail_limit:
            excess = self.tail_size - self.tail_limit
            first = self.tail[0]
            if len(first[1]) <= excess:
                self.tail.popleft()
                self.tail_size -= len(first[1])
                self.dropped += len(first[1])
            else:
                first[1] = first[1][excess:]
                self.tail_size -= excess
                self.dropped += excess

    def answer(self) -> dict[str, Any]:
        def chunks(kept: Any) -> list[list[str]]:
            return [[s, binascii.b2a_base64(d, newline=False).decode()] for s, d in kept]

        return {"head": chunks(self.head), "dropped": self.dropped, "tail": chunks(self.tail)}


_GO = b"go\n"
"""What the helper writes to the gate once the command's group is recorded."""

_GATE = """IFS= read -r go && [ "$go" = go ] || exit 125
exec /bin/sh -c "$1" </dev/null"""
"""`sh -c _GATE /bin/sh COMMAND`, its input the gate (a pipe from the helper): wait for
`_GO`, then run COMMAND with `sh -c` in the same process (its pid is the group's), its
input empty; an end of file (the helper ended before it recorded the group) runs
nothing."""


def _execute(
    root: str, command: str, timeout: float, limit: int, started: Callable[[int], None]
) -> dict[str, Any]:
    """Run `command` in `root`, its group killed at the deadline and when the shell ends.

    `started` is told the group's id before the command runs: the shell waits at
    `_GATE` until `started` returned, and runs nothing if the helper ended first.
    """
    gate, go = os.pipe()
    try:
        try:
            process = subprocess.Popen(  # noqa: S603 - the agent's command, in its sandbox
                ["/bin/sh", "-c", _GATE, "/bin/sh", command],
                cwd=root,
                stdin=gate,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            os.close(gate)
        started(process.pid)
        os.write(go, _GO)
    finally:
        os.close(go)
    window = _Window(limit)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, "stdout")  # type: ignore[arg-type]
    selector.register(process.stderr, selectors.EVENT_READ, "stderr")  # type: ignore[arg-type]
    deadline = time.monotonic() + timeout
    ended_at = None
    timed_out = False
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = process.poll() is None
                break
            if ended_at is None and process.poll() is not None:
                ended_at = now
            if ended_at is not None and now - ended_at > _DRAIN_SECONDS:
                break
            for key, _ in selector.select(min(0.05, deadline - now)):
                data = os.read(key.fd, _READ)
                if data:
                    window.add(key.data, data)
                else:
                    selector.unregister(key.fileobj)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        selector.close()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    status = process.wait()
    code = None if timed_out else (128 - status if status < 0 else status)
    answer = window.answer()
    answer.update({"exit_code": code, "timed_out": timed_out})
    return answer


# ----- comparing ----------------------------------------------------------------------


def _children(manifest: Manifest) -> dict[str, list[str]]:
    found: dict[str, list[str]] = collections.defaultdict(list)
    for path in manifest:
        parent, _, name = path.rpartition("/")
        found[parent].append(name)
    return found


class _Diff:
    """The changes from the baseline `base` to the scan `after` (step 3 of `run`)."""

    def __init__(self, root: str, base: Manifest, after: Manifest, umask: int) -> None:
        self.root = root
        self.base = base
        self.after = after
        self.umask = umask
        self.base_children = _children(base)
        self.after_children = _children(after)
        self.changes: list[dict[str, Any]] = []
        self.same_bytes: set[str] = set()

    def directory(self, folder: str) -> None:
        names = set(self.base_children.get(folder, ())) | set(self.after_children.get(folder, ()))
        for name in sorted(names):
            self.entry(folder + "/" + name if folder else name)

    def entry(self, path: str) -> None:
        old, new = self.base.get(path), self.after.get(path)
        if new is None or new[0] == "o":
            if old is not None and old[0] != "o":
                self.deleted(path)
            return
        if old is None or old[0] == "o":
            self.added(path, new)
            return
        if old[0] != new[0] and "d" in (old[0], new[0]):
            self.deleted(path)
            self.added(path, new)
        elif old[0] != new[0]:
            self.change(path, "M", new)
        elif new[0] == "f":
            self.file(path, old, new)
        elif new[0] == "l":
            if old[6] != new[6]:
                self.change(path, "M", new)
        else:
            if old[1] != _kept(new[1]):
                self.change(path, "M", new)
            self.directory(path)

    def file(self, path: str, old: Entry, new: Entry) -> None:
        if _same_stat(old, new):
            return
        same = old[2] == new[2] and _hash(os.path.join(self.root, path)) == old[6]
        if same:
            self.same_bytes.add(path)
        if not same or old[1] != _kept(new[1]):
            self.change(path, "M", new)

    def added(self, path: str, new: Entry) -> None:
        self.change(path, "A", new)
        if new[0] == "d":
            for name in sorted(self.after_children.get(path, ())):
                child = path + "/" + name
                if self.after[child][0] != "o":
                    self.added(child, self.after[child])

    def deleted(self, path: str) -> None:
        old = self.base[path]
        self.changes.append({"path": path, "kind": "D", "entry": _ENTRIES[old[0]]})
        if old[0] == "d":
            for name in sorted(self.base_children.get(path, ())):
                if self.base[path + "/" + name][0] != "o":
                    self.deleted(path + "/" + name)

    def change(self, path: str, kind: str, new: Entry) -> None:
        entry = _ENTRIES[new[0]]
        change: dict[str, Any] = {"path": path, "kind": kind, "entry": entry}
        if new[0] == "l":
            change["target"] = new[6]
        else:
            kept = _kept(new[1], self.umask if kind == "A" else None)
            change.update(mode=kept, dropped=new[1] & ~kept, size=new[2])
            old = self.base.get(path)
            if kind == "M" and old is not None and old[0] == new[0]:
                change["old_mode"] = old[1]
        self.changes.append(change)


_ENTRIES = {"f": "file", "d": "directory", "l": "link"}


def _kept(bits: int, umask: int | None = None) -> int:
    """The mode bits a change keeps: never set-uid or set-gid; a new entry's umask'd."""
    kept = bits & ~_NEVER_KEPT
    return kept if umask is None else kept & ~(umask & _WRITABLE_BY_OTHERS)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ----- packing and restoring ---------------------------------------------------------


def _pack(root: str, changes: list[dict[str, Any]], limit: int) -> bytes | None:
    """The new bytes of the changed files, in order (step 4); None above `limit` bytes."""
    parts = []
    total = 0
    for change in changes:
        if change["kind"] == "D" or change["entry"] != "file":
            continue
        source = _open_file(os.path.join(root, change["path"]))
        size = 0
        try:
            while True:
                data = os.read(source, _CHUNK)
                if not data:
                    break
                size += len(data)
                total += len(data)
                if total > limit:
                    return None
                parts.append(data)
        finally:
            os.close(source)
        change["size"] = size
    return b"".join(parts)


def _restore(state: _State, base: Manifest, after: Manifest, same_bytes: set[str]) -> None:
    """Put the workspace back as the baseline `base` (step 5 of `run`).

    Folders the command closed are opened first; then what is not the baseline's is
    removed (deepest first), and the baseline's entries made again (parents first),
    folders' times last.
    """
    root = state.root
    for path in sorted(after, key=_depth):
        entry = after[path]
        if entry[0] == "d" and entry[1] & stat.S_IRWXU != stat.S_IRWXU:
            os.chmod(os.path.join(root, path), entry[1] | stat.S_IRWXU)
    for path in sorted(after, key=_depth, reverse=True):
        if not _kept_by_restore(base.get(path), after[path]):
            _remove(os.path.join(root, path), after[path][0])
    for path in sorted(base, key=_depth):
        old, new = base[path], after.get(path)
        if old[0] == "d" or new is None or not _same_stat(old, new):
            present = new is not None and _kept_by_restore(old, new)
            _restore_entry(
                state, path, old, new if present else None, same_bytes=path in same_bytes
            )
    for path in sorted((p for p in base if base[p][0] == "d"), key=_depth, reverse=True):
        os.utime(os.path.join(root, path), ns=(base[path][3], base[path][3]))


def _kept_by_restore(old: Entry | None, new: Entry) -> bool:
    """Whether the entry `new` stays for the restore (the baseline's `old` is of its kind)."""
    return old is not None and old[0] == new[0] and not (new[0] == "l" and old[6] != new[6])


def _restore_entry(
    state: _State, path: str, old: Entry, new: Entry | None, *, same_bytes: bool
) -> None:
    """Make the baseline's entry `old` again where the command left `new` (None: nothing).

    A FIFO, socket or device the command removed is not made again.
    """
    full = os.path.join(state.root, path)
    if old[0] == "d":
        if new is None:
            os.mkdir(full, 0o700)
        os.chmod(full, old[1])
    elif old[0] == "l" and new is None:
        os.symlink(old[6], full)
    elif old[0] == "f":
        if not (new is not None and same_bytes):
            _write_back(state, full, old, new)
        os.chmod(full, old[1])
        os.utime(full, ns=(old[3], old[3]))


def _write_back(state: _State, full: str, old: Entry, new: Entry | None) -> None:
    """The baseline's bytes into `full`: in place if its inode is the baseline's."""
    source = os.open(state.object(old[6]), os.O_RDONLY)
    try:
        if new is not None and new[5] == old[5]:
            os.chmod(full, stat.S_IRUSR | stat.S_IWUSR)
            target = os.open(full, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
            temporary = None
        else:
            import tempfile  # noqa: PLC0415 - only a restore that replaces a file

            target, temporary = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".fstools-")
        try:
            _copy(source, target)
        finally:
            os.close(target)
        if temporary is not None:
            os.replace(temporary, full)
    finally:
        os.close(source)


def _copy(source: int, target: int) -> None:
    while True:
        data = os.read(source, _CHUNK)
        if not data:
            return
        os.write(target, data)


def _remove(full: str, kind: str) -> None:
    try:
        if kind == "d":
            import shutil  # noqa: PLC0415 - only a restore that removes a folder

            shutil.rmtree(full)
        else:
            os.unlink(full)
    except FileNotFoundError:
        pass


def _depth(path: str) -> int:
    return path.count("/")


def run(disk: Disk, request: dict[str, Any], data: bytes) -> Reply:
    """`command_run`: the command's result and changes, and their bytes (module docstring)."""
    del data
    with _disk_errors():
        state = _State(os.path.join(disk.folder, "commands"), disk.beneath.root)
        base = _baseline(state)
        record = _Record(state, "run")
        try:
            answer = _execute(
                state.root,
                request["command"],
                request["timeout"],
                request["output_limit"],
                record.started,
            )
            after = _scan(state.root)
            if _untouched(base, after):  # nothing to compare, pack or put back
                record.end()
                answer["changes"] = []
                return answer, b""
            diff = _Diff(state.root, base, after, _umask())
            try:
                diff.directory("")
                blob = _pack(state.root, diff.changes, request["changed_limit"])
            finally:
                _restore(state, base, after, diff.same_bytes)
                _settle(state, base, after)
        except BaseException:
            record.release()  # the next helper run puts the workspace back (`recover`)
            raise
        record.end()
        if blob is None:
            answer["limit"] = request["changed_limit"]
            return answer, b""
        for change in diff.changes:
            if change["kind"] != "A":
                change["before"] = version_of(os.lstat(os.path.join(state.root, change["path"])))
        answer["changes"] = diff.changes
        return answer, blob


def _untouched(base: Manifest, after: Manifest) -> bool:
    """Whether every entry is as the baseline has it (a command that wrote nothing)."""
    return base.keys() == after.keys() and all(
        _same_stat(entry, after[path]) for path, entry in base.items()
    )


@contextlib.contextmanager
def _disk_errors() -> Iterator[None]:
    """A full disk as `DiskFull`; any other `OSError` naming the workspace's root only."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise errors.DiskFull("/", 0, 0) from None
        raise OSError(exc.errno or errno.EIO, exc.strerror or str(exc), "/") from None


def _settle(state: _State, base: Manifest, after: Manifest) -> None:
    """Keep the restored entries' new stat in the manifest (their bytes are the baseline's)."""
    for path, old in base.items():
        new = after.get(path)
        if new is None or not _same_stat(old, new) or old[0] == "d":
            result = _entry(os.lstat(os.path.join(state.root, path)))
            old[:6] = result[:6]
    state.save(base)


# ----- committing ---------------------------------------------------------------------


def commit(disk: Disk, changes: list[dict[str, Any]], data: bytes) -> Reply:
    """`command_commit`: each written path's [version, size, mtime_ns] (module docstring)."""
    from langchain_fstools.backends.journal import Target  # noqa: PLC0415 - commits only

    with _disk_errors():
        state = _State(os.path.join(disk.folder, "commands"), disk.beneath.root)
        deleted = {c["path"] for c in changes if c["kind"] == "D"}
        for change in changes:
            _confined(state.root, change["path"])
            if change["kind"] == "A" and change["path"] in deleted:
                continue  # checked as the deletion
            if change["entry"] == "directory" and change["kind"] == "M":
                continue  # a directory's version changes with its entries: its files are
            _check(state.root, change)
        import shutil  # noqa: PLC0415 - a commit's, not every run's

        journal = disk.journal()
        placed = [c for c in changes if c["kind"] != "D" and c["entry"] != "directory"]
        aside = os.path.join(_stage_parent(state), ".fstools-stage-" + os.urandom(6).hex())
        record = _Record(state, "commit", aside)
        try:
            os.mkdir(aside, 0o700)
            intent = journal.begin([Target("/" + c["path"], follow=False) for c in placed])
            try:
                placements = _stage(disk.beneath, intent.tag, placed, data)
            except BaseException:
                journal.end(intent)  # what was staged is removed by `_stage`
                raise
            steps = _steps(changes, placements)
            written = _commit_staged(journal, intent, steps, _Apply(state.root, aside))
        except Exception:
            shutil.rmtree(aside, ignore_errors=True)
            record.end()
            raise
        except BaseException:
            record.release()
            raise
        shutil.rmtree(aside, ignore_errors=True)
        record.end()
        return written, b""


def _commit_staged(
    journal: Journal, intent: Intent, steps: Steps, taking: _Apply
) -> dict[str, Any]:
    """Journal the staged set's steps, then take them; undone on a failure."""
    journal.commit(intent, steps)
    try:
        written = taking.all(steps)
    except Exception:
        for placement in steps.placements:  # those not renamed into place
            _forget(os.path.join(taking.root, placement.temp.lstrip("/")))
        journal.end(intent)
        raise
    except BaseException:
        journal.release(intent)  # the next helper run finishes the commit
        raise
    journal.finish(intent)
    return written


def _confined(root: str, path: str) -> None:
    """`OutsideRoot` unless every folder on the way to `path` is a real folder of `root`.

    A link put on the way since the set was read (by a process left running) would
    lead the commit out of the workspace. Folders the set adds are not there yet: the
    nearest one that is must be the folder itself, no link.
    """
    folder = os.path.dirname(os.path.join(root, path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if os.path.realpath(folder) != folder:
        raise errors.OutsideRoot("/" + path)


def _stage_parent(state: _State) -> str:
    """Where a commit keeps replaced entries aside: the private folder, if on the same disk.

    That is, on the workspace's file system. Else the workspace itself, for the
    commit's time (a kill: until the next helper run, `recover`): only a rename within
    one file system is atomic.
    """
    same = os.stat(state.folder).st_dev == os.stat(state.root).st_dev
    return os.path.join(state.folder, "stage") if same else state.root


def _check(root: str, change: dict[str, Any]) -> None:
    try:
        actual: str | None = version_of(os.lstat(os.path.join(root, change["path"])))
    except (FileNotFoundError, NotADirectoryError):
        actual = None
    expected = change.get("before")
    if actual != expected:
        raise errors.VersionConflict("/" + change["path"], expected or "", actual)


def _stage(
    beneath: Beneath, tag: Callable[[int], str], changes: list[dict[str, Any]], blob: bytes
) -> list[Placement]:
    """Every new file and link, complete as a temporary, before anything visible changes.

    The `n`-th is named with `tag(n)` in its target's folder, or in its deepest existing
    ancestor (`journal.staging_place`), where the journal's roll-back finds it. On a
    failure none is left.
    """
    from langchain_fstools.backends.journal import Placement, staging_place  # noqa: PLC0415
    from langchain_fstools.backends.temporaries import temporary_name  # noqa: PLC0415

    placements: list[Placement] = []
    offset = 0
    try:
        for number, change in enumerate(changes):
            virtual = "/" + change["path"]
            with staging_place(beneath, virtual, follow=False) as place:
                folder = place.virtual[: len(place.virtual) - len(place.name)].rstrip("/")
                name = temporary_name(place.name.rpartition("/")[2], tag(number))
                temp = (folder or "") + "/" + name
                if change["entry"] == "link":
                    os.symlink(change["target"], name, dir_fd=place.directory)
                else:
                    size = change["size"]
                    _staged_file(place.directory, name, blob[offset : offset + size], change)
                    offset += size
            placements.append(Placement(virtual, temp, follow=False))
    except BaseException:
        for placement in placements:
            _forget(os.path.join(beneath.root, placement.temp.lstrip("/")))
        raise
    return placements


def _staged_file(directory: int, name: str, data: bytes, change: dict[str, Any]) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(name, flags, 0o600, dir_fd=directory)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fchmod(descriptor, change["mode"])
        os.fsync(descriptor)
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=directory)
        raise
    os.close(descriptor)


def _steps(changes: list[dict[str, Any]], placements: list[Placement]) -> Steps:
    """The journal's record of a set's visible steps: removals deepest first."""
    from langchain_fstools.backends.journal import Folder, Removal, Steps  # noqa: PLC0415

    removed = [c for c in changes if c["kind"] == "D"]
    removed.sort(key=lambda c: _depth(c["path"]), reverse=True)
    return Steps(
        removals=[
            Removal("/" + c["path"], None if c["entry"] == "directory" else c["before"])
            for c in removed
        ],
        folders=[
            Folder("/" + c["path"], added=c["kind"] == "A", mode=c["mode"])
            for c in changes
            if c["entry"] == "directory" and c["kind"] != "D"
        ],
        placements=placements,
    )


class _Apply:
    """The visible steps of a commit, each with its undo, undone in reverse on a failure.

    The journal's steps (`journal.Steps`), in its order. A replaced or deleted file or
    link is kept aside (renamed, or linked, into the folder `aside`, on the workspace's
    file system) until every step is taken, so an undo puts it back; that folder goes
    with the commit.
    """

    def __init__(self, root: str, aside: str) -> None:
        self.root = root
        self.aside = aside
        self.undo: list[Callable[[], object]] = []

    def all(self, steps: Steps) -> dict[str, Any]:
        """Deletions, new folders, renames, then modes; what each placement wrote."""
        from langchain_fstools.backends.journal import modes_last  # noqa: PLC0415

        written = {}
        try:
            for removal in steps.removals:
                self.delete(self._full(removal.path))
            for folder in steps.folders:
                if folder.added:
                    self.make(self._full(folder.path))
            for placement in steps.placements:
                full = self._full(placement.path)
                self.place(full, self._full(placement.temp))
                result = os.lstat(full)
                written[placement.path[1:]] = [
                    version_of(result),
                    result.st_size,
                    result.st_mtime_ns,
                ]
            for path, mode in modes_last(steps.folders):
                self.mode(self._full(path), mode)
        except BaseException:
            for step in reversed(self.undo):
                with contextlib.suppress(OSError):
                    step()
            raise
        return written

    def _full(self, virtual: str) -> str:
        return os.path.join(self.root, virtual.lstrip("/"))

    def delete(self, full: str) -> None:
        result = os.lstat(full)
        if stat.S_ISDIR(result.st_mode):
            os.rmdir(full)
            self.undo.append(lambda: os.mkdir(full, stat.S_IMODE(result.st_mode)))
            return
        aside = self._aside()
        os.rename(full, aside)
        self.undo.append(lambda: os.rename(aside, full))

    def make(self, full: str) -> None:
        if not os.path.lexists(full):
            os.mkdir(full, 0o700)
            self.undo.append(lambda: os.rmdir(full))

    def mode(self, full: str, mode: int) -> None:
        old = stat.S_IMODE(os.lstat(full).st_mode)
        os.chmod(full, mode)
        self.undo.append(lambda: os.chmod(full, old))

    def place(self, full: str, staged: str) -> None:
        """Rename the staged entry to `full`, the old one linked aside."""
        if os.path.lexists(full):
            aside = self._aside()
            os.link(full, aside, follow_symlinks=False)
            os.rename(staged, full)
            self.undo.append(lambda: os.rename(aside, full))
        else:
            os.rename(staged, full)
            self.undo.append(lambda: os.unlink(full))

    def _aside(self) -> str:
        return os.path.join(self.aside, "old-" + os.urandom(6).hex())
