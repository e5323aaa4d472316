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
    kind: str
    base: str
    spec: pathspec.GitIgnoreSpec


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore files in force at one directory (immutable; extend per directory)."""

    layers: tuple[_Layer, ...] = ()

    def extended(self, kind: str, base: str, text: str) -> IgnoreRules:
        """Add the rules of one ignore file.

        Args:
            kind: The file's name (`.gitignore`, ...) or `exclude`.
            base: Directory holding it, relative to the workspace root ("" for root).
            text: The file's content.
        """
        spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        if not spec.patterns:
            return self
        return IgnoreRules((*self.layers, _Layer(kind, base, spec)))

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """Whether `path` (relative to the workspace root) is ignored."""
        for kind in _KINDS:
            for layer in reversed(self.layers):
                if layer.kind != kind:
                    continue
                if layer.base and not path.startswith(layer.base + "/"):
                    continue
                relative = path[len(layer.base) + 1 :] if layer.base else path
                verdict = layer.spec.check_file(relative + "/" if is_dir else relative).include
                if verdict is not None:
                    return verdict
        return False


__all__ = ["EXCLUDE_FILE", "IGNORE_FILES", "IgnoreRules"]
