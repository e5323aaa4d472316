"""Syntax checks of a change: which parse errors did it introduce?

A file's language comes from its extension, else from its shebang line (`language_for`).
Both versions are parsed with that language's tree-sitter grammar, from the optional
`tree-sitter-language-pack` (the `syntax` extra); without it `available()` is False and
nothing is checked. `introduced_errors` lists the errors of the new text that the old
text did not have. An error is identified by the text of the line it starts on (without
its indentation), not by its line number, so an error that was already there and merely
moved (lines added above it, a block re-indented) is not new.

Cost: tree-sitter reparses a changed text incrementally from the tree of the text
before it, reusing every subtree the change did not touch. `TreeCache` keeps the trees
of recently checked texts, so a file's second and later changes cost a fraction of a
full parse, and the old text is parsed only when the new one has errors. Texts above
`MAX_CHECK_BYTES` are not checked.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tree_sitter import Language, Parser, Point

from langchain_fstools.errors import FsToolsError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tree_sitter import Node, Tree

SyntaxCheck = Literal["report", "refuse", "off"]
"""What the mutating tools do with a change that introduces syntax errors: report them
with the result, refuse the change, or not check at all."""

SYNTAX_CHECKS: tuple[SyntaxCheck, ...] = ("report", "refuse", "off")

MAX_CHECK_BYTES = 1024 * 1024
"""Largest text (UTF-8 bytes) checked; larger ones are skipped. Default: 1 MiB."""

EXCERPT_CHARS = 120
"""Longest excerpt of the line an error is on."""

LANGUAGES: dict[str, str] = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "tsx": "TSX",
    "json": "JSON",
    "yaml": "YAML",
    "toml": "TOML",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
    "kotlin": "Kotlin",
    "c": "C",
    "cpp": "C++",
    "csharp": "C#",
    "ruby": "Ruby",
    "php": "PHP",
    "bash": "Bash",
    "html": "HTML",
    "css": "CSS",
}
"""The grammars checked (tree-sitter-language-pack names), with their display names."""

_EXTENSIONS = {
    **dict.fromkeys((".py", ".pyi", ".pyw"), "python"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    **dict.fromkeys((".ts", ".mts", ".cts"), "typescript"),
    ".tsx": "tsx",
    **dict.fromkeys((".json", ".jsonc"), "json"),
    **dict.fromkeys((".yaml", ".yml"), "yaml"),
    ".toml": "toml",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    **dict.fromkeys((".kt", ".kts"), "kotlin"),
    **dict.fromkeys((".c", ".h"), "c"),
    **dict.fromkeys((".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"), "cpp"),
    ".cs": "csharp",
    **dict.fromkeys((".rb", ".rake", ".gemspec"), "ruby"),
    ".php": "php",
    **dict.fromkeys((".sh", ".bash"), "bash"),
    **dict.fromkeys((".html", ".htm"), "html"),
    ".css": "css",
}
_FILENAMES = {"Gemfile": "ruby", "Rakefile": "ruby", ".bashrc": "bash", ".bash_profile": "bash"}
_INTERPRETERS = {
    "python": "python",
    "pypy": "python",
    "node": "javascript",
    "deno": "typescript",
    "ts-node": "typescript",
    "bun": "javascript",
    "bash": "bash",
    "sh": "bash",
    "ruby": "ruby",
    "php": "php",
}
_KERNEL_LANGUAGES = {
    **{name: name for name in LANGUAGES},
    "c++": "cpp",
    "c#": "csharp",
    "sh": "bash",
    "shell": "bash",
    "js": "javascript",
    "ts": "typescript",
}


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """One syntax error in a text.

    Attributes:
        line: 1-based line the error starts on.
        column: 1-based column (in characters) it starts at.
        message: What is wrong: `invalid syntax`, or `missing ")"` (`missing
            identifier`) when the parser found a token (a name) missing.
        excerpt: The line, without its indentation, cut to `EXCERPT_CHARS`.
    """

    line: int
    column: int
    message: str
    excerpt: str


@dataclass(frozen=True, slots=True)
class SyntaxReport:
    """The errors one change introduced in one file (or notebook cell).

    Attributes:
        path: The file's virtual path.
        language: The grammar it was parsed with (a key of `LANGUAGES`).
        problems: The introduced errors, in file order.
        cell: The id of the notebook cell checked, if any.
    """

    path: str
    language: str
    problems: tuple[SyntaxProblem, ...]
    cell: str | None = None


def available() -> bool:
    """Whether the grammars (`tree-sitter-language-pack`, the `syntax` extra) import."""
    try:
        import tree_sitter_language_pack  # noqa: F401, PLC0415 - optional
    except ImportError:
        return False
    return True


def language_for(path: str, text: str | bytes = "") -> str | None:
    """The grammar for a file: by extension or name, else by its shebang line.

    Args:
        path: The file's path (only its name is used).
        text: The file's content, or at least its first line.

    Returns:
        A key of `LANGUAGES`, or None when the language is not known.
    """
    name = posixpath.basename(path)
    extension = posixpath.splitext(name)[1].lower()
    found = _EXTENSIONS.get(extension) or _FILENAMES.get(name)
    if found is not None:
        return found
    head = text[:200] if isinstance(text, str) else text[:200].decode("utf-8", "replace")
    return _shebang_language(head.split("\n", 1)[0])


def kernel_language(name: object) -> str | None:
    """The grammar for a Jupyter kernel's language name (`python`, `c++`, ...), or None."""
    return _KERNEL_LANGUAGES.get(name.lower()) if isinstance(name, str) else None


def _shebang_language(first_line: str) -> str | None:
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].split()
    if words and posixpath.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    if not words:
        return None
    program = posixpath.basename(words[0]).rstrip("0123456789.")
    return _INTERPRETERS.get(program)


@dataclass(eq=False)
class SyntaxBroken(FsToolsError):
    """A change refused (`syntax_check="refuse"`) because it introduces syntax errors.

    `reports` holds, per file (or notebook cell), the errors the change would introduce.
    """

    reports: tuple[SyntaxReport, ...]


class TreeCache:
    """Parse trees of recently checked texts, by language and content, bounded in size.

    Thread-safe; holds at most `max_bytes` of source (UTF-8) worth of trees, dropping the
    least recently used first.

    Args:
        max_bytes: Source bytes whose trees are kept. Default: 4 MiB.
    """

    def __init__(self, max_bytes: int = 4 * 1024 * 1024) -> None:
        """Start empty."""
        self.max_bytes = max_bytes
        self._trees: OrderedDict[tuple[str, bytes], tuple[Tree, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, language: str, source: bytes) -> Tree | None:
        """The tree of `source` (a copy, free to edit), or None."""
        key = (language, _digest(source))
        with self._lock:
            found = self._trees.get(key)
            if found is None:
                return None
            self._trees.move_to_end(key)
            return found[0].copy()

    def put(self, language: str, source: bytes, tree: Tree) -> None:
        """Keep `tree` as the parse of `source`."""
        key = (language, _digest(source))
        with self._lock:
            previous = self._trees.pop(key, None)
            if previous is not None:
                self._size -= previous[1]
            self._trees[key] = (tree, len(source))
            self._size += len(source)
            while self._size > self.max_bytes and self._trees:
                _, (_, size) = self._trees.popitem(last=False)
                self._size -= size


def introduced_errors(
    old: str | bytes | None,
    new: str | bytes,
    language: str,
    *,
    trees: TreeCache | None = None,
) -> list[SyntaxProblem]:
    """The syntax errors `new` has that `old` did not, in file order.

    Every error of a new file (`old` None) is introduced. Otherwise only errors that
    touch the changed bytes or the lines next to them count, less the ones `old` had
    there too (matched by the text of the line they start on, so one that only moved is
    not new; an error on a line the edit rewrote is reported), and the check costs what
    it finds:

    - a new text without errors introduced none: one parse (incremental from `old`'s
      tree when `trees` has it), and `old` is never parsed;
    - with errors but none near the change, nothing more;
    - with errors near it, `old` is reparsed from the new tree (or taken from `trees`),
      reusing every subtree the change did not touch: the same tree as a parse of its
      own, at a fraction of the cost when the file is mostly valid. (Tree-sitter does
      not reuse the subtrees its error recovery built, so a file full of errors pays
      two whole parses, each several times a valid file's.)

    Args:
        old: The text before the change, or None for a new file.
        new: The text after the change.
        language: A key of `LANGUAGES`.
        trees: Trees of earlier texts to parse incrementally from; the new text's tree
            is added to it. Default: none (every parse is a full one).

    Returns:
        The introduced errors; empty also when the grammars are not installed or the
        new text is above `MAX_CHECK_BYTES`.
    """
    if len(new) > MAX_CHECK_BYTES or language not in LANGUAGES or not available():
        return []  # a text has at least as many UTF-8 bytes as characters
    new_source = _utf8(new)
    old_source = None if old is None else _utf8(old)
    if len(new_source) > MAX_CHECK_BYTES:
        return []
    if old_source is None or len(old_source) > MAX_CHECK_BYTES:
        return _new_errors(new_source, language, trees)
    parser = _parser(language)
    old_tree = None if trees is None else trees.get(language, old_source)
    change = None
    if old_tree is not None:
        change = _changed(old_source, new_source)
        kept = old_tree.copy()  # the edit below marks `old_tree`'s nodes as changed
        _edit(old_tree, old_source, new_source, change)
        new_tree = parser.parse(new_source, old_tree)
        old_tree = kept
    else:
        new_tree = parser.parse(new_source)
    if trees is not None:
        trees.put(language, new_source, new_tree)
    if not new_tree.root_node.has_error:
        return []
    start, old_end, new_end = change or _changed(old_source, new_source)
    found = _problems(new_tree.root_node, new_source, _near(new_source, start, new_end))
    if not found:
        return []
    if old_tree is None:  # reparse from the new tree: what the change did not touch is reused
        old_tree = new_tree.copy()
        _edit(old_tree, new_source, old_source, (start, new_end, old_end))
        old_tree = parser.parse(old_source, old_tree)
    before = _problems(old_tree.root_node, old_source, _near(old_source, start, old_end))
    return _unmatched(found, before)


def _new_errors(source: bytes, language: str, trees: TreeCache | None) -> list[SyntaxProblem]:
    """Every error of a text that had no previous version (or one too large to check)."""
    tree = _parser(language).parse(source)
    if trees is not None:
        trees.put(language, source, tree)
    return _problems(tree.root_node, source) if tree.root_node.has_error else []


def _unmatched(found: list[SyntaxProblem], before: list[SyntaxProblem]) -> list[SyntaxProblem]:
    """The problems of `found` whose line text `before` has fewer times (a multiset)."""
    seen: dict[str, int] = {}
    for problem in before:
        seen[problem.excerpt] = seen.get(problem.excerpt, 0) + 1
    introduced = []
    for problem in found:
        if seen.get(problem.excerpt, 0):
            seen[problem.excerpt] -= 1
        else:
            introduced.append(problem)
    return introduced


def remember(text: str | bytes, language: str, trees: TreeCache) -> None:
    """Parse `text` and keep its tree, so the first change of it reparses incrementally.

    Does nothing for an unknown language, without the grammars, above `MAX_CHECK_BYTES`,
    or when the tree is kept already. Meant for a background thread while the agent
    waits for its model: py-tree-sitter 0.26 holds the GIL while it parses (measured),
    so a parse runs beside I/O, not beside other Python work.
    """
    if language not in LANGUAGES or not available():
        return
    source = _utf8(text)
    if len(source) > MAX_CHECK_BYTES or trees.get(language, source) is not None:
        return
    trees.put(language, source, _parser(language).parse(source))


@functools.cache
def _language(name: str) -> Language:
    from tree_sitter_language_pack import get_language  # noqa: PLC0415 - optional extra

    return get_language(name)  # type: ignore[arg-type]  # checked against LANGUAGES


_PARSERS = threading.local()


def _parser(language: str) -> Parser:
    """This thread's parser for `language` (a parser is not safe to share between threads)."""
    parsers: dict[str, Parser] | None = getattr(_PARSERS, "by_language", None)
    if parsers is None:
        parsers = _PARSERS.by_language = {}
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = Parser(_language(language))
    return parser


def _utf8(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


def _digest(source: bytes) -> bytes:
    return hashlib.blake2b(source, digest_size=16).digest()


def _changed(old: bytes, new: bytes) -> tuple[int, int, int]:
    """`(start, old_end, new_end)`: the byte range of `old` that became `new`'s."""
    limit = min(len(old), len(new))
    start = _common_prefix(old, new, limit)
    end = _common_prefix(old[::-1], new[::-1], limit - start)
    return start, len(old) - end, len(new) - end


def _near(source: bytes, start: int, end: int) -> tuple[int, int]:
    """The bytes from the line before `start` to the end of the line after `end`."""
    before = source.rfind(b"\n", 0, start)
    before = source.rfind(b"\n", 0, max(before, 0)) + 1 if before > 0 else 0
    after = source.find(b"\n", end)
    after = source.find(b"\n", after + 1) if after >= 0 else -1
    return before, len(source) if after < 0 else after


def _edit(tree: Tree, old: bytes, new: bytes, change: tuple[int, int, int]) -> None:
    """Tell `tree` (of `old`) that bytes `start:old_end` became `new`'s `start:new_end`."""
    start, old_end, new_end = change
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(old, start),
        old_end_point=_point(old, old_end),
        new_end_point=_point(new, new_end),
    )


def _common_prefix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the common prefix of `a` and `b`, at most `limit` (binary search)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _point(source: bytes, offset: int) -> Point:
    row = source.count(b"\n", 0, offset)
    return Point(row, offset - (source.rfind(b"\n", 0, offset) + 1))


def _problems(
    root: Node, source: bytes, within: tuple[int, int] | None = None
) -> list[SyntaxProblem]:
    """The errors under `root`; with `within`, only those touching that byte range."""
    return [_problem(node, source) for node in _error_nodes(root, within)]


def _error_nodes(node: Node, within: tuple[int, int] | None = None) -> Iterator[Node]:
    """The outermost ERROR and MISSING nodes, in order; only erroneous subtrees are visited.

    With `within`, subtrees that end before it or start after it are skipped.
    """
    for child in node.children:
        if within is not None and (child.end_byte < within[0] or child.start_byte > within[1]):
            continue
        if child.is_error or child.is_missing:
            yield child
        elif child.has_error:
            yield from _error_nodes(child, within)


def _problem(node: Node, source: bytes) -> SyntaxProblem:
    row, byte_column = node.start_point
    line_start = node.start_byte - byte_column
    line_end = source.find(b"\n", line_start)
    line = source[line_start : len(source) if line_end < 0 else line_end]
    text = line.decode("utf-8", "replace").rstrip("\r")
    column = len(line[:byte_column].decode("utf-8", "replace")) + 1
    excerpt = text.strip()
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[: EXCERPT_CHARS - 1] + "…"
    if not node.is_missing:
        message = "invalid syntax"
    elif node.type.replace("_", "").isalnum():
        message = f"missing {node.type.replace('_', ' ')}"
    else:
        message = f'missing "{node.type}"'
    return SyntaxProblem(row + 1, column, message, excerpt)


__all__ = [
    "LANGUAGES",
    "MAX_CHECK_BYTES",
    "SYNTAX_CHECKS",
    "SyntaxBroken",
    "SyntaxCheck",
    "SyntaxProblem",
    "SyntaxReport",
    "TreeCache",
    "available",
    "introduced_errors",
    "kernel_language",
    "language_for",
    "remember",
]
