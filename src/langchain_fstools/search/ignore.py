"""Ignore rules: `.gitignore`, `.ignore`, `.rgignore`, `.git/info/exclude`.

Precedence follows ripgrep's `ignore` crate, so both engines agree:

    1. A match in any `.rgignore` wins, the deepest file first;
    2. then a match in any `.ignore`, deepest first;
    3. then a match in any `.gitignore`, deepest first;
    4. then `.git/info/exclude` of the workspace root.

Within one file, the last matching pattern decides, and `!pattern` re-includes.
Patterns use git's wildmatch (pathspec's `GitIgnoreSpec`), relative to the directory
holding the file; a directory is checked with a trailing `/`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pathspec

IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")
"""Per-directory ignore files, strongest first."""

EXCLUDE_FILE = "/.git/info/exclude"
"""The workspace-wide exclude file."""

_KINDS = (*IGNORE_FILES, "exclude")


@dataclass(frozen=True)
class _Layer:
    rank: int
    """Its kind's place in `_KINDS`: lower is stronger."""
    prefix: str
    """Directory holding the file, relative to the workspace root, with a trailing `/`
    ("" for the root)."""
    spec: pathspec.GitIgnoreSpec


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore files in force at one directory (immutable; extend per directory).

    Attributes:
        layers: One per ignore file, in the order they are consulted (the precedence
            above: by kind, then the most recently added, i.e. deepest, first).
    """

    layers: tuple[_Layer, ...] = ()

    def extended(self, kind: str, base: str, text: str) -> IgnoreRules:
        """Add the rules of one ignore file, deeper than those of its kind so far.

        Args:
            kind: The file's name (`.gitignore`, ...) or `exclude`.
            base: Directory holding it, relative to the workspace root ("" for root).
            text: The file's content.
        """
        spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        if not spec.patterns:
            return self
        layer = _Layer(_KINDS.index(kind), f"{base}/" if base else "", spec)
        at = next(
            (n for n, other in enumerate(self.layers) if other.rank >= layer.rank),
            len(self.layers),
        )
        return IgnoreRules((*self.layers[:at], layer, *self.layers[at:]))

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """Whether `path` (relative to the workspace root) is ignored."""
        for layer in self.layers:
            if layer.prefix and not path.startswith(layer.prefix):
                continue
            relative = path[len(layer.prefix) :]
            verdict = layer.spec.check_file(relative + "/" if is_dir else relative).include
            if verdict is not None:
                return verdict
        return False


__all__ = ["EXCLUDE_FILE", "IGNORE_FILES", "IgnoreRules"]
