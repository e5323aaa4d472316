"""CommandPolicy: which shell commands the `execute` tool may run.

The command line is parsed with tree-sitter-bash, and every simple command in it is
checked: those in pipelines and lists (`;`, `&&`, `||`, `|`, `&`), subshells, command
substitutions, function bodies, behind wrappers (`env`, `nice`, `timeout`, `nohup`,
`xargs`, `command`, `exec`, ...), run by `find -exec`, and in scripts given to
`sh -c` / `bash -c` / `eval` (parsed in turn). Command names are compared as the shell
would resolve them: `\\rm`, `'rm'`, `"r"m` and `/bin/rm` are all `rm`.

A policy is a guard against mistakes, not a security boundary: a determined command
can compute its own text (`$(printf 'su''do')`, a script file it writes first). To
contain what commands can do, run them in a sandbox
(`LocalBackend(root, execute=True, sandbox="bwrap")`).

Example:
    ```python
    from langchain_fstools import FileToolkit, LocalBackend
    from langchain_fstools.shell.policy import CommandPolicy

    policy = CommandPolicy(allow=["pytest", "python", "git status", "git diff"])
    tools = FileToolkit(LocalBackend("./repo"), command_policy=policy).get_tools()
    ```
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from langchain_fstools.errors import CommandRefused

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

PRIVILEGED = frozenset({"sudo", "su", "doas", "pkexec", "run0"})
"""Commands that run others with elevated privileges."""

POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "telinit"})
"""Commands that stop or restart the machine (`init 0|6` and `systemctl reboot` too)."""

DISK_TOOLS = frozenset(
    {"mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted"}
)
"""Commands that format or partition disks (and every `mkfs.*`)."""

ALWAYS_ALLOWED = frozenset(
    {":", "[", "cd", "echo", "exit", "export", "false", "printf", "pwd", "set", "test", "true"}
)
"""Harmless shell builtins an allow list never needs to name."""

_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full"}
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/shm/", "/dev/tcp/", "/dev/udp/")  # noqa: S108 - not a temp file
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # name: (options that take a value, positional arguments before the command)
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "setsid": (frozenset(), 0),
    "xargs": (
        frozenset({"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--max-args", "--delimiter"}),
        0,
    ),
}
_EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_MAX_DEPTH = 4
_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})
_FALLBACK_SPLIT = re.compile(r"\$\(|[;&|\n(){}`]")
_FALLBACK_REDIRECT = re.compile(r"(?<![<0-9])>{1,2}\|?\s*(/dev/[^\s;&|)]+)")
_FALLBACK_FORK_BOMB = re.compile(r"(\S+)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*\1")
_HOME_EXPANSION = re.compile(r'^"?\$\{?HOME\}?"?/?\*?$')


@dataclass(frozen=True, slots=True)
class _Command:
    """One simple command: its words (None where computed at run time) and raw text."""

    words: tuple[str | None, ...]
    raw: tuple[str, ...]
    transparent: bool = False
    """A wrapper (`env`, `bash -c`, ...) whose wrapped command is checked instead."""

    @property
    def name(self) -> str | None:
        first = self.words[0] if self.words else None
        return None if first is None else posixpath.basename(first) or first


@dataclass
class _Findings:
    """What a command line would do, as far as the policy cares."""

    commands: list[_Command] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    fork_bombs: list[str] = field(default_factory=list)
    unparsed: bool = False
    computed_scripts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommandPolicy:
    """Which shell commands `execute` may run; `check` says why one may not.

    A command line is checked in this order; the first rule that refuses wins:

    1. Dangerous commands (unless `block_dangerous=False`): privilege escalation
       (`sudo`, `su`, `doas`, ...), shutdown and reboot, formatting or partitioning
       disks (`mkfs*`, `fdisk`, ...), writing to a device (`> /dev/sda`,
       `dd of=/dev/...`, `tee /dev/...`; `/dev/null` and the like are fine), recursive
       `rm`, `chmod`, `chown` of `/`, a top-level directory or a home directory (and
       `--no-preserve-root`), and fork bombs.
    2. `deny`: a command matching any deny pattern is refused.
    3. `allow`: when given, every command must match an allow pattern (or be a harmless
       builtin of `ALWAYS_ALLOWED`); a command whose name is computed at run time
       (`$CMD args`), or a line that does not parse, is refused, since it cannot be
       checked.

    A pattern is a command prefix in shell words, each word an `fnmatch` glob: `"curl"`
    matches every `curl` command, `"git push"` matches `git push --force` but not
    `git status`, `"python*"` matches `python3`. The command's name is matched by its
    last path component.

    Args:
        deny: Patterns of commands never run. Default: none.
        allow: Patterns of the only commands that run, or None for any command.
            Default: None.
        block_dangerous: Refuse the dangerous commands listed above. Default: True.

    Raises:
        ValueError: a pattern is empty or not valid shell words.
    """

    deny: Sequence[str] = ()
    allow: Sequence[str] | None = None
    block_dangerous: bool = True

    def __post_init__(self) -> None:
        """Freeze the pattern lists; refuse empty or unbalanced patterns."""
        object.__setattr__(self, "deny", tuple(self.deny))
        if self.allow is not None:
            object.__setattr__(self, "allow", tuple(self.allow))
        for pattern in (*self.deny, *(self.allow or ())):
            _pattern_words(pattern)

    def check(self, command: str) -> CommandRefused | None:
        """Return why `command` may not run, or None if it may.

        Args:
            command: The command line, as the model wrote it.

        Returns:
            The refusal (its `rule` names the rule, its `reason` says what matched), or
            None.
        """
        findings = _analyse(command)
        if self.block_dangerous:
            refusal = _dangerous(findings)
            if refusal is not None:
                return refusal
        for found in findings.commands:
            for pattern in self.deny:
                if _matches(found, pattern):
                    return CommandRefused(
                        "deny", f"`{_show(found)}` matches the deny pattern {pattern!r}"
                    )
        if self.allow is not None:
            return _outside_allow_list(findings, self.allow)
        return None


def _outside_allow_list(findings: _Findings, allow: Sequence[str]) -> CommandRefused | None:
    if findings.unparsed:
        return CommandRefused(
            "allow",
            "the command could not be parsed, so it cannot be checked against the allow list",
        )
    if findings.computed_scripts:
        return CommandRefused(
            "allow",
            f"the script `{findings.computed_scripts[0]}` is computed at run time,"
            " so it cannot be checked against the allow list",
        )
    for found in findings.commands:
        if found.transparent:
            continue
        if found.name is None:
            return CommandRefused(
                "allow",
                f"the command name `{found.raw[0]}` is computed at run time,"
                " so it cannot be checked against the allow list",
            )
        if found.name in ALWAYS_ALLOWED or any(_matches(found, p) for p in allow):
            continue
        allowed = ", ".join(allow) or "none"
        return CommandRefused(
            "allow", f"`{_show(found)}` is not one of the allowed commands ({allowed})"
        )
    return None


# ----- the dangerous commands ----------------------------------------------------------


def _dangerous(findings: _Findings) -> CommandRefused | None:
    for name in findings.fork_bombs:
        return CommandRefused(
            "fork_bomb",
            f"the function `{name}` starts copies of itself without end (a fork bomb)",
        )
    for target in findings.writes:
        if _is_device(target):
            return CommandRefused("device_write", f"writing to the device {target} is not allowed")
    for found in findings.commands:
        refusal = _dangerous_command(found)
        if refusal is not None:
            return refusal
    return None


def _dangerous_command(found: _Command) -> CommandRefused | None:  # noqa: PLR0911 - one return per rule
    name = found.name
    args = found.words[1:]
    if name is None:
        return None
    if name in PRIVILEGED:
        return CommandRefused(
            "privilege", f"`{name}` runs commands with elevated privileges, which is not allowed"
        )
    if (
        name in POWER
        or (name == "init" and args[:1] in (("0",), ("6",)))
        or (name == "systemctl" and {"poweroff", "reboot", "halt", "kexec"} & set(args))
    ):
        return CommandRefused("power", f"`{_show(found)}` would stop or restart the machine")
    if name in DISK_TOOLS or name.startswith("mkfs."):
        return CommandRefused("disk", f"`{name}` formats or partitions disks")
    devices = [a for a in args if a is not None and _is_device(_dd_target(name, a))]
    if devices and name in {"dd", "tee", "cp", "shred"}:
        return CommandRefused(
            "device_write", f"writing to the device {_dd_target(name, devices[0])} is not allowed"
        )
    if name in {"rm", "chmod", "chown", "chgrp"}:
        return _recursive_on_protected(found, name)
    return None


def _recursive_on_protected(found: _Command, name: str) -> CommandRefused | None:
    args = found.words[1:]
    raws = found.raw[1:]
    options: list[str] = []
    targets: list[tuple[str | None, str]] = []
    for value, raw in zip(args, raws, strict=True):
        if value is not None and value.startswith("-") and value != "-" and not targets:
            options.append(value)
        else:
            targets.append((value, raw))
    if "--no-preserve-root" in options:
        return CommandRefused("recursive_delete", f"`{name} --no-preserve-root` is not allowed")
    recursive = "--recursive" in options or any(
        not o.startswith("--") and ("r" in o or "R" in o) for o in options
    )
    if not recursive:
        return None
    for value, raw in targets:
        protected = _HOME_EXPANSION.match(raw) if value is None else _is_protected(value)
        if protected:
            action = "delete" if name == "rm" else "change"
            return CommandRefused(
                "recursive_delete" if name == "rm" else "recursive_permissions",
                f"`{name}` would recursively {action} {raw}, a root, top-level or home"
                " directory; name a directory inside the workspace",
            )
    return None


def _dd_target(name: str, argument: str) -> str:
    if name == "dd":
        return argument[3:] if argument.startswith("of=") else ""
    return argument


def _is_device(path: str) -> bool:
    normal = posixpath.normpath(re.sub("/+", "/", path)) if path else ""
    if not normal.startswith("/dev/"):
        return False
    return normal not in _SAFE_DEVICES and not normal.startswith(_SAFE_DEVICE_DIRS)


def _is_protected(path: str) -> bool:
    """Whether `path` is `/`, a top-level directory (or `/*`), or a home directory."""
    collapsed = re.sub("/+", "/", path)
    if collapsed.startswith("/"):
        return posixpath.normpath(collapsed).count("/") <= 1
    if collapsed.startswith("~"):
        _, _, rest = collapsed.partition("/")
        return posixpath.normpath(rest or ".") in {".", "*", ".*"}
    return False


# ----- patterns ------------------------------------------------------------------------


def _pattern_words(pattern: str) -> list[str]:
    try:
        words = shlex.split(pattern)
    except ValueError as exc:
        raise ValueError(f"command pattern {pattern!r} is not valid shell words: {exc}") from None
    if not words:
        raise ValueError("a command pattern must not be empty")
    return words


def _matches(found: _Command, pattern: str) -> bool:
    wanted = _pattern_words(pattern)
    words = (found.name, *found.words[1:])
    if len(words) < len(wanted):
        return False
    return all(
        word is not None and fnmatch.fnmatchcase(word, glob)
        for word, glob in zip(words, wanted, strict=False)
    )


def _show(found: _Command, words: int = 4) -> str:
    """The first `words` words of a command, for a refusal."""
    return " ".join(found.raw[:words]) + (" ..." if len(found.raw) > words else "")


# ----- parsing -------------------------------------------------------------------------


@cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def _analyse(command: str) -> _Findings:
    findings = _Findings()
    _Analyser(findings).script(command, depth=0)
    return findings


class _Analyser:
    """Walks a bash syntax tree, collecting commands, writes and fork bombs."""

    def __init__(self, findings: _Findings) -> None:
        self.findings = findings

    def script(self, source: str, *, depth: int) -> None:
        """Analyse one command line (the whole input, or an `sh -c` script)."""
        if depth > _MAX_DEPTH:
            self.findings.computed_scripts.append(_shorten(source))
            return
        tree = Parser(_language()).parse(source.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.findings.unparsed = True
            self._fallback(source)
        self._walk(tree.root_node, depth)

    def _walk(self, root: Node, depth: int) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                self._command(node, depth)
            elif node.type == "file_redirect":
                self._redirect(node)
            elif node.type == "function_definition":
                self._function(node)
            stack.extend(reversed(node.children))

    def _command(self, node: Node, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        parts = [name, *node.children_by_field_name("argument")]
        words = tuple(_static(part) for part in parts)
        raw = tuple(_text(part) for part in parts)
        self._simple(words, raw, depth)

    def _simple(self, words: tuple[str | None, ...], raw: tuple[str, ...], depth: int) -> None:
        """Record a simple command, then whatever command it runs in turn."""
        first = words[0]
        name = None if first is None else posixpath.basename(first) or first
        inner = _wrapped(name, words) if name is not None else None
        script = _shell_script(name, words, raw) if name is not None else None
        wraps = inner is not None and inner < len(words)
        transparent = wraps or script is not None
        self.findings.commands.append(_Command(words, raw, transparent=transparent))
        if inner is not None and wraps:
            self._simple(words[inner:], raw[inner:], depth)
        if script is not None:
            text, computed = script
            if computed:
                self.findings.computed_scripts.append(_shorten(text))
            else:
                self.script(text, depth=depth + 1)
        if name == "find":
            for start, end in _find_actions(words):
                self._simple(words[start:end], raw[start:end], depth)

    def _redirect(self, node: Node) -> None:
        operators = {child.type for child in node.children if not child.is_named}
        destination = node.child_by_field_name("destination")
        if destination is None or not (operators & _WRITE_REDIRECTS):
            return
        target = _static(destination)
        if target is not None:
            self.findings.writes.append(target)

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = _text(name_node)
        calls = 0
        backgrounded = False
        stack = [body]
        while stack:
            current = stack.pop()
            if current.type == "command":
                called = current.child_by_field_name("name")
                calls += called is not None and _static(called) == name
            backgrounded = backgrounded or current.type == "&"
            stack.extend(current.children)
        if calls >= 2 or (calls and backgrounded):  # noqa: PLR2004 - two copies per call
            self.findings.fork_bombs.append(name)

    def _fallback(self, source: str) -> None:
        """Word-level checks for a line tree-sitter could not parse: err on refusing."""
        for segment in _FALLBACK_SPLIT.split(source):
            try:
                words = shlex.split(segment)
            except ValueError:
                words = segment.split()
            while words and re.match(r"^\w+=", words[0]):
                words.pop(0)
            if words:
                self.findings.commands.append(_Command(tuple(words), tuple(words)))
        self.findings.writes.extend(_FALLBACK_REDIRECT.findall(source))
        self.findings.fork_bombs.extend(m.group(1) for m in _FALLBACK_FORK_BOMB.finditer(source))


def _wrapped(name: str, words: tuple[str | None, ...]) -> int | None:
    """Where the command run by a wrapper (`env`, `timeout 5`, `xargs`, ...) starts."""
    if name not in _WRAPPERS:
        return None
    valued, positional = _WRAPPERS[name]
    index = 1
    while index < len(words):
        word = words[index]
        if word is None:
            return index
        if word == "--":
            index += 1
            break
        if word.startswith("-") and word != "-":
            index += 2 if word in valued else 1
        elif name == "env" and "=" in word:
            index += 1
        else:
            break
    return index + positional


def _shell_script(  # noqa: PLR0911 - one return per way a script is given
    name: str, words: tuple[str | None, ...], raw: tuple[str, ...]
) -> tuple[str, bool] | None:
    """The script an `sh -c` or `eval` runs, and whether it is computed at run time."""
    if name == "eval":
        if all(word is not None for word in words[1:]):
            return " ".join(word for word in words[1:] if word is not None), False
        return " ".join(raw[1:]), True
    if name not in _SHELLS:
        return None
    takes_value = False
    for index, word in enumerate(words[1:], start=1):
        if takes_value:
            takes_value = False
            continue
        if word is None:
            return raw[index], True
        if not word.startswith(("-", "+")) or word in {"-", "--"}:
            return None
        takes_value = word in {"-o", "+o", "-O", "+O"}
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            script_index = index + 1
            if script_index >= len(words):
                return None
            script = words[script_index]
            return (raw[script_index], True) if script is None else (script, False)
    return None


def _find_actions(words: tuple[str | None, ...]) -> Iterable[tuple[int, int]]:
    """The spans of commands `find -exec ... ;` runs."""
    spans: list[tuple[int, int]] = []
    index = 1
    while index < len(words):
        if words[index] in _EXEC_ACTIONS:
            start = index + 1
            end = start
            while end < len(words) and words[end] not in {";", "+"}:
                end += 1
            if end > start:
                spans.append((start, end))
            index = end
        index += 1
    return spans


def _static(node: Node) -> str | None:
    """The value of a word as the shell sees it, or None when computed at run time."""
    kind = node.type
    text = _text(node)
    if kind in {"word", "number"}:
        return _unescape(text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "ansi_c_string":
        return text[2:-1]
    if kind == "string":
        parts = [_static_string_part(child) for child in node.named_children]
        return None if None in parts else "".join(p for p in parts if p is not None)
    if kind in {"concatenation", "command_name"}:
        values = [_static(child) for child in node.named_children]
        return None if None in values or not values else "".join(v for v in values if v)
    return None


def _static_string_part(node: Node) -> str | None:
    if node.type == "string_content":
        return re.sub(r'\\([$`"\\\n])', r"\1", _text(node))
    return None


def _unescape(word: str) -> str:
    return re.sub(r"\\(.)", r"\1", word.replace("\\\n", ""), flags=re.DOTALL)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["ALWAYS_ALLOWED", "DISK_TOOLS", "POWER", "PRIVILEGED", "CommandPolicy"]
