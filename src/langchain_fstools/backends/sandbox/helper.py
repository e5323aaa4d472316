"""The helper that runs inside a sandbox: one file operation per run, and its wire format.

`SandboxBackend` ships this module (with what it imports: `backends.disk_operations`,
`backends.beneath`, `backends.file_versions`, `backends.modes`, `core.paths`,
`backends.journal` for multi-file writes, and the search modules when a search asks for
them; see `backends.shipping`) into the sandbox
once, and each call runs it with the sandbox's `python3 -I -S` through one `execute`
(the loader is in `backends.sandbox.transport`). The operations are the local
backend's own (`backends.disk_operations`), on the sandbox's disk: every path is
walked beneath the root's directory descriptor (`backends.beneath`), so a symlink that
leads outside the root is `OutsideRoot`, and versions are `backends.file_versions`'
tokens, read in the same run as the write.

The wire format, one fact for both ends (this module is imported by the client too):
    request  one command-line argument: base64 of the zlib-compressed JSON header, a
             newline, then the operation's bytes (a write's content). A request too
             long for a command line is uploaded to the private folder and named as
             `@<name>` instead; the helper reads it and removes it.
    reply    on standard output, between `OPEN` and `CLOSE`: base64 of the
             zlib-compressed JSON header (`{"ok": value}` or `{"error": record}`), a
             newline, then the reply's bytes (a read's content). Text a provider adds
             before or after the frame is ignored. A reply longer than the request's
             `inline` limit is written to the private folder instead, and the frame
             holds `{"file": <name>}`: the client downloads it, and the next request
             names it in `drop` so the helper removes it.

Standard library only, and our own shippable modules: it runs on the sandbox's Python
(3.11 or newer), never on this process's. Each run pays for what it imports, so it
imports little: `binascii`, not `base64` (which loads `struct`); `_json`'s C codec, not
`json` (which loads `re`); and the modules it ships take `TYPE_CHECKING` without `typing`.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import functools
import io
import os
import stat as stat_module
import sys
import types
import zlib

from langchain_fstools import errors
from langchain_fstools.backends import disk_operations
from langchain_fstools.backends.beneath import Beneath, Place
from langchain_fstools.backends.file_versions import version_of
from langchain_fstools.backends.host_paths import is_inside, real_path
from langchain_fstools.backends.modes import os_error
from langchain_fstools.backends.temporaries import temporary_name
from langchain_fstools.backends.write_locks import DEFAULT_LOCK_TIMEOUT, directories_locked
from langchain_fstools.core import paths
from langchain_fstools.core.results import EntryKind, FileInfo

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path
    from typing import Any, Final

    from langchain_fstools.backends.journal import Intent, Journal, Steps

OPEN: Final = "<fstools:"
"""Where a reply's frame starts on standard output."""

CLOSE: Final = ":fstools>"
"""Where it ends."""

REQUEST_FILE: Final = "@"
"""First character of a request argument naming an uploaded request file."""


# ----- the wire format (both ends) ------------------------------------------------------------


def pack(header: dict[str, Any], data: bytes = b"") -> bytes:
    """A header and its bytes, compressed: what a request or a reply carries."""
    return zlib.compress(_to_json(header).encode() + b"\n" + data, 1)


def unpack(packed: bytes) -> tuple[dict[str, Any], bytes]:
    """`pack`'s header and bytes again.

    Raises:
        ValueError: the header is not JSON (`zlib.error` if `packed` is not compressed).
    """
    text = zlib.decompress(packed)
    header, _, data = text.partition(b"\n")
    return _from_json(header.decode()), data


_CONSTANTS: Final = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": -float("inf")}


def _unserializable(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json_codec() -> tuple[Callable[[Any], str], Callable[[str], Any]]:
    """Compact JSON out and in, by the C encoder and scanner that `json` itself uses.

    Importing `json` loads `re` for its pure-Python fallbacks, which every run in the
    sandbox would pay for; `json` serves where `_json` is missing or differs.
    """
    try:
        import _json  # noqa: PLC0415 - the fallback below imports `json` instead

        markers, indent, sort_keys, skipkeys, allow_nan = None, None, False, False, True
        encode = _json.make_encoder(  # as `json.JSONEncoder` makes it
            markers,
            _unserializable,
            _json.encode_basestring_ascii,
            indent,
            ":",
            ",",
            sort_keys,
            skipkeys,
            allow_nan,
        )
        # What the scanner reads of a `json.JSONDecoder`: `json.loads`' defaults.
        decoder = types.SimpleNamespace(
            strict=True,
            object_hook=None,
            object_pairs_hook=None,
            array_hook=None,
            parse_float=float,
            parse_int=int,
            parse_constant=_CONSTANTS.__getitem__,
            memo={},
        )
        scan = _json.make_scanner(decoder)  # type: ignore[arg-type] # it reads those attributes
    except (ImportError, AttributeError, TypeError):
        import json  # noqa: PLC0415 - only where `_json` does not serve

        return functools.partial(json.dumps, separators=(",", ":")), json.loads

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    def loads(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except StopIteration:
            raise ValueError("not JSON") from None
        if end != len(text):
            raise ValueError("not JSON: text after the value")
        return value

    return dumps, loads


_to_json, _from_json = _json_codec()


def framed(packed: bytes) -> str:
    """A reply as it is printed: base64 between the frame's marks."""
    return OPEN + binascii.b2a_base64(packed, newline=False).decode("ascii") + CLOSE


def frames(output: str) -> Iterator[bytes]:
    """The base64 frames in a command's output, decoded, the last one first.

    A provider may print text around the helper's output, even text that looks like a
    frame: the caller takes the last frame that unpacks. Whitespace a terminal adds
    inside a frame is ignored.
    """
    end = len(output)
    while (end := output.rfind(CLOSE, 0, end)) >= 0:
        start = output.rfind(OPEN, 0, end)
        if start < 0:
            return
        body = "".join(output[start + len(OPEN) : end].split())
        with contextlib.suppress(ValueError):  # binascii.Error is one
            yield binascii.a2b_base64(body, strict_mode=True)


def info_record(info: FileInfo) -> list[Any]:
    """A `FileInfo` as JSON."""
    return [info.path, info.kind.value, info.size, info.mtime, info.version, info.link]


def info_of(record: list[Any]) -> FileInfo:
    """`info_record`'s `FileInfo` again."""
    path, kind, size, mtime, version, link = record
    return FileInfo(path, EntryKind(kind), size, mtime, version, link=link)


def error_record(exc: Exception) -> list[Any]:
    """An error the helper raised, as JSON: an `OSError`'s errno and path, or ours."""
    if isinstance(exc, errors.FsToolsError):
        return ["fstools", type(exc).__name__, vars(exc)]
    if isinstance(exc, OSError):
        return ["os", exc.errno or errno.EIO, exc.filename]
    return ["failed", type(exc).__name__, str(exc)]


def raised(record: list[Any]) -> Exception:
    """The exception `error_record` describes, as the helper raised it.

    An `OSError` comes back as its built-in subclass for its errno (`FileNotFoundError`
    for ENOENT, ...), naming the virtual path. Anything unexpected is a `RuntimeError`.
    """
    kind = record[0]
    if kind == "os":
        code, path = record[1], record[2]
        return OSError(code, os.strerror(code), path)
    if kind == "fstools":
        cls = getattr(errors, record[1], None)
        if isinstance(cls, type) and issubclass(cls, errors.FsToolsError):
            values = record[2]
            if cls is errors.PartialWrite:
                values = {**values, "written": tuple(values["written"])}
                values["cause"] = raised(values["cause"])
            return cls(**values)
    return RuntimeError(f"the sandbox helper failed: {record[1]}: {record[-1]}")


# ----- the helper's side ----------------------------------------------------------------------


def main(argument: str, folder: str) -> None:
    """Run the request in `argument` and print its framed reply.

    Args:
        argument: The request (base64), or `@<name>` of a request file in `folder`.
        folder: The helper's private folder in the sandbox.
    """
    inline = 0
    try:
        request = _request_bytes(argument, folder)
        header, data = unpack(request)
        inline = header.get("inline", 0)
        for name in header.get("drop", ()):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, os.path.basename(name)))
        disk = Disk(header["root"], folder)
        disk.settle_commands()
        with _turn(folder, header["op"]):
            disk.settle()
            value, out = _OPERATIONS[header["op"]](disk, *header.get("args", ()), data=data)
        reply = pack({"ok": value}, out)
        if header["op"] == "fetch":
            inline = 0  # a part of a reply is never spilled again
    except _Unread:  # an upload that did not reach the folder
        reply = pack({"unread": True})
    except Exception as exc:  # noqa: BLE001 - every failure is the reply
        reply = pack({"error": error_record(exc)})
    if inline and len(reply) * 4 // 3 > inline:
        reply = pack({"file": _spill(folder, reply)})
    sys.stdout.write(framed(reply) + "\n")
    sys.stdout.flush()


def serve(folder: str, digest: str, idle: float) -> None:
    """After a run, start the resident server for the next ones, unless one runs.

    It is this process, forked (`backends.sandbox.resident`), with what the
    operations import loaded once: the lock's `fcntl` and the journal of batches.

    Args:
        folder: The helper's private folder.
        digest: The program's digest (a server per version of the package).
        idle: Seconds the server waits for a request before it ends.
    """
    import fcntl  # noqa: F401, PLC0415 - loaded once for every worker

    from langchain_fstools.backends import journal  # noqa: F401, PLC0415 - the same
    from langchain_fstools.backends.sandbox import resident  # noqa: PLC0415 - starts only

    resident.start(folder, digest, idle, main)


_COMMAND_OPERATIONS: Final = frozenset({"command_run", "command_commit"})
_WRITING_OPERATIONS: Final = frozenset({"write", "write_and_delete", "delete", "mkdir", "move"})


@contextlib.contextmanager
def _turn(folder: str, op: str) -> Iterator[None]:
    """Wait for the workspace's turn: a command alone, writes beside each other.

    A command runs in place and puts back what it changed (`command_helper`), so a
    write made while it runs would be taken as the command's and undone: a command
    holds `workspace.lock` in the private folder exclusively, each write shares it,
    and reads take nothing. The lock is the kernel's (`flock`), released if the
    process dies.
    """
    if op not in _COMMAND_OPERATIONS and op not in _WRITING_OPERATIONS:
        yield
        return
    import fcntl  # noqa: PLC0415 - only writes and commands take the lock

    descriptor = os.open(os.path.join(folder, "workspace.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if op in _COMMAND_OPERATIONS else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)


class _Unread(Exception):
    """The request file is not in the folder: the provider's upload went elsewhere."""


def _request_bytes(argument: str, folder: str) -> bytes:
    if not argument.startswith(REQUEST_FILE):
        return binascii.a2b_base64(argument, strict_mode=True)
    path = os.path.join(folder, os.path.basename(argument[1:]))
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise _Unread from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _spill(folder: str, reply: bytes) -> str:
    """Write a long reply to the private folder; its name."""
    name = f"out-{os.urandom(8).hex()}"
    descriptor = os.open(os.path.join(folder, name), disk_operations.TEMP_FLAGS, 0o600)
    try:
        disk_operations.write_all(descriptor, reply)
    finally:
        os.close(descriptor)
    return name


class Disk:
    """The sandbox's disk below the workspace root, as `LocalBackend` sees its own.

    Args:
        root: The workspace root, as the user named it; it must exist.
        folder: The helper's private folder.
    """

    def __init__(self, root: str, folder: str) -> None:
        """Hold the root's real path (links resolved) for walks beneath it."""
        self.folder = folder
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise errors.StoreUnavailable(
                "sandbox",
                f"the workspace root {root} is not a directory in the sandbox",
                lasting=True,
            )
        self.beneath = Beneath(real, fast=False)
        raw = os.fsencode(real)
        self.journal_folder = os.path.join(
            folder, f"journal-{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}"
        )
        """The journal of this root's batches (`_write`), named by 64 bits of checksums:
        one folder per workspace root, with no `hashlib` to load."""

    def journal(self) -> Journal:
        """The journal of this workspace's multi-file writes (`backends.journal`)."""
        from langchain_fstools.backends.journal import Journal  # noqa: PLC0415 - batches only

        return Journal(self.beneath.root, durable=True, folder=self.journal_folder)

    def settle(self) -> None:
        """Finish or undo the batches a killed helper left, before anything else is done.

        One listing when there are none; the journal is loaded only when there are.
        """
        try:
            if not os.listdir(self.journal_folder):
                return
        except FileNotFoundError:
            return
        self.journal().recover(self.beneath, version_of)

    def settle_commands(self) -> None:
        """Put back a command, or clear up a commit, whose helper was killed, first.

        One `lstat` when there is none; else (`command_helper.recover`) under the
        workspace's lock held alone, which a live command or commit holds itself.
        """
        if not os.path.lexists(os.path.join(self.folder, "commands", "running.json")):
            return
        from langchain_fstools.backends.sandbox import command_helper  # noqa: PLC0415

        if command_helper.pending(self.folder):
            with _turn(self.folder, "command_run"):
                command_helper.recover(self.folder)


# ----- the operations: (disk, *args, data=bytes) -> (JSON value, bytes) -------------------------
# The file operations are `backends.disk_operations`', as on local disk.

if TYPE_CHECKING:
    Reply = tuple[Any, bytes]


def _stat(disk: Disk, virtual: str, peek: int = 0, *, data: bytes) -> Reply:
    """Metadata of `virtual`; with `peek`, a regular file's first bytes too, as found.

    The bytes and the metadata then come from one open file, so they agree.
    """
    del data
    if not peek:
        return info_record(disk_operations.stat(disk.beneath, virtual)), b""
    with paths.virtual_errors(virtual), disk.beneath.place(virtual) as place:
        status = disk_operations.existing(place)
        if not stat_module.S_ISREG(status.st_mode):
            return info_record(disk_operations.file_info(virtual, status)), b""
        descriptor = os.open(place.name, disk_operations.READ_FLAGS, dir_fd=place.directory)
        try:
            status = os.fstat(descriptor)
            regular = stat_module.S_ISREG(status.st_mode)
            head = disk_operations.pread(descriptor, 0, peek) if regular else b""
            return info_record(disk_operations.file_info(virtual, status)), head
        finally:
            os.close(descriptor)


def _exists(disk: Disk, virtual: str, data: bytes) -> Reply:
    try:
        _stat(disk, virtual, data=data)
    except (FileNotFoundError, NotADirectoryError):
        return False, b""
    return True, b""


def _read(  # noqa: PLR0917 - a request's arguments, in order
    disk: Disk, virtual: str, start: int, size: int | None, expected: str | None, data: bytes
) -> Reply:
    """Bytes of a regular file, whole or a range; with `expected`, only at that version."""
    del data
    return None, disk_operations.read(disk.beneath, virtual, start, size, expected)


def _list(disk: Disk, virtual: str, after: str | None, limit: int | None, data: bytes) -> Reply:
    del data
    descriptor = disk_operations.open_directory(disk.beneath, virtual)
    try:
        listed: list[list[Any]] = []
        for info in disk_operations.entries(disk.beneath, virtual, descriptor, after):
            if limit is not None and len(listed) >= limit:
                break
            listed.append(info_record(info))
        return listed, b""
    finally:
        os.close(descriptor)


def _walk(disk: Disk, virtual: str, data: bytes) -> Reply:
    """Every entry below `virtual`, depth first, sorted; linked directories not entered."""
    del data
    descriptor = disk_operations.open_directory(disk.beneath, virtual)
    try:
        found = disk_operations.walk(disk.beneath, virtual, descriptor)
        return [info_record(info) for info in found], b""
    finally:
        os.close(descriptor)


def _resolve(disk: Disk, virtual: str, data: bytes) -> Reply:
    del data
    return disk_operations.resolve(disk.beneath, virtual), b""


def _delete(disk: Disk, virtual: str, data: bytes) -> Reply:
    del data
    disk_operations.delete(disk.beneath, virtual)
    return None, b""


def _mkdir(disk: Disk, virtual: str, data: bytes) -> Reply:
    del data
    disk_operations.mkdir(disk.beneath, virtual)
    return None, b""


def _move(disk: Disk, origin: str, target: str, data: bytes) -> Reply:
    """Rename as POSIX `rename` does, creating the target's parents (`LocalBackend.move`)."""
    del data
    return info_record(disk_operations.move(disk.beneath, origin, target)), b""


def _write(
    disk: Disk, writes: list[list[Any]], deletions: Sequence[list[Any]] = (), data: bytes = b""
) -> Reply:
    """Write files and remove entries all or nothing: stage, verify, apply, undo on failure.

    Each write is `[virtual, expected version or None, size]`; their contents follow
    one another in `data`. Each deletion is `[virtual, expected version or None]`: a
    file, a link (never its target) or an empty directory. Every write is staged first
    (a full disk changes nothing); under the write locks of every folder touched (those
    every writer of this package takes, `backends.write_locks`, so of two writers that
    read one version, one wins), every version is checked (a conflict or a missing
    entry changes nothing); then the files are renamed into place and the entries
    removed, a replaced file kept under a hard link and a removed file or link under a
    temporary name beside it until the end. A step that fails (a directory that is not
    empty) puts back every step before it: the removed entries, then the replaced files.

    A batch of two changes or more is journaled (`backends.journal`, as on local disk,
    in `Disk.journal`): a helper killed among its steps (the provider's timeout, an OOM
    kill) leaves a record that the next helper run on the workspace settles first
    (`Disk.settle`): the set is then whole, or absent if the kill came before every
    file was staged. Limit: a helper killed while undoing a failed batch (a double
    fault) may leave it part done.
    """
    journal = disk.journal() if len(writes) + len(deletions) > 1 else None
    intent = None
    made = _missing_folders(disk, writes) if journal is not None else []
    if journal is not None:
        from langchain_fstools.backends.journal import Target  # noqa: PLC0415 - batches only

        intent = journal.begin([Target(w[0], follow=True) for w in writes], made)
    batch = _Batch()
    try:
        batch.all.extend(_stage_all(disk, writes, data, intent))
        batch.all.extend(_removals(disk, deletions, intent))
        with directories_locked(batch.folders(), DEFAULT_LOCK_TIMEOUT):
            batch.check()
            if journal is not None and intent is not None:
                journal.commit(intent, batch.steps())
            batch.apply()
        batch.done()
    except Exception:
        if journal is not None and intent is not None:
            if batch.settled:  # no step taken, or every one undone: the folders made go too
                batch.close()
                _remove_folders(disk, made)
                journal.end(intent)
            else:
                journal.release(intent)  # left for the next run, which finishes the batch
        raise
    except BaseException:
        if journal is not None and intent is not None:
            journal.release(intent)  # the next run finishes the batch
        raise
    finally:
        batch.close()
    if journal is not None and intent is not None:
        journal.finish(intent)
    return [info_record(entry.info()) for entry in batch.staged], b""


def _missing_folders(disk: Disk, writes: list[list[Any]]) -> list[str]:
    """The folders a batch's writes make (parents first), which a roll-back removes."""
    missing: dict[str, None] = {}
    for virtual, _, _ in writes:
        with (
            contextlib.suppress(OSError, errors.OutsideRoot),
            disk.beneath.place(virtual, partial=True) as place,
        ):
            folder = place.virtual[: len(place.virtual) - len(place.name)].rstrip("/") or "/"
            for name in place.name.split("/")[:-1]:
                folder = paths.join(folder, name)
                missing[folder] = None
    return list(missing)


def _remove_folders(disk: Disk, folders: list[str]) -> None:
    """Remove the folders a failed batch made, deepest first, where they are empty."""
    for folder in reversed(folders):
        with (
            contextlib.suppress(OSError, errors.OutsideRoot),
            disk.beneath.place(folder, follow=False) as place,
        ):
            os.rmdir(place.name, dir_fd=place.directory)


class _Batch:
    """The staged writes and the removals of one `_write`, and which of its steps are taken."""

    def __init__(self) -> None:
        self.all: list[_Staged | _Removal] = []
        """Every step, in the order they are taken: renames, then removals."""
        self.settled = True
        """Whether no step is taken, or every step taken was undone."""

    @property
    def staged(self) -> list[_Staged]:
        """The writes, in order."""
        return [step for step in self.all if isinstance(step, _Staged)]

    def folders(self) -> dict[int, str]:
        """The folders the batch changes, by descriptor (for their write locks)."""
        return {step.place.directory: step.virtual for step in self.all}

    def check(self) -> None:
        """Raise unless every target and removed entry is at its expected version."""
        for step in self.all:
            step.check()

    def steps(self) -> Steps:
        """The journal's record of the visible steps (what is kept aside named beforehand)."""
        from langchain_fstools.backends.journal import Placement, Removal, Steps  # noqa: PLC0415

        return Steps(
            removals=[Removal(r.virtual, r.version) for r in self.all if isinstance(r, _Removal)],
            placements=[Placement(s.target(), s.temp_path(), follow=False) for s in self.staged],
            kept=[step.kept_path() for step in self.all],
        )

    def apply(self) -> None:
        """Rename every file into place, then remove every entry; undo all if one fails."""
        self.settled = False
        done: list[_Staged | _Removal] = []
        for step in self.all:
            try:
                step.apply()
            except OSError as exc:
                for taken in reversed(done):
                    taken.undo()
                self.settled = True
                raise os_error(type(exc), exc.errno or errno.EIO, step.virtual) from None
            done.append(step)

    def done(self) -> None:
        """Every step is taken: what was kept aside goes, and the folders are synced."""
        for step in self.all:
            step.forget()
        for directory in self.folders():
            disk_operations.fsync_directory(directory)

    def close(self) -> None:
        """Release every place (a temporary not renamed is removed)."""
        for step in self.all:
            step.close()


def _removals(disk: Disk, deletions: Sequence[list[Any]], intent: Intent | None) -> list[_Removal]:
    """A batch's deletions, each walked to (`InvalidPath` for the root)."""
    if any(virtual == paths.ROOT for virtual, _ in deletions):
        raise errors.InvalidPath(paths.ROOT, "the workspace root cannot be deleted")
    removals: list[_Removal] = []
    try:
        for number, (virtual, expected) in enumerate(deletions):
            with paths.virtual_errors(virtual):
                place = disk.beneath.place(virtual, follow=False)
            removals.append(_Removal(virtual, expected, place, _tag(intent, f"d{number}")))
    except BaseException:
        for removal in removals:
            removal.close()
        raise
    return removals


def _tag(intent: Intent | None, step: int | str) -> str | None:
    """The tag of a journaled batch's temporary for `step` (None: a random one)."""
    return intent.tag(step) if intent is not None else None


class _Removal:
    """One deletion of a batch: its place, and what it removed until the batch is done."""

    def __init__(self, virtual: str, expected: str | None, place: Place, tag: str | None) -> None:
        self.virtual, self.expected, self.place = virtual, expected, place
        self.aside = temporary_name(place.name, tag)
        self.kept = ""
        self.mode: int | None = None
        self.version: str | None = None
        """The version the entry had when checked (None: a directory)."""

    def check(self) -> None:
        """Raise unless the entry exists, at its expected version when one is given."""
        current = _lstat(self.place)
        if current is None:
            raise os_error(FileNotFoundError, errno.ENOENT, self.virtual)
        found = version_of(current)
        if self.expected is not None and found != self.expected:
            raise errors.VersionConflict(self.virtual, self.expected, found)
        self.version = None if stat_module.S_ISDIR(current.st_mode) else found

    def kept_path(self) -> str:
        """The virtual path a removed file or link is kept under until the end."""
        return paths.join(paths.parent(self.place.virtual), self.aside)

    def apply(self) -> None:
        """Remove an empty directory, or move a file or link aside (kept until the end)."""
        directory, name = self.place.directory, self.place.name
        current = os.stat(name, dir_fd=directory, follow_symlinks=False)
        if stat_module.S_ISDIR(current.st_mode):
            os.rmdir(name, dir_fd=directory)
            self.mode = stat_module.S_IMODE(current.st_mode)
            return
        os.rename(name, self.aside, src_dir_fd=directory, dst_dir_fd=directory)
        self.kept = self.aside

    def undo(self) -> None:
        """Put the entry back (an empty directory is made again, with its mode)."""
        directory, name = self.place.directory, self.place.name
        if self.kept:
            os.rename(self.kept, name, src_dir_fd=directory, dst_dir_fd=directory)
            self.kept = ""
        elif self.mode is not None:
            os.mkdir(name, self.mode, dir_fd=directory)
            self.mode = None

    def forget(self) -> None:
        """The batch is done: what was moved aside goes."""
        if self.kept:
            os.unlink(self.kept, dir_fd=self.place.directory)
            self.kept = ""

    def close(self) -> None:
        """Release the place (after a failure, what was kept was put back)."""
        self.place.close()


def _stage_all(
    disk: Disk, writes: list[list[Any]], data: bytes, intent: Intent | None
) -> list[_Staged]:
    """Stage every write; a full disk is `DiskFull`, with nothing left staged."""
    staged: list[_Staged] = []
    offset = 0
    try:
        for number, (virtual, expected, size) in enumerate(writes):
            content = data[offset : offset + size]
            staged.append(_stage(disk, virtual, expected, content, _tag(intent, number)))
            offset += size
    except OSError as exc:
        for entry in staged:
            entry.close()
        if exc.errno not in {errno.ENOSPC, errno.EDQUOT}:
            raise
        free = os.statvfs(disk.beneath.root)
        raise errors.DiskFull(exc.filename, len(data), free.f_bavail * free.f_frsize) from None
    except BaseException:
        for entry in staged:
            entry.close()
        raise
    return staged


class _Staged:
    """One file of a batch: its place, its temporary file, and the file it replaces."""

    def __init__(self, virtual: str, expected: str | None, place: Place, tag: str | None) -> None:
        self.virtual, self.expected, self.place = virtual, expected, place
        self.temp = ""
        self.aside = temporary_name(place.name, f"{tag}k" if tag else None)
        self.kept = ""
        self.status: os.stat_result | None = None

    def check(self) -> None:
        """Raise `VersionConflict` unless the target is at its expected version."""
        place = self.place
        disk_operations.check_version(self.virtual, place.directory, place.name, self.expected)

    def target(self) -> str:
        """The virtual path the file is renamed onto (a link on the way followed)."""
        return self.place.virtual

    def temp_path(self) -> str:
        """The virtual path of the temporary file."""
        return paths.join(paths.parent(self.place.virtual), self.temp)

    def kept_path(self) -> str:
        """The virtual path the replaced file is kept under until the end."""
        return paths.join(paths.parent(self.place.virtual), self.aside)

    def apply(self) -> None:
        """Keep the replaced file under a hard link, then rename the temporary over it.

        Called under the folders' write locks, which is when the new file's status is
        taken: the file this write made, never one another writer renamed over it since.
        """
        directory, name = self.place.directory, self.place.name
        if _lstat(self.place) is not None:
            os.link(name, self.aside, src_dir_fd=directory, dst_dir_fd=directory)
            self.kept = self.aside
        os.rename(self.temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        self.temp = ""
        self.status = os.stat(name, dir_fd=directory, follow_symlinks=False)

    def undo(self) -> None:
        """Put the replaced file back (or remove the new one)."""
        directory, name = self.place.directory, self.place.name
        if self.kept:
            os.rename(self.kept, name, src_dir_fd=directory, dst_dir_fd=directory)
            self.kept = ""
        else:
            os.unlink(name, dir_fd=directory)

    def forget(self) -> None:
        """The batch is done: the replaced file's hard link goes."""
        if self.kept:
            os.unlink(self.kept, dir_fd=self.place.directory)
            self.kept = ""

    def info(self) -> FileInfo:
        """The written file's metadata (as renamed into place), under the path the write named."""
        assert self.status is not None  # noqa: S101 - only after `apply`
        return disk_operations.file_info(self.virtual, self.status)

    def close(self) -> None:
        """Remove what is left (a temporary not renamed, a kept file), release the place."""
        for name in (self.temp, self.kept):
            if name:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=self.place.directory)
        self.temp = self.kept = ""
        self.place.close()


def _stage(
    disk: Disk, virtual: str, expected: str | None, content: bytes, tag: str | None
) -> _Staged:
    """Walk to `virtual` (creating parents) and write its temporary file beside it."""
    with paths.virtual_errors(virtual):
        place = disk.beneath.place(virtual, create=True)
    entry = _Staged(virtual, expected, place, tag)
    try:
        with paths.virtual_errors(virtual):
            current = disk_operations.file_slot(virtual, place)
            descriptor, entry.temp = disk_operations.create_temp(
                place.directory, place.name, tag, private=current is not None
            )
            try:
                disk_operations.write_all(descriptor, content)
                if current is not None:
                    disk_operations.copy_owner_and_mode(descriptor, current)
                disk_operations.stamp(descriptor, current)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
    except BaseException:
        entry.close()
        raise
    return entry


def _probe(disk: Disk, data: bytes) -> Reply:
    """What the sandbox offers: its Python, its machine, and ripgrep on its PATH."""
    del disk, data
    import shutil  # noqa: PLC0415 - only the probe needs it

    offers = {"python": list(sys.version_info[:3]), "machine": os.uname().machine}
    return offers | {"rg": shutil.which("rg")}, b""


def _search(disk: Disk, request: dict[str, Any], ripgrep: str | None, data: bytes) -> Reply:
    """A glob or grep (`search.host`'s request and records), by `ripgrep` or the engine.

    Its root is checked first, as the tools' `stat` checks it (`search.roots`).
    """
    del data
    import site  # noqa: PLC0415 - only searches load the engine and what it may use

    from langchain_fstools.core import calls  # noqa: PLC0415 - the same
    from langchain_fstools.search import host  # noqa: PLC0415 - the same
    from langchain_fstools.search.roots import checked_root  # noqa: PLC0415 - the same

    sys.path.extend(site.getsitepackages())  # compiled extensions the engine may use (re2)

    listing = request["op"] == "list"
    directory = request["directory"] if listing else request["search"]["directory"]
    calls.run(checked_root(directory, listing=listing), _RootCalls(disk))
    native = None
    if ripgrep:
        from langchain_fstools.search.ripgrep import RipgrepSearch  # noqa: PLC0415 - the same

        native = RipgrepSearch(ripgrep, functools.partial(_real_directory, disk.beneath.root))
    out = io.BytesIO()
    host.main({**request, "root": disk.beneath.root, "whole_seconds": False}, out, native)
    return None, out.getvalue()


class _RootCalls:
    """The backend calls a search root's check makes (`search.roots`), on the sandbox's disk."""

    calls_may_block = False

    def __init__(self, disk: Disk) -> None:
        self.disk = disk

    def stat(self, virtual: str) -> FileInfo:
        """As `SandboxBackend.stat`."""
        return disk_operations.stat(self.disk.beneath, virtual)

    def read_bytes(self, virtual: str, start: int = 0, size: int | None = None) -> bytes:
        """As `SandboxBackend.read_bytes`."""
        return disk_operations.read(self.disk.beneath, virtual, start, size, None)


def _real_directory(root: str, virtual: str) -> Path:
    """The real path of a virtual directory, for ripgrep; `OutsideRoot` if it leaves."""
    from pathlib import Path  # noqa: PLC0415 - only searches pay for pathlib's import

    real = real_path(os.path.join(root, virtual.lstrip("/")))
    if not is_inside(root, real):
        raise errors.OutsideRoot(virtual)
    return Path(real)


def _commands(name: str) -> Callable[..., Reply]:
    """The operation `name` of `command_helper`, imported only when a command runs.

    A file operation does not pay for its imports.
    """

    def operation(*args: Any, **keywords: Any) -> Reply:
        from langchain_fstools.backends.sandbox import command_helper  # noqa: PLC0415

        return getattr(command_helper, name)(*args, **keywords)  # type: ignore[no-any-return]

    return operation


def _processes(name: str) -> Callable[..., Reply]:
    """The operation `name` of `process_helper`, imported only when a process is asked for."""

    def operation(*args: Any, **keywords: Any) -> Reply:
        from langchain_fstools.backends.sandbox import process_helper  # noqa: PLC0415

        return getattr(process_helper, name)(*args, **keywords)  # type: ignore[no-any-return]

    return operation


def _fetch(disk: Disk, name: str, start: int, size: int, data: bytes) -> Reply:
    """Part of a reply spilled to the private folder (`disk.folder`)."""
    del data
    with open(os.path.join(disk.folder, os.path.basename(name)), "rb") as file:
        file.seek(start)
        return None, file.read(size)


_OPERATIONS: dict[str, Callable[..., Reply]] = {
    "fetch": _fetch,
    "search": _search,
    "probe": _probe,
    "stat": _stat,
    "exists": _exists,
    "read": _read,
    "list": _list,
    "walk": _walk,
    "resolve": _resolve,
    "delete": _delete,
    "mkdir": _mkdir,
    "move": _move,
    "write": _write,
    "write_and_delete": _write,
    "command_probe": _commands("probe"),
    "command_run": _commands("run"),
    "command_commit": _commands("commit"),
    "process_start": _processes("start"),
    "process_read": _processes("read"),
    "process_write": _processes("write"),
    "process_kill": _processes("kill"),
    "process_wait": _processes("wait"),
    "process_list": _processes("listing"),
    "process_forget": _processes("forget"),
    "process_accepts": _processes("accepts"),
    "process_close": _processes("close"),
}
"""Every operation the helper runs, by the name a request gives (commands' from
`backends.sandbox.command_helper`, background processes' from
`backends.sandbox.process_helper`)."""


# ----- small helpers ----------------------------------------------------------------------------


def _lstat(place: Place) -> os.stat_result | None:
    try:
        return os.stat(place.name, dir_fd=place.directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


__all__ = [
    "CLOSE",
    "OPEN",
    "REQUEST_FILE",
    "Disk",
    "error_record",
    "framed",
    "frames",
    "info_of",
    "info_record",
    "main",
    "pack",
    "raised",
    "serve",
    "unpack",
]
