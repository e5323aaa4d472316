"""What a backend's native search fast path takes and gives.

A backend that can search faster than walking it call by call (ripgrep on local disk,
`rg` over SSH, a server-side index) exposes a `NativeSearch` through
`Backend.native_search()`. The tool layer then uses it instead of its pure-Python
engine; both must produce the same `FileHits` for the same `GrepRequest`, which the
conformance suite checks.

Semantics both engines share:
    1. Files are found below the search directory, skipping `.git`, `.hg`, `.svn`,
       `.jj` and `.bzr`, and whatever `.gitignore`, `.ignore`, `.rgignore` and
       `.git/info/exclude` of the workspace (root down to the file) exclude; hidden
       files are included; symlinked directories are not entered.
    2. A line ends at `\\n`; line numbers start at 1 and agree with read_file.
    3. Binary files (a NUL byte near the start) are not searched, nor are files and
       directories the backend cannot read (refused, or gone since they were listed):
       the search goes on without them, and the pure-Python engine counts them.
    4. Glob groups mean what `core.globs` says, on every engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

VCS_DIRECTORIES = frozenset({".git", ".hg", ".svn", ".jj", ".bzr"})
"""Directories never listed or searched."""

GrepMode = Literal["files_with_matches", "content", "count"]


@dataclass(frozen=True, slots=True)
class GrepRequest:
    """One search.

    Attributes:
        pattern: What to find: a literal string, or a regex when `regex` is set.
        directory: Canonical virtual directory (or single file) to search.
        regex: Whether `pattern` is a regular expression.
        ignore_case: Case-insensitive matching.
        multiline: Let a match span lines (`.` matches newlines too).
        globs: Groups of filename globs (`backends.globs` meaning); a file must match
            a glob of every group. No groups: every file.
        mode: What is collected per file: nothing but the fact, matching lines with
            context, or the number of matching lines.
        before: Context lines before each match (content mode).
        after: Context lines after each match (content mode).
    """

    pattern: str
    directory: str
    regex: bool = False
    ignore_case: bool = False
    multiline: bool = False
    globs: tuple[tuple[str, ...], ...] = ()
    mode: GrepMode = "files_with_matches"
    before: int = 0
    after: int = 0


@dataclass(frozen=True, slots=True)
class LineHit:
    """One output line of a file: a match, or context around one.

    Attributes:
        number: 1-based line number.
        text: The line, without its line break.
        is_match: Whether a match touches the line (else it is context).
        column: Character offset in `text` of the first match starting on this line
            (0 when none starts here), so a long line can be shown around it.
    """

    number: int
    text: str
    is_match: bool
    column: int = 0


@dataclass(slots=True)
class FileHits:
    """What a search found in one file."""

    path: str
    mtime: float
    count: int = 0
    lines: list[LineHit] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A file found by a listing: its virtual path and modification time."""

    path: str
    mtime: float


@dataclass(frozen=True, slots=True)
class Listing:
    """Files found below a directory, and whether the listing finished in time.

    Attributes:
        files: The files found, or (when the caller asked for the `newest` only) at
            least every file as new as the `newest`-th most recent one.
        complete: Whether the listing finished before its deadline.
        total: How many files were found, when `files` holds only the newest of them
            (None when `files` holds every file found).
        skipped: Directories and files left out because they could not be read.
    """

    files: list[ListedFile]
    complete: bool
    total: int | None = None
    skipped: int = 0

    @property
    def count(self) -> int:
        """How many files were found."""
        return len(self.files) if self.total is None else self.total


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """How a content search ended.

    Attributes:
        complete: Whether it finished before its deadline.
        skipped: Directories and files left out because they could not be read.
    """

    complete: bool
    skipped: int = 0


class InvalidPattern(ValueError):
    """The search engine rejected the pattern; `reason` says why (no paths)."""

    def __init__(self, reason: str) -> None:
        """Keep the engine's one-line reason."""
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SearchPart:
    """One piece of a search.

    A directory, its native search (None: walk it through the backend's calls), and
    the directories below it that other parts cover and this one must leave out.
    """

    directory: str
    native: NativeSearch | None
    excluded: tuple[str, ...] = ()


class NativeSearch(Protocol):
    """A backend's fast search: the same answers as the pure-Python engine."""

    def list_files(
        self,
        directory: str,
        *,
        globs: tuple[tuple[str, ...], ...],
        deadline: float,
        newest: int | None = None,
        excluded: tuple[str, ...] = (),
    ) -> Listing:
        """The searchable files below `directory` (rule 1 above) matching `globs`.

        Args:
            directory: Canonical virtual directory.
            globs: Glob groups, as in `GrepRequest.globs`, over paths relative to
                `directory`.
            deadline: `time.monotonic()` value after which it stops with what it has.
            newest: If given, the caller needs only the `newest` most recently
                modified files: a search may leave out files older than the
                `newest`-th one (keeping ties) and report the count in `total`.
                Default: None (every file).
            excluded: Virtual directories below `directory` to leave out (mounted
                from elsewhere). A search may ignore it, but then must list every
                file (no `total`): the caller filters. Default: ().
        """

    def grep(
        self, request: GrepRequest, *, deadline: float, sink: Callable[[FileHits], None]
    ) -> bool:
        """Search, handing each file with a match to `sink` once it is complete.

        Returns:
            Whether the search finished before `deadline`.

        Raises:
            InvalidPattern: the pattern does not compile.
        """


__all__ = [
    "VCS_DIRECTORIES",
    "FileHits",
    "GrepMode",
    "GrepRequest",
    "InvalidPattern",
    "LineHit",
    "ListedFile",
    "Listing",
    "NativeSearch",
    "SearchOutcome",
    "SearchPart",
]
