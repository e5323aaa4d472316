"""Steps shared by the tools that change files.

The read-before-write rule, loading a file's text with its encoding, checking the
syntax of the change, and writing it back conditionally, atomically, with a diff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from langchain_fstools import errors
from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.core import calls
from langchain_fstools.formats import encoding, syntax
from langchain_fstools.formats.diff import snippet, unified_patch
from langchain_fstools.formats.text import count_lines
from langchain_fstools.lsp.report import TextChange
from langchain_fstools.tools.base import ToolOutcome
from langchain_fstools.tools.reads import after_write, saw_everything
from langchain_fstools.tools.render import render_syntax_reports

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from langchain_fstools.backends.protocol import FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.base import CallScope


@dataclass(frozen=True, slots=True)
class TextFile:
    """A text file's decoded content and how to encode it back."""

    info: FileInfo
    codec: encoding.TextCodec
    text: str


@dataclass(frozen=True)
class Written:
    """The result of writing a text file; its patch is made only when asked for."""

    info: FileInfo
    lines: int
    old_text: str
    new_text: str
    diff_lines: int
    syntax: tuple[syntax.SyntaxReport, ...] = ()
    """The syntax errors the change introduced (`syntax_check="report"`)."""

    @cached_property
    def patch(self) -> str | None:
        """The unified diff of the change, or None when the texts are too large."""
        return unified_patch(self.info.path, self.old_text, self.new_text)

    @property
    def diff(self) -> str:
        """The patch cut to `diff_lines` lines, for the model."""
        return snippet(self.patch, self.diff_lines)

    @property
    def change(self) -> TextChange:
        """The change, for the language servers."""
        return TextChange(self.info.path, self.old_text, self.new_text)


def require_read(scope: CallScope, info: FileInfo, *, whole: bool) -> None:
    """Refuse to change an existing file the agent has not read at its current version.

    Args:
        scope: The call's scope (holds the read records).
        info: The file's current metadata.
        whole: Whether every line must have been seen (overwrites), or any read will do
            (edits, whose `old_string` is checked against the whole file).

    Raises:
        NotReadYet: never read, or (with `whole`) only partly.
        ChangedSinceRead: read at another version.
    """
    record = scope.reads.get(info.path)
    if record is None:
        raise errors.NotReadYet(info.path, partially=False)
    if record["version"] != info.version:
        raise errors.ChangedSinceRead(info.path)
    if whole and not saw_everything(record):
        raise errors.NotReadYet(info.path, partially=True)


def load_text(scope: CallScope, info: FileInfo) -> Effect[TextFile]:
    """Read and decode a whole file for rewriting.

    Raises:
        FileTooLarge: above `max_edit_bytes`.
        BinaryFile: not text.
    """
    limit = scope.context.settings.max_edit_bytes
    if info.size > limit:
        raise errors.FileTooLarge(info.path, info.size, limit)
    data = yield from calls.read_bytes(info.path)
    codec = encoding.detect(data)
    if codec is None:
        raise errors.BinaryFile(info.path)
    return TextFile(info, codec, codec.decode(data))


def known_text(scope: CallScope, path: str) -> TextFile | None:
    """The file as the toolkit kept it at the version the agent read, if it kept it whole.

    A change made from it must be written on the condition that the file is still at
    `info.version` (`write_text` with that `expected_version`): the file is not asked
    for, so only the write finds out whether it changed since. None when the agent read
    another version, or the toolkit holds no whole content of this one (see
    `tools.known_texts`), or a read of it would fail as `load_text`'s would.
    """
    known = scope.context.known_texts.get(scope.context.backend, path)
    record = scope.reads.get(path)
    if known is None or known.content is None or record is None:
        return None
    info, data = known.info, known.content
    if record["version"] != info.version or info.size > scope.context.settings.max_edit_bytes:
        return None
    codec = encoding.detect(data)
    return None if codec is None else TextFile(info, codec, codec.decode(data))


def write_text(
    scope: CallScope,
    path: str,
    new_text: str,
    *,
    codec: encoding.TextCodec,
    old_text: str,
    expected_version: str,
    whole: bool = False,
) -> Effect[Written]:
    """Encode and write `new_text` if the file is still at `expected_version`.

    The agent is then recorded as knowing the whole new file only when `whole` (it wrote
    every line, or the file is new) or it had seen every line before; see
    `tracking.after_write`.

    Raises:
        InvalidArgument: the text has characters the file's encoding cannot hold.
        FileTooLarge: the new content is above `max_edit_bytes`.
        SyntaxBroken: the change introduces syntax errors (`syntax_check="refuse"`).
        VersionConflict: the file changed since `expected_version`.
    """
    try:
        data = codec.encode(new_text)
    except UnicodeEncodeError:
        raise errors.InvalidArgument(
            "content",
            f"it has characters that the file's encoding ({codec.label}) cannot represent",
        ) from None
    limit = scope.context.settings.max_edit_bytes
    if len(data) > limit:
        raise errors.FileTooLarge(path, len(data), limit)
    reports = syntax_reports(scope, [(path, old_text, new_text)])
    info = yield from calls.write_bytes(path, data, expected_version=expected_version)
    scope.context.known_texts.learn_written(scope.context.backend, info, data)
    lines = count_lines(new_text)
    record = after_write(
        scope.reads.get(path),
        previous_version=expected_version,
        version=info.version,
        total_lines=lines,
        whole=whole or expected_version == ABSENT,
    )
    scope.reads.put(path, record)
    return Written(info, lines, old_text, new_text, scope.context.settings.diff_lines, reports)


def syntax_report(
    scope: CallScope,
    path: str,
    old_text: str | None,
    new_text: str,
    *,
    language: str | None = None,
    cell: str | None = None,
) -> syntax.SyntaxReport | None:
    """The syntax errors a change of `path` introduces, unless `syntax_check` is off.

    Args:
        scope: The call's scope (settings, and the parse trees of earlier changes).
        path: The file changed (its name decides the language).
        old_text: The text before, or None for a new file.
        new_text: The text after.
        language: The grammar to use instead of the one `path` implies.
        cell: The notebook cell the texts are the source of, if any.

    Returns:
        The report, or None when nothing was introduced or nothing could be checked
        (check off, language unknown, grammars not installed).
    """
    if scope.context.settings.syntax_check == "off":
        return None
    language = language or syntax.language_for(path, new_text)
    if language is None:
        return None
    problems = syntax.introduced_errors(
        old_text, new_text, language, trees=scope.context.syntax_trees
    )
    return syntax.SyntaxReport(path, language, tuple(problems), cell) if problems else None


def syntax_reports(
    scope: CallScope, changes: Sequence[tuple[str, str | None, str]]
) -> tuple[syntax.SyntaxReport, ...]:
    """The syntax errors a change of one or more files introduces; refused under `"refuse"`.

    Args:
        scope: The call's scope.
        changes: `(path, old text or None for a new file, new text)` per file.

    Raises:
        SyntaxBroken: some file has errors and `syntax_check` is `"refuse"`.
    """
    return enforce_syntax(scope, [syntax_report(scope, *change) for change in changes])


def prepare_syntax(scope: CallScope, info: FileInfo, head: bytes) -> None:
    """After a read, parse the file in the background for its first change's check.

    The check of a change compares the old text's parse with the new one's, and reparses
    incrementally from a kept tree; without one, the first change of a file pays a full
    parse. The model's turn between the read and the change hides this one.
    """
    if (
        scope.context.settings.syntax_check == "off"
        or info.size > syntax.MAX_CHECK_BYTES
        or not syntax.available()
        or syntax.language_for(info.path, head) is None
    ):
        return

    def parse() -> None:
        try:
            loaded = calls.run(load_text(scope, info), scope.backend)
        except Exception:  # noqa: BLE001 - a warm-up only: the check parses anyway
            return
        language = syntax.language_for(info.path, loaded.text)
        if language is not None:
            syntax.remember(loaded.text, language, scope.context.syntax_trees)

    scope.context.in_background(parse)


def enforce_syntax(
    scope: CallScope, reports: Iterable[syntax.SyntaxReport | None]
) -> tuple[syntax.SyntaxReport, ...]:
    """The reports of one change, all files together; refused under `"refuse"`.

    Raises:
        SyntaxBroken: some report has errors and `syntax_check` is `"refuse"`.
    """
    found = tuple(report for report in reports if report is not None)
    if found and scope.context.settings.syntax_check == "refuse":
        raise syntax.SyntaxBroken(found)
    return found


def changed(
    text: str,
    artifact: dict[str, Any],
    reports: Sequence[syntax.SyntaxReport],
    changes: Sequence[TextChange] = (),
) -> ToolOutcome:
    """A change's outcome, with the syntax errors it introduced (text and artifact).

    The errors are listed after `text`, and in the artifact as `syntax_errors`: one
    dict per error (path, cell, language, line, column, message, excerpt). `changes`
    are the files' texts before and after, for the language servers.
    """
    if not reports:
        return ToolOutcome(text, artifact, changes=tuple(changes))
    found = [
        {"path": report.path, "cell": report.cell, "language": report.language, **asdict(problem)}
        for report in reports
        for problem in report.problems
    ]
    return ToolOutcome(
        f"{text}\n\n{render_syntax_reports(reports)}",
        {**artifact, "syntax_errors": found},
        changes=tuple(changes),
    )


__all__ = [
    "TextFile",
    "Written",
    "changed",
    "enforce_syntax",
    "known_text",
    "load_text",
    "prepare_syntax",
    "require_read",
    "syntax_report",
    "syntax_reports",
    "write_text",
]
