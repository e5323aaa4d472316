"""Hunks + a backend → a change set, then an all-or-nothing commit.

Applying a patch has two stages, both effects over `core.calls`:

1. `plan` resolves every hunk of every file before anything is written: paths are made
   canonical (relative ones from `workdir`), each file is read and decoded, every chunk
   is located (`seek`) and the new bytes are computed. Any problem raises here, and the
   workspace is untouched. The plan is a dry run a caller may show or approve.
2. `commit` gives the whole plan to the backend as one batch (`write_many`): adds,
   updates, moves (a write of the new path and a deletion of the old) and deletions,
   each conditional on the version read in stage 1. A backend that commits a batch
   whole (`LocalBackend`, journaled: even across a crash) changes all or nothing;
   another may stop part-way (`PartialWrite`): then the steps already taken are undone
   in reverse order (written files restored, added files removed, moved files put
   back, directories it created removed) and the error is raised: a failed patch
   changes nothing. Each undo is itself conditional: a file is restored only while it
   still holds what the patch wrote (and a deleted one recreated only while still
   absent), so a writer who changed it in between keeps their work; then
   `PatchNotUndone` says exactly which files were restored and what each of the others
   holds. A step the store failed to answer (its reply lost: it may have happened) is
   read back when undone, and a file the store cannot read back is said to hold what
   the store did not say.

Updated files keep their encoding (UTF-8, UTF-8 with BOM, UTF-16, Latin-1) and line
endings: untouched lines keep theirs, new lines take the file's dominant one.
"""

from __future__ import annotations

import errno
import logging
import operator
import posixpath
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypeVar

from langchain_fstools import errors
from langchain_fstools.backends import ABSENT
from langchain_fstools.core import calls, paths
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.formats import encoding
from langchain_fstools.formats.diff import unified_patch
from langchain_fstools.patch.parser import AddFile, Chunk, DeleteFile, Patch, UpdateFile
from langchain_fstools.patch.seek import closest, seek

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest file a patch reads or writes, in bytes. Default: 64 MiB."""

ChangeKind = Literal["add", "delete", "update"]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's planned change.

    Attributes:
        kind: `add`, `delete` or `update`.
        path: The canonical virtual path the hunk names.
        move_to: Where an update moves the file, if anywhere.
        old_data: The bytes before (None for an added file).
        new_data: The bytes after (None for a deleted file).
        old_text: The decoded text before ("" for an added file).
        new_text: The decoded text after ("" for a deleted file).
        version: The version `path` had when planned (`ABSENT` for an added file).
        encoding: The label of the file's encoding.
    """

    kind: ChangeKind
    path: str
    move_to: str | None
    old_data: bytes | None
    new_data: bytes | None
    old_text: str
    new_text: str
    version: str
    encoding: str

    @property
    def final_path(self) -> str:
        """Where the content lives after the change."""
        return self.move_to or self.path

    @property
    def letter(self) -> str:
        """`A`, `M` or `D`, as in the success summary."""
        return {"add": "A", "update": "M", "delete": "D"}[self.kind]

    def unified_patch(self) -> str | None:
        """A unified diff of the change (None when too large to diff)."""
        return unified_patch(self.final_path, self.old_text, self.new_text)


@dataclass(frozen=True, slots=True)
class PatchResult:
    """What a committed patch changed.

    Attributes:
        changes: The file changes, in patch order.
        versions: The version of each written file after the commit, by final path.
    """

    changes: tuple[FileChange, ...]
    versions: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """`Success. Updated the following files:` then one `A|M|D path` line each."""
        return summary(self.changes)


def summary(changes: Sequence[FileChange]) -> str:
    """`Success. Updated the following files:` then one `A|M|D path` line per change."""
    lines = [f"{change.letter} {change.final_path}" for change in changes]
    return "\n".join(["Success. Updated the following files:", *lines])


def plan(
    patch: Patch,
    *,
    workdir: str = paths.ROOT,
    max_bytes: int = MAX_FILE_BYTES,
    check: Callable[[FileInfo], None] | None = None,
) -> Effect[tuple[FileChange, ...]]:
    """Resolve every hunk against the backend without writing anything.

    Args:
        patch: The parsed patch.
        workdir: The directory relative paths in the patch start from. Default: `/`.
        max_bytes: Largest file read or written. Default: `MAX_FILE_BYTES`.
        check: Called with the metadata of every existing file the patch reads or
            deletes, before its content is used; raise to refuse it (read tracking).

    Returns:
        The planned changes, in patch order.

    Raises:
        PatchConflict: a path named twice, an added file or move target that exists.
        ContextNotFound: a chunk matches no place in its file.
        UseNotebookEdit: a notebook would be changed as text.
        FileNotFoundError, IsADirectoryError, BinaryFile, FileTooLarge, InvalidPath,
        OutsideRoot: as their names say, for the path concerned.
    """
    base = paths.normalize(workdir)
    resolved = [
        (hunk, resolve_path(base, hunk.path), _resolve_move(base, hunk)) for hunk in patch.hunks
    ]
    seen: set[str] = set()
    for _, path, move_to in resolved:
        for named in (path, move_to):
            if named is None:
                continue
            if named in seen:
                raise errors.PatchConflict(
                    named,
                    "the patch names it more than once; put all changes to one file in one section",
                )
            seen.add(named)
    changes: list[FileChange] = []
    for hunk, path, move_to in resolved:
        if isinstance(hunk, AddFile):
            changes.append((yield from _plan_add(path, hunk.content, max_bytes)))
        elif isinstance(hunk, DeleteFile):
            changes.append((yield from _plan_delete(path, max_bytes, check)))
        else:
            changes.append((yield from _plan_update(path, move_to, hunk, max_bytes, check)))
    return tuple(changes)


def commit(changes: Sequence[FileChange]) -> Effect[dict[str, str]]:
    """Write planned changes all or nothing.

    Returns:
        The version of each written file, by final path.

    Raises:
        VersionConflict: a file changed after it was planned; nothing is left changed.
        OSError: a write failed; the steps already taken were undone.
        PatchNotUndone: a step failed and some steps could not be undone (another
            writer changed those files in between); it says what each file holds.
    """
    undo: list[_Undo] = []
    versions: dict[str, str] = {}
    try:
        yield from _commit_set(changes, undo, versions)
    except Exception as exc:
        restored, kept = yield from _roll_back(undo)
        if kept:
            raise errors.PatchNotUndone(exc, restored, kept) from exc
        raise
    return versions


def apply(
    patch: Patch,
    *,
    workdir: str = paths.ROOT,
    max_bytes: int = MAX_FILE_BYTES,
    check: Callable[[FileInfo], None] | None = None,
) -> Effect[PatchResult]:
    """`plan`, then `commit`: the whole patch as one effect."""
    changes = yield from plan(patch, workdir=workdir, max_bytes=max_bytes, check=check)
    versions = yield from commit(changes)
    return PatchResult(changes, versions)


# ----- planning -------------------------------------------------------------------------


def resolve_path(workdir: str, path: str) -> str:
    """The canonical virtual path of a patch path: absolute, or relative to `workdir`.

    Raises:
        InvalidPath, OutsideRoot: as `paths.normalize`.
    """
    base = paths.normalize(workdir)
    return paths.normalize(path if path.startswith("/") else posixpath.join(base, path))


def _resolve_move(base: str, hunk: AddFile | DeleteFile | UpdateFile) -> str | None:
    if not isinstance(hunk, UpdateFile) or hunk.move_to is None:
        return None
    target = resolve_path(base, hunk.move_to)
    return None if target == resolve_path(base, hunk.path) else target


def _refuse_notebook(path: str) -> None:
    if path.lower().endswith(".ipynb"):
        raise errors.UseNotebookEdit(path)


def _stat_missing(path: str) -> Effect[FileInfo | None]:
    try:
        info: FileInfo = yield from calls.stat(path)
    except FileNotFoundError:
        return None
    return info


def _existing_file(
    path: str, max_bytes: int, check: Callable[[FileInfo], None] | None
) -> Effect[tuple[FileInfo, bytes]]:
    info = yield from calls.stat(path)
    if info.is_dir:
        raise IsADirectoryError(21, "Is a directory", path)
    if check is not None:
        check(info)
    if info.size > max_bytes:
        raise errors.FileTooLarge(path, info.size, max_bytes)
    data = yield from calls.read_bytes(path)
    return info, data


def _refuse_existing(path: str, reason: str) -> Effect[None]:
    if (yield from _stat_missing(path)) is not None:
        raise errors.PatchConflict(path, reason)


def _plan_add(path: str, content: str, max_bytes: int) -> Effect[FileChange]:
    _refuse_notebook(path)
    yield from _refuse_existing(
        path, "it already exists; use '*** Update File:' to change an existing file"
    )
    data = encoding.UTF8.encode(content)
    if len(data) > max_bytes:
        raise errors.FileTooLarge(path, len(data), max_bytes)
    label = encoding.UTF8.label
    return FileChange("add", path, None, None, data, "", content, ABSENT, label)


def _plan_delete(
    path: str, max_bytes: int, check: Callable[[FileInfo], None] | None
) -> Effect[FileChange]:
    info, data = yield from _existing_file(path, max_bytes, check)
    codec = encoding.detect(data)
    text = codec.decode(data, errors="replace") if codec is not None else ""
    label = codec.label if codec is not None else "binary"
    return FileChange("delete", path, None, data, None, text, "", info.version, label)


def _plan_update(
    path: str,
    move_to: str | None,
    hunk: UpdateFile,
    max_bytes: int,
    check: Callable[[FileInfo], None] | None,
) -> Effect[FileChange]:
    _refuse_notebook(path)
    if move_to is not None:
        _refuse_notebook(move_to)
        yield from _refuse_existing(
            move_to, "it is the target of '*** Move to:' and already exists; delete it first"
        )
    info, data = yield from _existing_file(path, max_bytes, check)
    codec = encoding.detect(data)
    if codec is None:
        raise errors.BinaryFile(path)
    old_text = codec.decode(data)
    new_text = apply_chunks(path, old_text, hunk.chunks)
    try:
        new_data = codec.encode(new_text)
    except UnicodeEncodeError:
        raise errors.PatchConflict(
            path,
            f"the new lines have characters its encoding ({codec.label}) cannot represent",
        ) from None
    if len(new_data) > max_bytes:
        raise errors.FileTooLarge(path, len(new_data), max_bytes)
    return FileChange(
        "update", path, move_to, data, new_data, old_text, new_text, info.version, codec.label
    )


def apply_chunks(path: str, text: str, chunks: Sequence[Chunk]) -> str:
    """Return `text` with `chunks` applied in order (pure; `path` is for errors).

    Raises:
        ContextNotFound: a chunk's `@@` context or its old lines are not found after the
            previous chunk.
    """
    lines, ends = _split(text)
    eol = _dominant_eol(ends)
    edits: list[tuple[int, int, list[tuple[str, str]]]] = []
    cursor = 0
    for number, chunk in enumerate(chunks, 1):
        for context in chunk.contexts:
            found = seek(lines, [context], cursor, at_end=False)
            if found is None:
                raise _not_found(path, number, [context], lines, cursor)
            cursor = found + 1
        if not chunk.old_lines:
            at = cursor if chunk.contexts else len(lines)
            edits.append((at, 0, [(line, eol) for line in chunk.new_lines]))
            cursor = at
            continue
        found = seek(lines, chunk.old_lines, cursor, at_end=chunk.end_of_file)
        if found is None:
            raise _not_found(path, number, chunk.old_lines, lines, cursor)
        edits.append((found, len(chunk.old_lines), _replacement(chunk, lines, ends, found, eol)))
        cursor = found + len(chunk.old_lines)
    for at, length, replacement in sorted(edits, key=lambda edit: edit[0], reverse=True):
        lines[at : at + length] = [line for line, _ in replacement]
        ends[at : at + length] = [end for _, end in replacement]
    for index in range(len(ends) - 1):
        if not ends[index]:
            ends[index] = eol
    return "".join(map(operator.add, lines, ends))


def _replacement(
    chunk: Chunk, lines: Sequence[str], ends: Sequence[str], at: int, eol: str
) -> list[tuple[str, str]]:
    """The lines that replace a located chunk: context lines stay as the file has them."""
    replacement: list[tuple[str, str]] = []
    old = new = 0
    for kind in chunk.kinds:
        if kind == " ":
            replacement.append((lines[at + old], ends[at + old]))
        elif kind == "+":
            replacement.append((chunk.new_lines[new], eol))
        old += kind != "+"
        new += kind != "-"
    return replacement


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines without terminators, and each line's terminator (`\\n`, `\\r\\n` or "")."""
    lines = text.split("\n")
    last = lines.pop()
    if "\r" in text:
        ends = ["\r\n" if line.endswith("\r") else "\n" for line in lines]
        lines = [line.removesuffix("\r") for line in lines]
    else:
        ends = ["\n"] * len(lines)
    if last:
        lines.append(last)
        ends.append("")
    return lines, ends


def _dominant_eol(ends: list[str]) -> str:
    crlf = ends.count("\r\n")
    return "\r\n" if crlf * 2 > len(ends) - ends.count("") else "\n"


def _not_found(
    path: str, chunk: int, expected: Sequence[str], lines: Sequence[str], cursor: int
) -> errors.ContextNotFound:
    region = closest(lines, expected, cursor) or closest(lines, expected, 0)
    if region is None:
        return errors.ContextNotFound(path, chunk, tuple(expected), (), 0)
    at, size = region
    return errors.ContextNotFound(
        path, chunk, tuple(expected), tuple(lines[at : at + size]), at + 1
    )


# ----- committing -----------------------------------------------------------------------


def _commit_set(
    changes: Sequence[FileChange], undo: list[_Undo], versions: dict[str, str]
) -> Effect[None]:
    """Write, move and delete as one batch (`write_many`); on failure, push the undo steps.

    A move is a write of its new path (which must be absent) and a deletion of its old
    one. A backend that commits a batch whole (`LocalBackend`) leaves nothing to undo.
    """
    noted: set[str] = set()
    steps: list[_Undo] = []
    writes: list[Write] = []
    deletions: list[Deletion] = []
    for change in changes:
        if change.kind != "delete":
            target = change.move_to or change.path
            if change.kind == "add" or change.move_to is not None:
                yield from _note_missing_parents(target, undo, noted)
            expected = change.version if change.move_to is None else ABSENT
            writes.append(Write(target, change.new_data or b"", expected_version=expected))
            before = change.old_data if change.move_to is None else None
            steps.append(_Undo(target, before, change.new_data))
        if change.kind == "delete" or change.move_to is not None:
            deletions.append(Deletion(change.path, change.version))
            steps.append(_Undo(change.path, change.old_data, None))
    try:
        infos = yield from calls.write_many(writes, deletions)
    except Exception as exc:
        partial = exc if isinstance(exc, errors.PartialWrite) else None
        cause = exc if partial is None else partial.cause
        done = set(partial.written if partial else ())
        # a store that stopped answering may have stored a write whose reply was lost:
        # those files are found out (re-read) when the patch is undone
        unknown = isinstance(cause, errors.StoreUnavailable)
        undo.extend(
            replace(step, unsure=step.path not in done)
            for step in steps
            if step.path in done or unknown
        )
        if partial is None:
            raise
        raise cause from None
    versions.update((info.path, info.version) for info in infos)


def _taken(effect: Effect[T], step: _Undo, undo: list[_Undo]) -> Effect[T]:
    """Do `effect` and push `step`; pushed unsure when the store did not answer it."""
    try:
        done = yield from effect
    except errors.StoreUnavailable:
        undo.append(replace(step, unsure=True))
        raise
    undo.append(step)
    return done


def _note_missing_parents(path: str, undo: list[_Undo], noted: set[str]) -> Effect[None]:
    """Push removal steps for the directories a write to `path` will create.

    `noted` holds the directories already pushed for the same batch; it is updated.
    """
    missing: list[str] = []
    parent = paths.parent(path)
    while parent not in noted and parent != paths.ROOT and not (yield from calls.exists(parent)):
        missing.append(parent)
        noted.add(parent)
        parent = paths.parent(parent)
    undo.extend(_Undo(directory, None, None) for directory in reversed(missing))


@dataclass(frozen=True, slots=True)
class _Undo:
    """How to undo one step: `path` held `before` and the step left `after` there.

    None for `before`: nothing was there (an added or moved-to file); None for
    `after`: the step removed the file; None for both: a directory the patch created.
    """

    path: str
    before: bytes | None
    after: bytes | None
    unsure: bool = False
    """Whether the step may not have happened (the store failed to answer it)."""


KEPT_CHANGED = "another writer's content, written after the patch's"
"""What a file holds whose restore was refused: it changed after the patch wrote it."""
KEPT_REMOVED = "nothing: another writer deleted it after the patch wrote it"
"""What a file holds that was deleted after the patch wrote it."""
KEPT_CREATED = "another writer's file, created after the patch deleted it"
"""What a path holds that the patch deleted and someone wrote again."""
KEPT_FILLED = "another writer's files"
"""What a directory the patch created holds when someone wrote into it."""
KEPT_UNKNOWN = (
    "what the store did not say: it stopped answering a write of it and could not be read"
    " back (it holds its content before the patch, or the patch's)"
)
"""What a file holds that could not be read back after the store failed a write of it."""


class _LostReply(Exception):
    """An undo's write or removal the store failed to answer: it may have happened."""


def _roll_back(undo: list[_Undo]) -> Effect[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
    """Undo committed steps, newest first, each only where the patch's result still is.

    Returns:
        The files put back as they were, and (path, what it holds) for the steps left
        undone; a failing step is logged and the others are still undone.
    """
    restored: list[str] = []
    kept: list[tuple[str, str]] = []
    for step in reversed(undo):
        try:
            holds = yield from _undo_step(step)
        except Exception as exc:  # noqa: BLE001 - keep undoing the other steps
            logger.warning("apply_patch could not restore %s after a failed commit", step.path)
            holds = _left_by(step, exc)
        if holds is None:
            if step.before is not None or step.after is not None:
                restored.append(step.path)
        else:
            kept.append((step.path, holds))
    return tuple(dict.fromkeys(restored)), tuple(kept)


def _left_by(step: _Undo, exc: Exception) -> str:
    """What a file holds whose undo raised `exc`.

    Unknown when the store stopped answering a write of it (the patch's, for an unsure
    step, or the undo's own): a write whose reply was lost may have happened, and the
    backend reads it back where the store still answers (`ObjectStoreBackend`), so
    what is left is unknown. Otherwise the undo failed before it wrote anything.
    """
    if isinstance(exc, _LostReply) or (step.unsure and isinstance(exc, errors.StoreUnavailable)):
        return KEPT_UNKNOWN
    holds = f"the patch's content (restoring it failed: {type(exc).__name__})"
    if step.after is None:
        holds = "what the patch left" + holds.removeprefix("the patch's content")
    return holds


def _undo_step(step: _Undo) -> Effect[str | None]:
    """Undo one step if the patch's result is still there; else say what is there.

    An unsure step (a write the store failed to answer) whose file still holds what
    it held before the patch is as it was.
    """
    if step.before is None and step.after is None:
        return (yield from _remove_directory(step.path))
    info = yield from _stat_missing(step.path)
    if step.unsure and (yield from _holds(step.path, info, step.before)):
        return None
    if step.after is None:
        return (yield from _recreate(step.path, step.before or b"", info))
    if info is None:
        return KEPT_REMOVED
    return (yield from _put_back(step.path, step.before, step.after, info))


def _holds(path: str, info: FileInfo | None, data: bytes | None) -> Effect[bool]:
    """Whether the file at `path` (`info`: its metadata, None if absent) holds `data`."""
    if info is None or data is None:
        return info is None and data is None
    return info.size == len(data) and (yield from calls.read_bytes(path)) == data


def _put_back(path: str, before: bytes | None, after: bytes, info: FileInfo) -> Effect[str | None]:
    """Restore `before` (None: remove) while the file still holds the patch's `after`."""
    if (yield from calls.read_bytes(path)) != after:
        return KEPT_CHANGED
    try:
        if before is None:
            yield from calls.delete(path)
        else:
            yield from calls.write_bytes(path, before, expected_version=info.version)
    except errors.VersionConflict:
        return KEPT_CHANGED
    except errors.StoreUnavailable as exc:
        raise _LostReply from exc
    return None


def _remove_directory(path: str) -> Effect[str | None]:
    """Remove a directory the patch created, unless another writer put files in it."""
    try:
        yield from calls.delete(path)
    except FileNotFoundError:
        return None  # the write that would have created it failed
    except OSError as exc:
        if exc.errno == errno.ENOTEMPTY:
            return KEPT_FILLED
        raise
    return None


def _recreate(path: str, data: bytes, info: FileInfo | None) -> Effect[str | None]:
    """Put back a file the patch removed, only while nothing else is there."""
    if info is not None:
        return KEPT_CREATED
    try:
        yield from calls.write_bytes(path, data, expected_version=ABSENT)
    except errors.VersionConflict:
        return KEPT_CREATED
    except errors.StoreUnavailable as exc:
        raise _LostReply from exc
    return None


__all__ = [
    "KEPT_CHANGED",
    "KEPT_CREATED",
    "KEPT_FILLED",
    "KEPT_REMOVED",
    "KEPT_UNKNOWN",
    "MAX_FILE_BYTES",
    "FileChange",
    "PatchResult",
    "apply",
    "apply_chunks",
    "commit",
    "plan",
    "resolve_path",
]
