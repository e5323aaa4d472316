"""Patch text → hunks. Touches no files: paths are kept as written.

The grammar (the Codex apply_patch format)::

    patch   := "*** Begin Patch" NL hunk+ "*** End Patch" NL?
    hunk    := add | delete | update
    add     := "*** Add File: " path NL ("+" text NL)*
    delete  := "*** Delete File: " path NL
    update  := "*** Update File: " path NL ("*** Move to: " path NL)? chunk*
    chunk   := header* change+ ("*** End of File" NL)?
    header  := "@@" NL | "@@ " context NL
    change  := (" " | "-" | "+") text NL

A chunk's ` ` lines are kept, `-` lines removed and `+` lines added. Several `@@ context`
headers in a row narrow the location step by step (a class, then a method in it); the
first chunk of a section may omit its header. `*** End of File` anchors the chunk at the
end of the file. An update needs at least one chunk unless it moves the file.

Leniency, because models write patches by hand:
    1. markers and headers may carry surrounding whitespace (`  *** End Patch `);
    2. a heredoc wrapper around the patch (`<<EOF`, `<<'EOF'`, `<<"EOF"` ... `EOF`) is
       unwrapped;
    3. an empty line inside a chunk is an empty context line (editors strip the lone
       space of ` `).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_fstools.errors import PatchParseError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
HEADER = "@@"

_HEREDOC_START = re.compile(r"""^\s*<<-?\s*(['"]?)(\w+)\1\s*$""")
_SECTIONS = (ADD.strip(), DELETE.strip(), UPDATE.strip(), END)


@dataclass(frozen=True, slots=True)
class AddFile:
    """Create `path` holding `content`."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """Remove `path`."""

    path: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """One change inside an `Update File` section.

    Attributes:
        contexts: The `@@ context` lines, outermost first.
        old_lines: The lines the chunk expects (` ` and `-`).
        new_lines: The lines that replace them (` ` and `+`).
        end_of_file: Whether `*** End of File` anchors it at the end.
        line: 1-based line of the chunk's first line in the patch.
        kinds: The prefix of each change line in order (` `, `-` or `+`), which says
            how `old_lines` and `new_lines` interleave.
    """

    contexts: tuple[str, ...]
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    end_of_file: bool
    line: int
    kinds: str


@dataclass(frozen=True, slots=True)
class UpdateFile:
    """Change `path` chunk by chunk, optionally moving it to `move_to`."""

    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True, slots=True)
class Patch:
    """A parsed patch: its hunks, in order."""

    hunks: tuple[Hunk, ...] = field(default_factory=tuple)

    def paths(self) -> list[str]:
        """Every path the patch names (move targets too), as written, in order."""
        named: list[str] = []
        for hunk in self.hunks:
            named.append(hunk.path)
            if isinstance(hunk, UpdateFile) and hunk.move_to is not None:
                named.append(hunk.move_to)
        return named


def unwrap_heredoc(text: str) -> str:
    """Return the patch inside a `<<EOF ... EOF` wrapper, or `text` unchanged."""
    lines = text.strip().splitlines()
    if len(lines) >= 2:  # noqa: PLR2004 - an opening and a closing line
        opening = _HEREDOC_START.match(lines[0])
        if opening is not None and lines[-1].strip() == opening.group(2):
            return "\n".join(lines[1:-1])
    return text


def parse_patch(text: str) -> Patch:
    """Parse patch text into hunks.

    Args:
        text: The patch, possibly heredoc-wrapped.

    Returns:
        The hunks, with paths as written in the patch.

    Raises:
        PatchParseError: the text does not follow the grammar; `line` says where.
    """
    lines = unwrap_heredoc(text).strip().splitlines()
    if not lines or lines[0].strip() != BEGIN:
        raise PatchParseError(f"the first line of the patch must be '{BEGIN}'", 1)
    if lines[-1].strip() != END:
        raise PatchParseError(f"the last line of the patch must be '{END}'", len(lines))
    return Patch(tuple(_Reader(lines).hunks()))


class _Reader:
    """A cursor over the lines between the begin and end markers."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.at = 1
        self.last = len(lines) - 1

    @property
    def number(self) -> int:
        return self.at + 1

    def hunks(self) -> list[Hunk]:
        found: list[Hunk] = []
        while self.at < self.last:
            if self.lines[self.at].strip():
                found.append(self._hunk())
            else:
                self.at += 1
        if not found:
            raise PatchParseError("the patch has no file sections", self.number)
        return found

    def _hunk(self) -> Hunk:
        line = self.lines[self.at].strip()
        for marker, build in ((ADD, self._add), (DELETE, self._delete), (UPDATE, self._update)):
            if line.startswith(marker.strip() + " ") or line == marker.strip():
                path = line[len(marker.strip()) :].strip()
                if not path:
                    raise PatchParseError(f"'{marker.strip()}' needs a path", self.number)
                self.at += 1
                return build(path)
        raise PatchParseError(
            f"expected '{ADD.strip()}', '{DELETE.strip()}' or '{UPDATE.strip()}'"
            f" but found {_quote(self.lines[self.at])}",
            self.number,
        )

    def _add(self, path: str) -> AddFile:
        content: list[str] = []
        while self.at < self.last and self.lines[self.at].startswith("+"):
            content.append(self.lines[self.at][1:] + "\n")
            self.at += 1
        self._expect_section_start(f"in the added file {path} every line must start with '+'")
        return AddFile(path, "".join(content))

    def _delete(self, path: str) -> DeleteFile:
        self._expect_section_start(f"'{DELETE.strip()} {path}' takes no lines")
        return DeleteFile(path)

    def _update(self, path: str) -> UpdateFile:
        move_to = None
        line = self.lines[self.at].strip()
        if line.startswith(MOVE.strip()):
            move_to = line[len(MOVE.strip()) :].strip()
            if not move_to:
                raise PatchParseError(f"'{MOVE.strip()}' needs a path", self.number)
            self.at += 1
        chunks: list[Chunk] = []
        while self.at < self.last and not self._at_section():
            chunks.append(self._chunk(path, first=not chunks))
        if not chunks and move_to is None:
            raise PatchParseError(f"the update of {path} has no changes", self.number)
        return UpdateFile(path, move_to, tuple(chunks))

    def _chunk(self, path: str, *, first: bool) -> Chunk:
        start = self.number
        contexts = self._headers(start)
        if not contexts and self.number == start and not first:
            raise PatchParseError(
                f"expected '@@' to start the next chunk of {path}"
                f" but found {_quote(self.lines[self.at])}",
                self.number,
            )
        old, new, kinds, end_of_file = self._changes(path)
        if not kinds:
            raise PatchParseError(f"a chunk of {path} has no lines", start)
        return Chunk(tuple(contexts), tuple(old), tuple(new), end_of_file, start, kinds)

    def _headers(self, start: int) -> list[str]:
        contexts: list[str] = []
        while self.at < self.last and self.lines[self.at].strip().startswith(HEADER):
            header = self.lines[self.at].strip()
            if header != HEADER:
                if not header.startswith(HEADER + " "):
                    raise PatchParseError("a chunk header must be '@@' or '@@ <line>'", start)
                contexts.append(header[len(HEADER) + 1 :])
            self.at += 1
        return contexts

    def _changes(self, path: str) -> tuple[list[str], list[str], str, bool]:
        old: list[str] = []
        new: list[str] = []
        kinds: list[str] = []
        blanks = 0
        while self.at < self.last:
            raw = self.lines[self.at]
            if raw.strip() == END_OF_FILE:
                self.at += 1
                return old, new, "".join(kinds), True
            if self._at_section() or raw.strip().startswith(HEADER):
                break
            kind, text = (raw[:1], raw[1:]) if raw else (" ", "")
            if kind not in " -+":
                raise PatchParseError(
                    f"in the update of {path} every chunk line must start with ' ', '-'"
                    f" or '+' but found {_quote(raw)}",
                    self.number,
                )
            kinds.append(kind)
            if kind != "+":
                old.append(text)
            if kind != "-":
                new.append(text)
            blanks = blanks + 1 if not raw else 0
            self.at += 1
        if blanks:
            del old[len(old) - blanks :], new[len(new) - blanks :], kinds[len(kinds) - blanks :]
        return old, new, "".join(kinds), False

    def _at_section(self) -> bool:
        line = self.lines[self.at].strip()
        return any(line.startswith(marker) for marker in _SECTIONS)

    def _expect_section_start(self, message: str) -> None:
        while self.at < self.last and not self.lines[self.at].strip():
            self.at += 1
        if self.at < self.last and not self._at_section():
            raise PatchParseError(f"{message}; found {_quote(self.lines[self.at])}", self.number)


def _quote(line: str) -> str:
    return repr(line if len(line) <= 80 else line[:80] + "…")  # noqa: PLR2004


__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "Hunk",
    "Patch",
    "UpdateFile",
    "parse_patch",
    "unwrap_heredoc",
]
