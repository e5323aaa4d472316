"""Recognise `apply_patch` written as a shell command, with a real bash parse.

Models trained on Codex often send a patch as a command line. `parse_invocation` parses
the command with tree-sitter-bash and answers with one of three outcomes:

- `NotApplyPatch`: the command does not call apply_patch; run it as a shell command.
- `InvalidInvocation(reason)`: it calls apply_patch in a form that is refused.
- `PatchInvocation(patch, workdir)`: the patch text, and the directory its relative
  paths start from (None: the workspace root).

Accepted forms (`applypatch` is accepted for `apply_patch`):
    1. `apply_patch <<'EOF'` ... `EOF` (any heredoc delimiter, quoted or not; the body
       is taken literally, as the patch is never expanded);
    2. `apply_patch '<patch>'`, the patch as the only argument;
    3. `cd DIR && ` before either of the above;
    4. any of the above as the script of `bash -c`/`bash -lc` (or `sh`, `zsh`).

Anything else around an apply_patch call (`;`, `||`, pipes, another command, more
arguments, redirections, variable expansions in the directory) is refused, because
the shell would not run just the patch.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import tree_sitter_bash
from tree_sitter import Language, Parser

if TYPE_CHECKING:
    from tree_sitter import Node

NAMES = frozenset({"apply_patch", "applypatch"})
"""Command names that mean apply_patch."""

SHELLS = frozenset({"bash", "sh", "zsh"})
"""Shells whose `-c` script is looked into."""

_SCRIPT_FLAG = re.compile(r"^-[a-z]*c[a-z]*$")
_DOUBLE_QUOTE_ESCAPES = re.compile(r"\\([\\\"$`\n])")
_WORD_ESCAPES = re.compile(r"\\(.)", re.DOTALL)
_SHAPE = (
    "apply_patch must be the only command: `apply_patch <<'EOF'` ... `EOF`, optionally"
    " after `cd DIR && `; pass other commands in a separate call"
)


@dataclass(frozen=True, slots=True)
class NotApplyPatch:
    """The command does not call apply_patch: run it as an ordinary shell command."""


@dataclass(frozen=True, slots=True)
class InvalidInvocation:
    """The command calls apply_patch in a refused form; `reason` says how to fix it."""

    reason: str


@dataclass(frozen=True, slots=True)
class PatchInvocation:
    """A recognised apply_patch call.

    Attributes:
        patch: The patch text.
        workdir: The `cd` directory the patch's relative paths start from, or None.
    """

    patch: str
    workdir: str | None


Invocation = NotApplyPatch | InvalidInvocation | PatchInvocation


class _Refused(Exception):
    """Internal: the invocation is ours but refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@functools.cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def parse_invocation(command: str) -> Invocation:
    """Tell whether `command` calls apply_patch, and extract the patch if so.

    Args:
        command: A shell command line, as a model would pass to `execute`.

    Returns:
        `NotApplyPatch`, `InvalidInvocation(reason)` or `PatchInvocation(patch, workdir)`.
    """
    return _parse(command, nested=False)


def _parse(command: str, *, nested: bool) -> Invocation:
    if not any(name in command for name in NAMES):
        return NotApplyPatch()
    root = Parser(_language()).parse(command.encode("utf-8")).root_node
    if not _calls_apply_patch(root, nested=nested):
        return NotApplyPatch()
    statements = [child for child in root.named_children if child.type != "comment"]
    if root.has_error:
        return InvalidInvocation(
            "the command is not valid shell syntax; send `apply_patch <<'EOF'`, the patch,"
            " then `EOF` on a line of its own"
        )
    if len(statements) != 1:
        return InvalidInvocation(_SHAPE)
    try:
        return _statement(statements[0], nested=nested)
    except _Refused as refused:
        return InvalidInvocation(refused.reason)


def _statement(node: Node, *, nested: bool) -> Invocation:
    if node.type == "command" and not nested:
        script = _shell_script(node)
        if script is not None:
            inner = _parse(script, nested=True)
            return InvalidInvocation(_SHAPE) if isinstance(inner, NotApplyPatch) else inner
    if node.type == "redirected_statement":
        return _redirected(node)
    body, workdir = _after_cd(node)
    patch = _argument_patch(body)
    return PatchInvocation(patch, workdir)


def _redirected(node: Node) -> PatchInvocation:
    body = node.child_by_field_name("body")
    redirects = [child for child in node.named_children if child != body]
    if body is None or len(redirects) != 1 or redirects[0].type != "heredoc_redirect":
        raise _Refused(f"{_SHAPE}; no redirections other than the heredoc")
    heredoc = redirects[0]
    parts = [child.type for child in heredoc.named_children]
    if parts not in (
        ["heredoc_start", "heredoc_body", "heredoc_end"],
        ["heredoc_start", "heredoc_end"],
    ):
        raise _Refused(f"{_SHAPE}; nothing may follow the heredoc start on its line")
    command, workdir = _after_cd(body)
    if _arguments(command):
        raise _Refused("apply_patch takes no arguments when the patch comes from a heredoc")
    patch_body = next((c for c in heredoc.named_children if c.type == "heredoc_body"), None)
    return PatchInvocation(_text(patch_body) if patch_body is not None else "", workdir)


def _after_cd(node: Node) -> tuple[Node, str | None]:
    """Split `cd DIR && command` into the command and DIR (or the node and None)."""
    if node.type == "command":
        _require_apply_patch(node)
        return node, None
    if node.type != "list":
        raise _Refused(_SHAPE)
    children = node.children
    if len(children) != 3 or children[1].type != "&&":  # noqa: PLR2004 - left, &&, right
        raise _Refused(_SHAPE)
    first, command = children[0], children[2]
    if first.type != "command" or command.type != "command" or _name(first) != "cd":
        raise _Refused(_SHAPE)
    arguments = _arguments(first)
    if len(arguments) != 1:
        raise _Refused("`cd` before apply_patch takes exactly one directory")
    _require_apply_patch(command)
    return command, _literal(arguments[0], what="the cd directory")


def _argument_patch(command: Node) -> str:
    arguments = _arguments(command)
    if len(arguments) != 1:
        raise _Refused(
            "apply_patch takes the patch as a heredoc (apply_patch <<'EOF' ... EOF) or as"
            " its only argument"
        )
    return _literal(arguments[0], what="the patch argument")


def _require_apply_patch(command: Node) -> None:
    if _name(command) not in NAMES:
        raise _Refused(_SHAPE)


def _shell_script(command: Node) -> str | None:
    """The script of `bash -lc SCRIPT` (or sh/zsh), or None if `command` is not that."""
    name = _name(command)
    if name is None or name.rsplit("/", 1)[-1] not in SHELLS:
        return None
    arguments = _arguments(command)
    if len(arguments) != 2 or not _SCRIPT_FLAG.match(_text(arguments[0])):  # noqa: PLR2004
        return None
    return _literal(arguments[1], what="the shell script")


def _calls_apply_patch(node: Node, *, nested: bool) -> bool:
    """Whether any command in the tree is apply_patch (or a shell script calling it)."""
    if node.type == "command":
        name = _name(node)
        if name in NAMES:
            return True
        if not nested and _shell_script_mentions(node):
            return True
    return any(_calls_apply_patch(child, nested=nested) for child in node.named_children)


def _shell_script_mentions(command: Node) -> bool:
    try:
        script = _shell_script(command)
    except _Refused:
        return any(name in _text(command) for name in NAMES)
    return script is not None and not isinstance(_parse(script, nested=True), NotApplyPatch)


def _name(command: Node) -> str | None:
    name = command.child_by_field_name("name")
    return _text(name) if name is not None else None


def _arguments(command: Node) -> list[Node]:
    name = command.child_by_field_name("name")
    return [child for child in command.named_children if child != name]


def _literal(node: Node, *, what: str) -> str:
    """The value of a word or quoted string without expansions."""
    text = _text(node)
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string":
        if any(child.type != "string_content" for child in node.named_children):
            raise _Refused(f"{what} may not use variables or command substitution")
        return _DOUBLE_QUOTE_ESCAPES.sub(
            lambda match: "" if match.group(1) == "\n" else match.group(1), text[1:-1]
        )
    if node.type == "word":
        return _WORD_ESCAPES.sub(r"\1", text)
    raise _Refused(f"{what} must be a plain word or one quoted string")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


__all__ = [
    "NAMES",
    "SHELLS",
    "InvalidInvocation",
    "Invocation",
    "NotApplyPatch",
    "PatchInvocation",
    "parse_invocation",
]
