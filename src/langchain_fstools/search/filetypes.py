"""File types for grep's `type` filter: a name → filename globs (ripgrep's names)."""

from __future__ import annotations

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "go": ("*.go",),
    "html": ("*.html", "*.htm"),
    "java": ("*.java",),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs"),
    "json": ("*.json",),
    "kotlin": ("*.kt", "*.kts"),
    "md": ("*.md", "*.markdown"),
    "php": ("*.php",),
    "py": ("*.py", "*.pyi"),
    "rb": ("*.rb",),
    "rust": ("*.rs",),
    "sh": ("*.sh", "*.bash", "*.zsh"),
    "sql": ("*.sql",),
    "swift": ("*.swift",),
    "toml": ("*.toml",),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "txt": ("*.txt",),
    "xml": ("*.xml",),
    "yaml": ("*.yaml", "*.yml"),
}
"""Each type's globs; `markdown`, `python`, `javascript`, ... are accepted as aliases."""

ALIASES = {
    "markdown": "md",
    "python": "py",
    "javascript": "js",
    "typescript": "ts",
    "ruby": "rb",
    "rs": "rust",
    "yml": "yaml",
    "shell": "sh",
    "text": "txt",
}


def globs_for(name: str) -> tuple[str, ...] | None:
    """The globs of a file type, or None if the type is unknown."""
    key = name.strip().lower()
    return FILE_TYPES.get(ALIASES.get(key, key))


__all__ = ["ALIASES", "FILE_TYPES", "globs_for"]
