"""Three-way, line-based merge of one text: a common base and two descendants of it.

The merge is `merge3`'s (the diff3 algorithm bzr and breezy use), not a hand-written
one: lines only one side changed take that side's version, lines both changed alike
take it once, and lines both changed differently are a conflict. A merge with no
conflict gives the merged text; one with conflicts gives each conflicting hunk (what
the base, ours and theirs hold there) and no text, so nothing half-merged is written.

Lines keep their terminators (`\\n`, `\\r\\n` or none at the end of the text), so the
merged text keeps each side's line endings byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from merge3 import Merge3


@dataclass(frozen=True, slots=True)
class Hunk:
    """One conflicting region: what each text holds there.

    Attributes:
        line: The 1-based line of the base where the region starts (where it would
            be, for a region empty in the base).
        base: The base's lines there, terminators kept.
        ours: Our lines there.
        theirs: Their lines there.
    """

    line: int
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Merged:
    """The outcome of a three-way merge.

    Attributes:
        text: The merged text, or None when there are conflicts.
        conflicts: The conflicting hunks, in base order; empty for a clean merge.
    """

    text: str | None
    conflicts: tuple[Hunk, ...] = ()

    @property
    def clean(self) -> bool:
        """Whether the texts merged without a conflict."""
        return not self.conflicts


def lines(text: str) -> list[str]:
    """The lines of `text`, each with its `\\n` (the last may have none)."""
    parts = text.split("\n")
    kept = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        kept.append(parts[-1])
    return kept


def merge(base: str, ours: str, theirs: str) -> Merged:
    """Merge the changes `ours` and `theirs` each made to `base`, line by line.

    Returns:
        The merged text, or the conflicting hunks.
    """
    base_lines, our_lines, their_lines = lines(base), lines(ours), lines(theirs)
    merger = Merge3(base_lines, our_lines, their_lines)
    merged: list[str] = []
    conflicts: list[Hunk] = []
    for region in merger.merge_regions():
        match region:
            case ("unchanged", start, end):
                merged += base_lines[start:end]
            case ("a" | "same", start, end):
                merged += our_lines[start:end]
            case ("b", start, end):
                merged += their_lines[start:end]
            case ("conflict", z1, z2, a1, a2, b1, b2):
                conflicts.append(
                    Hunk(
                        z1 + 1,
                        tuple(base_lines[z1:z2]),
                        tuple(our_lines[a1:a2]),
                        tuple(their_lines[b1:b2]),
                    )
                )
    if conflicts:
        return Merged(None, tuple(conflicts))
    return Merged("".join(merged))


__all__ = ["Hunk", "Merged", "lines", "merge"]
