"""What a tool call touches and what it would change, as each tool declares it.

Every file tool answers two questions from its validated arguments, so that nothing
outside `tools/` needs to know a tool by its name:

- `FileTool.targets(args)`: the `Target`s of a call, an operation on a path as the
  model spelled it (the permission layer adds the form the backend resolves it to),
  or, for `execute`, the command;
- `FileTool.preview(backend, args, runtime)`: a dry run of the call through the tool's
  own planner over a copy-on-write view of the backend, giving each file's pre-image
  version and post-image bytes and the unified diff of the real change, or the error
  the call would return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langchain_fstools.core.records import digest

BOUNDED_OUTPUT = "bounded_output"
"""The tool-metadata key by which a tool says it bounds its own output, so eviction
leaves its results alone (`FileTool.bounds_output`: every file tool but `execute`)."""

Operation = Literal["read", "write", "execute"]
"""What a tool call does: read files, change files, or run a command."""


@dataclass(frozen=True)
class Target:
    """One thing a tool call touches: an operation on a path, or a command.

    `path` is the model's spelling (normalised when decided); None with a write means
    "files the call names but that could not be found out", decided as protected.
    """

    operation: Operation
    path: str | None = None
    command: str | None = None
    contained: bool = False
    """For a command: it runs on a copy-on-write view with no network, so what it
    changes is reviewed after it runs (`FileTool.contained`)."""
    network: str | None = None
    """For a command: the network it will have, in words (`Backend.command_network`)."""
    masked: bool = False
    """For a command: the backend hides from it what the rules keep from reads
    (`Backend.hides_from_commands`, asked by the permission gate); if not, it asks
    first where a rule does."""


@dataclass(frozen=True)
class PlannedFile:
    """One file a previewed call would change.

    Attributes:
        path: The canonical virtual path the backend resolves the call's path to.
        before: The file's version before the change (`ABSENT` for a new file).
        after: The bytes after the change; None when the call removes the file.
        old_text: The text before, for the diff ("" for a new or binary file).
        new_text: The text after, for the diff ("" for a removed file).
    """

    path: str
    before: str
    after: bytes | None
    old_text: str
    new_text: str

    @property
    def digest(self) -> str | None:
        """SHA-256 of the post-image (None for a removal): what approval pins."""
        return None if self.after is None else digest(self.after)


@dataclass(frozen=True)
class Preview:
    """What a call would do: the files it changes and their diff, or its error.

    Attributes:
        files: The planned changes, in the order the call makes them.
        diff: The unified diff of every change (None when there is none to show).
        error: The error message the call would return instead (then no files).
    """

    files: tuple[PlannedFile, ...] = ()
    diff: str | None = None
    error: str | None = None


__all__ = ["BOUNDED_OUTPUT", "Operation", "PlannedFile", "Preview", "Target"]
