"""Intent records that make a multi-file commit all or nothing across a crash.

A commit of several files on local disk (`LocalBackend.write_many`, `LocalBackend.commit`)
or in a sandbox (its helper's batch writes, `backends.sandbox.helper`) goes in three
stages:

1. Staging. A *staging record* naming every target (and the commit's new folders) is
   put in the journal folder, locked; the new folders are made (empty, they are all a
   reader may see), then each new content is written, as `.{name}.{token}-{n}.fstools-tmp`,
   in its target's folder (or, where that folder does not exist yet, in its deepest
   existing ancestor) and synced. A full disk here changes nothing: what was staged and
   made goes again.
2. The commit point. A *commit record* lists the visible steps in their order
   (removals, deepest first; new folders made; temporaries renamed onto their targets;
   folders given their modes, deepest first); it is synced with the journal folder.
3. The visible steps; then both records are removed.

Whoever uses the workspace next (`Journal.recover`, from any `LocalBackend` on the same
root, in any process) settles the records no live commit holds: each commit holds a
`flock` on its records until it ends, and a killed process releases it. A commit record
is rolled forward (the staged files are complete: every step not yet done is done), a
staging record alone is rolled back (the new folders removed again when empty); either
way the record's temporaries are removed.
So the workspace holds the whole set or none of it once the next call starts.

A commit may be given a receipt name (a branch merge's): its commit record then carries
it, and where the commit ends (or is rolled forward) the record becomes the receipt, in
`{folder}.receipts`, listing the paths the commit changed (`Journal.receipt`). So a
receipt exists exactly when the commit took effect, even across a crash: a merge
resumed after its worker died asks for it instead of merging again. Receipts older than
`RECEIPT_SECONDS` are removed when a new one is written.

The journal folder is private: `{tempdir}/fstools-journal-{uid}/{digest of the root}` on
local disk, one given by the caller in a sandbox (beside its helper); made with mode 0700,
and refused unless this user owns it and no one else may use it.

A sandbox's helper imports this module for a multi-file write only, and for `recover`
when the folder holds records: it imports nothing a short-lived process would pay for
(`typing`, `logging`, `hashlib`, `secrets`, `tempfile` are not loaded on those paths).
Limits: where the temporary folder does not survive a reboot (a tmpfs `/tmp`), a power
cut during a commit's visible steps leaves them half done; the staging record is not
synced, so a power cut while staging may leave temporaries behind. A killed process
never does either.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import stat as stat_module
import time
from dataclasses import dataclass, field

from langchain_fstools.backends.temporaries import temporary_name
from langchain_fstools.core import paths
from langchain_fstools.core.private_folders import is_private
from langchain_fstools.errors import OutsideRoot

TYPE_CHECKING = False  # `typing` is not imported: the sandbox's helper would pay for it
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, Final

    from langchain_fstools.backends.beneath import Beneath, Place

_STAGING: Final = ".staging"
_COMMIT: Final = ".commit"
_RECEIPTS: Final = ".receipts"
"""Suffix of the journal folder's sibling holding receipts."""
_PART: Final = ".part"
"""Suffix of a record being written (renamed to its name once whole and locked)."""

_STILL_NS: Final = 1_000_000_000
"""How long the folder must have been unchanged for its modification time to tell a change
(the kernel stamps with a coarse clock: two changes within a tick may share one)."""

_PART_SECONDS: Final = 60.0
"""Age after which a part no record followed is a killed commit's (it lives microseconds)."""

RECEIPT_SECONDS: Final = 7 * 24 * 3600.0
"""How long a commit's receipt is kept."""

_RECORD_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Target:
    """A file a commit stages: its path, and whether a link at it is written through."""

    path: str
    follow: bool


@dataclass(frozen=True, slots=True)
class Removal:
    """An entry a commit removes, if it is still the one the set was read against."""

    path: str
    version: str | None
    """Its version when the set was read; None for a directory (removed when empty)."""


@dataclass(frozen=True, slots=True)
class Folder:
    """A folder a commit makes (`added`) or gives a mode."""

    path: str
    added: bool
    mode: int | None


@dataclass(frozen=True, slots=True)
class Placement:
    """A staged temporary (its virtual path) that a commit renames onto `path`."""

    path: str
    temp: str
    follow: bool


@dataclass(frozen=True, slots=True)
class Steps:
    """A commit's visible steps, in the order they are taken."""

    removals: Sequence[Removal] = ()
    folders: Sequence[Folder] = ()
    placements: Sequence[Placement] = ()
    receipt: str | None = None
    """The name of the receipt the commit leaves when it ends (`Journal.finish`)."""
    kept: Sequence[str] = ()
    """Entries the commit keeps aside until it ends, to undo its steps on a failure (a
    sandbox helper's: a replaced file's hard link, a removed file renamed aside); a
    roll-forward removes them."""


@dataclass(slots=True)
class Intent:
    """One commit in progress: its token and the locked descriptors of its records."""

    token: str
    folder: str
    held: list[int] = field(default_factory=list)
    record: dict[str, Any] | None = None
    """Its commit record, once put."""

    def tag(self, number: int | str) -> str:
        """The tag of the commit's temporary for its `number`-th target (or another step's)."""
        return f"{self.token}-{number}"


class Journal:
    """The intent records of one workspace's multi-file commits.

    Args:
        root: The workspace's real host path.
        durable: Sync the commit record and the steps taken when rolling forward.
        folder: The journal folder (its parent must be private too). Default: one
            per root in this user's temporary folder (module docstring).
    """

    def __init__(self, root: str, *, durable: bool, folder: str | None = None) -> None:
        """Name the workspace; the folder is found on first use (never on an event loop)."""
        self._root = root
        self._durable = durable
        self._folder = folder
        self._empty_at: int | None = None
        """The folder's modification time when it was last found empty."""

    @functools.cached_property
    def folder(self) -> str:
        """This workspace's journal folder (which may not exist yet)."""
        if self._folder is not None:
            return self._folder
        import hashlib  # noqa: PLC0415 - a sandbox's helper names its folder and spares these
        import tempfile  # noqa: PLC0415 - the same

        digest = hashlib.sha256(os.fsencode(self._root)).hexdigest()[:32]
        return os.path.join(tempfile.gettempdir(), f"fstools-journal-{os.getuid()}", digest)

    def begin(self, targets: Sequence[Target], folders: Sequence[str] = ()) -> Intent:
        """Put and lock the staging record of a commit, before anything is staged.

        Args:
            targets: The files the commit stages.
            folders: The new folders made before staging (parents first), which a
                roll-back removes again (when empty).
        """
        with _unnamed():
            intent = Intent(os.urandom(6).hex(), self._made())
        try:
            record = {"targets": [[t.path, t.follow] for t in targets], "folders": list(folders)}
            with _unnamed():
                self._put(intent, _STAGING, record)
        except BaseException:
            self.release(intent)
            raise
        return intent

    def commit(self, intent: Intent, steps: Steps) -> None:
        """Put the commit record (synced): from here on, the commit is rolled forward."""
        record = {
            "removals": [[r.path, r.version] for r in steps.removals],
            "folders": [[f.path, f.added, f.mode] for f in steps.folders],
            "placements": [[p.path, p.temp, p.follow] for p in steps.placements],
            "receipt": steps.receipt,
            "kept": list(steps.kept),
        }
        with _unnamed():
            if steps.receipt is not None:
                self._receipts()
            self._put(intent, _COMMIT, record, sync=self._durable)
        intent.record = record

    def finish(self, intent: Intent) -> None:
        """End a commit whose every visible step is taken: its receipt, if named, is left."""
        if intent.record is not None:
            with _unnamed():
                self._leave_receipt(intent.record)
        self.end(intent)

    def receipt(self, name: str) -> list[str] | None:
        """The paths the commit with receipt `name` changed; None if none took effect."""
        try:
            with open(os.path.join(self.folder + _RECEIPTS, _receipt_file(name)), "rb") as kept:
                found = json.loads(kept.read())
        except (FileNotFoundError, ValueError):
            return None
        return [str(path) for path in found] if isinstance(found, list) else None

    def end(self, intent: Intent) -> None:
        """Remove the commit's records: it is done, or failed with nothing left to finish."""
        for suffix in (_COMMIT, _STAGING):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(intent.folder, intent.token + suffix))
        self.release(intent)

    @staticmethod
    def release(intent: Intent) -> None:
        """Unlock the records, leaving them for whoever uses the workspace next."""
        while intent.held:
            os.close(intent.held.pop())

    def recover(self, beneath: Beneath, version: Callable[[os.stat_result], str]) -> None:
        """Roll forward or back every commit whose process died, and remove its temporaries.

        A record that cannot be settled (damaged, or a step the disk refuses) is logged
        and left for the next call; the call itself goes on.

        Args:
            beneath: The workspace.
            version: The version token of an entry's `lstat`, as the backend spells it.
        """
        try:
            seen = os.stat(self.folder).st_mtime_ns
        except FileNotFoundError:
            return
        if seen == self._empty_at:
            return
        if not all(is_private(level) for level in (os.path.dirname(self.folder), self.folder)):
            _logger().warning("the journal folder is not private: its records are not read")
            return
        names = os.listdir(self.folder)
        if not names and time.time_ns() - seen > _STILL_NS:
            self._empty_at = seen  # unchanged since: nothing to settle, no listing needed
        for token in sorted({name.partition(".")[0] for name in names}):
            try:
                self._settle(token, beneath, version)
            except (OSError, OutsideRoot, ValueError, TypeError, KeyError):
                _logger().warning("an unfinished commit could not be settled", exc_info=True)

    def _made(self) -> str:
        """The journal folder, made private if missing; `PermissionError` if it is not private."""
        folder = self.folder
        for level in (os.path.dirname(folder), folder):
            with contextlib.suppress(FileExistsError):
                os.mkdir(level, 0o700)
            if not is_private(level):
                raise PermissionError(errno.EPERM, "the journal folder is not private", paths.ROOT)
        return folder

    def _put(
        self, intent: Intent, suffix: str, record: dict[str, Any], *, sync: bool = False
    ) -> None:
        """Write a record under a part name, lock it, sync it if asked, then give it its name."""
        name = os.path.join(intent.folder, intent.token + suffix)
        view = memoryview(json.dumps(record).encode())
        descriptor = os.open(name + _PART, _RECORD_FLAGS, 0o600)
        intent.held.append(descriptor)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        while view:
            view = view[os.write(descriptor, view) :]
        if sync:
            os.fsync(descriptor)
        os.rename(name + _PART, name)
        if sync:
            _fsync_folder(intent.folder)

    def _settle(
        self, token: str, beneath: Beneath, version: Callable[[os.stat_result], str]
    ) -> None:
        """Settle one commit's records, unless its process still holds them."""
        held: list[int] = []
        try:
            records: dict[str, bytes] = {}
            for suffix in (_COMMIT, _STAGING):
                try:
                    descriptor = os.open(os.path.join(self.folder, token + suffix), _OPEN_FLAGS)
                except FileNotFoundError:
                    continue
                held.append(descriptor)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # a live commit
                records[suffix] = _read_all(descriptor)
            if _COMMIT in records:
                record = json.loads(records[_COMMIT])
                _forward(beneath, record, version)
                if self._durable:
                    os.sync()
                self._leave_receipt(record)
            elif _STAGING in records:
                _back(beneath, token, json.loads(records[_STAGING]))
            self._remove(token, settled=bool(records))
        finally:
            for descriptor in held:
                os.close(descriptor)

    def _receipts(self) -> str:
        """The receipts folder, made private if missing; `PermissionError` if it is not."""
        folder = self.folder + _RECEIPTS
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        if not is_private(folder):
            raise PermissionError(errno.EPERM, "the journal folder is not private", paths.ROOT)
        return folder

    def _leave_receipt(self, record: dict[str, Any]) -> None:
        """Leave the receipt a taken commit's record names (if any), sweeping old ones."""
        name = record.get("receipt")
        if not isinstance(name, str):
            return
        changed = [r[0] for r in record["removals"]] + [p[0] for p in record["placements"]]
        folder = self._receipts()
        now = time.time()
        for entry in os.scandir(folder):  # old receipts, and parts a killed commit left
            age = _PART_SECONDS if entry.name.endswith(_PART) else RECEIPT_SECONDS
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < now - age:
                    os.unlink(entry.path)
        part = os.path.join(folder, f".{os.urandom(6).hex()}{_PART}")
        descriptor = os.open(part, _RECORD_FLAGS, 0o600)
        try:
            data = memoryview(json.dumps(changed).encode())
            while data:
                data = data[os.write(descriptor, data) :]
            if self._durable:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.rename(part, os.path.join(folder, _receipt_file(name)))
        if self._durable:
            _fsync_folder(folder)

    def _remove(self, token: str, *, settled: bool) -> None:
        """Remove a settled commit's records and parts, or parts no live commit holds.

        A part is written only under its lock: one that holds data and can be locked was
        left by a killed or failed commit. An empty one may be a live commit's between
        making and locking it, and is left alone until it is `_PART_SECONDS` old.
        """
        records = (_COMMIT, _STAGING) if settled else ()
        for suffix in (*records, _COMMIT + _PART, _STAGING + _PART):
            name = os.path.join(self.folder, token + suffix)
            with contextlib.suppress(FileNotFoundError):
                if settled or _abandoned(name):
                    os.unlink(name)


def _abandoned(part: str) -> bool:
    """Whether no live commit holds record part `part` (FileNotFoundError if it is gone)."""
    descriptor = os.open(part, _OPEN_FLAGS)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        facts = os.fstat(descriptor)
        return facts.st_size > 0 or facts.st_mtime < time.time() - _PART_SECONDS
    finally:
        os.close(descriptor)


def _logger() -> logging.Logger:
    """This module's logger (`logging` is loaded when there is something to say)."""
    import logging  # noqa: PLC0415 - a sandbox's helper pays for it only then

    return logging.getLogger(__name__)


def _receipt_file(name: str) -> str:
    """The file name of receipt `name` (any string: a digest of it)."""
    import hashlib  # noqa: PLC0415 - only receipts need it (a sandbox's helper takes none)

    return hashlib.sha256(name.encode()).hexdigest()[:40]


def _forward(
    beneath: Beneath, record: dict[str, Any], version: Callable[[os.stat_result], str]
) -> None:
    """Take every step of a commit record that is not taken yet, then remove its temporaries."""
    for path, expected in record["removals"]:
        _remove(beneath, path, expected, version)
    for path, added, _ in record["folders"]:
        if added:
            make_folder(beneath, path)
    for path, temp, follow in record["placements"]:
        _place(beneath, path, temp, follow=follow)
    for path, mode in modes_last([Folder(*row) for row in record["folders"]]):
        give_mode(beneath, path, mode)
    for _, temp, _ in record["placements"]:
        _unlink(beneath, temp)
    for kept in record.get("kept", ()):
        _unlink(beneath, kept)


def _back(beneath: Beneath, token: str, record: dict[str, Any]) -> None:
    """Remove the temporaries a commit staged (or began to), then the folders it made."""
    for number, (path, follow) in enumerate(record["targets"]):
        with (
            contextlib.suppress(OSError, OutsideRoot),
            staging_place(beneath, path, follow=follow) as staged,
        ):
            name = temporary_name(staged.name.rpartition("/")[2], f"{token}-{number}")
            os.unlink(name, dir_fd=staged.directory)
    for path in reversed(record["folders"]):
        with (
            contextlib.suppress(OSError, OutsideRoot),
            beneath.place(path, follow=False) as place,
        ):
            os.rmdir(place.name, dir_fd=place.directory)


def staging_place(beneath: Beneath, path: str, *, follow: bool) -> Place:
    """Where `path`'s temporary is staged: its folder, or its deepest existing ancestor.

    Returns:
        A place whose `directory` holds the temporary; its `name` is the rest of the
        path from there (one component when the folder exists). The temporary is named
        after the last component, with the commit's tag (`Intent.tag`).
    """
    return beneath.place(path, follow=follow, partial=True)


def _remove(
    beneath: Beneath, path: str, expected: str | None, version: Callable[[os.stat_result], str]
) -> None:
    with contextlib.suppress(OSError, OutsideRoot), beneath.place(path, follow=False) as place:
        info = place.info
        if info is None:
            return
        if expected is None:
            if stat_module.S_ISDIR(info.st_mode):
                os.rmdir(place.name, dir_fd=place.directory)
        elif version(info) == expected:
            os.unlink(place.name, dir_fd=place.directory)


def make_folder(beneath: Beneath, path: str) -> None:
    """Make the folder `path` (owner-only until `give_mode`) unless it is there."""
    with beneath.place(path, follow=False, create=True) as place:
        if place.info is None:
            os.mkdir(place.name, 0o700, dir_fd=place.directory)


def modes_last(folders: Sequence[Folder]) -> list[tuple[str, int]]:
    """The paths and modes of the folders of `folders` that get a mode, deepest first.

    Modes are given after every file is in place, children before parents: a mode
    that closes a folder to its owner (`chmod 000 a`) must not stop the commit from
    reaching what it puts below.
    """
    given = [(f.path, f.mode) for f in folders if f.mode is not None]
    return sorted(given, key=lambda given: given[0].count("/"), reverse=True)


def give_mode(beneath: Beneath, path: str, mode: int) -> None:
    """Give the folder `path` its new mode."""
    with beneath.place(path, follow=False) as place:
        os.chmod(place.name, mode, dir_fd=place.directory, follow_symlinks=False)


def _place(beneath: Beneath, path: str, temp: str, *, follow: bool) -> None:
    try:
        staged = beneath.place(temp, follow=False)
    except (FileNotFoundError, NotADirectoryError):
        return
    with staged:
        if staged.info is None:
            return  # renamed already
        with beneath.place(path, follow=follow, create=True) as target:
            os.replace(
                staged.name, target.name, src_dir_fd=staged.directory, dst_dir_fd=target.directory
            )


def _unlink(beneath: Beneath, temp: str) -> None:
    with contextlib.suppress(OSError, OutsideRoot), beneath.place(temp, follow=False) as place:
        if place.info is not None:
            os.unlink(place.name, dir_fd=place.directory)


@contextlib.contextmanager
def _unnamed() -> Iterator[None]:
    """Re-raise an `OSError` of the journal's own files naming the workspace, not a host path."""
    try:
        yield
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, paths.ROOT) from None


def _read_all(descriptor: int) -> bytes:
    parts: list[bytes] = []
    while chunk := os.read(descriptor, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def _fsync_folder(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


__all__ = [
    "RECEIPT_SECONDS",
    "Folder",
    "Intent",
    "Journal",
    "Placement",
    "Removal",
    "Steps",
    "Target",
    "staging_place",
]
