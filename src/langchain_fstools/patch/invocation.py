"""Recognise `apply_patch` written as a shell command, with a real bash parse.

Models trained on Codex often send a patch as a command line. `parse_invocation` reads
the command with the shell analyser (`shell.policy.analysis`: the same parse and the same
word values the permission rules and the command policy use) and answers with one of
three outcomes:

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

The command is ours when any command it runs is apply_patch, as the analyser finds it
(behind quotes, wrappers, `bash -c`, substitutions). Anything else around an
apply_patch call (`;`, `||`, pipes, another command, more arguments, redirections,
variable expansions in the directory) is refused, because the shell would not run
just the patch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_fstools.shell.policy.analysis import analyse, node_text, parse, shell_script, word

if TYPE_CHECKING:
    from tree_sitter import Node

    from langchain_fstools.shell.policy.analysis import SimpleCommand

NAMES = frozenset({"apply_patch", "applypatch"})
"""Command names that mean apply_patch."""

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
    if not any(_mentions(found) for found in analyse(command).commands):
        return NotApplyPatch()
    root = parse(command)
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
    """The script of `bash -lc SCRIPT` (or another shell), or None if `command` is not that."""
    words = [word(part) for part in (_name_node(command), *_arguments(command)) if part]
    index = shell_script(words)
    if index is None:
        return None
    if index != len(words) - 1:
        raise _Refused(_SHAPE)
    return _literal(_arguments(command)[index - 1], what="the shell script")


def _mentions(found: SimpleCommand) -> bool:
    """Whether `found` is apply_patch, or a script computed at run time that names it."""
    if found.unknown is not None:
        return any(name in found.words[0].text for name in NAMES)
    return found.name in NAMES


def _name_node(command: Node) -> Node | None:
    return command.child_by_field_name("name")


def _name(command: Node) -> str | None:
    name = _name_node(command)
    return word(name).value if name is not None else None


def _arguments(command: Node) -> list[Node]:
    name = _name_node(command)
    return [child for child in command.named_children if child != name]


def _literal(node: Node, *, what: str) -> str:
    """The value of a word, with no expansion left to run."""
    value = word(node)
    if value.value is None or value.pattern is not None:
        raise _Refused(f"{what} may not use variables, command substitution or globs")
    return value.value


def _text(node: Node) -> str:
    return node_text(node)


__all__ = [
    "NAMES",
    "InvalidInvocation",
    "Invocation",
    "NotApplyPatch",
    "PatchInvocation",
    "parse_invocation",
]
